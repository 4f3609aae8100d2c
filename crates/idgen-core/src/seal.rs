//! Sealed IDs: a keyed permutation that hides an ID's time, order and count.
//!
//! A Snowflake shows when it was made and how busy its node was; a ticket or date sequence shows
//! how many came before. Sealing encrypts the ID with format-preserving encryption: NIST SP
//! 800-38G FF1 over AES-256 ([`crate::ff1_binary`]), on the ID's own domain. So a sealed ID is
//! still a non-negative 63-bit integer (it fits a BIGINT column), each ID has exactly one sealed
//! form, and only the key's holder can map it back. FF1 runs on the ID's 63 bits as a binary
//! string (radix 2, 63 numerals, the most significant first), so the domain is exactly
//! 0..2^63 with nothing to walk.
//!
//! A UUIDv7 is sealed into a UUID that shows no time: its 122 bits other than the version and
//! variant are encrypted the same way (122 numerals), and the result carries version 4, so it
//! looks like a random UUID. Unsealing restores version 7 (the uuidv47 idea, with FF1).
//!
//! Each domain has its own tweak, so the same key gives unrelated permutations for IDs and for
//! UUIDs.

use std::fmt;

use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes::Aes256;

use crate::ff1_binary::BinaryFf1;

/// Length of a sealing key: AES-256.
pub const KEY_LEN: usize = 32;
/// Bits of an ID: the non-negative i64s.
const ID_BITS: u32 = 63;
/// Bits of a UUID other than its version (4) and variant (2).
const UUID_BITS: u32 = 122;
const ID_TWEAK: &[u8] = b"idgen id63";
const UUID_TWEAK: &[u8] = b"idgen uuid7";

/// Why sealing or unsealing refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealError {
    /// A key that is not 32 bytes (64 hex digits).
    BadKey(String),
    /// An ID or sealed ID outside 0..=2^63-1.
    OutOfDomain(i128),
    /// A sealed UUID that is not version 4 with RFC 9562's variant, or an ID that is not a
    /// UUIDv7.
    NotThisUuid { want_version: u8 },
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::BadKey(why) => write!(f, "the sealing key {why}"),
            SealError::OutOfDomain(n) => {
                write!(f, "{n} is not an ID: IDs are 0 to 9223372036854775807")
            }
            SealError::NotThisUuid { want_version: 4 } => {
                write!(f, "not a sealed UUID (sealed UUIDs are version 4)")
            }
            SealError::NotThisUuid { want_version } => {
                write!(f, "not a version {want_version} UUID")
            }
        }
    }
}

impl std::error::Error for SealError {}

/// Seals and unseals IDs under one key.
pub struct Sealer {
    /// FF1 on IDs' 63 bits, and on a UUID's 122 free bits, each with its own tweak.
    ids: BinaryFf1,
    uuids: BinaryFf1,
    key_id: String,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sealer {{ key_id: {} }}", self.key_id)
    }
}

impl Sealer {
    /// A sealer under `key`, 32 bytes.
    ///
    /// # Errors
    /// [`SealError::BadKey`] for another length.
    pub fn new(key: &[u8]) -> Result<Sealer, SealError> {
        let key: &[u8; KEY_LEN] = key.try_into().map_err(|_| {
            SealError::BadKey(format!(
                "is {} bytes; it must be {KEY_LEN} (AES-256)",
                key.len()
            ))
        })?;
        Ok(Sealer {
            ids: BinaryFf1::new(key, ID_BITS, ID_TWEAK),
            uuids: BinaryFf1::new(key, UUID_BITS, UUID_TWEAK),
            key_id: key_check_value(key),
        })
    }

    /// A sealer under the key written as 64 hex digits in `text` (a key file's first line;
    /// surrounding white space is ignored).
    ///
    /// # Errors
    /// [`SealError::BadKey`] when it is not 64 hex digits.
    pub fn from_hex(text: &str) -> Result<Sealer, SealError> {
        let hex = text.trim();
        let bad = || {
            SealError::BadKey(format!(
                "must be {} hex digits (make one with: openssl rand -hex 32); found {} characters",
                KEY_LEN * 2,
                hex.len()
            ))
        };
        if hex.len() != KEY_LEN * 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let key: Vec<u8> = (0..KEY_LEN)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        Sealer::new(&key)
    }

    /// Names the key without revealing it: the first 4 bytes of AES-256 of a zero block, in
    /// hex (a key check value), for INFO and logs.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The sealed form of `id` (0..=2^63-1), in the same range.
    ///
    /// # Errors
    /// [`SealError::OutOfDomain`] for a larger `id`.
    pub fn seal(&self, id: u64) -> Result<u64, SealError> {
        self.permute(id, true)
    }

    /// The ID whose sealed form is `sealed`.
    ///
    /// # Errors
    /// [`SealError::OutOfDomain`] for a value above 2^63-1.
    pub fn unseal(&self, sealed: u64) -> Result<u64, SealError> {
        self.permute(sealed, false)
    }

    fn permute(&self, value: u64, seal: bool) -> Result<u64, SealError> {
        if value > i64::MAX as u64 {
            return Err(SealError::OutOfDomain(value.into()));
        }
        let value = u128::from(value);
        let out = if seal {
            self.ids.encrypt(value)
        } else {
            self.ids.decrypt(value)
        };
        // 63 bits in, 63 bits out.
        Ok(out as u64)
    }

    /// A UUIDv7 sealed into a version 4 UUID that shows no time.
    ///
    /// # Errors
    /// [`SealError::NotThisUuid`] when `uuid` is not version 7 with RFC 9562's variant.
    pub fn seal_uuid7(&self, uuid: u128) -> Result<u128, SealError> {
        self.permute_uuid(uuid, 7, 4, true)
    }

    /// The UUIDv7 a sealed (version 4) UUID came from.
    ///
    /// # Errors
    /// [`SealError::NotThisUuid`] when `sealed` is not version 4 with RFC 9562's variant.
    pub fn unseal_uuid7(&self, sealed: u128) -> Result<u128, SealError> {
        self.permute_uuid(sealed, 4, 7, false)
    }

    fn permute_uuid(&self, uuid: u128, from: u8, to: u8, seal: bool) -> Result<u128, SealError> {
        let version = ((uuid >> 76) & 0xf) as u8;
        let variant = (uuid >> 62) & 0b11;
        if version != from || variant != 0b10 {
            return Err(SealError::NotThisUuid { want_version: from });
        }
        // The 122 bits around the version and variant, high to low: 48 + 12 + 62.
        let bits = ((uuid >> 80) << 74) | (((uuid >> 64) & 0xfff) << 62) | (uuid & ((1 << 62) - 1));
        let out = if seal {
            self.uuids.encrypt(bits)
        } else {
            self.uuids.decrypt(bits)
        };
        Ok(((out >> 74) << 80)
            | (u128::from(to) << 76)
            | (((out >> 62) & 0xfff) << 64)
            | (0b10 << 62)
            | (out & ((1 << 62) - 1)))
    }
}

/// The first 4 bytes of AES-256(key, 0^128), in hex.
fn key_check_value(key: &[u8; KEY_LEN]) -> String {
    let cipher = Aes256::new(key.into());
    let mut block = aes::Block::default();
    cipher.encrypt_block(&mut block);
    block[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;

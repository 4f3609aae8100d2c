//! Sqids: short, URL-safe strings for IDs shown outside (the successor of Hashids).
//!
//! Sequential IDs leak volume (a date sequence tells anyone how many orders were placed today);
//! a Sqid of the same number, made with an alphabet shuffled as the operator's secret, does not
//! read as a count. It is an encoding, not encryption: whoever has the alphabet decodes it.
//!
//! [`SqidCodec`] gives the `sqids` crate's strings (through an encoder and decoder of its own,
//! built for one alphabet) with the limits a server needs: a bound on how many
//! numbers one string holds and on how long a string it will read (decoding costs grow with
//! length), a printable-ASCII alphabet, and a canonical check, so that exactly one string
//! decodes to a given list of numbers and a lookup by string cannot be fooled by a variant.

use std::fmt;

use crate::sqid_decoder::SqidDecoder;
use crate::sqid_encoder::{Sink, SqidEncoder, StackSink};

/// The default alphabet: letters and digits, in the `sqids` crate's order.
pub const DEFAULT_ALPHABET: &str = sqids::DEFAULT_ALPHABET;
/// Largest minimum length (the Sqids specification's limit).
pub const MAX_MIN_LENGTH: u8 = u8::MAX;
/// The longest Sqid made on the stack ([`SqidCodec::encode_with`]): a 64-bit number in a
/// 62-letter alphabet takes 12 letters, 16 of them about 200.
const STACK_SQID: usize = 256;
/// Most numbers one Sqid holds (a tenant and an ID, a few parts of a key; not a list). It
/// bounds the string length too, and decoding costs grow with the square of the length.
pub const MAX_NUMBERS: usize = 16;

/// Why a Sqid could not be made or read, or an alphabet is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqidError {
    /// The alphabet is too short, repeats a character, or holds one that is not printable ASCII.
    Alphabet(String),
    /// No numbers, or more than [`MAX_NUMBERS`].
    Count(usize),
    /// Every variant of the string for these numbers holds a blocked word.
    Blocked,
    /// The string is longer than any this codec makes ([`SqidCodec::max_len`]).
    TooLong { len: usize, max: usize },
    /// The string is not one this codec makes: a character outside the alphabet, a number that
    /// overflows 64 bits, or a variant of the canonical string.
    NotASqid,
}

impl fmt::Display for SqidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqidError::Alphabet(why) => write!(f, "sqids alphabet {why}"),
            SqidError::Count(n) => write!(f, "a Sqid holds 1 to {MAX_NUMBERS} numbers, not {n}"),
            SqidError::Blocked => write!(
                f,
                "every Sqid of these numbers holds a blocked word; try a longer alphabet"
            ),
            SqidError::TooLong { len, max } => {
                write!(f, "a Sqid is at most {max} characters here, not {len}")
            }
            SqidError::NotASqid => write!(f, "not a Sqid of this alphabet and minimum length"),
        }
    }
}

impl std::error::Error for SqidError {}

/// Encodes lists of numbers as Sqids and back, with one alphabet and minimum length.
#[derive(Clone, Debug)]
pub struct SqidCodec {
    encoder: SqidEncoder,
    decoder: SqidDecoder,
    min_length: u8,
    max_len: usize,
}

impl SqidCodec {
    /// A codec over `alphabet` (3 to 95 distinct printable ASCII characters, no space) whose
    /// strings are at least `min_length` characters long.
    ///
    /// # Errors
    /// [`SqidError::Alphabet`] saying what is wrong with it.
    pub fn new(alphabet: &str, min_length: u8) -> Result<Self, SqidError> {
        check_alphabet(alphabet)?;
        // Each number takes at most as many digits as u64::MAX in base (alphabet - 1) (one
        // letter is the separator), plus a separator; then the prefix letter.
        let base = alphabet.len() as u64 - 1;
        let digits =
            std::iter::successors(Some(u64::MAX), |n| (*n >= base).then(|| n / base)).count();
        let max_len = (1 + MAX_NUMBERS * (digits + 1)).max(usize::from(min_length));
        let words = sqids::default_blocklist();
        let encoder = SqidEncoder::new(
            alphabet.as_bytes(),
            min_length,
            words.iter().map(String::as_str),
        );
        Ok(SqidCodec {
            decoder: SqidDecoder::new(&encoder),
            encoder,
            min_length,
            max_len,
        })
    }

    /// The shortest string this codec makes.
    pub fn min_length(&self) -> u8 {
        self.min_length
    }

    /// The longest string this codec makes, and so the longest it reads.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The Sqid of `numbers`, in order.
    ///
    /// # Errors
    /// [`SqidError::Count`] for none or too many; [`SqidError::Blocked`] when the blocklist
    /// leaves no variant.
    pub fn encode(&self, numbers: &[u64]) -> Result<String, SqidError> {
        // The encoder writes only letters of the alphabet, which is printable ASCII.
        self.encode_with(numbers, |sqid| String::from_utf8_lossy(sqid).into_owned())
    }

    /// Hands the Sqid of `numbers` to `f`, made on the stack when it fits (the common case):
    /// [`SqidCodec::encode`] without allocating.
    ///
    /// # Errors
    /// As [`SqidCodec::encode`].
    #[inline]
    pub fn encode_with<R>(
        &self,
        numbers: &[u64],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, SqidError> {
        if numbers.is_empty() || numbers.len() > MAX_NUMBERS {
            return Err(SqidError::Count(numbers.len()));
        }
        let mut sink = StackSink::<STACK_SQID>::new();
        self.encoder
            .encode(numbers, &mut sink)
            .map_err(|_| SqidError::Blocked)?;
        if !sink.overflowed() {
            return Ok(f(sink.as_slice()));
        }
        let mut out = Vec::new();
        self.encoder
            .encode(numbers, &mut out)
            .map_err(|_| SqidError::Blocked)?;
        Ok(f(&out))
    }

    /// The Sqid of each of `ids` on its own, all made or none.
    ///
    /// # Errors
    /// As [`SqidCodec::encode`], for the first that fails.
    pub fn encode_each(
        &self,
        ids: impl IntoIterator<Item = u64>,
    ) -> Result<Vec<String>, SqidError> {
        ids.into_iter().map(|id| self.encode(&[id])).collect()
    }

    /// The numbers `text` holds, if it is the very string [`SqidCodec::encode`] makes for them.
    ///
    /// # Errors
    /// [`SqidError::TooLong`] past [`SqidCodec::max_len`] (checked before any work), else
    /// [`SqidError::NotASqid`].
    pub fn decode(&self, text: impl AsRef<[u8]>) -> Result<Vec<u64>, SqidError> {
        self.decode_with(text.as_ref(), <[u64]>::to_vec)
    }

    /// Hands the numbers `text` holds to `f`, read on the stack: [`SqidCodec::decode`] without
    /// allocating.
    ///
    /// # Errors
    /// As [`SqidCodec::decode`].
    pub fn decode_with<R>(&self, text: &[u8], f: impl FnOnce(&[u64]) -> R) -> Result<R, SqidError> {
        if text.len() > self.max_len {
            return Err(SqidError::TooLong {
                len: text.len(),
                max: self.max_len,
            });
        }
        let mut numbers = [0u64; MAX_NUMBERS];
        let numbers = match self.decoder.decode(text, &mut numbers) {
            Some(count @ 1..) => &numbers[..count],
            _ => return Err(SqidError::NotASqid),
        };
        // Several strings can decode to the same numbers (a different prefix, other padding);
        // only the one encode makes is accepted.
        match self.encode_with(numbers, |canonical| canonical == text) {
            Ok(true) => Ok(f(numbers)),
            _ => Err(SqidError::NotASqid),
        }
    }
}

/// What an encoder elsewhere needs to make this codec's Sqids (the Functions library's, in
/// Lua): the alphabet as the Sqids encoder shuffles it, the minimum length, and the blocked
/// words the alphabet can spell, lowercase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqidParts {
    pub shuffled: Vec<u8>,
    pub min_length: usize,
    pub blocked: Vec<String>,
}

impl SqidCodec {
    /// This codec's [`SqidParts`].
    pub fn parts(&self) -> SqidParts {
        let shuffled = self.encoder.alphabet().to_vec();
        let words = sqids::default_blocklist();
        SqidParts {
            blocked: crate::sqid_encoder::kept_words(&shuffled, words.iter().map(String::as_str)),
            shuffled,
            min_length: self.encoder.min_length(),
        }
    }
}

impl Default for SqidCodec {
    fn default() -> Self {
        SqidCodec::new(DEFAULT_ALPHABET, 0).expect("the default alphabet is valid")
    }
}

/// Checks what the `sqids` crate leaves to us: printable ASCII only, so that every Sqid can be
/// typed, logged and put in a URL path or a config file.
fn check_alphabet(alphabet: &str) -> Result<(), SqidError> {
    if let Some(c) = alphabet.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(SqidError::Alphabet(format!(
            "holds {c:?}: use printable ASCII characters, no spaces"
        )));
    }
    let len = alphabet.len();
    if len < 3 {
        return Err(SqidError::Alphabet(format!(
            "has {len} characters: it needs at least 3"
        )));
    }
    let mut seen = [false; 128];
    for b in alphabet.bytes() {
        if std::mem::replace(&mut seen[b as usize], true) {
            return Err(SqidError::Alphabet(format!(
                "repeats {:?}: every character must be different",
                b as char
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqids::Sqids;

    #[test]
    fn numbers_round_trip_in_the_default_alphabet() {
        let codec = SqidCodec::default();
        for numbers in [
            vec![0],
            vec![1],
            vec![u64::MAX],
            vec![20261123000042],
            vec![2124474529882451968, 7, 0],
            (0..MAX_NUMBERS as u64).map(|n| n * 1_000_003).collect(),
        ] {
            let text = codec.encode(&numbers).unwrap();
            assert!(text.bytes().all(|b| b.is_ascii_alphanumeric()), "{text}");
            assert_eq!(codec.decode(&text).unwrap(), numbers, "{text}");
        }
    }

    #[test]
    fn the_alphabet_and_min_length_shape_the_string() {
        let plain = SqidCodec::default();
        let secret = SqidCodec::new(
            "k3G7QAe51FCsPW92uEOyq4Bg6Sp8YzVTmnU0liwDdHXLajZrfxNhobJIRcMvKt",
            0,
        )
        .unwrap();
        let id = 2124474529882451968;
        let (a, b) = (plain.encode(&[id]).unwrap(), secret.encode(&[id]).unwrap());
        assert_ne!(a, b);
        assert_eq!(secret.decode(&b).unwrap(), [id]);
        // Read with the wrong alphabet, a Sqid does not come back as the same number.
        assert_ne!(plain.decode(&b).ok(), Some(vec![id]));

        let padded = SqidCodec::new(DEFAULT_ALPHABET, 20).unwrap();
        let text = padded.encode(&[1]).unwrap();
        assert_eq!(text.len(), 20);
        assert_eq!(padded.decode(&text).unwrap(), [1]);
        // A short codec reads no padded string as the same number, and vice versa.
        assert_eq!(
            padded.decode(plain.encode(&[1]).unwrap()),
            Err(SqidError::NotASqid)
        );
    }

    #[test]
    fn only_the_canonical_string_decodes() {
        let codec = SqidCodec::default();
        let text = codec.encode(&[42]).unwrap();
        // Every other first letter still decodes to some number in the crate; none to ours.
        for c in DEFAULT_ALPHABET.chars() {
            let variant = format!("{c}{}", &text[1..]);
            if variant != text {
                assert_ne!(codec.decode(&variant).ok(), Some(vec![42]), "{variant}");
            }
        }
        for bad in ["", "a", "ab-c", "é", "abc def"] {
            assert_eq!(codec.decode(bad), Err(SqidError::NotASqid), "{bad:?}");
        }
        // A string of alphabet letters too long for a u64 overflows: refused, not wrapped.
        assert_eq!(codec.decode("z".repeat(40)), Err(SqidError::NotASqid));
        let max = codec.max_len();
        assert_eq!(
            codec.decode("a".repeat(max + 1)),
            Err(SqidError::TooLong { len: max + 1, max })
        );
    }

    #[test]
    fn bad_alphabets_and_counts_are_refused() {
        for (alphabet, says) in [
            ("ab", "at least 3"),
            ("abca", "repeats 'a'"),
            ("ab c", "printable"),
            ("abé", "printable"),
            ("ab\u{7f}", "printable"),
        ] {
            let err = SqidCodec::new(alphabet, 0).unwrap_err();
            assert!(err.to_string().contains(says), "{alphabet:?}: {err}");
        }
        let codec = SqidCodec::default();
        assert_eq!(codec.encode(&[]), Err(SqidError::Count(0)));
        let many = vec![1; MAX_NUMBERS + 1];
        assert_eq!(codec.encode(&many), Err(SqidError::Count(MAX_NUMBERS + 1)));
    }

    #[test]
    fn the_longest_strings_fit_max_len_in_any_alphabet() {
        for (alphabet, min_length) in [("abc", 0), ("abcd", 0), (DEFAULT_ALPHABET, 0), ("xyz", 255)]
        {
            let codec = SqidCodec::new(alphabet, min_length).unwrap();
            let numbers = vec![u64::MAX; MAX_NUMBERS];
            match codec.encode(&numbers) {
                Ok(text) => {
                    assert!(text.len() <= codec.max_len(), "{alphabet}: {}", text.len());
                    assert_eq!(codec.decode(&text).unwrap(), numbers);
                }
                // With three letters the blocklist may leave no variant: refused, not a panic.
                Err(e) => assert_eq!(e, SqidError::Blocked),
            }
        }
        assert_eq!(SqidCodec::default().max_len(), 1 + 16 * 12);
    }

    #[test]
    fn strings_made_on_the_stack_and_past_it_are_the_crates() {
        for (alphabet, min_length) in [(DEFAULT_ALPHABET, 0), ("abc", 0), ("abc", 255), ("0a1", 9)]
        {
            let codec = SqidCodec::new(alphabet, min_length).unwrap();
            let crate_sqids = crate_sqids(alphabet, min_length);
            for numbers in [vec![0], vec![u64::MAX], vec![u64::MAX; MAX_NUMBERS]] {
                let ours = codec.encode(&numbers).unwrap();
                assert_eq!(
                    ours,
                    crate_sqids.encode(&numbers).unwrap(),
                    "{alphabet} {numbers:?}"
                );
                // Past the stack's 256 letters (a 3-letter alphabet's 16 numbers) as well.
                assert_eq!(
                    codec.encode_with(&numbers, |s| s.len()).unwrap(),
                    ours.len()
                );
            }
        }
    }

    /// The `sqids` crate's codec of `alphabet` and `min_length`, with its default blocklist.
    fn crate_sqids(alphabet: &str, min_length: u8) -> Sqids {
        Sqids::builder()
            .alphabet(alphabet.chars().collect())
            .min_length(min_length)
            .build()
            .unwrap()
    }

    /// What the crate reads from `text`, kept as the codec keeps a reading: when it is 1 to
    /// [`MAX_NUMBERS`] numbers that encode back to `text`.
    fn crate_reading(sqids: &Sqids, text: &str) -> Option<Vec<u64>> {
        let numbers = sqids.decode(text);
        let canonical = sqids.encode(&numbers).ok();
        (!numbers.is_empty() && numbers.len() <= MAX_NUMBERS && canonical.as_deref() == Some(text))
            .then_some(numbers)
    }

    /// Strings near `text`: each letter changed, one dropped, one added, cut short, run on,
    /// and a letter from outside the alphabet.
    fn near(text: &str, alphabet: &[u8], seed: &mut u64) -> Vec<String> {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as usize
        };
        let bytes = text.as_bytes();
        let mut near = Vec::new();
        for at in 0..bytes.len() {
            let mut changed = bytes.to_vec();
            changed[at] = alphabet[next() % alphabet.len()];
            near.push(changed);
        }
        let at = next() % bytes.len();
        near.push([&bytes[..at], &bytes[at + 1..]].concat());
        near.push(
            [
                &bytes[..at],
                &[alphabet[next() % alphabet.len()]],
                &bytes[at..],
            ]
            .concat(),
        );
        near.push(bytes[..next() % bytes.len()].to_vec());
        near.push([bytes, &[alphabet[next() % alphabet.len()]]].concat());
        near.push([&bytes[..at], b" ", &bytes[at + 1..]].concat());
        let random = (0..1 + next() % 20).map(|_| alphabet[next() % alphabet.len()]);
        near.push(random.collect());
        near.into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect()
    }

    /// The decoder against the crate's: every Sqid reads back to its numbers, and of the
    /// strings near it, the codec takes exactly those the crate reads and encodes back.
    #[test]
    fn reads_what_the_sqids_crate_reads_and_refuses_what_it_refuses() {
        let printable: String = (0x21u8..=0x7e).map(char::from).collect();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut compared = 0;
        for alphabet in [DEFAULT_ALPHABET, "abc", "0a1", "sexSEX", &printable] {
            for min_length in [0, 1, 4, 10, 33] {
                let codec = SqidCodec::new(alphabet, min_length).unwrap();
                let crate_sqids = crate_sqids(alphabet, min_length);
                for i in 0..60u64 {
                    let numbers: Vec<u64> = (0..1 + i % 4)
                        .map(|k| seed.wrapping_mul(i + k) >> (i % 64))
                        .collect();
                    let Ok(text) = codec.encode(&numbers) else {
                        continue;
                    };
                    assert_eq!(
                        codec.decode(&text),
                        Ok(numbers.clone()),
                        "{alphabet} {text}"
                    );
                    for other in near(&text, alphabet.as_bytes(), &mut seed) {
                        assert_eq!(
                            codec.decode(&other).ok(),
                            crate_reading(&crate_sqids, &other),
                            "alphabet {alphabet:?}, min length {min_length}: {other:?} near {text:?}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000, "{compared}");
    }
}

use super::*;
use aes::{Aes128, Aes192};
use fpe::ff1::{FlexibleNumeralString, FF1};

const KEY: &str = "2b7e151628aed2a6abf7158809cf4f3cef4359d8d580aa4f7f036d6f04fc6a94";

fn sealer() -> Sealer {
    Sealer::from_hex(KEY).unwrap()
}

/// `text` as numerals of `radix` (digits, then lower-case letters).
fn numerals(text: &str) -> Vec<u16> {
    text.chars()
        .map(|c| c.to_digit(36).unwrap() as u16)
        .collect()
}

fn text(numerals: Vec<u16>) -> String {
    numerals
        .into_iter()
        .map(|n| char::from_digit(u32::from(n), 36).unwrap())
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// One of NIST's samples: key, radix, tweak, plaintext, ciphertext.
type Sample<'a> = (&'a [u8], u32, &'a [u8], &'a str, &'a str);

/// NIST SP 800-38G's FF1 samples (the published examples with AES-128, -192 and -256).
#[test]
fn ff1_gives_nists_published_samples() {
    let key128 = hex("2b7e151628aed2a6abf7158809cf4f3c");
    let key192 = hex("2b7e151628aed2a6abf7158809cf4f3cef4359d8d580aa4f");
    let key256 = hex(KEY);
    let tweak = hex("39383736353433323130");
    let tweak36 = hex("3737373770717273373737");
    let cases: [Sample; 6] = [
        (&key128, 10, &[], "0123456789", "2433477484"),
        (&key128, 10, &tweak, "0123456789", "6124200773"),
        (
            &key128,
            36,
            &tweak36,
            "0123456789abcdefghi",
            "a9tv40mll9kdu509eum",
        ),
        (&key192, 10, &[], "0123456789", "2830668132"),
        (&key256, 10, &[], "0123456789", "6657667009"),
        (&key256, 10, &tweak, "0123456789", "1001623463"),
    ];
    for (i, (key, radix, tweak, plain, want)) in cases.into_iter().enumerate() {
        let input = FlexibleNumeralString::from(numerals(plain));
        let (got, back) = match key.len() {
            16 => {
                let ff1 = FF1::<Aes128>::new(key, radix).unwrap();
                let out = ff1.encrypt(tweak, &input).unwrap();
                let back = ff1.decrypt(tweak, &out).unwrap();
                (text(out.into()), text(back.into()))
            }
            24 => {
                let ff1 = FF1::<Aes192>::new(key, radix).unwrap();
                let out = ff1.encrypt(tweak, &input).unwrap();
                let back = ff1.decrypt(tweak, &out).unwrap();
                (text(out.into()), text(back.into()))
            }
            _ => {
                let ff1 = FF1::<Aes256>::new(key, radix).unwrap();
                let out = ff1.encrypt(tweak, &input).unwrap();
                let back = ff1.decrypt(tweak, &out).unwrap();
                (text(out.into()), text(back.into()))
            }
        };
        assert_eq!(got, want, "sample {}", i + 1);
        assert_eq!(back, plain, "sample {}", i + 1);
    }
}

#[test]
fn sealing_is_a_permutation_of_the_ids_that_hides_their_order() {
    let s = sealer();
    for id in [0, 1, i64::MAX as u64 - 1, i64::MAX as u64] {
        let sealed = s.seal(id).unwrap();
        assert!(sealed <= i64::MAX as u64, "{id} sealed to {sealed}");
        assert_eq!(s.unseal(sealed), Ok(id));
    }
    // Random IDs: every one back from its sealed form, no two sealed alike (a million go
    // through the module in tests/tests/seal.rs).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut seen = std::collections::HashSet::new();
    let mut increasing = 0;
    let mut last = 0;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = x >> 1;
        let sealed = s.seal(id).unwrap();
        assert_eq!(s.unseal(sealed), Ok(id));
        assert!(seen.insert(sealed), "{sealed} twice");
        increasing += usize::from(sealed > last);
        last = sealed;
    }
    // Consecutive IDs seal to values in no order: about half go up.
    let sealed: Vec<u64> = (1_000..2_000).map(|id| s.seal(id).unwrap()).collect();
    let up = sealed.windows(2).filter(|w| w[1] > w[0]).count();
    assert!((350..650).contains(&up), "{up} of 999 went up");
    assert!(increasing > 0);
}

#[test]
fn ids_past_63_bits_are_refused() {
    let s = sealer();
    assert_eq!(
        s.seal(1 << 63),
        Err(SealError::OutOfDomain(9_223_372_036_854_775_808))
    );
    assert!(s.unseal(u64::MAX).is_err());
}

#[test]
fn a_sealed_uuid7_is_a_v4_uuid_that_unseals_to_it() {
    let s = sealer();
    let v7 = 0x01a2_09df_4889_71b1_a99e_1980_3b3c_cc77u128;
    let sealed = s.seal_uuid7(v7).unwrap();
    assert_eq!((sealed >> 76) & 0xf, 4, "version 4");
    assert_eq!((sealed >> 62) & 0b11, 0b10, "RFC 9562's variant");
    assert_ne!(sealed >> 80, v7 >> 80, "the time is hidden");
    assert_eq!(s.unseal_uuid7(sealed), Ok(v7));
    assert_eq!(
        s.seal_uuid7(sealed),
        Err(SealError::NotThisUuid { want_version: 7 })
    );
    assert_eq!(
        s.unseal_uuid7(v7),
        Err(SealError::NotThisUuid { want_version: 4 })
    );
}

#[test]
fn keys_are_64_hex_digits_and_named_without_being_shown() {
    let s = sealer();
    assert_eq!(s.key_id().len(), 8);
    assert!(!KEY.contains(s.key_id()));
    assert_eq!(
        Sealer::from_hex(&format!("  {KEY}\n")).unwrap().key_id(),
        s.key_id()
    );
    let other = Sealer::from_hex(&KEY.replace('2', "3")).unwrap();
    assert_ne!(other.key_id(), s.key_id());
    assert_ne!(other.seal(42), s.seal(42));
    for bad in [
        "",
        "abc",
        &KEY[..62],
        &format!("{KEY}00"),
        &KEY.replace('a', "g"),
    ] {
        let err = Sealer::from_hex(bad).unwrap_err().to_string();
        assert!(err.contains("64 hex digits"), "{bad:?}: {err}");
    }
    assert!(Sealer::new(&[0; 16])
        .unwrap_err()
        .to_string()
        .contains("16 bytes"));
}

/// A UUIDv7 whose 122 free bits are `bits` (high to low: 48, 12, 62 around the version and
/// variant).
fn v7_with(bits: u128) -> u128 {
    ((bits >> 74) << 80)
        | (7 << 76)
        | (((bits >> 62) & 0xfff) << 64)
        | (0b10 << 62)
        | (bits & ((1 << 62) - 1))
}

#[test]
fn the_edges_of_both_domains_seal_and_unseal_to_themselves() {
    let s = sealer();
    let top = i64::MAX as u64;
    for id in [0, 1, 2, top - 2, top - 1, top] {
        let sealed = s.seal(id).unwrap();
        assert!(sealed <= top);
        assert_eq!(s.unseal(sealed), Ok(id), "{id}");
        assert_eq!(
            s.seal(s.unseal(id).unwrap()),
            Ok(id),
            "{id} unsealed and back"
        );
    }
    let all = (1u128 << 122) - 1;
    for bits in [0, 1, 2, all - 2, all - 1, all, all >> 1] {
        let v7 = v7_with(bits);
        let sealed = s.seal_uuid7(v7).unwrap();
        assert_eq!(s.unseal_uuid7(sealed), Ok(v7), "{bits:#x}");
    }
}

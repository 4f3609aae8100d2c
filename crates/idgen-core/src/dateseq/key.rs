//! Naming the per-day counter key so it lands in the same Redis Cluster slot as its prefix.

use std::fmt;

use super::Period;

/// Why a prefix cannot name a counter key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The prefix is empty.
    EmptyPrefix,
    /// The prefix has a `}` but no usable `{...}` hash tag, so no key around it can share its slot.
    UnbalancedHashTag,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::EmptyPrefix => write!(f, "prefix must not be empty"),
            KeyError::UnbalancedHashTag => write!(
                f,
                "prefix has '}}' without a '{{...}}' hash tag before it; add a hash tag or drop the brace"
            ),
        }
    }
}

impl std::error::Error for KeyError {}

/// The counter key for `prefix` in the period labelled `date` (yyyyMMdd, or yyyyMM and yyyy for
/// monthly and yearly counters), hashing to `prefix`'s Cluster slot.
///
/// A prefix with a hash tag keeps it: `order:{eu}` -> `order:{eu}:20261122`. Any other prefix
/// becomes the tag: `order` -> `{order}:20261122`.
///
/// # Errors
/// [`KeyError`] for an empty prefix, or one whose braces make a same-slot key impossible.
pub fn counter_key(prefix: &[u8], date: u32, out: &mut Vec<u8>) -> Result<(), KeyError> {
    out.clear();
    if prefix.is_empty() {
        return Err(KeyError::EmptyPrefix);
    }
    if hash_tag(prefix).is_some() {
        out.extend_from_slice(prefix);
    } else if prefix.contains(&b'}') {
        return Err(KeyError::UnbalancedHashTag);
    } else {
        out.push(b'{');
        out.extend_from_slice(prefix);
        out.push(b'}');
    }
    out.push(b':');
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut rest = date;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
    Ok(())
}

/// The period and label of a key [`counter_key`] may have named: a name with a usable hash
/// tag, then `:` and the 8, 6 or 4 digits of a day, month or year; `None` for any other key.
/// For the counters that reach a node from another (a replica's, a migrated slot's), whose
/// name is all there is to go by.
pub fn counter_label(key: &[u8]) -> Option<(Period, u32)> {
    let colon = key.iter().rposition(|&b| b == b':')?;
    let (prefix, digits) = (&key[..colon], &key[colon + 1..]);
    let period = match digits.len() {
        8 => Period::Day,
        6 => Period::Month,
        4 => Period::Year,
        _ => return None,
    };
    if hash_tag(prefix).is_none() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let label = digits
        .iter()
        .fold(0u32, |n, &b| n * 10 + u32::from(b - b'0'));
    Some((period, label))
}

/// The part of `key` Redis Cluster hashes: the first non-empty `{...}`, as Redis defines it.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let close = key[open + 1..].iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &key[open + 1..open + 1 + close])
}

/// A counter key's value: decimal digits only, as INCRBY writes them, not negative, and at most
/// 18 digits (the most any DIGITS leaves the sequence); `None` for anything else.
pub fn parse_counter(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 18 {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + (b - b'0') as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis Cluster's CRC16 (XMODEM) slot of a key.
    fn slot(key: &[u8]) -> u16 {
        let hashed = hash_tag(key).unwrap_or(key);
        let mut crc: u16 = 0;
        for &byte in hashed {
            crc ^= (byte as u16) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc % 16384
    }

    fn key(prefix: &str) -> Result<String, KeyError> {
        let mut out = Vec::new();
        counter_key(prefix.as_bytes(), 20261122, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn slot_matches_redis_for_a_known_key() {
        assert_eq!(slot(b"123456789"), 12739); // the Redis Cluster spec's example
    }

    #[test]
    fn counter_key_shares_the_prefix_slot() {
        let cases = [
            ("order", "{order}:20261122"),
            ("order:{eu}", "order:{eu}:20261122"),
            ("{user1000}.following", "{user1000}.following:20261122"),
            ("a{b", "{a{b}:20261122"),
        ];
        for (prefix, want) in cases {
            let got = key(prefix).unwrap();
            assert_eq!(got, want);
            assert_eq!(slot(got.as_bytes()), slot(prefix.as_bytes()), "{prefix}");
        }
    }

    #[test]
    fn every_counter_key_is_told_by_its_name_and_nothing_else() {
        let prefixes: &[&[u8]] = &[
            b"order",
            b"order:{eu}",
            b"{t}:x:1",
            b"a{b",
            b"\xff \n",
            b"2026",
        ];
        for &prefix in prefixes {
            for (period, date) in [
                (Period::Day, 20261127),
                (Period::Month, 202611),
                (Period::Year, 2026),
            ] {
                let mut out = Vec::new();
                counter_key(prefix, date, &mut out).unwrap();
                assert_eq!(
                    counter_label(&out),
                    Some((period, date)),
                    "{}",
                    out.escape_ascii()
                );
            }
        }
        let others: &[&[u8]] = &[
            b"order:20261127",
            b"{order}:2026112",
            b"{order}:2026-11",
            b"{order}20261127",
            b"{}:20261127",
            b"{order}:",
            b"",
            b"{order}:+2026",
        ];
        for &key in others {
            assert_eq!(counter_label(key), None, "{}", key.escape_ascii());
        }
    }

    #[test]
    fn prefixes_that_cannot_share_a_slot_are_refused() {
        assert_eq!(key(""), Err(KeyError::EmptyPrefix));
        assert_eq!(key("a}b"), Err(KeyError::UnbalancedHashTag));
        assert_eq!(key("x{}y}"), Err(KeyError::UnbalancedHashTag));
        assert_eq!(
            key("{}x"),
            Err(KeyError::UnbalancedHashTag),
            "an empty tag hashes the whole key"
        );
    }

    #[test]
    fn counters_are_the_digits_incrby_writes() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"42", Some(42)),
            (b"999999999999999999", Some(999_999_999_999_999_999)),
            (b"1000000000000000000", None),
            (b"-1", None),
            (b"+1", None),
            (b"", None),
            (b"1 ", None),
            (b"abc", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_counter(text), *want, "{}", text.escape_ascii());
        }
    }
}

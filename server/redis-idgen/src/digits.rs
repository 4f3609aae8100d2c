//! Integers in and out as text, decimal as Redis reads and writes them, and hex, without
//! allocating.

/// The decimal digits of `value`, written into the end of `buf`.
pub fn decimal(mut value: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buf[at..];
        }
    }
}

/// The last `digits` (at most 32) hex digits of `value`, in lower case and with leading zeros,
/// written into the end of `buf`.
pub fn lower_hex(mut value: u128, digits: usize, buf: &mut [u8; 32]) -> &[u8] {
    let text = &mut buf[32 - digits.min(32)..];
    for slot in text.iter_mut().rev() {
        *slot = b"0123456789abcdef"[(value & 0xf) as usize];
        value >>= 4;
    }
    text
}

/// Parses a decimal integer the way Redis does: optional '-', digits, no spaces, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    std::str::from_utf8(s)
        .ok()
        .filter(|t| !t.starts_with('+'))
        .and_then(|t| t.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_as_redis_parses_them() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"0", Some(0)),
            (b"-7", Some(-7)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"+5", None),
            (b" 5", None),
            (b"5 ", None),
            (b"", None),
            (b"1e3", None),
            (b"0x10", None),
            (b"1.5", None),
            (b"\xff", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_i64(text),
                *want,
                "{:?}",
                text.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn decimals_are_written_at_the_end_of_the_buffer() {
        for n in [0, 7, 10, 1_795_349_173_409, u64::MAX] {
            let mut buf = [0u8; 20];
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }

    #[test]
    fn hex_is_padded_to_its_width_and_cut_to_it() {
        for (n, digits) in [
            (0u128, 19),
            (0xabc, 20),
            (u128::MAX, 32),
            (u128::MAX, 19),
            (1, 40),
        ] {
            let mut buf = [0u8; 32];
            let full = format!("{n:032x}");
            let width = digits.min(32);
            assert_eq!(
                lower_hex(n, digits, &mut buf),
                &full.as_bytes()[32 - width..]
            );
        }
    }
}

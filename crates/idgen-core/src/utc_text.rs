//! Unix milliseconds as ISO-8601 text in UTC, as jiff writes a timestamp with `{:.3}`
//! ("2026-11-28T09:15:02.123Z"), made in a buffer on the stack: the decoders reply with it on
//! every call, and jiff's formatter with its `String` cost more than the rest of the command.
//! Past the year 9999 (a UUIDv7's or ULID's 48-bit time reaches 10889) the year is written
//! as ISO 8601's expanded form, a sign and six digits, as JavaScript's `toISOString` does
//! ("+010889-08-02T05:31:50.655Z").

use jiff::Timestamp;

/// The text's longest length: an expanded year ("+YYYYYY-MM-DDTHH:MM:SS.mmmZ").
const LEN: usize = 27;
const MS_PER_DAY: i64 = 86_400_000;
/// 0000-01-01 in days from 1970-01-01.
const FIRST_DAY: i64 = -719_528;
/// The last millisecond of the year 999999, the last an expanded year of six digits holds.
const LAST_MS: i64 = 31_494_784_780_799_999;

/// Hands `f` the ISO-8601 text of `unix_ms` in UTC: jiff's `{:.3}` for the years 0000 to 9999,
/// the expanded form past them up to 999999; jiff's (or "") before 0000 and after 999999.
pub fn with_utc_text<R>(unix_ms: i64, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0u8; LEN];
    match utc_text(unix_ms, &mut buf) {
        Some(text) => f(text),
        None => f(&Timestamp::from_millisecond(unix_ms)
            .map(|t| format!("{t:.3}"))
            .unwrap_or_default()),
    }
}

/// The text of `unix_ms` in `buf`, from 0000-01-01 to the end of the year 999999; `None`
/// outside.
fn utc_text(unix_ms: i64, buf: &mut [u8; LEN]) -> Option<&str> {
    if !(FIRST_DAY * MS_PER_DAY..=LAST_MS).contains(&unix_ms) {
        return None;
    }
    let (day, ms) = (
        unix_ms.div_euclid(MS_PER_DAY),
        unix_ms.rem_euclid(MS_PER_DAY),
    );
    let (year, month, day) = civil(day);
    let mut at = 0;
    let year_width = if year > 9999 {
        buf[0] = b'+';
        at = 1;
        6
    } else {
        4
    };
    let fields: [(u64, usize); 7] = [
        (year, year_width),
        (month, 2),
        (day, 2),
        (ms as u64 / 3_600_000, 2),
        (ms as u64 / 60_000 % 60, 2),
        (ms as u64 / 1000 % 60, 2),
        (ms as u64 % 1000, 3),
    ];
    for (i, (value, width)) in fields.into_iter().enumerate() {
        let mut value = value;
        for slot in buf[at..at + width].iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
        at += width;
        buf[at] = b"--T::.Z"[i];
        at += 1;
    }
    std::str::from_utf8(&buf[..at]).ok()
}

/// The year, month and day of `days` from 1970-01-01, for days from 0000-01-01 on: counted
/// from -0400-03-01 (so never below zero) in 400-year eras of 146,097 days.
fn civil(days: i64) -> (u64, u64, u64) {
    let days = (days + 719_468 + 146_097) as u64;
    let (era, day_of_era) = (days / 146_097, days % 146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months from March, so that February's leap day comes last.
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2) - 400;
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jiff(unix_ms: i64) -> String {
        Timestamp::from_millisecond(unix_ms)
            .map(|t| format!("{t:.3}"))
            .unwrap_or_default()
    }

    /// The last millisecond jiff writes, 9999-12-30T22:00:00.000Z (its range leaves room for
    /// any offset within the years -9999 to 9999).
    const JIFF_LAST_MS: i64 = 253_402_207_200_000;

    #[test]
    fn gives_jiffs_text_from_the_year_0000_to_9999() {
        let mut buf = [0u8; LEN];
        let edges = [
            0,
            -1,
            1,
            FIRST_DAY * MS_PER_DAY,
            FIRST_DAY * MS_PER_DAY - 1,
            JIFF_LAST_MS,
            951_782_400_000,   // 2000-02-29
            4_107_456_000_000, // 2100-03-01
            i64::MIN,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let random = (0..200_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (11_000 * 365 * MS_PER_DAY as u64)) as i64 - 1_000 * 365 * MS_PER_DAY
        });
        for ms in edges.into_iter().chain(random) {
            let ms = ms.min(JIFF_LAST_MS);
            assert_eq!(with_utc_text(ms, str::to_string), jiff(ms), "{ms}");
            let inside = ms >= FIRST_DAY * MS_PER_DAY;
            assert_eq!(utc_text(ms, &mut buf).is_some(), inside, "{ms}");
        }
    }

    #[test]
    fn writes_the_years_past_9999_expanded_as_javascript_does() {
        let text = |ms| with_utc_text(ms, str::to_string);
        // The last UUIDv7 and ULID millisecond: `new Date(2 ** 48 - 1).toISOString()`.
        assert_eq!(text((1 << 48) - 1), "+010889-08-02T05:31:50.655Z");
        assert_eq!(text(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(text(253_402_300_800_000), "+010000-01-01T00:00:00.000Z");
        assert_eq!(text(LAST_MS), "+999999-12-31T23:59:59.999Z");
        // Past six digits: what jiff says (nothing).
        assert_eq!(text(LAST_MS + 1), "");
        assert_eq!(text(i64::MAX), "");
    }
}

//! The IDs of a point in time: the lowest (or highest) ID any node can make in the tick or
//! millisecond holding it. A table keyed by time-ordered IDs can then be range-scanned by time
//! with no timestamp column (`WHERE id >= <lowest ID of 2026-11-01>`), as sonyflake's Compose
//! and PostgreSQL's `uuidv7(shift)` allow.

use std::fmt;

use jiff::civil::{Date, DateTime};
use jiff::Timestamp;

use crate::layout::Layout;
use crate::time128::Form128;

/// Which end of the span of IDs made in one tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The lowest: every field below the time is 0.
    Lowest,
    /// The highest: every field below the time is all ones.
    Highest,
}

/// A time that was not understood, or that the IDs cannot hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeError {
    /// Neither Unix milliseconds nor an ISO-8601 date or time.
    NotATime(String),
    /// Before the first or after the last millisecond the IDs can hold.
    OutOfRange {
        unix_ms: i64,
        first_ms: i64,
        last_ms: i64,
    },
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::NotATime(given) => write!(
                f,
                "'{given}' is not a time: give Unix milliseconds, or ISO-8601 such as \
                 2026-11-01, 2026-11-01T08:00:00 (both UTC) or 2026-11-01T08:00:00+08:00"
            ),
            TimeError::OutOfRange {
                unix_ms,
                first_ms,
                last_ms,
            } => write!(
                f,
                "time {} ({unix_ms} ms) is outside what these IDs hold: {} ({first_ms}) to {} \
                 ({last_ms})",
                iso(*unix_ms),
                iso(*first_ms),
                iso(*last_ms)
            ),
        }
    }
}

impl std::error::Error for TimeError {}

/// `ms` as ISO-8601 in UTC, or the number where no calendar reaches.
fn iso(ms: i64) -> String {
    crate::with_utc_text(ms, |text| match text {
        "" => ms.to_string(),
        text => text.to_string(),
    })
}

/// Unix milliseconds from `text`: an integer (as Redis reads one: no sign `+`, no spaces), an
/// RFC 3339 timestamp with its offset, or a date or date and time without one, read as UTC.
///
/// # Errors
/// [`TimeError::NotATime`] for anything else.
pub fn parse_time(text: &str) -> Result<i64, TimeError> {
    let integer = text.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    if let Some(ms) = integer.then(|| text.parse::<i64>().ok()).flatten() {
        return Ok(ms);
    }
    let utc = |dt: DateTime| dt.to_zoned(jiff::tz::TimeZone::UTC).map(|z| z.timestamp());
    let timestamp = text
        .parse::<Timestamp>()
        .ok()
        .or_else(|| text.parse::<DateTime>().ok().and_then(|dt| utc(dt).ok()))
        .or_else(|| {
            let date = text.parse::<Date>().ok()?;
            utc(date.to_datetime(jiff::civil::Time::midnight())).ok()
        });
    timestamp
        .map(|t| t.as_millisecond())
        .ok_or_else(|| TimeError::NotATime(text.chars().take(64).collect()))
}

/// The lowest or highest Snowflake ID of the tick holding `unix_ms`, under `layout` and
/// `epoch_ms`.
///
/// # Errors
/// [`TimeError::OutOfRange`] before the epoch or past the layout's last tick.
pub fn snowflake_at(
    layout: &Layout,
    epoch_ms: i64,
    unix_ms: i64,
    end: End,
) -> Result<u64, TimeError> {
    let tick_ms = layout.tick_ms() as i64;
    let last_ms = (layout.max_ticks() as i64)
        .checked_mul(tick_ms)
        .and_then(|span| span.checked_add(tick_ms - 1))
        .and_then(|span| span.checked_add(epoch_ms))
        .unwrap_or(i64::MAX);
    if unix_ms < epoch_ms || unix_ms > last_ms {
        return Err(TimeError::OutOfRange {
            unix_ms,
            first_ms: epoch_ms,
            last_ms,
        });
    }
    let ticks = ((unix_ms - epoch_ms) / tick_ms) as u64;
    let lowest = ticks << layout.time_shift();
    Ok(match end {
        End::Lowest => lowest,
        End::Highest => lowest | ((1u64 << layout.time_shift()) - 1),
    })
}

/// The lowest or highest UUIDv7 or ULID of the millisecond `unix_ms`.
///
/// # Errors
/// [`TimeError::OutOfRange`] before 1970 or past the 48-bit timestamp's last millisecond.
pub fn time128_at(form: Form128, unix_ms: i64, end: End) -> Result<u128, TimeError> {
    let last_ms = (1i64 << 48) - 1;
    if !(0..=last_ms).contains(&unix_ms) {
        return Err(TimeError::OutOfRange {
            unix_ms,
            first_ms: 0,
            last_ms,
        });
    }
    let random = match end {
        End::Lowest => 0,
        End::Highest => (1u128 << form.random_bits()) - 1,
    };
    Ok(form.compose(unix_ms as u64, random))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TWITTER_EPOCH_MS;

    #[test]
    fn times_are_milliseconds_or_iso_8601() {
        assert_eq!(parse_time("1795363200000"), Ok(1_795_363_200_000));
        assert_eq!(parse_time("-5"), Ok(-5));
        assert_eq!(parse_time("2026-11-22"), Ok(1_795_305_600_000));
        assert_eq!(parse_time("2026-11-22T00:00:00Z"), Ok(1_795_305_600_000));
        assert_eq!(
            parse_time("2026-11-22T08:00:00+08:00"),
            Ok(1_795_305_600_000)
        );
        assert_eq!(parse_time("2026-11-22T00:00:00.250"), Ok(1_795_305_600_250));
        for bad in [
            "",
            "soon",
            "2026-13-01",
            "1e3",
            "2026-11-22T25:00",
            "+5",
            " 5",
            "5 ",
        ] {
            assert!(
                matches!(parse_time(bad), Err(TimeError::NotATime(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_snowflake_of_a_time_spans_its_whole_tick() {
        let twitter = Layout::twitter();
        let t = TWITTER_EPOCH_MS + 1_000;
        let low = snowflake_at(&twitter, TWITTER_EPOCH_MS, t, End::Lowest).unwrap();
        let high = snowflake_at(&twitter, TWITTER_EPOCH_MS, t, End::Highest).unwrap();
        assert_eq!(low, 1_000 << 22);
        assert_eq!(high, (1_001 << 22) - 1);
        assert_eq!(twitter.decode(high).ticks, 1_000);
        let sonyflake = Layout::parse("sonyflake").unwrap();
        let ten_ms = snowflake_at(&sonyflake, 0, 25, End::Lowest).unwrap();
        assert_eq!(
            sonyflake.decode(ten_ms).ticks,
            2,
            "25 ms is in the third 10-ms tick"
        );
    }

    #[test]
    fn the_layouts_edges_are_reached_and_not_passed() {
        let twitter = Layout::twitter();
        let epoch = TWITTER_EPOCH_MS;
        assert_eq!(snowflake_at(&twitter, epoch, epoch, End::Lowest), Ok(0));
        let last = epoch + (1i64 << 41) - 1;
        assert_eq!(
            snowflake_at(&twitter, epoch, last, End::Highest),
            Ok(i64::MAX as u64)
        );
        for outside in [epoch - 1, last + 1] {
            let err = snowflake_at(&twitter, epoch, outside, End::Lowest).unwrap_err();
            assert_eq!(
                err,
                TimeError::OutOfRange {
                    unix_ms: outside,
                    first_ms: epoch,
                    last_ms: last
                }
            );
        }
        assert!(snowflake_at(&twitter, epoch, epoch - 1, End::Lowest)
            .unwrap_err()
            .to_string()
            .contains("2010-11-04T01:42:54.657Z"));
    }

    #[test]
    fn a_128_bit_id_of_a_time_decodes_to_it() {
        for form in [Form128::Uuid7, Form128::Ulid] {
            let low = time128_at(form, 1_795_305_600_000, End::Lowest).unwrap();
            let high = time128_at(form, 1_795_305_600_000, End::Highest).unwrap();
            assert_eq!(form.decompose(low).unwrap(), (1_795_305_600_000, 0));
            assert_eq!(form.decompose(high).unwrap().0, 1_795_305_600_000);
            assert!(low < high);
            assert_eq!(
                time128_at(form, (1 << 48) - 1, End::Highest).map(|v| v >> 80),
                Ok((1 << 48) - 1)
            );
            assert!(time128_at(form, 1 << 48, End::Lowest).is_err());
            assert!(time128_at(form, -1, End::Lowest).is_err());
        }
    }
}

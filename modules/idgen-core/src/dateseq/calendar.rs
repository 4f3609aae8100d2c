//! Which day it is in a time zone, cached so that a call costs one comparison.

use std::fmt;

use jiff::tz::{Offset, TimeZone};
use jiff::Timestamp;

/// A time zone that was not understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneError(pub String);

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown time zone '{}': use UTC, an IANA name such as Asia/Shanghai, or an offset such as +08:00",
            self.0
        )
    }
}

impl std::error::Error for ZoneError {}

/// One calendar day in a zone: its date and the half-open span of Unix ms it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Day {
    /// The date as the number yyyyMMdd, e.g. 20261122.
    pub date: u32,
    /// First ms of the day.
    pub start_ms: i64,
    /// First ms of the next day.
    pub end_ms: i64,
}

impl Day {
    /// Whether `unix_ms` falls on this day.
    pub fn contains(&self, unix_ms: i64) -> bool {
        self.start_ms <= unix_ms && unix_ms < self.end_ms
    }
}

/// A time zone, resolved once: UTC, an IANA name, or a fixed offset `+HH:MM`.
#[derive(Clone, Debug)]
pub struct Calendar {
    name: String,
    zone: TimeZone,
}

impl Calendar {
    /// Resolves `name`.
    ///
    /// # Errors
    /// [`ZoneError`] when `name` is neither a known zone nor an offset.
    pub fn new(name: &str) -> Result<Self, ZoneError> {
        let name = name.trim();
        let zone = match parse_offset(name) {
            Some(offset) => TimeZone::fixed(offset),
            None if name.eq_ignore_ascii_case("UTC") => TimeZone::UTC,
            None => TimeZone::get(name).map_err(|_| ZoneError(name.to_string()))?,
        };
        Ok(Calendar {
            name: name.to_string(),
            zone,
        })
    }

    /// The zone's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The day `unix_ms` falls on. Times outside years 1000..=9999 are clamped into them so the
    /// date always has 8 digits.
    pub fn day_of(&self, unix_ms: i64) -> Day {
        const MIN_MS: i64 = -30_610_224_000_000; // 1000-01-01T00:00:00Z
        const MAX_MS: i64 = 253_402_214_400_000 - 86_400_000; // 9999-12-31T00:00:00Z
        let ms = unix_ms.clamp(MIN_MS, MAX_MS);
        let ts = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let date = ts.to_zoned(self.zone.clone()).date();
        let start = |d: jiff::civil::Date| {
            d.to_zoned(self.zone.clone())
                .map(|z| z.timestamp().as_millisecond())
        };
        let start_ms = start(date).unwrap_or(ms - ms.rem_euclid(86_400_000));
        let end_ms = date
            .tomorrow()
            .ok()
            .and_then(|d| start(d).ok())
            .unwrap_or(start_ms + 86_400_000);
        Day {
            date: date.year() as u32 * 10_000 + date.month() as u32 * 100 + date.day() as u32,
            start_ms,
            end_ms,
        }
    }
}

fn parse_offset(name: &str) -> Option<Offset> {
    let sign = match name.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    // +HH or +HH:MM, two digits each: "-1" is more likely a typo than an offset.
    let (hours, minutes) = name[1..].split_once(':').unwrap_or((&name[1..], "00"));
    let two_digits = |t: &str| t.len() == 2 && t.bytes().all(|b| b.is_ascii_digit());
    if !two_digits(hours) || !two_digits(minutes) {
        return None;
    }
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 18 || minutes > 59 {
        return None;
    }
    Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()
}

/// A calendar plus the day last asked for: recomputes only when a call crosses midnight.
#[derive(Clone, Debug)]
pub struct DayCache {
    calendar: Calendar,
    day: Day,
}

impl DayCache {
    /// A cache over `calendar`.
    pub fn new(calendar: Calendar) -> Self {
        let day = calendar.day_of(0);
        DayCache { calendar, day }
    }

    /// The calendar in use.
    pub fn calendar(&self) -> &Calendar {
        &self.calendar
    }

    /// The day `unix_ms` falls on.
    pub fn day_of(&mut self, unix_ms: i64) -> Day {
        if !self.day.contains(unix_ms) {
            self.day = self.calendar.day_of(unix_ms);
        }
        self.day
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-11-22T15:59:59.999Z and one ms later.
    const BEFORE_SHANGHAI_MIDNIGHT: i64 = 1_795_363_199_999;

    #[test]
    fn date_rolls_over_at_midnight_in_the_zone() {
        let utc = Calendar::new("UTC").unwrap();
        let shanghai = Calendar::new("Asia/Shanghai").unwrap();
        let fixed = Calendar::new("+08:00").unwrap();
        assert_eq!(utc.day_of(BEFORE_SHANGHAI_MIDNIGHT).date, 20261122);
        assert_eq!(utc.day_of(BEFORE_SHANGHAI_MIDNIGHT + 1).date, 20261122);
        for zone in [&shanghai, &fixed] {
            assert_eq!(
                zone.day_of(BEFORE_SHANGHAI_MIDNIGHT).date,
                20261122,
                "{}",
                zone.name()
            );
            let next = zone.day_of(BEFORE_SHANGHAI_MIDNIGHT + 1);
            assert_eq!(next.date, 20261123, "{}", zone.name());
            assert_eq!(next.start_ms, BEFORE_SHANGHAI_MIDNIGHT + 1);
            assert_eq!(next.end_ms - next.start_ms, 86_400_000);
        }
    }

    #[test]
    fn dst_days_have_their_real_length() {
        let berlin = Calendar::new("Europe/Berlin").unwrap();
        // 2026-03-29 has 23 hours in Berlin, 2026-10-25 has 25.
        let spring = berlin.day_of(1_774_785_600_000); // 2026-03-29T12:00Z
        assert_eq!(spring.date, 20260329);
        assert_eq!(spring.end_ms - spring.start_ms, 23 * 3_600_000);
        let autumn = berlin.day_of(1_792_929_600_000); // 2026-10-25T12:00Z
        assert_eq!(autumn.date, 20261025);
        assert_eq!(autumn.end_ms - autumn.start_ms, 25 * 3_600_000);
    }

    #[test]
    fn cache_follows_the_clock_across_midnight_and_back() {
        let mut cache = DayCache::new(Calendar::new("-05:00").unwrap());
        let t = 1_795_410_000_000; // 2026-11-23T05:00:00Z = midnight in -05:00
        assert_eq!(cache.day_of(t - 1).date, 20261122);
        assert_eq!(cache.day_of(t).date, 20261123);
        assert_eq!(
            cache.day_of(t - 1).date,
            20261122,
            "a clock stepped back gets yesterday"
        );
    }

    #[test]
    fn unknown_zones_are_refused() {
        for bad in [
            "Mars/Olympus",
            "+25:00",
            "",
            "8",
            "-1",
            "+8:00",
            "+08:0",
            "+-8",
        ] {
            assert!(Calendar::new(bad).is_err(), "{bad:?}");
        }
    }
}

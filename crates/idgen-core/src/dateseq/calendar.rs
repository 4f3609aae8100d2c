//! Which day, month or year it is in a time zone, cached so that a call costs one comparison.

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

/// How long a DATESEQ counter runs before it starts again at 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Period {
    /// A counter per day, labelled yyyyMMdd.
    #[default]
    Day,
    /// A counter per month, labelled yyyyMM.
    Month,
    /// A counter per year, labelled yyyy (invoice numbers usually restart each year).
    Year,
}

impl Period {
    /// Every period, in the order of [`Period::index`].
    pub const ALL: [Period; 3] = [Period::Day, Period::Month, Period::Year];

    /// `day`, `month` or `year`, in any case.
    pub fn parse(word: &[u8]) -> Option<Period> {
        Period::ALL
            .into_iter()
            .find(|p| word.eq_ignore_ascii_case(p.name().as_bytes()))
    }

    /// The period's name as PERIOD takes it.
    pub fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
            Period::Year => "year",
        }
    }

    /// 0, 1, 2: the period's place in [`Period::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One period in a zone (a day, a month or a year): its label and the half-open span of Unix
/// ms it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Day {
    /// The label as a number: yyyyMMdd (20261122) for a day, yyyyMM (202611) for a month,
    /// yyyy (2026) for a year.
    pub date: u32,
    /// First ms of the period.
    pub start_ms: i64,
    /// First ms of the next period.
    pub end_ms: i64,
}

impl Day {
    /// Whether `unix_ms` falls in this period.
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

    /// The instant at which `other` shows the wall time this calendar shows at `unix_ms` (a
    /// period's end read in another zone); `unix_ms` itself where `other` has no such time.
    pub fn same_wall_time(&self, unix_ms: i64, other: &Calendar) -> i64 {
        let wall =
            Timestamp::from_millisecond(unix_ms).map(|t| t.to_zoned(self.zone.clone()).datetime());
        wall.and_then(|w| w.to_zoned(other.zone.clone()))
            .map_or(unix_ms, |z| z.timestamp().as_millisecond())
    }

    /// The day `unix_ms` falls on. Times outside years 1000..=9999 are clamped into them so the
    /// date always has 8 digits.
    pub fn day_of(&self, unix_ms: i64) -> Day {
        self.period_of(unix_ms, Period::Day)
    }

    /// The day, month or year `unix_ms` falls in. Times outside years 1000..=9999 are clamped
    /// into them so the label always has 8, 6 or 4 digits.
    pub fn period_of(&self, unix_ms: i64, period: Period) -> Day {
        const MIN_MS: i64 = -30_610_224_000_000; // 1000-01-01T00:00:00Z
        const MAX_MS: i64 = 253_402_214_400_000 - 86_400_000; // 9999-12-31T00:00:00Z
        let ms = unix_ms.clamp(MIN_MS, MAX_MS);
        let ts = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let date = ts.to_zoned(self.zone.clone()).date();
        let (year, month, day) = (date.year() as u32, date.month() as u32, date.day() as u32);
        let (first, label) = match period {
            Period::Day => (Some(date), year * 10_000 + month * 100 + day),
            Period::Month => (date.first_of_month().into(), year * 100 + month),
            Period::Year => (date.first_of_year().into(), year),
        };
        let next = first.and_then(|d| match period {
            Period::Day => d.tomorrow().ok(),
            Period::Month => d.checked_add(jiff::Span::new().months(1)).ok(),
            Period::Year => d.checked_add(jiff::Span::new().years(1)).ok(),
        });
        let start = |d: jiff::civil::Date| {
            d.to_zoned(self.zone.clone())
                .map(|z| z.timestamp().as_millisecond())
                .ok()
        };
        let start_ms = first
            .and_then(start)
            .unwrap_or(ms - ms.rem_euclid(86_400_000));
        // The last period (9999) ends where the calendar does.
        let end_ms = next.and_then(start).unwrap_or(MAX_MS + 86_400_000);
        Day {
            date: label,
            start_ms,
            end_ms,
        }
    }
}

/// A zone's offsets from UTC over a span of time, for what cannot read a time-zone database
/// (the Functions library has them written into its source at install).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offsets {
    /// The offset, in seconds, at the span's start.
    pub first_s: i32,
    /// Each change within the span: from when (Unix ms), the new offset in seconds.
    pub changes: Vec<(i64, i32)>,
}

impl Calendar {
    /// The zone's offsets from `from_ms` up to `to_ms`.
    pub fn offsets(&self, from_ms: i64, to_ms: i64) -> Offsets {
        let from = Timestamp::from_millisecond(from_ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let first_s = self.zone.to_offset(from).seconds();
        let mut changes: Vec<(i64, i32)> = Vec::new();
        for transition in self.zone.following(from) {
            let at = transition.timestamp().as_millisecond();
            if at >= to_ms {
                break;
            }
            // A change of name or of DST alone leaves the clock where it was.
            let offset = transition.offset().seconds();
            if offset != changes.last().map_or(first_s, |&(_, o)| o) {
                changes.push((at, offset));
            }
        }
        Offsets { first_s, changes }
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

/// A calendar plus the day, month and year last asked for: recomputes only when a call
/// crosses into another.
#[derive(Clone, Debug)]
pub struct DayCache {
    calendar: Calendar,
    spans: [Day; 3],
}

impl DayCache {
    /// A cache over `calendar`.
    pub fn new(calendar: Calendar) -> Self {
        let spans = Period::ALL.map(|p| calendar.period_of(0, p));
        DayCache { calendar, spans }
    }

    /// The calendar in use.
    pub fn calendar(&self) -> &Calendar {
        &self.calendar
    }

    /// The day `unix_ms` falls on.
    pub fn day_of(&mut self, unix_ms: i64) -> Day {
        self.period_of(unix_ms, Period::Day)
    }

    /// The day, month or year `unix_ms` falls in.
    pub fn period_of(&mut self, unix_ms: i64, period: Period) -> Day {
        let span = &mut self.spans[period.index()];
        if !span.contains(unix_ms) {
            *span = self.calendar.period_of(unix_ms, period);
        }
        *span
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-11-22T15:59:59.999Z and one ms later.
    const BEFORE_SHANGHAI_MIDNIGHT: i64 = 1_795_363_199_999;

    #[test]
    fn a_periods_end_read_in_another_zone_is_the_same_wall_time_there() {
        let (tokyo, baker) = (
            Calendar::new("+09:00").unwrap(),
            Calendar::new("-12:00").unwrap(),
        );
        let day = tokyo.day_of(BEFORE_SHANGHAI_MIDNIGHT);
        // 2026-11-23T00:00 is 15:00Z in +09:00 and 12:00Z the next day in -12:00.
        assert_eq!(day.date, 20261123);
        let there = tokyo.same_wall_time(day.end_ms, &baker);
        assert_eq!(there - day.end_ms, 21 * 3_600_000);
        assert_eq!(baker.day_of(there).date, 20261124);
        assert_eq!(baker.day_of(there - 1).date, 20261123);
    }

    #[test]
    fn offsets_name_each_change_of_the_clock_and_nothing_else() {
        // 2026: New York goes to -04:00 on 8 March at 07:00 UTC, back to -05:00 on 1 November
        // at 06:00 UTC.
        let new_york = Calendar::new("America/New_York").unwrap();
        let (jan_2026, jan_2027) = (1_767_225_600_000, 1_798_761_600_000);
        let offsets = new_york.offsets(jan_2026, jan_2027);
        assert_eq!(offsets.first_s, -5 * 3600);
        assert_eq!(
            offsets.changes,
            vec![
                (1_772_953_200_000, -4 * 3600),
                (1_793_512_800_000, -5 * 3600)
            ]
        );
        let fixed = Calendar::new("+09:00").unwrap().offsets(jan_2026, jan_2027);
        assert_eq!((fixed.first_s, fixed.changes.len()), (9 * 3600, 0));
        let utc = Calendar::new("UTC").unwrap().offsets(0, jan_2027);
        assert_eq!((utc.first_s, utc.changes.len()), (0, 0));
    }

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

    #[test]
    fn months_and_years_turn_at_midnight_in_the_zone() {
        // 2026-11-30T16:00:00Z is midnight of 2026-12-01 in Shanghai (UTC+8).
        let turn = 1_796_054_400_000;
        let shanghai = Calendar::new("Asia/Shanghai").unwrap();
        let month = shanghai.period_of(turn - 1, Period::Month);
        assert_eq!(month.date, 202611);
        assert_eq!(month.end_ms, turn);
        assert_eq!(month.end_ms - month.start_ms, 30 * 86_400_000);
        assert_eq!(shanghai.period_of(turn, Period::Month).date, 202612);
        assert_eq!(shanghai.period_of(turn, Period::Year).date, 2026);
        // 2026-12-31T16:00:00Z: the year turns in Shanghai, not yet in UTC.
        let new_year = 1_798_732_800_000;
        let year = shanghai.period_of(new_year - 1, Period::Year);
        assert_eq!((year.date, year.end_ms), (2026, new_year));
        assert_eq!(shanghai.period_of(new_year, Period::Year).date, 2027);
        assert_eq!(shanghai.period_of(new_year, Period::Month).date, 202701);
        let utc = Calendar::new("UTC").unwrap();
        assert_eq!(utc.period_of(new_year, Period::Year).date, 2026);
    }

    #[test]
    fn the_cache_keeps_each_period_apart() {
        let mut cache = DayCache::new(Calendar::new("UTC").unwrap());
        let t = 1_795_305_600_000; // 2026-11-22T00:00:00Z
        assert_eq!(cache.period_of(t, Period::Year).date, 2026);
        assert_eq!(cache.period_of(t, Period::Day).date, 20261122);
        assert_eq!(cache.period_of(t, Period::Month).date, 202611);
        assert_eq!(cache.period_of(t - 1, Period::Day).date, 20261121);
        assert_eq!(cache.period_of(t, Period::Year).date, 2026);
    }

    #[test]
    fn periods_are_read_by_name() {
        assert_eq!(Period::parse(b"MONTH"), Some(Period::Month));
        assert_eq!(Period::parse(b"year"), Some(Period::Year));
        assert_eq!(Period::parse(b"Day"), Some(Period::Day));
        assert_eq!(Period::parse(b"week"), None);
    }
}

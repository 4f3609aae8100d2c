//! What a server's IDs so far were made under (layout and epoch), and whether new settings
//! carry on above them.
//!
//! An ID is a time since the epoch, shifted. Move a server that has issued IDs to a later epoch
//! (E1 to E2) and the ID it makes at time t equals the one it made at t - (E2 - E1): every ID of
//! that stretch comes round again. A narrower time field or a smaller shift does the same. So
//! the state file records the lineage beside the time the server's IDs are reserved up to, and
//! a restart under another lineage is refused unless its first ID is above every old one.

use std::fmt;

use idgen_core::layout::{Field, Layout};

/// A layout and an epoch: what gives an ID its meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lineage {
    /// The bit layout.
    pub layout: Layout,
    /// The epoch, ms since 1970.
    pub epoch_ms: i64,
}

/// Why new settings may not carry on: their first ID is not above the largest old one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The largest ID the old lineage may have issued.
    pub largest_issued: u64,
    /// The smallest ID the new lineage can issue next.
    pub next_at_least: u64,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the next ID could be as low as {}, not above {}, the largest this server may have \
             issued: new IDs would equal old ones",
            self.next_at_least, self.largest_issued
        )
    }
}

impl Lineage {
    /// The words a state file keeps: `layout=<spec> epoch=<ms>`.
    pub fn record(&self) -> String {
        format!("layout={} epoch={}", self.layout, self.epoch_ms)
    }

    /// Reads [`Lineage::record`]'s words back.
    ///
    /// # Errors
    /// A word that is missing or does not parse.
    pub fn parse_record(words: &str) -> Result<Lineage, String> {
        let field = |name: &str| {
            words
                .split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
                .ok_or_else(|| format!("no {name}= in '{words}'"))
        };
        let layout = Layout::parse(field("layout")?).map_err(|e| e.to_string())?;
        let epoch = field("epoch")?;
        let epoch_ms = epoch
            .parse::<i64>()
            .ok()
            .filter(|e| *e >= 0)
            .ok_or_else(|| format!("epoch={epoch} is not a time in ms from 0 up"))?;
        Ok(Lineage { layout, epoch_ms })
    }

    /// Whether IDs made under `self` from now on are all above every ID `issued` made before
    /// `below_unix_ms` (the durable reservation), given that the generator resumes above that
    /// time and the clock reads `now_ms`.
    ///
    /// # Errors
    /// The [`Overlap`] when they may not be.
    pub fn carries_on_from(
        &self,
        issued: &Lineage,
        below_unix_ms: i64,
        now_ms: i64,
    ) -> Result<(), Overlap> {
        if self == issued || below_unix_ms <= issued.epoch_ms {
            return Ok(());
        }
        let old = &issued.layout;
        let last_tick = ticks(below_unix_ms - 1, issued.epoch_ms, old);
        let largest_issued = old.compose(
            last_tick,
            old.max(Field::Datacenter),
            old.max(Field::Worker),
            old.max(Field::Sequence),
        );
        // Resuming above the reservation spends the rest of its tick, so the first new ID is
        // in a later tick, or in the clock's if that is later still.
        let new = &self.layout;
        let first_tick = (ticks(below_unix_ms, self.epoch_ms, new) + 1)
            .max(ticks(now_ms, self.epoch_ms, new))
            .min(new.max_ticks());
        let next_at_least = new.compose(first_tick, 0, 0, 0);
        if next_at_least > largest_issued {
            Ok(())
        } else {
            Err(Overlap {
                largest_issued,
                next_at_least,
            })
        }
    }
}

/// Ticks of `layout` from `epoch_ms` to `unix_ms`: 0 before the epoch, at most the field's
/// largest value.
fn ticks(unix_ms: i64, epoch_ms: i64, layout: &Layout) -> u64 {
    layout
        .ticks_between(epoch_ms, unix_ms)
        .min(layout.max_ticks())
}

#[cfg(test)]
mod tests {
    use super::*;
    use idgen_core::layout::{INSTAGRAM_EPOCH_MS, SONYFLAKE_EPOCH_MS};
    use idgen_core::TWITTER_EPOCH_MS;

    const NOW: i64 = 1_795_400_000_000;

    fn lineage(layout: Layout, epoch_ms: i64) -> Lineage {
        Lineage { layout, epoch_ms }
    }

    #[test]
    fn the_same_settings_or_an_earlier_epoch_carry_on() {
        for layout in [Layout::twitter(), Layout::sonyflake(), Layout::instagram()] {
            let old = lineage(layout.clone(), TWITTER_EPOCH_MS);
            assert_eq!(old.carries_on_from(&old, NOW + 500, NOW), Ok(()));
            let earlier = lineage(layout, TWITTER_EPOCH_MS - 86_400_000);
            assert_eq!(earlier.carries_on_from(&old, NOW + 500, NOW), Ok(()));
        }
        // On one epoch, ms shifted 22 (Twitter) outgrow 10 ms units shifted 24 (Sonyflake): the
        // move to Twitter's layout carries on, the move back does not.
        let twitter = lineage(Layout::twitter(), TWITTER_EPOCH_MS);
        let sony = lineage(Layout::sonyflake(), TWITTER_EPOCH_MS);
        assert_eq!(twitter.carries_on_from(&sony, NOW, NOW), Ok(()));
        assert!(sony.carries_on_from(&twitter, NOW, NOW).is_err());
    }

    #[test]
    fn a_later_epoch_is_an_overlap() {
        // Every `layout sonyflake` server before profiles had their epochs: Twitter's epoch.
        let before = lineage(Layout::sonyflake(), TWITTER_EPOCH_MS);
        let after = lineage(Layout::sonyflake(), SONYFLAKE_EPOCH_MS);
        let overlap = after.carries_on_from(&before, NOW + 500, NOW).unwrap_err();
        assert!(overlap.next_at_least <= overlap.largest_issued);
        // Exactly the old IDs of 3.8 years earlier come round: the new first ID decodes, under
        // the old lineage, to a time that long before now.
        let shift_ms = SONYFLAKE_EPOCH_MS - TWITTER_EPOCH_MS;
        let old_time =
            before.layout.decode(overlap.next_at_least).ticks as i64 * 10 + TWITTER_EPOCH_MS;
        assert!((NOW - shift_ms - old_time).abs() < 1_000, "{old_time}");
        let instagram = lineage(Layout::instagram(), INSTAGRAM_EPOCH_MS);
        let old = lineage(Layout::instagram(), TWITTER_EPOCH_MS);
        assert!(instagram.carries_on_from(&old, NOW, NOW).is_err());
    }

    #[test]
    fn a_narrower_shift_is_an_overlap_and_nothing_issued_is_none() {
        let twitter = lineage(Layout::twitter(), TWITTER_EPOCH_MS);
        let js53 = lineage(Layout::js53(), TWITTER_EPOCH_MS);
        assert!(js53.carries_on_from(&twitter, NOW, NOW).is_err());
        assert_eq!(twitter.carries_on_from(&js53, NOW, NOW), Ok(()));
        // A reservation from before the old epoch covers no ID at all.
        let later = lineage(Layout::twitter(), NOW);
        assert_eq!(
            later.carries_on_from(&twitter, TWITTER_EPOCH_MS, NOW),
            Ok(())
        );
    }

    #[test]
    fn the_boundary_is_exact_within_one_tick() {
        // Ten-ms ticks: the reservation's tick is spent on resume, so a server restarted under
        // an epoch one tick later still starts above its old IDs, and two ticks later does not
        // when the clock has not moved past the reservation.
        let old = lineage(Layout::sonyflake(), TWITTER_EPOCH_MS);
        let below = NOW + 500;
        let one_later = lineage(Layout::sonyflake(), TWITTER_EPOCH_MS + 10);
        let two_later = lineage(Layout::sonyflake(), TWITTER_EPOCH_MS + 20);
        let aligned = below - (below - TWITTER_EPOCH_MS) % 10;
        assert_eq!(one_later.carries_on_from(&old, aligned, NOW), Ok(()));
        assert!(two_later.carries_on_from(&old, aligned, NOW).is_err());
    }

    #[test]
    fn the_record_round_trips() {
        for layout in [Layout::twitter(), Layout::js53(), Layout::sonyflake()] {
            let l = lineage(layout, SONYFLAKE_EPOCH_MS);
            assert_eq!(Lineage::parse_record(&l.record()), Ok(l.clone()));
        }
        assert!(Lineage::parse_record("layout=twitter").is_err());
        assert!(Lineage::parse_record("layout=nope epoch=1").is_err());
        assert!(Lineage::parse_record("layout=twitter epoch=x").is_err());
    }
}

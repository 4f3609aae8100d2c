//! The witness of each date-sequence counter: the highest value this node handed out from it in
//! its period, kept beside the counter itself.
//!
//! The counter is a key any client can reach: DEL, SET, a lower INCRBY, FLUSHALL, RENAME,
//! RESTORE or COPY of an older copy, or DEBUG RELOAD from an older file all put it below what
//! was handed out, and the next value would repeat one. The witness is checked on every call: a
//! counter found below its witness continues above the witness instead.
//!
//! A witness lives as long as its period (plus [`GRACE_MS`]): after that no call names its
//! counter. Their number is capped ([`Witnesses::new`]), so a flood of made-up prefixes costs
//! bounded memory and is refused, never forgotten.
//!
//! Witnesses are kept by a 64-bit hash of the counter's name (seeded at random per process),
//! not the name: 25 bytes a slot, no allocation per counter. Two names that share a hash share
//! one witness, and each then carries on above the higher of the two: a gap, never a repeat
//! (about one pair in 150 million among 500,000 counters).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::mem::size_of;

use foldhash::fast::RandomState;

/// How long a witness outlives its period: room for a clock read across the period's end.
pub const GRACE_MS: i64 = 3_600_000;

/// What is known of one counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    /// The highest value handed out from the counter (0 for none yet).
    pub highest: u64,
    /// The first ms after the counter's period (its witness is dropped [`GRACE_MS`] later).
    pub ends_ms: i64,
}

impl Mark {
    /// Where a counter found at `found` continues from: `found`, or the witness if the counter
    /// is below it (then also what was found).
    #[inline]
    pub fn resume(&self, found: u64) -> (u64, Option<Lowered>) {
        if found >= self.highest {
            return (found, None);
        }
        let lowered = Lowered {
            found,
            highest: self.highest,
        };
        (self.highest, Some(lowered))
    }

    /// Records that `highest` was handed out; never lowers the witness.
    #[inline]
    pub fn note(&mut self, highest: u64) {
        self.highest = self.highest.max(highest);
    }
}

/// The counter was found below its witness, and continues above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lowered {
    /// The counter as found (0 for a missing key).
    pub found: u64,
    /// The witness: the highest value handed out.
    pub highest: u64,
}

/// The witnesses are at their cap: a new counter is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full {
    pub max: usize,
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this node already witnesses {} date-sequence counters in their period \
             (idgen.dateseq-witness-max): a new counter would go unwitnessed; raise the limit",
            self.max
        )
    }
}

/// Every counter's witness, by a hash of its key name ([`Witnesses::name`]).
#[derive(Debug)]
pub struct Witnesses {
    marks: HashMap<u64, Mark, RandomState>,
    /// Hashes key names.
    names: RandomState,
    /// The most marks kept.
    max: usize,
    /// The earliest `ends_ms` of any mark: nothing to drop before it plus the grace.
    earliest_end_ms: i64,
    /// The counter named last and its mark, which is ahead of the table's copy: most calls name
    /// the counter the call before did, and find it here without a lookup. Written back when
    /// another counter is named.
    last: Option<(u64, Mark)>,
}

impl Witnesses {
    /// No witnesses yet; at most `max` at a time.
    pub fn new(max: usize) -> Witnesses {
        Witnesses {
            marks: HashMap::with_hasher(RandomState::default()),
            names: RandomState::default(),
            max,
            earliest_end_ms: i64::MAX,
            last: None,
        }
    }

    /// The name a counter key is witnessed under: a 64-bit hash, seeded at random per process.
    pub fn name(&self, key: &[u8]) -> u64 {
        self.names.hash_one(key)
    }

    /// Changes the cap; marks already kept stay.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// The witness of the counter named `name` ([`Witnesses::name`]), made (with nothing
    /// handed out yet) if it has none.
    ///
    /// # Errors
    /// [`Full`] for a counter not yet witnessed when the cap is reached (after dropping the
    /// marks of periods over by `now_ms`).
    #[inline]
    pub fn slot(&mut self, name: u64, ends_ms: i64, now_ms: i64) -> Result<&mut Mark, Full> {
        let prune_due = now_ms >= self.earliest_end_ms.saturating_add(GRACE_MS);
        if prune_due || !matches!(self.last, Some((last, _)) if last == name) {
            self.switch_to(name, ends_ms, now_ms)?;
        }
        // `last` is this counter's now (never empty after a switch).
        self.last
            .as_mut()
            .map(|(_, mark)| mark)
            .ok_or(Full { max: self.max })
    }

    /// Makes `name` the last counter named (for [`Witnesses::slot`], when another was, or marks
    /// are due to be dropped): the last one's mark goes back to the table, this one's comes out.
    fn switch_to(&mut self, name: u64, ends_ms: i64, now_ms: i64) -> Result<(), Full> {
        if let Some((last, mark)) = self.last.take() {
            self.marks.insert(last, mark);
        }
        if self.marks.len() >= self.max || now_ms >= self.earliest_end_ms.saturating_add(GRACE_MS) {
            self.make_room(name, now_ms)?;
        }
        self.earliest_end_ms = self.earliest_end_ms.min(ends_ms);
        let fresh = Mark {
            highest: 0,
            ends_ms,
        };
        let mark = *self.marks.entry(name).or_insert(fresh);
        self.last = Some((name, mark));
        Ok(())
    }

    /// The witness of the counter named `name`, if kept.
    pub fn mark(&self, name: u64) -> Option<Mark> {
        match self.last {
            Some((last, mark)) if last == name => Some(mark),
            _ => self.marks.get(&name).copied(),
        }
    }

    /// How many counters are witnessed.
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    /// Whether no counter is witnessed.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// The memory the witnesses take, in bytes: an entry and a control byte per bucket of the
    /// table (a power of two, at most 7/8 full).
    pub fn bytes(&self) -> usize {
        let buckets = match self.marks.capacity() {
            0 => 0,
            capacity => (capacity * 8 / 7).next_power_of_two(),
        };
        buckets * (size_of::<(u64, Mark)>() + 1)
    }

    /// Drops the marks of periods long over, when the time comes; refuses a counter not yet
    /// witnessed if the cap is still reached.
    #[cold]
    fn make_room(&mut self, name: u64, now_ms: i64) -> Result<(), Full> {
        if now_ms >= self.earliest_end_ms.saturating_add(GRACE_MS) {
            self.drop_ended(now_ms);
        }
        if self.marks.len() >= self.max && !self.marks.contains_key(&name) {
            return Err(Full { max: self.max });
        }
        Ok(())
    }

    /// Drops the marks whose period ended more than [`GRACE_MS`] before `now_ms`.
    fn drop_ended(&mut self, now_ms: i64) {
        let mut earliest = i64::MAX;
        self.marks.retain(|_, mark| {
            let keep = now_ms < mark.ends_ms.saturating_add(GRACE_MS);
            if keep {
                earliest = earliest.min(mark.ends_ms);
            }
            keep
        });
        self.earliest_end_ms = earliest;
        self.marks.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_END: i64 = 1_795_046_400_000;
    const NOW: i64 = DAY_END - 1_000;

    #[test]
    fn a_counter_below_its_witness_continues_above_it() {
        let mut w = Witnesses::new(10);
        let mark = w.slot(w.name(b"inv:20261126"), DAY_END, NOW).unwrap();
        assert_eq!(mark.resume(0), (0, None));
        mark.note(5);
        // Raised by a client: carried on from.
        assert_eq!(mark.resume(9), (9, None));
        mark.note(10);
        // Deleted (found at 0) or lowered.
        for found in [0, 3, 9] {
            let lowered = Lowered { found, highest: 10 };
            let mark = w.slot(w.name(b"inv:20261126"), DAY_END, NOW).unwrap();
            assert_eq!(mark.resume(found), (10, Some(lowered)));
        }
        // Another counter is not confused with it.
        let other = w.slot(w.name(b"inv:20261127"), DAY_END, NOW).unwrap();
        assert_eq!(other.resume(0), (0, None));
        // Counters named in turn each keep their own witness.
        w.slot(w.name(b"a"), DAY_END, NOW).unwrap().note(5);
        w.slot(w.name(b"b"), DAY_END, NOW).unwrap().note(7);
        assert_eq!(w.slot(w.name(b"a"), DAY_END, NOW).unwrap().highest, 5);
        assert_eq!(w.mark(w.name(b"b")).unwrap().highest, 7);
        assert_eq!(w.mark(w.name(b"a")).unwrap().highest, 5);
        // A note never lowers the witness.
        w.slot(w.name(b"inv:20261126"), DAY_END, NOW)
            .unwrap()
            .note(2);
        assert_eq!(w.mark(w.name(b"inv:20261126")).unwrap().highest, 10);
    }

    #[test]
    fn the_cap_refuses_new_counters_until_a_period_is_over() {
        let mut w = Witnesses::new(2);
        w.slot(w.name(b"a"), DAY_END, NOW).unwrap();
        w.slot(w.name(b"b"), DAY_END + 86_400_000, NOW).unwrap();
        assert_eq!(w.slot(w.name(b"c"), DAY_END, NOW), Err(Full { max: 2 }));
        assert!(
            w.slot(w.name(b"a"), DAY_END, NOW).is_ok(),
            "a kept counter is not new"
        );
        // The day is over, and the grace: its counter's witness goes, the other stays.
        let later = DAY_END + GRACE_MS;
        assert!(w.slot(w.name(b"c"), DAY_END + 86_400_000, later).is_ok());
        assert_eq!(w.len(), 2);
        assert!(w.mark(w.name(b"a")).is_none() && w.mark(w.name(b"b")).is_some());
    }

    #[test]
    fn the_memory_shown_grows_with_the_counters_and_falls_when_they_go() {
        let mut w = Witnesses::new(usize::MAX);
        let empty = w.bytes();
        for i in 0..10_000u32 {
            let key = format!("customer-{i}:20261126");
            w.slot(w.name(key.as_bytes()), DAY_END, NOW).unwrap();
        }
        let full = w.bytes();
        assert!(full > empty + 10_000 * 25, "{full}");
        w.slot(
            w.name(b"tomorrow"),
            DAY_END + 86_400_000,
            DAY_END + GRACE_MS,
        )
        .unwrap();
        assert!(w.bytes() < full / 100, "{}", w.bytes());
    }
}

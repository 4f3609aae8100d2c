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
//!
//! With a witness file ([`super::ledger`]), each witness also says how far its counter is
//! reserved on disk: a value above that reservation is not handed out until a block above it is
//! written ([`Mark::reserve`]). The file's first line reserves the first [`NEW_COUNTER_BLOCK`]
//! values of every counter at DIGITS that hold [`SKIP_SHARE`] times that or more
//! ([`first_line_covers`]), so a new counter's first values wait for nothing: its own block is
//! asked at its first value, and written long before it is needed. After a crash, that line
//! lifts every such counter of a period that was under way to above it, as the counter is used
//! ([`Witnesses::crash_floor`]); a counter of fewer DIGITS waits for its own line instead, so a
//! crash never spends one that issued nothing. Blocks are sized from the counter's rate, as Leaf
//! sizes its segments: a block used up in under half a [`BLOCK_TARGET_MS`] doubles the next, one
//! that lasted over twice that halves it, between [`MIN_BLOCK`] and [`MAX_BLOCK`], and never
//! more than a [`SKIP_SHARE`]th of what the DIGITS hold. A crash leaves a gap of at most one
//! block in a counter: about the values of a second or two at its recent rate, at most
//! [`MIN_BLOCK`] for a counter used less often, and never more than a [`SKIP_SHARE`]th of its
//! DIGITS (or one value).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::mem::size_of;

use foldhash::fast::RandomState;

use super::ledger::Crashed;
use super::GRACE_MS;

/// The smallest block reserved on disk at a time: the most a crash skips in a quiet counter.
pub const MIN_BLOCK: u32 = 16;
/// Values of every counter the witness file does not name yet, reserved by its first line.
pub const NEW_COUNTER_BLOCK: u64 = MIN_BLOCK as u64;
/// The largest block reserved on disk at a time.
pub const MAX_BLOCK: u32 = 1 << 22;
/// How long a block should last: blocks double or halve towards it.
pub const BLOCK_TARGET_MS: u32 = 1_000;
/// A crash skips at most this share of what a counter's DIGITS hold (or one value): blocks stop
/// at `most / SKIP_SHARE`, and the file's first line covers only DIGITS that hold `SKIP_SHARE`
/// new counters' blocks (3 and up).
pub const SKIP_SHARE: u64 = 16;

/// Whether the witness file's first line covers the first [`NEW_COUNTER_BLOCK`] values of a
/// counter whose DIGITS hold `most` values (and a crash lifts it there): only where that is at
/// most a [`SKIP_SHARE`]th of them. Values of other DIGITS are other numbers (a DIGITS 1 value
/// has fewer digits than any DIGITS 3 value), so a counter used at both is safe with either.
#[inline]
pub fn first_line_covers(most: u64) -> bool {
    most >= NEW_COUNTER_BLOCK * SKIP_SHARE
}

/// What is known of one counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The highest value handed out from the counter (0 for none yet).
    pub highest: u64,
    /// The first ms after the counter's period (its witness is dropped [`GRACE_MS`] later).
    pub ends_ms: i64,
    /// Values up to this are reserved on disk (`u64::MAX` without a witness file).
    pub durable: u64,
    /// Values up to this are reserved or being written (never below `durable`).
    pub asked: u64,
    /// The size of the next block asked.
    pub block: u32,
    /// When the last block was asked: ms since 1970, cut to 32 bits (a wrap, every 49 days,
    /// at worst doubles one block).
    pub asked_at: u32,
}

/// What a value handed out needs of the witness file ([`Mark::reserve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserve {
    /// The value is above the reservation on disk: its reply waits for the write.
    pub wait: bool,
    /// Reserve up to this value now (a block ahead), if a block is due.
    pub ask: Option<u64>,
}

impl Mark {
    /// Where a counter found at `found` continues from: `found` or the crash `floor` (the most a
    /// crashed run may have handed out unnamed, [`Witnesses::crash_floor`]), or the witness if
    /// the counter is below it (then also what was found).
    #[inline]
    pub fn resume(&self, found: u64, floor: u64) -> (u64, Option<Lowered>) {
        let lifted = found.max(floor);
        if lifted >= self.highest {
            return (lifted, None);
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

    /// What handing out values up to `highest` at `now_ms` needs of the witness file: a wait
    /// if it is above the reservation (its own lines', and the first line's where `first_line`
    /// covers it, [`first_line_covers`]), and the next block once it comes within half a block
    /// of what was asked (so a steady counter never waits). Blocks stop at `most`, the highest
    /// value the counter's digits hold, and are at most a [`SKIP_SHARE`]th of it: a crash must
    /// not spend the period.
    #[inline]
    pub fn reserve(&mut self, highest: u64, now_ms: i64, most: u64, first_line: bool) -> Reserve {
        let durable = if first_line {
            self.durable.max(NEW_COUNTER_BLOCK)
        } else {
            self.durable
        };
        let wait = highest > durable;
        let due = highest.saturating_add(u64::from(self.block / 2)) > self.asked;
        let ask = if due && (self.asked < most || highest > self.asked) {
            Some(self.ask(highest, now_ms, most))
        } else {
            None
        };
        Reserve { wait, ask }
    }

    /// Asks the next block above `highest`, sized from how long the last one lasted.
    #[cold]
    fn ask(&mut self, highest: u64, now_ms: i64, most: u64) -> u64 {
        let now = now_ms as u32;
        let lasted = now.wrapping_sub(self.asked_at);
        self.block = if lasted < BLOCK_TARGET_MS / 2 {
            self.block.saturating_mul(2).min(MAX_BLOCK)
        } else if lasted > BLOCK_TARGET_MS * 2 {
            (self.block / 2).max(MIN_BLOCK)
        } else {
            self.block
        };
        self.block = self.block.min(largest_block(most));
        self.asked_at = now;
        self.asked = highest
            .saturating_add(u64::from(self.block))
            .min(most.max(highest));
        self.asked
    }
}

/// The largest block of a counter whose DIGITS hold `most` values: a [`SKIP_SHARE`]th of them,
/// at least one.
fn largest_block(most: u64) -> u32 {
    (most / SKIP_SHARE).clamp(1, u64::from(MAX_BLOCK)) as u32
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
    /// Whether a witness file reserves values ahead.
    on_disk: bool,
    /// Runs that crashed: the values every counter the first line covers, of a period
    /// overlapping one, may have handed out without a line of its own in the witness file.
    crashed: Vec<Crashed>,
    /// The earliest `ends_ms` of any mark: nothing to drop before it plus the grace.
    earliest_end_ms: i64,
    /// The counter named last and its mark, which is ahead of the table's copy: most calls name
    /// the counter the call before did, and find it here without a lookup. Written back when
    /// another counter is named.
    last: Option<(u64, Mark)>,
}

impl Witnesses {
    /// No witnesses yet; at most `max` at a time; `on_disk` when a witness file reserves the
    /// values ahead ([`Mark::reserve`]).
    pub fn new(max: usize, on_disk: bool) -> Witnesses {
        Witnesses {
            marks: HashMap::with_hasher(RandomState::default()),
            names: RandomState::default(),
            max,
            on_disk,
            crashed: Vec::new(),
            earliest_end_ms: i64::MAX,
            last: None,
        }
    }

    /// The name a counter key is witnessed under: a 64-bit hash, seeded at random per process.
    pub fn name(&self, key: &[u8]) -> u64 {
        self.names.hash_one(key)
    }

    /// Moves every witness's period end to `to` of it where that is later: the time zone
    /// changed, and a period that was ending ends later there.
    pub fn move_ends(&mut self, to: impl Fn(i64) -> i64) {
        let last = self.last.iter_mut().map(|(_, mark)| mark);
        for mark in self.marks.values_mut().chain(last) {
            mark.ends_ms = mark.ends_ms.max(to(mark.ends_ms));
        }
    }

    /// The witness file says these runs did not stop cleanly: a counter of a period that
    /// overlapped one may have handed out up to its floor, named in the file or not.
    pub fn after_crashes(&mut self, crashed: &[Crashed]) {
        self.crashed = crashed.to_vec();
    }

    /// The most a counter the first line covers ([`first_line_covers`]), of the period from
    /// `start_ms` to `ends_ms`, may have handed out without a line of its own in a run that
    /// crashed: where it resumes if it holds less ([`Mark::resume`]). Kept apart from the mark,
    /// so the counter's other DIGITS are not lifted and DATESEQ.CURRENT shows values given.
    #[inline]
    pub fn crash_floor(&self, start_ms: i64, ends_ms: i64) -> u64 {
        if self.crashed.is_empty() {
            return 0;
        }
        let overlapping = self
            .crashed
            .iter()
            .filter(|c| c.overlaps(start_ms, ends_ms));
        overlapping.map(|c| c.floor).max().unwrap_or(0)
    }

    /// Changes the cap; marks already kept stay.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// The witness of the counter named `name` ([`Witnesses::name`]), of the period ending at
    /// `ends_ms`, made (with nothing handed out yet) if it has none.
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
        let fresh = self.fresh(ends_ms, 0);
        let mark = *self.marks.entry(name).or_insert(fresh);
        self.last = Some((name, mark));
        Ok(())
    }

    /// A mark with `highest` handed out and reserved, its own block not asked yet (all of it
    /// reserved without a witness file).
    fn fresh(&self, ends_ms: i64, highest: u64) -> Mark {
        let reserved = if self.on_disk { highest } else { u64::MAX };
        Mark {
            highest,
            ends_ms,
            durable: reserved,
            asked: reserved,
            block: MIN_BLOCK,
            asked_at: 0,
        }
    }

    /// The mark of `name`, wherever it is kept.
    fn get_mut(&mut self, name: u64) -> Option<&mut Mark> {
        match &mut self.last {
            Some((last, mark)) if *last == name => Some(mark),
            _ => self.marks.get_mut(&name),
        }
    }

    /// Takes in a reservation read from the witness file at load: the counter `name` went no
    /// further than `reserved`, and carries on above it. Kept whatever the cap: a witness is
    /// never forgotten.
    pub fn seed(&mut self, name: u64, ends_ms: i64, reserved: u64) {
        let seeded = self.fresh(ends_ms, reserved);
        self.earliest_end_ms = self.earliest_end_ms.min(ends_ms);
        let mark = self.get_mut(name);
        match mark {
            Some(mark) => {
                mark.note(reserved);
                mark.durable = mark.durable.max(reserved);
                mark.asked = mark.asked.max(reserved);
            }
            None => {
                self.marks.insert(name, seeded);
            }
        }
    }

    /// Takes in the outcome of a write to the witness file: values of `name` up to `upto` are
    /// reserved on disk, or (`written` false) they are not, and the next call asks again.
    pub fn confirm(&mut self, name: u64, upto: u64, written: bool) {
        // A mark dropped since (its period over) needs nothing more.
        let Some(mark) = self.get_mut(name) else {
            return;
        };
        if written {
            mark.durable = mark.durable.max(upto);
        } else {
            // Asked again on the next value, at the same size (retries are not a rate).
            mark.asked = mark.durable;
            mark.block = (mark.block / 2).max(MIN_BLOCK);
        }
    }

    /// The witness of the counter named `name`, if kept.
    pub fn mark(&self, name: u64) -> Option<Mark> {
        match self.last {
            Some((last, mark)) if last == name => Some(mark),
            _ => self.marks.get(&name).copied(),
        }
    }

    /// Forgets the mark of `name`: one this call made, for a call refused before it handed
    /// anything out (a mark made again later starts where this one did).
    pub fn forget(&mut self, name: u64) {
        if matches!(self.last, Some((last, _)) if last == name) {
            self.last = None;
        }
        self.marks.remove(&name);
    }

    /// How many counters are witnessed.
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    /// Whether no counter is witnessed.
    #[cfg(test)]
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
#[path = "witness_tests.rs"]
mod tests;

//! DATESEQ's state: today's date, the counter key last named, which counters still skip the
//! failover gap, every counter's witness, the witness file, and the counts INFO shows.
//! Handlers reach it through these methods.

use idgen_core::dateseq::{most_in, Calendar, DayCache, Period, MAX_DIGITS};

use super::fence::Fence;
use super::key_name::LastKey;
use super::keys::{CounterKeys, OpenCounter, Step};
use super::ledger::{Entry, Ledger};
use super::plan::{plan, Counted};
use super::stats::Stats;
use super::witness::{first_line_covers, Full, Lowered, Witnesses};
use super::witness_file::{Ask, WitnessFile};
use crate::error::CommandError;
use crate::files::journal::{Durable, Journal};

/// A node's date-sequence counters, as far as it knows them.
pub struct Counters {
    /// Today's date in the configured zone.
    days: DayCache,
    /// The counter key named last.
    last_key: LastKey,
    /// Which counters still skip the failover gap in this term (since the last promotion).
    fence: Fence,
    /// How far each counter went in its period: a counter found below it continues above it.
    witnesses: Witnesses,
    /// Where each counter is reserved on disk (`idgen.dateseq-witness-file`); `None` when off.
    file: Option<WitnessFile>,
    stats: Stats,
}

/// Which counter a call moves on, by how much, and what of the configuration it needs.
pub struct At<'a> {
    pub prefix: &'a [u8],
    pub period: Period,
    pub digits: u32,
    /// How many values the call issues.
    pub count: u64,
    pub now_ms: i64,
    /// `idgen.dateseq-failover-gap`: skipped on the counter's first use in a term.
    pub failover_gap: u64,
    /// `idgen.dateseq-ttl`, in ms: how long a counter key outlives its period.
    pub ttl_ms: i64,
}

/// What a call issued: the values `first..=last`, and whether the reply must wait for the
/// witness file to hold them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Issued {
    pub first: u64,
    pub last: u64,
    pub wait: bool,
}

impl Counters {
    /// The counters at load, in `calendar`'s zone, at most `witness_max` witnessed at a time:
    /// every counter of a live period the witness file reserved carries on above its
    /// reservation, and after a crash every counter of a period under way above what new
    /// counters could take unnamed.
    pub fn new(
        calendar: Calendar,
        witness_max: usize,
        file: Option<(WitnessFile, Ledger)>,
    ) -> Counters {
        let mut witnesses = Witnesses::new(witness_max, file.is_some());
        if let Some((_, ledger)) = &file {
            witnesses.after_crashes(&ledger.crashed);
            for entry in &ledger.entries {
                let name = witnesses.name(&entry.name);
                witnesses.seed(name, entry.ends_ms, entry.reserved);
            }
        }
        Counters {
            days: DayCache::new(calendar),
            last_key: LastKey::default(),
            fence: Fence::new(),
            witnesses,
            file: file.map(|(file, _)| file),
            stats: Stats::default(),
        }
    }

    /// Moves the counter `at` names on, in `keys`: past the failover gap on its first use in a
    /// term, and from above its witness (or a crash's floor) if it is found below it. Then the
    /// witness notes it, the witness file is asked for the next block when one is due, and a
    /// counter found below its witness is logged.
    ///
    /// # Errors
    /// The prefix cannot name a key, a new counter finds the witnesses full, the values do not
    /// fit the DIGITS ([`plan`]), or `keys`' own: nothing is written then.
    #[inline(always)]
    pub fn next(&mut self, at: &At, keys: &mut impl CounterKeys) -> Result<Issued, CommandError> {
        let Counters {
            days,
            last_key,
            fence,
            witnesses,
            file,
            stats,
        } = self;
        if file.as_ref().is_some_and(|f| f.has_news()) {
            take_confirmations(file.as_ref(), witnesses);
        }
        let day = days.period_of(at.now_ms, at.period);
        let fenced = fence.needs_gap(at.prefix, day.date);
        let gap = if fenced { at.failover_gap } else { 0 };
        let (name, witness) = last_key.get(at.prefix, day.date, |k| witnesses.name(k))?;
        let known = witnesses.mark(witness).is_some();
        let most = most_in(at.digits);
        let first_line = first_line_covers(most);
        let floor = if first_line {
            witnesses.crash_floor(day.start_ms, day.end_ms)
        } else {
            0
        };
        let mark = witnesses
            .slot(witness, day.end_ms, at.now_ms)
            .map_err(|full| CommandError::OutOfRange(full.to_string()))?;
        let moved = keys.open(name).and_then(|counter| {
            let found = counter.found().unwrap_or(0);
            let (base, lowered) = mark.resume(found, floor);
            let counted = Counted {
                date: day.date,
                digits: at.digits,
                found,
                base,
                gap,
            };
            let planned = plan(counted, at.count)?;
            counter.advance(Step {
                by: planned.highest - found,
                expire_at_ms: day.end_ms.saturating_add(at.ttl_ms),
            })?;
            Ok((planned, lowered))
        });
        let (planned, lowered) = match moved {
            Ok(moved) => moved,
            Err(refused) => {
                // A refused call hands out nothing: it leaves no witness it made (which would
                // show a crash floor as values given).
                if !known {
                    witnesses.forget(witness);
                }
                return Err(refused);
            }
        };
        mark.note(planned.highest);
        let reserve = mark.reserve(planned.highest, at.now_ms, most, first_line);
        if let (Some(upto), Some(file)) = (reserve.ask, &*file) {
            file.journal().ask(Ask {
                name: witness,
                entry: Entry {
                    ends_ms: day.end_ms,
                    reserved: upto,
                    name: last_key.bytes().to_vec(),
                },
            });
        }
        if let Some(lowered) = lowered {
            stats.found_lowered();
            log_lowered(last_key.bytes(), lowered);
        }
        if fenced {
            fence.pass(at.prefix, day.date);
            stats.took_gap(gap);
        }
        Ok(Issued {
            first: planned.first,
            last: planned.last,
            wait: reserve.wait,
        })
    }

    /// The last value the counter of `prefix` in `period` gave at `now_ms` (0 for none), as
    /// `keys` hold it; a counter found below its witness is shown as the next call would carry
    /// it on. With the period's date.
    ///
    /// # Errors
    /// The prefix cannot name a key, or `keys`' own.
    pub fn current(
        &mut self,
        prefix: &[u8],
        period: Period,
        now_ms: i64,
        keys: &mut impl CounterKeys,
    ) -> Result<(u32, u64), CommandError> {
        let day = self.days.period_of(now_ms, period);
        let witnesses = &self.witnesses;
        let (name, witness) = self.last_key.get(prefix, day.date, |k| witnesses.name(k))?;
        let witnessed = witnesses.mark(witness).map_or(0, |m| m.highest);
        let found = keys.read(name)?;
        Ok((day.date, found.unwrap_or(0).max(witnessed)))
    }

    /// A counter `key` of `period`, labelled `label`, arrived from another node at `value`: its
    /// witness here is raised to it and reserved. The counter's DIGITS are not known here: at
    /// least as many as `value` has, and `default_digits`; blocks never reach past them. The
    /// witness file, when the value is above what it holds and it must be waited for.
    ///
    /// # Errors
    /// The counter is new and the witnesses are full.
    pub fn arrived(
        &mut self,
        key: &[u8],
        (period, label): (Period, u32),
        value: u64,
        default_digits: u32,
        now_ms: i64,
    ) -> Result<Option<&Journal<Ask>>, Full> {
        let day = self.days.period_of(now_ms, period);
        // Only the period under way is ever issued from again.
        if day.date != label || value == 0 {
            return Ok(None);
        }
        if self.file.as_ref().is_some_and(|f| f.has_news()) {
            take_confirmations(self.file.as_ref(), &mut self.witnesses);
        }
        let name = self.witnesses.name(key);
        let mark = self.witnesses.slot(name, day.end_ms, now_ms)?;
        mark.note(value);
        let digits = (value.checked_ilog10().unwrap_or(0) + 1)
            .max(default_digits)
            .min(MAX_DIGITS);
        // Its values may be of fewer DIGITS than the first line covers: on disk before they
        // are used.
        let reserve = mark.reserve(value, now_ms, most_in(digits), false);
        let Some(file) = &self.file else {
            return Ok(None);
        };
        if let Some(upto) = reserve.ask {
            file.journal().ask(Ask {
                name,
                entry: Entry {
                    ends_ms: day.end_ms,
                    reserved: upto,
                    name: key.to_vec(),
                },
            });
        }
        Ok(reserve.wait.then_some(file.journal()))
    }

    /// This node was promoted: a new term, in which every counter skips the failover gap once.
    /// Waits for the witness file to hold what this node witnessed as a replica
    /// (`crate::cmd::arrival`), before it issues as a primary: a crash right after the
    /// promotion must find it. Once per promotion, like the lease fence's write.
    pub fn promoted(&mut self) {
        self.fence.new_term();
        let Some(file) = &self.file else {
            return;
        };
        if let Err(why) = file.journal().wait_here() {
            crate::ffi::log(
                "warning",
                &format!(
                    "idgen: {why}: a crash soon after this promotion may hand out again values \
                     its primary handed out"
                ),
            );
        }
    }

    /// At a clean shutdown: rewrites the witness file with what each counter actually handed
    /// out, so the next start skips nothing.
    pub fn close_file(&mut self, now_ms: i64) {
        let witnesses = &self.witnesses;
        let Some(file) = &mut self.file else {
            return;
        };
        let handed_out = |key: &[u8]| witnesses.mark(witnesses.name(key)).map(|m| m.highest);
        match file.close_exact(handed_out, now_ms) {
            Ok(()) => crate::ffi::log(
                "notice",
                &format!(
                    "idgen: DATESEQ witness file {} holds what each counter handed out",
                    file.journal().path().display()
                ),
            ),
            Err(why) => crate::ffi::log(
                "warning",
                &format!("idgen: {why}: the next start skips what was reserved and not used"),
            ),
        }
    }

    /// `n` values issued by one call.
    #[inline]
    pub fn issued(&mut self, n: u64) {
        self.stats.issued(n);
    }

    /// A call refused.
    pub fn refused(&mut self) {
        self.stats.refused();
    }

    /// `idgen.dateseq-timezone` changed.
    pub fn set_calendar(&mut self, calendar: Calendar) {
        // A period under way ends at the same wall time in the new zone: its witness lives to
        // then (a counter key made under the old zone is given that life at its next write).
        let old = self.days.calendar();
        self.witnesses
            .move_ends(|end| old.same_wall_time(end, &calendar));
        self.days = DayCache::new(calendar);
    }

    /// `idgen.dateseq-witness-max` changed.
    pub fn set_witness_max(&mut self, max: usize) {
        self.witnesses.set_max(max);
    }

    /// The zone dates are told in.
    pub fn calendar(&self) -> &Calendar {
        self.days.calendar()
    }

    /// Promotions since load.
    pub fn term(&self) -> u64 {
        self.fence.term()
    }

    /// The counts since load.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The witnesses, to read.
    pub fn witnesses(&self) -> &Witnesses {
        &self.witnesses
    }

    /// The witness file's journal, when `idgen.dateseq-witness-file` is set.
    pub fn file(&self) -> Option<&Journal<Ask>> {
        self.file.as_ref().map(WitnessFile::journal)
    }
}

/// Takes in the outcomes of the witness file's writes since the last call.
#[cold]
fn take_confirmations(file: Option<&WitnessFile>, witnesses: &mut Witnesses) {
    for (name, reserved, written) in file.iter().flat_map(|f| f.confirmations()) {
        witnesses.confirm(name, reserved, written);
    }
}

#[cold]
fn log_lowered(key: &[u8], lowered: Lowered) {
    crate::ffi::log(
        "warning",
        &format!(
            "idgen: DATESEQ counter {} was found at {}, below the {} this node handed out in its \
             period (deleted, lowered, flushed, renamed or restored from an older copy): \
             continued above {}",
            crate::error::shown(key),
            lowered.found,
            lowered.highest,
            lowered.highest
        ),
    );
}

#[cfg(test)]
#[path = "counters_tests.rs"]
mod tests;

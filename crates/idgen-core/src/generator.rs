//! The Snowflake generator: never a duplicate, never backwards, never a wait.
//!
//! The generator keeps a high-water mark: the tick and sequence of the last ID it issued. Each
//! new ID is the successor of that mark: the current tick if the clock has moved past it,
//! otherwise the next sequence value in the same tick, otherwise sequence 0 of the next tick
//! ("borrowing" a tick the clock has not reached). So a clock that steps back, or a burst that
//! spends a tick's sequence, makes the generator run ahead of the clock instead of repeating an
//! ID or spinning. How far ahead it may run is bounded by [`Settings::max_drift_ms`]; past that
//! it refuses with [`GenerateError::DriftExceeded`] until the clock catches up.
//!
//! Across restarts the high-water mark is lost with the process. A caller that persists a
//! reservation (a time below which IDs may be issued, written durably before any ID reaches
//! it) restores safety with [`Generator::resume_after`] at start and [`Generator::set_ceiling`]
//! as the reservation moves on: IDs never reach the ceiling, so after a crash every ID issued
//! lies below the reservation on disk, and the restarted generator starts above it. A clock
//! that jumps to or past the ceiling (an NTP step, a VM resumed) is read as
//! [`CEILING_HEADROOM_MS`] before it until the reservation catches up: IDs lag the clock for a
//! moment, with that many ms of ticks to spend, instead of being refused. Only when every tick
//! below the ceiling is spent does the generator refuse.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};

use crate::clock::Clock;
use crate::layout::{Field, Layout};
use crate::settings::{Settings, SettingsError};

/// How far below the ceiling a clock that jumped to or past it is read: room for the IDs of the
/// few ms a reservation takes to catch up (a 4096-ID tick each ms: 262,144 IDs).
pub const CEILING_HEADROOM_MS: u64 = 64;

/// Why an ID was not issued. Nothing was consumed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenerateError {
    /// Issuing would put the generator more than `max_ms` ahead of the clock.
    DriftExceeded { ahead_ms: u64, max_ms: u64 },
    /// As [`GenerateError::DriftExceeded`], where the clock has not yet reached the time IDs
    /// resumed above ([`Generator::resume_after`]) and never stepped back: the start fence, not
    /// a fault, put IDs ahead of the clock.
    StartFence {
        above_ms: i64,
        ahead_ms: u64,
        max_ms: u64,
    },
    /// The layout's time field is used up.
    TimeExhausted,
    /// Every tick below the durable reservation is spent: IDs ran ahead of the clock to the
    /// reservation's end faster than it was extended (or it is not being extended at all).
    NotReserved {
        reserved_until_ms: i64,
        ahead_ms: u64,
    },
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::DriftExceeded { ahead_ms, max_ms } => write!(
                f,
                "clock is {ahead_ms} ms behind the last issued ID (limit {max_ms} ms): \
                 the clock stepped back or the sequence is spent; retry later"
            ),
            GenerateError::StartFence {
                above_ms,
                ahead_ms,
                max_ms,
            } => write!(
                f,
                "IDs start above {above_ms} ms since 1970 (where no ID of an earlier run can \
                 lie), so these would run {ahead_ms} ms ahead of the clock, past the \
                 {max_ms} ms drift limit; retry in {} ms",
                ahead_ms.saturating_sub(*max_ms)
            ),
            GenerateError::TimeExhausted => write!(f, "the layout's time field is used up"),
            GenerateError::NotReserved {
                reserved_until_ms,
                ahead_ms,
            } => write!(
                f,
                "IDs have run {ahead_ms} ms ahead of the clock, to the end of the durable \
                 reservation ({reserved_until_ms} ms since 1970), before it was extended; \
                 retry in a few ms"
            ),
        }
    }
}

impl std::error::Error for GenerateError {}

/// Counters for monitoring (Redis `INFO idgen`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// IDs issued since start.
    pub issued: u64,
    /// Times the clock was read lower than the reading before.
    pub clock_backwards: u64,
    /// Times the generator moved to a tick the clock had not reached.
    pub ticks_borrowed: u64,
    /// Requests refused (nothing issued).
    pub refused: u64,
    /// The furthest the generator has run ahead of the clock, in ms.
    pub max_drift_ms: u64,
}

/// The fields of an ID in wall-clock terms, as [`Generator::decode`] returns them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedId {
    /// Start of the ID's tick, ms since the Unix epoch.
    pub unix_ms: i64,
    /// Datacenter ID.
    pub datacenter: u64,
    /// Worker ID.
    pub worker: u64,
    /// Sequence within the tick.
    pub sequence: u64,
}

/// A Snowflake generator over an injected clock. Not thread-safe by itself: wrap it in a mutex,
/// or give each thread its own worker ID.
#[derive(Debug)]
pub struct Generator<C> {
    clock: C,
    settings: Settings,
    time_shift: u32,
    sequence_shift: u32,
    node_bits: u64,
    max_sequence: u64,
    random_span: u64,
    max_drift_ticks: u64,
    /// [`CEILING_HEADROOM_MS`] in ticks, at least 1.
    headroom_ticks: u64,
    /// IDs are only issued in ticks below this one, which starts at or before `ceiling_ms`.
    ceiling_tick: u64,
    /// The latest tick the clock is read as: [`CEILING_HEADROOM_MS`] below the ceiling, kept
    /// rather than worked out for every ID; no cap (`u64::MAX`) until a ceiling is set.
    clock_cap_tick: u64,
    ceiling_ms: i64,
    /// The lowest tick no ID may take: the ceiling's, or the one past the time field's end.
    limit_tick: u64,
    /// Tick and sequence of the last ID issued: the high-water mark.
    last_tick: u64,
    /// The tick IDs resumed after ([`Generator::resume_after`]), 0 if none.
    resumed_tick: u64,
    sequence: u64,
    /// The clock as last read, in ticks since the epoch.
    last_now: u64,
    rng: u64,
    stats: Stats,
}

impl<C: Clock> Generator<C> {
    /// A generator with `settings`, checked against `clock`'s current time.
    ///
    /// # Errors
    /// The first rule [`Settings::validate`] finds broken.
    pub fn new(settings: Settings, clock: C) -> Result<Self, SettingsError> {
        settings.validate(clock.now_ms())?;
        let layout = &settings.layout;
        let max_sequence = layout.max(Field::Sequence);
        let mut generator = Generator {
            time_shift: layout.time_shift(),
            sequence_shift: layout.shift(Field::Sequence),
            node_bits: layout.compose(0, settings.datacenter_id, settings.worker_id, 0),
            max_sequence,
            random_span: ((max_sequence + 1) / 16).max(1),
            max_drift_ticks: 0,
            headroom_ticks: (CEILING_HEADROOM_MS / layout.tick_ms()).max(1),
            ceiling_tick: u64::MAX,
            clock_cap_tick: u64::MAX,
            ceiling_ms: i64::MAX,
            limit_tick: layout.max_ticks().saturating_add(1),
            last_tick: 0,
            resumed_tick: 0,
            // As if tick 0 were spent, so the first ID takes a fresh tick.
            sequence: max_sequence,
            last_now: 0,
            rng: RandomState::new().build_hasher().finish() | 1,
            stats: Stats::default(),
            clock,
            settings,
        };
        generator.set_max_drift_ms(generator.settings.max_drift_ms);
        Ok(generator)
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Changes how far the generator may run ahead of the clock. Safe at any time.
    pub fn set_max_drift_ms(&mut self, ms: u64) {
        self.settings.max_drift_ms = ms;
        self.max_drift_ticks = ms / self.settings.layout.tick_ms();
    }

    /// Turns the random start of each tick's sequence on or off. Safe at any time.
    pub fn set_random_start(&mut self, on: bool) {
        self.settings.random_start = on;
    }

    /// Continues above every ID that may have been issued before `unix_ms`, e.g. by an earlier
    /// run of this node, as if the generator had issued up to then. IDs come from later ticks
    /// only; if that is further ahead of the clock than the drift limit allows, they are
    /// refused until the clock catches up.
    pub fn resume_after(&mut self, unix_ms: i64) {
        let tick = self.ticks_since_epoch(unix_ms);
        self.resumed_tick = self.resumed_tick.max(tick);
        if tick >= self.last_tick {
            self.last_tick = tick;
            self.sequence = self.max_sequence;
        }
    }

    /// Issues IDs only in ticks that start before `unix_ms` (the durable reservation).
    pub fn set_ceiling(&mut self, unix_ms: i64) {
        // Called before every ID; the division only when the reservation moved.
        if unix_ms != self.ceiling_ms {
            self.ceiling_ms = unix_ms;
            self.ceiling_tick = self.ticks_since_epoch(unix_ms);
            self.clock_cap_tick = self.ceiling_tick.saturating_sub(self.headroom_ticks);
            self.limit_tick = self
                .ceiling_tick
                .min(self.layout().max_ticks().saturating_add(1));
        }
    }

    /// Monitoring counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Whether the last ID took the tick of the clock as last read: neither borrowed ahead of
    /// it nor held below a ceiling the clock had passed.
    #[inline]
    pub fn on_the_clock(&self) -> bool {
        self.last_tick == self.last_now
    }

    /// How far, in ms, the last issued ID is ahead of the clock as last read.
    pub fn drift_ms(&self) -> u64 {
        self.last_tick
            .saturating_sub(self.last_now)
            .saturating_mul(self.settings.layout.tick_ms())
    }

    /// Start of the last issued ID's tick in ms since the Unix epoch (the epoch before any ID).
    pub fn last_tick_unix_ms(&self) -> i64 {
        self.tick_to_unix_ms(self.last_tick)
    }

    /// The next ID.
    ///
    /// # Errors
    /// [`GenerateError`] when issuing would exceed the drift limit or the time field; nothing is
    /// consumed then.
    // Inlined into its caller: a call would return the Result through memory, on every ID.
    #[inline(always)]
    pub fn next_id(&mut self) -> Result<u64, GenerateError> {
        let now = self.read_clock();
        let (tick, sequence) = self.successor(now);
        if let Err(e) = self.check(tick, now) {
            self.stats.refused += 1;
            return Err(e);
        }
        Ok(self.commit(tick, sequence, now))
    }

    /// Appends `count` strictly increasing IDs to `out`, all or none.
    ///
    /// # Errors
    /// As [`Generator::next_id`]; `out` and the generator are left as they were.
    pub fn next_ids(&mut self, count: usize, out: &mut Vec<u64>) -> Result<(), GenerateError> {
        let now = self.read_clock();
        let saved = (self.last_tick, self.sequence, self.stats);
        let len = out.len();
        out.reserve(count);
        for issued in 0..count {
            let (tick, sequence) = self.successor(now);
            if let Err(e) = self.check(tick, now) {
                (self.last_tick, self.sequence, self.stats) = saved;
                self.stats.refused += 1;
                out.truncate(len);
                return Err(self.whole_batch(e, count - issued));
            }
            out.push(self.commit(tick, sequence, now));
        }
        Ok(())
    }

    /// Splits an ID made with these settings into its fields.
    pub fn decode(&self, id: u64) -> DecodedId {
        let d = self.settings.layout.decode(id);
        DecodedId {
            unix_ms: self.tick_to_unix_ms(d.ticks),
            datacenter: d.datacenter,
            worker: d.worker,
            sequence: d.sequence,
        }
    }

    fn layout(&self) -> &Layout {
        &self.settings.layout
    }

    fn tick_to_unix_ms(&self, tick: u64) -> i64 {
        let ms = tick
            .saturating_mul(self.layout().tick_ms())
            .min(i64::MAX as u64);
        self.settings.epoch_ms.saturating_add(ms as i64)
    }

    /// Whole ticks from the epoch to `unix_ms` (0 before the epoch).
    fn ticks_since_epoch(&self, unix_ms: i64) -> u64 {
        self.layout().ticks_between(self.settings.epoch_ms, unix_ms)
    }

    /// Reads the clock in ticks since the epoch, noting steps back.
    fn read_clock(&mut self) -> u64 {
        let now = self.ticks_since_epoch(self.clock.now_ms());
        if now < self.last_now {
            self.stats.clock_backwards += 1;
        }
        self.last_now = now;
        now
    }

    /// The smallest (tick, sequence) above the high-water mark that the clock allows, in a
    /// tick below the ceiling while there is one.
    #[inline]
    fn successor(&mut self, now: u64) -> (u64, u64) {
        let newest = now.min(self.clock_cap_tick);
        if newest > self.last_tick {
            (newest, self.start_sequence())
        } else if self.sequence < self.max_sequence {
            (self.last_tick, self.sequence + 1)
        } else {
            (self.last_tick + 1, self.start_sequence())
        }
    }

    /// Whether an ID may take `tick` with the clock at `now`: one comparison each way on the
    /// path every ID takes, the reasons only for a refusal.
    #[inline]
    fn check(&self, tick: u64, now: u64) -> Result<(), GenerateError> {
        if tick < self.limit_tick && tick.saturating_sub(now) <= self.max_drift_ticks {
            return Ok(());
        }
        Err(self.refusal(tick, now))
    }

    #[cold]
    fn refusal(&self, tick: u64, now: u64) -> GenerateError {
        let ahead_ms = tick
            .saturating_sub(now)
            .saturating_mul(self.layout().tick_ms());
        if tick > self.layout().max_ticks() {
            GenerateError::TimeExhausted
        } else if tick >= self.ceiling_tick {
            GenerateError::NotReserved {
                reserved_until_ms: self.tick_to_unix_ms(self.ceiling_tick),
                ahead_ms,
            }
        } else if now < self.resumed_tick && self.stats.clock_backwards == 0 {
            GenerateError::StartFence {
                above_ms: self.tick_to_unix_ms(self.resumed_tick),
                ahead_ms,
                max_ms: self.settings.max_drift_ms,
            }
        } else {
            GenerateError::DriftExceeded {
                ahead_ms,
                max_ms: self.settings.max_drift_ms,
            }
        }
    }

    /// A batch's refusal, said for the whole batch: how far ahead of the clock its last ID
    /// would be, from the first refused one with `left` IDs to go (so that "retry in" waits long
    /// enough for all of them).
    #[cold]
    fn whole_batch(&self, refusal: GenerateError, left: usize) -> GenerateError {
        // Fewest IDs a tick gives: a random start may skip up to `random_span` of them.
        let per_tick = if self.settings.random_start {
            self.max_sequence + 1 - self.random_span
        } else {
            self.max_sequence + 1
        };
        // The first refused ID's tick may be partly spent: one tick more at most.
        let more_ms = ((left as u64 - 1) / per_tick.max(1) + 1) * self.layout().tick_ms();
        match refusal {
            GenerateError::DriftExceeded { ahead_ms, max_ms } => GenerateError::DriftExceeded {
                ahead_ms: ahead_ms + more_ms,
                max_ms,
            },
            GenerateError::StartFence {
                above_ms,
                ahead_ms,
                max_ms,
            } => GenerateError::StartFence {
                above_ms,
                ahead_ms: ahead_ms + more_ms,
                max_ms,
            },
            other => other,
        }
    }

    fn commit(&mut self, tick: u64, sequence: u64, now: u64) -> u64 {
        if tick > now {
            let drift = (tick - now).saturating_mul(self.layout().tick_ms());
            self.stats.max_drift_ms = self.stats.max_drift_ms.max(drift);
            if tick != self.last_tick {
                self.stats.ticks_borrowed += 1;
            }
        }
        self.last_tick = tick;
        self.sequence = sequence;
        self.stats.issued += 1;
        (tick << self.time_shift) | self.node_bits | (sequence << self.sequence_shift)
    }

    fn start_sequence(&mut self) -> u64 {
        if !self.settings.random_start {
            return 0;
        }
        // xorshift64*: cheap, and good enough to spread the low bits.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.random_span
    }
}

#[cfg(test)]
#[path = "generator_tests.rs"]
mod tests;

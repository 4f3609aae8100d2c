//! 128-bit time-ordered IDs, UUIDv7 (RFC 9562) and ULID, strictly increasing on one node.
//!
//! Both put a 48-bit count of Unix milliseconds first and random bits after it: 74 for a UUIDv7
//! (its 12-bit `rand_a` and 62-bit `rand_b`, around the version and variant bits), 80 for a
//! ULID. Ordering follows RFC 9562 §6.2, method 2 ("monotonic random"): the first ID of a
//! millisecond takes fresh random bits; an ID in the same millisecond, or after the clock
//! stepped back, is the last one's random bits plus a random increment of 1 to 2^32, so it is
//! greater and still not guessable from the last. When the random field would overflow, the ID
//! takes the next millisecond with fresh bits, ahead of the clock, as the Snowflake generator
//! borrows ticks: never a repeat, never a wait. Past `max_drift_ms` ahead of the clock it
//! refuses instead ([`GenerateError::DriftExceeded`]), until the clock catches up.
//!
//! The random bits come from the `R` given (the module seeds a cryptographic generator from
//! the operating system once); the clock is injected like the Snowflake generator's.

use std::fmt;

use rand_core::RngCore;

use crate::clock::Clock;
use crate::generator::GenerateError;

/// Which 128-bit form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form128 {
    /// RFC 9562 version 7: 48 bits of ms, version 7, 12 random, variant 0b10, 62 random.
    Uuid7,
    /// ULID: 48 bits of ms, 80 random.
    Ulid,
}

/// Bits of a timestamp: ms since 1970, 48 bits (until the year 10889).
const TIME_BITS: u32 = 48;

impl Form128 {
    /// How many random bits follow the timestamp.
    pub fn random_bits(self) -> u32 {
        match self {
            Form128::Uuid7 => 74,
            Form128::Ulid => 80,
        }
    }

    fn random_max(self) -> u128 {
        (1u128 << self.random_bits()) - 1
    }

    /// The 128-bit value of a timestamp and random bits.
    pub fn compose(self, unix_ms: u64, random: u128) -> u128 {
        let time = u128::from(unix_ms) << 80;
        match self {
            Form128::Ulid => time | random,
            Form128::Uuid7 => {
                let rand_a = (random >> 62) & 0xfff;
                let rand_b = random & ((1 << 62) - 1);
                time | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
            }
        }
    }

    /// The timestamp and random bits of a value of this form.
    ///
    /// # Errors
    /// A UUID whose version is not 7 or whose variant is not RFC 9562's.
    pub fn decompose(self, value: u128) -> Result<(u64, u128), NotThisForm> {
        let unix_ms = (value >> 80) as u64;
        match self {
            Form128::Ulid => Ok((unix_ms, value & self.random_max())),
            Form128::Uuid7 => {
                let version = (value >> 76) & 0xf;
                let variant = (value >> 62) & 0b11;
                if version != 7 || variant != 0b10 {
                    return Err(NotThisForm {
                        version: version as u8,
                    });
                }
                let rand_a = (value >> 64) & 0xfff;
                Ok((unix_ms, (rand_a << 62) | (value & ((1 << 62) - 1))))
            }
        }
    }
}

/// A UUID that is not version 7 with RFC 9562's variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotThisForm {
    /// The version nibble it has.
    pub version: u8,
}

impl fmt::Display for NotThisForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a version 7 UUID of RFC 9562's variant (version {})",
            self.version
        )
    }
}

impl std::error::Error for NotThisForm {}

/// Counters for INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats128 {
    /// IDs issued.
    pub issued: u64,
    /// Calls refused (too far ahead of the clock).
    pub refused: u64,
    /// Times the clock read earlier than it did the call before (as the Snowflake generator
    /// counts them; a millisecond borrowed ahead is not one).
    pub clock_backwards: u64,
    /// Milliseconds taken ahead of the clock because a millisecond's random field was spent.
    pub ms_borrowed: u64,
}

/// Issues strictly increasing IDs of one [`Form128`].
pub struct Generator128<C, R> {
    form: Form128,
    clock: C,
    rng: R,
    max_drift_ms: u64,
    /// The last ID's millisecond and random bits; `None` before the first.
    last: Option<(u64, u128)>,
    /// The clock's last reading, to count its steps back.
    last_now: u64,
    stats: Stats128,
}

impl<C: Clock, R: RngCore> Generator128<C, R> {
    /// A generator of `form` IDs over `clock` and `rng`, refusing past `max_drift_ms` ahead.
    pub fn new(form: Form128, clock: C, rng: R, max_drift_ms: u64) -> Self {
        Generator128 {
            form,
            clock,
            rng,
            max_drift_ms,
            last: None,
            last_now: 0,
            stats: Stats128::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats128 {
        self.stats
    }

    /// Changes how far ahead of the clock IDs may run.
    pub fn set_max_drift_ms(&mut self, ms: u64) {
        self.max_drift_ms = ms;
    }

    /// The next ID, greater than every one before it.
    ///
    /// # Errors
    /// [`GenerateError::DriftExceeded`] when issuing would run more than the drift limit
    /// ahead of the clock.
    pub fn next_id(&mut self) -> Result<u128, GenerateError> {
        let now = self.clock.now_ms().max(0) as u64 & ((1 << TIME_BITS) - 1);
        if now < self.last_now {
            self.stats.clock_backwards += 1;
        }
        self.last_now = now;
        let (ms, random) = match self.last {
            Some((last_ms, last_random)) if last_ms >= now => {
                // 1 to 2^32: greater than the last, and not guessable from it.
                let step = u128::from(self.rng.next_u32()) + 1;
                match last_random.checked_add(step) {
                    Some(r) if r <= self.form.random_max() => (last_ms, r),
                    // This millisecond's random field is spent: the next one, ahead.
                    _ => {
                        self.stats.ms_borrowed += 1;
                        (last_ms + 1, self.fresh())
                    }
                }
            }
            _ => (now, self.fresh()),
        };
        let ahead = ms.saturating_sub(now);
        if ahead > self.max_drift_ms {
            self.stats.refused += 1;
            return Err(GenerateError::DriftExceeded {
                ahead_ms: ahead,
                max_ms: self.max_drift_ms,
            });
        }
        self.last = Some((ms, random));
        self.stats.issued += 1;
        Ok(self.form.compose(ms, random))
    }

    /// Appends `n` more IDs to `out`, each greater than the last; all or none.
    ///
    /// # Errors
    /// As [`Generator128::next_id`]; `out` is left as it was.
    pub fn next_ids(&mut self, n: usize, out: &mut Vec<u128>) -> Result<(), GenerateError> {
        let start = out.len();
        for _ in 0..n {
            match self.next_id() {
                Ok(id) => out.push(id),
                Err(e) => {
                    // Those made are skipped, not handed out: the next IDs stay above them.
                    self.stats.issued -= (out.len() - start) as u64;
                    out.truncate(start);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn fresh(&mut self) -> u128 {
        let high = u128::from(self.rng.next_u64());
        let low = u128::from(self.rng.next_u64());
        ((high << 64) | low) & self.form.random_max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const NOW: i64 = 1_795_400_000_000;

    /// Random numbers from a counter: predictable, so the tests can aim at the edges.
    struct Counting {
        next: u64,
        step32: u32,
    }

    impl RngCore for Counting {
        fn next_u32(&mut self) -> u32 {
            self.step32
        }
        fn next_u64(&mut self) -> u64 {
            self.next = self.next.wrapping_add(0x9e37_79b9_7f4a_7c15);
            self.next
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            for b in dst {
                *b = self.next_u64() as u8;
            }
        }
    }

    fn generator(form: Form128, step32: u32) -> (Generator128<ManualClock, Counting>, ManualClock) {
        let clock = ManualClock::new(NOW);
        let rng = Counting { next: 1, step32 };
        (Generator128::new(form, clock.clone(), rng, 1000), clock)
    }

    #[test]
    fn many_in_one_millisecond_increase_and_keep_the_clocks_time() {
        for form in [Form128::Uuid7, Form128::Ulid] {
            let (mut ids, _clock) = generator(form, 12345);
            let mut all = Vec::new();
            ids.next_ids(10_000, &mut all).unwrap();
            assert!(all.windows(2).all(|w| w[0] < w[1]), "{form:?}");
            for &id in &all {
                assert_eq!(form.decompose(id).unwrap().0, NOW as u64);
            }
        }
    }

    #[test]
    fn uuid7_bits_are_rfc_9562s_and_decompose_inverts_compose() {
        let random = (1u128 << 74) - 12345;
        let id = Form128::Uuid7.compose(NOW as u64, random);
        assert_eq!((id >> 76) & 0xf, 7, "version");
        assert_eq!((id >> 62) & 0b11, 0b10, "variant");
        assert_eq!(Form128::Uuid7.decompose(id), Ok((NOW as u64, random)));
        let ulid = Form128::Ulid.compose(NOW as u64, (1 << 80) - 1);
        assert_eq!(
            Form128::Ulid.decompose(ulid),
            Ok((NOW as u64, (1 << 80) - 1))
        );
        // A version 4 UUID is not read as a version 7 one.
        let v4 = (id & !(0xf << 76)) | (0x4 << 76);
        assert_eq!(
            Form128::Uuid7.decompose(v4),
            Err(NotThisForm { version: 4 })
        );
    }

    #[test]
    fn a_clock_stepping_back_never_makes_a_smaller_id() {
        let (mut ids, clock) = generator(Form128::Uuid7, 7);
        let first = ids.next_id().unwrap();
        clock.set(NOW - 500);
        let behind: Vec<u128> = (0..100).map(|_| ids.next_id().unwrap()).collect();
        assert!(behind[0] > first && behind.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Form128::Uuid7.decompose(behind[99]).unwrap().0, NOW as u64);
        assert_eq!(
            ids.stats().clock_backwards,
            1,
            "one step back, however many calls"
        );
        // Past the drift limit it refuses, until the clock comes back.
        clock.set(NOW - 1_001);
        assert_eq!(
            ids.next_id(),
            Err(GenerateError::DriftExceeded {
                ahead_ms: 1_001,
                max_ms: 1_000
            })
        );
        clock.set(NOW + 1);
        let after = ids.next_id().unwrap();
        assert!(after > behind[99]);
        assert_eq!(Form128::Uuid7.decompose(after).unwrap().0, NOW as u64 + 1);
    }

    #[test]
    fn a_spent_millisecond_borrows_the_next_never_repeats_never_waits() {
        // Steps of 2^32 spend a ULID's 80 random bits within 2^48 calls; start near the top.
        let (mut ids, _clock) = generator(Form128::Ulid, u32::MAX);
        let first = ids.next_id().unwrap();
        ids.last = Some((NOW as u64, Form128::Ulid.random_max() - 3 * (1 << 32)));
        let more: Vec<u128> = (0..10).map(|_| ids.next_id().unwrap()).collect();
        assert!(more.windows(2).all(|w| w[0] < w[1]) && more[0] > first);
        let ms: Vec<u64> = more
            .iter()
            .map(|&id| Form128::Ulid.decompose(id).unwrap().0)
            .collect();
        assert_eq!(ms[0], NOW as u64);
        assert_eq!(ms[9], NOW as u64 + 1, "borrowed the next millisecond");
        assert_eq!(ids.stats().ms_borrowed, 1);
        assert_eq!(
            ids.stats().clock_backwards,
            0,
            "running ahead is not a clock step"
        );
        // Borrowed too far ahead: refused, and the batch leaves nothing behind.
        ids.last = Some((NOW as u64 + 1_000, Form128::Ulid.random_max()));
        let mut out = vec![1, 2];
        assert!(ids.next_ids(5, &mut out).is_err());
        assert_eq!(out, [1, 2]);
        assert_eq!(ids.stats().refused, 1);
    }
}

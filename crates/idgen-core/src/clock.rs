//! Time as the generators see it: injected, so tests can step it back and forth.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock {
    /// Milliseconds since 1970-01-01T00:00:00Z. May step backwards (NTP, VM migration).
    fn now_ms(&self) -> i64;
}

/// The operating system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// One `clock_gettime(CLOCK_REALTIME)` on Unix. Through std (`SystemTime::now()`, then
    /// `duration_since` and `as_millis`) most of the read is the checked subtraction and the
    /// 128-bit milliseconds, several times the call itself (docs/benchmarks.md), and the
    /// generators read the clock for every ID. Still libc's `clock_gettime`, so an LD_PRELOAD
    /// clock shim (tests/clockshift) moves it as before. Before 1970 it rounds down.
    #[cfg(unix)]
    #[allow(unsafe_code)] // The crate's one unsafe call (ARCHITECTURE.md, "Where unsafe lives").
    fn now_ms(&self) -> i64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call; CLOCK_REALTIME exists on
        // every Unix, so the call cannot fail and leaves `ts` set.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        // time_t and long are 32 bits wide on some Unix targets.
        #[allow(clippy::unnecessary_cast)]
        let (secs, nanos) = (ts.tv_sec as i64, ts.tv_nsec as i64);
        secs * 1000 + nanos / 1_000_000
    }

    #[cfg(not(unix))]
    fn now_ms(&self) -> i64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            Err(before) => -(before.duration().as_millis() as i64),
        }
    }
}

/// A clock that only moves when told to; clones share one time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock that reads `ms`.
    pub fn new(ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(ms)))
    }

    /// Sets the time, forwards or backwards.
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }

    /// Moves the time by `delta` ms (negative steps back).
    pub fn advance(&self, delta: i64) {
        self.0.fetch_add(delta, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::{Clock, SystemClock};

    #[test]
    fn the_system_clock_reads_what_std_reads() {
        let std_ms = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64
        };
        let before = std_ms();
        let ours = SystemClock.now_ms();
        let after = std_ms();
        assert!(
            (before..=after).contains(&ours),
            "{before} <= {ours} <= {after}"
        );
    }
}

//! Time as the generators see it: injected, so tests can step it back and forth.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock {
    /// Milliseconds since 1970-01-01T00:00:00Z. May step backwards (NTP, VM migration).
    fn now_ms(&self) -> i64;
}

/// The operating system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
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

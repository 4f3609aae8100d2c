//! Where DATESEQ's counters are kept: the interface the feature reads and moves them through.
//! `crate::ffi::counter_keys` implements it on Redis (each counter a string key, read and
//! rewritten in place, its writes propagated as INCR/INCRBY); the unit tests on a map.

use crate::error::CommandError;

/// How a counter moves on: by `by`, and when it is created, expiring at `expire_at_ms` (an
/// existing key given a shorter life is lifted to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub by: u64,
    pub expire_at_ms: i64,
}

/// The counters, by key name.
pub trait CounterKeys {
    /// A counter open for writing.
    type Open<'k>: OpenCounter
    where
        Self: 'k;

    /// The counter `name`, to read: its value, `None` when it does not exist.
    ///
    /// # Errors
    /// The caller may not read it, it is not a counter, or it is missing here while it may be
    /// on another node (its Cluster slot moving).
    fn read(&mut self, name: &[u8]) -> Result<Option<u64>, CommandError>;

    /// The counter `name`, open for writing.
    ///
    /// # Errors
    /// As [`CounterKeys::read`], for writing.
    fn open(&mut self, name: &[u8]) -> Result<Self::Open<'_>, CommandError>;
}

/// One counter, open for writing.
pub trait OpenCounter {
    /// Its value when opened, `None` when it does not exist.
    fn found(&self) -> Option<u64>;

    /// Moves it on by `step` (creating it when it did not exist), and tells replicas and the
    /// AOF.
    ///
    /// # Errors
    /// The write failed: the counter is as it was.
    fn advance(self, step: Step) -> Result<(), CommandError>;
}

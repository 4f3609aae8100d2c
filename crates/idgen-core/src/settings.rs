//! Everything a Snowflake generator is configured with, and the rules it must satisfy.

use std::fmt;

pub use crate::layout::TWITTER_EPOCH_MS;
use crate::layout::{Field, Layout};

/// Default for [`Settings::max_drift_ms`].
pub const DEFAULT_MAX_DRIFT_MS: u64 = 1_000;

/// Generator settings. [`Settings::validate`] (run by `Generator::new`) checks every rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Bit layout. Default: Twitter's (41 ms, 5 datacenter, 5 worker, 12 sequence).
    pub layout: Layout,
    /// Custom epoch, ms since the Unix epoch. Default [`TWITTER_EPOCH_MS`]. Must not lie in the
    /// future, and the layout's time field must not already be used up since it.
    pub epoch_ms: i64,
    /// Datacenter ID, below 2^datacenter bits. Default 0.
    pub datacenter_id: u64,
    /// Worker (shard, machine) ID, below 2^worker bits. Default 0. Unique per running generator.
    pub worker_id: u64,
    /// Start each tick's sequence at a random value below 2^sequence bits / 16 instead of 0, so
    /// that IDs made at low traffic are not mostly even (Leaf's fix). Default off.
    pub random_start: bool,
    /// How far, in ms, the generator may run ahead of the clock (the clock stepped back, or a
    /// tick's sequence was spent) before it refuses to issue. Default [`DEFAULT_MAX_DRIFT_MS`].
    pub max_drift_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            layout: Layout::twitter(),
            epoch_ms: TWITTER_EPOCH_MS,
            datacenter_id: 0,
            worker_id: 0,
            random_start: false,
            max_drift_ms: DEFAULT_MAX_DRIFT_MS,
        }
    }
}

/// Why settings were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingsError {
    /// The epoch lies after the current time.
    EpochInFuture { epoch_ms: i64, now_ms: i64 },
    /// The time field already overflowed: the layout's range ended at `ended_ms`.
    TimeExhausted { ended_ms: i64 },
    /// The datacenter ID does not fit its field.
    DatacenterOutOfRange { id: u64, max: u64 },
    /// The worker ID does not fit its field.
    WorkerOutOfRange { id: u64, max: u64 },
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::EpochInFuture { epoch_ms, now_ms } => {
                write!(
                    f,
                    "epoch {epoch_ms} ms lies in the future (now is {now_ms} ms)"
                )
            }
            SettingsError::TimeExhausted { ended_ms } => write!(
                f,
                "the layout's time field ran out at {ended_ms} ms since 1970; \
                 choose a later epoch or more time bits"
            ),
            SettingsError::DatacenterOutOfRange { id, max } => {
                write!(f, "datacenter-id {id} does not fit the layout (0 to {max})")
            }
            SettingsError::WorkerOutOfRange { id, max } => {
                write!(f, "worker-id {id} does not fit the layout (0 to {max})")
            }
        }
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// Checks every rule against the time `now_ms`.
    ///
    /// # Errors
    /// The first rule broken, as its own [`SettingsError`] variant.
    pub fn validate(&self, now_ms: i64) -> Result<(), SettingsError> {
        let layout = &self.layout;
        if self.epoch_ms > now_ms {
            return Err(SettingsError::EpochInFuture {
                epoch_ms: self.epoch_ms,
                now_ms,
            });
        }
        // Not a plain subtraction: that overflowed for an epoch far before 1970.
        let ticks = layout.ticks_between(self.epoch_ms, now_ms);
        if ticks > layout.max_ticks() {
            let span = (layout.max_ticks() as i128 + 1) * layout.tick_ms() as i128;
            let ended_ms = (self.epoch_ms as i128 + span).min(i64::MAX as i128) as i64;
            return Err(SettingsError::TimeExhausted { ended_ms });
        }
        let max = layout.max(Field::Datacenter);
        if self.datacenter_id > max {
            return Err(SettingsError::DatacenterOutOfRange {
                id: self.datacenter_id,
                max,
            });
        }
        let max = layout.max(Field::Worker);
        if self.worker_id > max {
            return Err(SettingsError::WorkerOutOfRange {
                id: self.worker_id,
                max,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_000_000_000; // 2026-11

    #[test]
    fn defaults_are_valid() {
        assert_eq!(Settings::default().validate(NOW), Ok(()));
    }

    #[test]
    fn refuses_each_broken_rule() {
        let base = Settings::default();
        let cases = [
            (
                "epoch in the future",
                Settings {
                    epoch_ms: NOW + 1,
                    ..base.clone()
                },
                SettingsError::EpochInFuture {
                    epoch_ms: NOW + 1,
                    now_ms: NOW,
                },
            ),
            (
                "time field used up (20 bits of ms since 2010)",
                Settings {
                    layout: Layout::parse("time:20,sequence:12").unwrap(),
                    ..base.clone()
                },
                SettingsError::TimeExhausted {
                    ended_ms: TWITTER_EPOCH_MS + (1 << 20),
                },
            ),
            (
                "datacenter too large",
                Settings {
                    datacenter_id: 32,
                    ..base.clone()
                },
                SettingsError::DatacenterOutOfRange { id: 32, max: 31 },
            ),
            (
                "worker too large",
                Settings {
                    worker_id: 32,
                    ..base.clone()
                },
                SettingsError::WorkerOutOfRange { id: 32, max: 31 },
            ),
            (
                "datacenter where the layout has none",
                Settings {
                    layout: Layout::instagram(),
                    datacenter_id: 1,
                    ..base.clone()
                },
                SettingsError::DatacenterOutOfRange { id: 1, max: 0 },
            ),
        ];
        for (name, settings, want) in cases {
            assert_eq!(settings.validate(NOW), Err(want), "{name}");
        }
    }
}

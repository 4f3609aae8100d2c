//! The side-by-side comparison behind `cargo bench --bench compare`: every approach driven by
//! the same client code over the same scenarios, then a report with tables and plots.

pub mod drive;
pub mod mariadb;
pub mod properties;
pub mod report;
pub mod svg;

use std::time::Duration;

/// Connections (or callers, or threads) per scenario.
pub const CONNECTIONS: [usize; 3] = [1, 16, 64];
/// Requests in flight per connection: unpipelined, and pipelined.
pub const PIPELINES: [usize; 2] = [1, 16];

/// How long and how much each scenario runs.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Wall time per scenario.
    pub duration: Duration,
    /// Most requests per scenario.
    pub max_requests: u64,
}

impl Budget {
    /// `--quick`: the whole comparison in well under a minute.
    pub fn quick() -> Self {
        Budget {
            duration: Duration::from_millis(200),
            max_requests: 2_000_000,
        }
    }

    /// The full run.
    pub fn full() -> Self {
        Budget {
            duration: Duration::from_secs(3),
            max_requests: 50_000_000,
        }
    }
}

/// The measurements of one approach in one scenario.
#[derive(Clone, Debug, Default)]
pub struct Measurement {
    pub connections: usize,
    pub pipeline: usize,
    /// IDs handed out per second.
    pub ids_per_s: f64,
    /// Round-trip latency percentiles in microseconds: p50, p99, p99.9.
    pub latency_us: [f64; 3],
    /// Every latency sample, microseconds (for the CDF plot).
    pub samples_us: Vec<u32>,
    /// Errors seen.
    pub errors: u64,
}

/// One approach and its results, or why it did not run.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub results: Result<Vec<Measurement>, String>,
}

//! The side-by-side comparison behind `cargo bench --bench compare`: every approach driven by
//! the same client code over the same scenarios, then a report with tables and plots.

pub mod approach;
pub mod drive;
pub mod generators;
pub mod instructions;
#[cfg(feature = "comparison")]
pub mod mariadb;
#[cfg(feature = "comparison")]
pub mod peer_crates;
pub mod peers;
pub mod plot;
#[cfg(feature = "comparison")]
pub mod postgres;
pub mod properties;
pub mod python;
pub mod report;

use std::time::Duration;

/// Connections (or callers, or threads) per scenario.
pub const CONNECTIONS: [usize; 3] = [1, 16, 64];
/// Requests in flight per connection: unpipelined, and pipelined.
pub const PIPELINES: [usize; 2] = [1, 16];

/// Connections of the scenario whose IDs the properties table reads: IDs from many clients,
/// merged in the order they arrived, are what a user's database sees.
pub const SAMPLE_CONNECTIONS: usize = 16;

/// Whether the scenario of `connections` × `pipeline` is the one the properties table reads
/// (for in-process generators, whose IDs are collected thread by thread, one thread).
pub fn is_properties_sample(in_process: bool, connections: usize, pipeline: usize) -> bool {
    let wanted = if in_process { 1 } else { SAMPLE_CONNECTIONS };
    connections == wanted && pipeline == 1
}

/// Fewest samples a percentile is printed from: p99 needs 100, p99.9 1,000.
pub fn enough_samples(quantile: f64, samples: usize) -> bool {
    samples as f64 * (1.0 - quantile) >= 1.0 - 1e-9
}

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
    /// How many latency samples the percentiles come from.
    pub samples: usize,
    /// Every latency sample, microseconds (for the CDF plot).
    pub samples_us: Vec<u32>,
    /// Errors seen.
    pub errors: u64,
}

/// One approach and its results, or why it did not run.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub kind: approach::Kind,
    pub results: Result<Vec<Measurement>, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_properties_sample_is_the_many_connection_unpipelined_run() {
        let picked: Vec<(usize, usize)> = CONNECTIONS
            .iter()
            .flat_map(|&c| PIPELINES.iter().map(move |&p| (c, p)))
            .filter(|&(c, p)| is_properties_sample(false, c, p))
            .collect();
        assert_eq!(picked, vec![(16, 1)]);
        assert!(is_properties_sample(true, 1, 1) && !is_properties_sample(true, 16, 1));
    }

    #[test]
    fn percentiles_need_samples() {
        assert!(enough_samples(0.99, 100) && !enough_samples(0.99, 99));
        assert!(enough_samples(0.999, 1000) && !enough_samples(0.999, 999));
    }
}

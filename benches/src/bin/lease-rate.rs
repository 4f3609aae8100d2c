//! In-process IDs per second under a worker-ID lease (idgen-client), with renewals running in
//! the background, against the Twitter layout's cap of 4,096,000 IDs/s, and how long single
//! calls took (p99.9, calls over 1 ms). Borrowing ahead of the clock is off (max-drift 0), so
//! every ID counted was covered by the clock. Prints one line of `key=value` pairs for
//! benches/module.sh.

use std::time::{Duration, Instant};

use clap::Parser;
use idgen_client::{LeaseOptions, LeasedGenerator};

/// Make IDs under a lease from the coordinator on 127.0.0.1:PORT.
#[derive(Parser)]
struct Args {
    /// Port of the coordinator (redis-server with the idgen module).
    port: u16,
    /// IDs to make.
    #[arg(long, default_value_t = 20_000_000)]
    ids: usize,
    /// Lease TTL in ms (renewals every third of it).
    #[arg(long, default_value_t = 1_000)]
    ttl_ms: u64,
}

fn main() {
    let args = Args::parse();
    let mut options =
        LeaseOptions::new(&format!("redis://127.0.0.1:{}/", args.port), "bench-lease")
            .ttl(Duration::from_millis(args.ttl_ms));
    options.settings.max_drift_ms = 0;
    let ids = LeasedGenerator::start(options).expect("lease");
    let mut took: Vec<u32> = Vec::with_capacity(args.ids);
    let (mut refused, mut last) = (0u64, 0u64);
    let start = Instant::now();
    while took.len() < args.ids {
        let call = Instant::now();
        match ids.next_id() {
            Ok(id) => {
                took.push(call.elapsed().as_nanos().min(u32::MAX as u128) as u32);
                assert!(id > last, "IDs went backwards");
                last = id;
            }
            Err(_) => refused += 1, // this millisecond is spent: try again
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    ids.shutdown();
    took.sort_unstable();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    let over_1ms = took.iter().rev().take_while(|&&ns| ns > 1_000_000).count();
    println!(
        "ids={} seconds={seconds:.3} ids_per_s={:.0} cap_share={:.3} p50_ns={} p99_9_ns={} max_ns={} over_1ms={over_1ms} spent_ms_retries={refused}",
        took.len(),
        took.len() as f64 / seconds,
        took.len() as f64 / seconds / 4_096_000.0,
        at(0.5),
        at(0.999),
        took.last().copied().unwrap_or(0),
    );
}

//! How many IDs per second `SNOWFLAKE.NEXT COUNT n` sustains, from several connections for a
//! fixed time, counting refusals and the slowest call.
//!
//! `batch-rate PORT [SECONDS] [CONNECTIONS] [COUNT]` (defaults 5, 4, 4096). Prints one line of
//! `key=value` pairs for scripts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let Some(port) = args.get(1).and_then(|p| p.parse::<u16>().ok()) else {
        eprintln!("usage: batch-rate PORT [SECONDS] [CONNECTIONS] [COUNT]");
        std::process::exit(2);
    };
    let (seconds, connections, count) = (arg(2, 5), arg(3, 4), arg(4, 4096));
    let url = format!("redis://127.0.0.1:{port}/");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let (url, stop) = (url.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url)?.get_connection()?;
                let (mut ids, mut refused, mut slowest) = (0u64, 0u64, Duration::ZERO);
                while !stop.load(Ordering::Relaxed) {
                    let call = Instant::now();
                    let reply = redis::cmd("SNOWFLAKE.NEXT")
                        .arg("COUNT")
                        .arg(count)
                        .query::<Vec<i64>>(&mut con);
                    slowest = slowest.max(call.elapsed());
                    match reply {
                        Ok(batch) => ids += batch.len() as u64,
                        Err(e) if e.code() == Some("ERR") => refused += 1,
                        Err(e) => return Err(e),
                    }
                }
                Ok::<_, redis::RedisError>((ids, refused, slowest))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let (mut ids, mut refused, mut slowest) = (0, 0, Duration::ZERO);
    for worker in workers {
        match worker.join().expect("worker panicked") {
            Ok((i, r, s)) => (ids, refused, slowest) = (ids + i, refused + r, slowest.max(s)),
            Err(e) => {
                eprintln!("batch-rate: {e}");
                std::process::exit(1);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "ids={ids} calls={} seconds={elapsed:.3} ids_per_s={:.0} refused={refused} slowest_call_ms={:.3}",
        ids / count + refused,
        ids as f64 / elapsed,
        slowest.as_secs_f64() * 1000.0
    );
}

//! How many IDs per second `SNOWFLAKE.NEXT COUNT n` sustains from several connections for a
//! fixed time, counting refusals and the slowest call. Prints one line of `key=value` pairs for
//! scripts (benches/module.sh).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

/// Drive SNOWFLAKE.NEXT COUNT against a redis-server with the idgen module.
#[derive(Parser)]
struct Args {
    /// Port of the server on 127.0.0.1.
    port: u16,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Concurrent connections.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// IDs per call.
    #[arg(long, default_value_t = 4096)]
    count: u64,
}

/// What one connection did.
#[derive(Default)]
struct Tally {
    ids: u64,
    refused: u64,
    slowest: Duration,
}

fn drive(url: String, count: u64, stop: Arc<AtomicBool>) -> redis::RedisResult<Tally> {
    let mut con = redis::Client::open(url)?.get_connection()?;
    let mut tally = Tally::default();
    while !stop.load(Ordering::Relaxed) {
        let call = Instant::now();
        let reply = redis::cmd("SNOWFLAKE.NEXT")
            .arg("COUNT")
            .arg(count)
            .query::<Vec<i64>>(&mut con);
        tally.slowest = tally.slowest.max(call.elapsed());
        match reply {
            Ok(batch) => tally.ids += batch.len() as u64,
            // Refused: the clock does not cover the batch yet. Counted, and tried again.
            Err(e) if e.code() == Some("ERR") => tally.refused += 1,
            Err(e) => return Err(e),
        }
    }
    Ok(tally)
}

fn main() {
    let args = Args::parse();
    let url = format!("redis://127.0.0.1:{}/", args.port);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..args.connections)
        .map(|_| {
            let (url, stop) = (url.clone(), Arc::clone(&stop));
            std::thread::spawn(move || drive(url, args.count, stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(args.seconds));
    stop.store(true, Ordering::Relaxed);
    let mut total = Tally::default();
    for worker in workers {
        match worker.join().expect("worker panicked") {
            Ok(t) => {
                total.ids += t.ids;
                total.refused += t.refused;
                total.slowest = total.slowest.max(t.slowest);
            }
            Err(e) => {
                eprintln!("batch-rate: {e}");
                std::process::exit(1);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "ids={} calls={} seconds={elapsed:.3} ids_per_s={:.0} refused={} slowest_call_ms={:.3}",
        total.ids,
        total.ids / args.count + total.refused,
        total.ids as f64 / elapsed,
        total.refused,
        total.slowest.as_secs_f64() * 1000.0
    );
}

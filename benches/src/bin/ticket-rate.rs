//! Tickets per second through the round-robin client, from many concurrent callers for a fixed
//! time, with no error allowed through. Prints one line of `key=value` pairs for scripts
//! (benches/ticket.sh).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use ticket_client::RoundRobin;

/// Drive TICKET.NEXT through the round-robin client.
#[derive(Parser)]
struct Args {
    /// Comma-separated host:port of the ticket servers.
    #[arg(long, value_delimiter = ',', required = true)]
    servers: Vec<String>,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Concurrent callers (each waits for its reply before the next call).
    #[arg(long, default_value_t = 50)]
    callers: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = Arc::new(RoundRobin::new(&args.servers)?);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let callers: Vec<_> = (0..args.callers)
        .map(|_| {
            let (client, stop) = (Arc::clone(&client), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut tickets = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    client.next("default").await?;
                    tickets += 1;
                }
                Ok::<_, anyhow::Error>(tickets)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for caller in callers {
        total += caller.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "tickets={total} seconds={elapsed:.3} tickets_per_s={:.0}",
        total as f64 / elapsed
    );
    Ok(())
}

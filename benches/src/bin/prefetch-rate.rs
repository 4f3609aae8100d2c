//! Tickets per second handed out in one process by the prefetching client (blocks taken with
//! TICKET.RANGE, refilled in the background), from several threads; sized by count. Prints one
//! line of `key=value` pairs for scripts (benches/ticket.sh).

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use ticket_client::prefetch::Prefetch;
use ticket_client::sizing::Sizing;
use ticket_client::RoundRobin;

/// Hand out tickets through the prefetching client.
#[derive(Parser)]
struct Args {
    /// Comma-separated host:port of the ticket servers.
    #[arg(long, value_delimiter = ',', required = true)]
    servers: Vec<String>,
    /// Tickets each thread hands out.
    #[arg(long, default_value_t = 50_000_000)]
    per_thread: u64,
    /// Threads handing tickets out.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Tickets per block taken from a server (with --adaptive, the most).
    #[arg(long, default_value_t = 1_000_000)]
    block: u64,
    /// Size blocks from how long the last one lasted (1,000 tickets up to --block, aiming at
    /// blocks that last a second) instead of fixed ones.
    #[arg(long)]
    adaptive: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    let client = Arc::new(RoundRobin::new(&args.servers)?);
    let sizing = if args.adaptive {
        Sizing::adaptive(1_000, args.block, std::time::Duration::from_secs(1))
    } else {
        Sizing::fixed(args.block)
    };
    let pool = Prefetch::start_sized(client, "prefetch-bench", sizing, runtime.handle());
    // The first block, so that start-up is not counted.
    let mut first = pool.handle();
    first.ticket()?;
    let started = Instant::now();
    let sums = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..args.threads)
            .map(|_| {
                let mut handle = pool.handle();
                scope.spawn(move || -> anyhow::Result<u64> {
                    // Summed so the work cannot be optimised away.
                    let mut sum = 0u64;
                    for _ in 0..args.per_thread {
                        sum = sum.wrapping_add(handle.ticket()?);
                    }
                    Ok(sum)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("thread"))
            .collect::<anyhow::Result<Vec<u64>>>()
    })?;
    let seconds = started.elapsed().as_secs_f64();
    let total = args.per_thread * args.threads as u64;
    println!(
        "tickets={total} threads={} block={} adaptive={} last_block={} seconds={seconds:.3} tickets_per_s={:.0} checksum={}",
        args.threads,
        args.block,
        args.adaptive,
        pool.block_size(),
        total as f64 / seconds,
        sums.iter().fold(0u64, |a, b| a.wrapping_add(*b)) % 1000
    );
    Ok(())
}

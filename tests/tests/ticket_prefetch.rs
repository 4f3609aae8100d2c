//! Prefetch blocks that size themselves, against a real odd/even pair of ticket servers: the
//! block grows under load and shrinks when the load stops, and a service at 1% of the load a
//! fixed block was sized for holds (and would lose on restart) at least 10 times fewer tickets.
//! Its metrics count the blocks it fetched and the fetches that failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idgen_tests::ticket::TicketServer;
use idgen_tests::{data_dir, sample};
use ticket_client::prefetch::{Prefetch, CHUNK};
use ticket_client::prefetch_metrics;
use ticket_client::sizing::Sizing;
use ticket_client::RoundRobin;

/// How long a block should last, in these tests.
const TARGET: Duration = Duration::from_millis(200);

/// Takes tickets at about `per_second` for `run`, checking none repeats; returns them.
fn take(pool: &Prefetch, per_second: u64, run: Duration) -> Vec<u64> {
    let mut handle = pool.handle();
    let started = Instant::now();
    let mut tickets = Vec::new();
    while started.elapsed() < run {
        tickets.push(handle.ticket().unwrap());
        // Paced: the n-th ticket is not taken before n / per_second seconds.
        let due = Duration::from_secs_f64(tickets.len() as f64 / per_second as f64);
        if let Some(early) = due.checked_sub(started.elapsed()) {
            std::thread::sleep(early);
        }
    }
    tickets
}

#[test]
fn the_block_grows_under_load_and_shrinks_when_it_stops() {
    let dir = data_dir("prefetch-grow");
    let (odd, even) = TicketServer::odd_and_even(&dir, &["--block", "100000000"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()]).unwrap());
    let sizing = Sizing::adaptive(100, 10_000_000, TARGET);
    let pool = Prefetch::start_sized(client, "grow", sizing, runtime.handle());
    assert_eq!(pool.block_size(), 100, "a block starts at the least");

    // As fast as one thread can: counted, not kept (tens of millions).
    let mut handle = pool.handle();
    let started = Instant::now();
    let mut busy = 0u64;
    let mut last_even_odd = [0u64; 2];
    while started.elapsed() < Duration::from_secs(1) {
        for _ in 0..10_000 {
            let ticket = handle.ticket().unwrap();
            // Each server's tickets come in blocks taken in order: never one twice.
            let parity = (ticket % 2) as usize;
            assert!(
                ticket > last_even_odd[parity] || busy == 0,
                "{ticket} after {last_even_odd:?}"
            );
            last_even_odd[parity] = last_even_odd[parity].max(ticket);
            busy += 1;
        }
    }
    drop(handle);
    let grown = pool.block_size();
    assert!(
        grown >= 100 * 64,
        "after {busy} tickets in 1 s the block is only {grown}"
    );
    std::thread::sleep(TARGET * 6);
    let quiet = pool.block_size();
    assert!(
        quiet * 2 <= grown,
        "the block did not shrink when the load stopped: {grown} then {quiet}"
    );
    eprintln!("{busy} tickets; block 100 -> {grown} under load -> {quiet} idle");
}

#[test]
fn a_quiet_service_holds_ten_times_fewer_tickets_than_a_fixed_block() {
    let dir = data_dir("prefetch-waste");
    let (odd, even) = TicketServer::odd_and_even(&dir, &["--block", "100000000"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // The fixed block is sized to last the target at 100,000 tickets/s; the service runs at 1%.
    let full_load = 100_000;
    let fixed_block = full_load * TARGET.as_millis() as u64 / 1_000;
    let quiet = full_load / 100;
    let mut held = Vec::new();
    for (name, sizing) in [
        ("fixed", Sizing::fixed(fixed_block)),
        ("adaptive", Sizing::adaptive(100, 1_000_000, TARGET)),
    ] {
        let client = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()]).unwrap());
        let pool = Prefetch::start_sized(client, name, sizing, runtime.handle());
        let tickets = take(&pool, quiet, Duration::from_secs(2));
        // The handle is gone: what it had left counts with the rest.
        let unused = pool.unused();
        eprintln!(
            "{name}: {} tickets taken, block {}, {unused} held at the end",
            tickets.len(),
            pool.block_size()
        );
        held.push(unused);
    }
    assert!(
        held[0] >= 10 * held[1],
        "a fixed block held {} tickets, an adaptive one {}: not 10x fewer",
        held[0],
        held[1]
    );
}

#[test]
fn the_prefetch_metrics_count_blocks_and_the_fetches_that_failed() {
    let dir = data_dir("prefetch-metrics");
    let (mut odd, mut even) = TicketServer::odd_and_even(&dir, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()]).unwrap());
    let pool = Prefetch::start(client, "metered", 1000, runtime.handle());
    let mut handle = pool.handle();
    for _ in 0..20_000 {
        handle.ticket().unwrap();
    }
    let text = prefetch_metrics::render(&pool);
    assert_eq!(sample(&text, "idgen_prefetch_block_size"), Some(1000.0));
    let refills = sample(&text, "idgen_prefetch_refills_total").unwrap_or(0.0);
    assert!(
        refills >= 20.0,
        "20,000 tickets in blocks of 1,000, {refills} refills:\n{text}"
    );
    assert_eq!(
        sample(&text, "idgen_prefetch_refill_failures_total"),
        Some(0.0)
    );
    let unused = sample(&text, "idgen_prefetch_unused").unwrap_or(f64::MAX);
    assert!(unused <= (2 * 1000 + CHUNK) as f64, "{text}");

    // Every server gone: the client runs dry and counts its failed fetches.
    odd.kill9();
    even.kill9();
    let started = Instant::now();
    while handle.ticket().is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "tickets without servers"
        );
    }
    let text = prefetch_metrics::render(&pool);
    let failures = sample(&text, "idgen_prefetch_refill_failures_total").unwrap_or(0.0);
    assert!(failures >= 1.0, "no failed fetch counted:\n{text}");
    assert!(sample(&text, "idgen_prefetch_refills_total") >= Some(refills));
}

//! Load generation: the same loop for every approach. Each connection keeps `pipeline` requests
//! in flight, measures each round trip, and stops at the deadline or the request budget.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::{Budget, Measurement};

/// IDs from one scenario, in the order their replies arrived (for the properties table).
pub type Arrivals = Vec<u64>;

/// Runs `connections` workers; `connect` opens one worker's client, `call` sends one batch of
/// `pipeline` requests and returns the IDs it got (64-bit, or 128-bit for UUIDs and ULIDs).
pub async fn run<C, F, Fut, Conn, ConnFut, Id>(
    connections: usize,
    pipeline: usize,
    budget: Budget,
    connect: C,
    call: F,
) -> anyhow::Result<(Measurement, Vec<Id>)>
where
    C: Fn() -> ConnFut,
    ConnFut: Future<Output = anyhow::Result<Conn>>,
    Conn: Send + 'static,
    F: Fn(&mut Conn, usize) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = anyhow::Result<Vec<Id>>> + Send,
    Id: Send + 'static,
{
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(connect().await?);
    }
    let sent = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + budget.duration;
    let workers: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let (call, sent) = (call.clone(), Arc::clone(&sent));
            tokio::spawn(async move {
                let (mut latencies, mut ids, mut errors) = (Vec::new(), Vec::new(), 0u64);
                while Instant::now() < deadline
                    && sent.fetch_add(pipeline as u64, Ordering::Relaxed) < budget.max_requests
                {
                    let t = Instant::now();
                    match call(&mut client, pipeline).await {
                        Ok(got) => {
                            let done = Instant::now();
                            latencies.push((done - t).as_micros().min(u32::MAX as u128) as u32);
                            ids.extend(got.into_iter().map(|id| (done, id)));
                        }
                        Err(_) => errors += 1,
                    }
                }
                (latencies, ids, errors)
            })
        })
        .collect();
    let (mut samples, mut arrivals, mut errors) = (Vec::new(), Vec::new(), 0);
    for worker in workers {
        let (l, i, e) = worker.await?;
        samples.extend(l);
        arrivals.extend(i);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    arrivals.sort_by_key(|&(at, _)| at);
    let ids: Vec<Id> = arrivals.into_iter().map(|(_, id)| id).collect();
    let measurement = Measurement {
        connections,
        pipeline,
        ids_per_s: ids.len() as f64 / elapsed,
        latency_us: percentiles(&mut samples),
        samples: samples.len(),
        samples_us: samples,
        errors,
    };
    Ok((measurement, ids))
}

/// p50, p99 and p99.9 of `samples` (sorted in place).
pub fn percentiles(samples: &mut [u32]) -> [f64; 3] {
    samples.sort_unstable();
    let at = |q: f64| -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        samples[((samples.len() - 1) as f64 * q).round() as usize] as f64
    };
    [at(0.50), at(0.99), at(0.999)]
}

/// One thread's generator: an ID per call, or `None` when it refused (its millisecond spent, a
/// lease lost), counted as an error.
pub type ThreadGenerator = Box<dyn FnMut() -> Option<u128> + Send>;

/// Makes a generator for each thread (a handle on a shared pool, or a generator of its own).
pub type Factory = std::sync::Arc<dyn Fn() -> ThreadGenerator + Send + Sync>;

/// In-process generators: `threads` threads calling their generator for the budget; latency per
/// call. Returns the IDs whole (128 bits), thread by thread.
pub fn in_process(threads: usize, budget: Budget, factory: &Factory) -> (Measurement, Vec<u128>) {
    let started = Instant::now();
    let deadline = started + budget.duration;
    let per_thread = budget.max_requests / threads as u64;
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let mut make = factory();
            std::thread::spawn(move || {
                let (mut ids, mut latencies, mut errors) = (Vec::new(), Vec::new(), 0u64);
                // Time batches of 64 calls: a single call is shorter than the clock's resolution.
                while Instant::now() < deadline && (ids.len() as u64) < per_thread {
                    let t = Instant::now();
                    for _ in 0..64 {
                        match make() {
                            Some(id) => ids.push(id),
                            None => errors += 1,
                        }
                    }
                    latencies.push(((t.elapsed().as_nanos() / 64) as u32).max(1));
                }
                (ids, latencies, errors)
            })
        })
        .collect();
    let (mut all, mut samples, mut errors) = (Vec::new(), Vec::new(), 0);
    for h in handles {
        let (ids, l, e) = h.join().expect("generator thread");
        all.extend(ids);
        samples.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut ns = percentiles(&mut samples);
    for v in &mut ns {
        *v /= 1000.0; // ns -> us
    }
    let m = Measurement {
        connections: threads,
        pipeline: 1,
        ids_per_s: all.len() as f64 / elapsed,
        latency_us: ns,
        samples: samples.len(),
        samples_us: Vec::new(),
        errors,
    };
    (m, all)
}

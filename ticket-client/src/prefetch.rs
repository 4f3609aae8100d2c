//! A prefetching client (Meituan Leaf's segment mode, Didi Tinyid's client): tickets are taken
//! from the servers in blocks (`TICKET.RANGE`, a reply of three integers however large the
//! block) and handed out in process.
//!
//! A background task keeps the next block ready before the current one runs dry (a double
//! buffer); the round-robin client under it rides out a dead server. Each thread hands tickets
//! out through its own [`Handle`], which takes a small chunk of the shared blocks at a time, so
//! the issuing path takes a lock once per [`CHUNK`] tickets. Every ticket of a block is the
//! process's alone; a process that exits loses the tickets it had not handed out yet (at most
//! two blocks): a gap, never a repeat.
//!
//! Blocks are of a fixed size, or sized from how fast the last one went ([`Sizing`]): a quiet
//! service then holds, and loses on restart, few tickets, and a busy one rarely calls the
//! servers. [`Prefetch::block_size`] and [`Prefetch::unused`] show both.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{ClientError, Result};
use crate::round_robin::{Range, RoundRobin};
use crate::sizing::Sizing;

/// Tickets a [`Handle`] takes from the shared blocks at a time.
pub const CHUNK: u64 = 4096;
/// How long [`Handle::ticket`] waits for a block before it gives up.
pub const WAIT: Duration = Duration::from_secs(2);

struct Blocks {
    ranges: VecDeque<Range>,
    /// Tickets left in `ranges`.
    available: u64,
    /// The last failure to fetch a block, cleared by a success.
    failed: Option<String>,
}

struct Pool {
    blocks: Mutex<Blocks>,
    /// Signalled when a block arrives (or a fetch fails).
    filled: Condvar,
    /// Wakes the refill task when the blocks run low.
    wanted: tokio::sync::Notify,
    sizing: Sizing,
    /// The size of the next block to fetch.
    block: AtomicU64,
    /// Tickets handles took but had not handed out when they were dropped.
    abandoned: AtomicU64,
    /// Blocks fetched, and fetches that failed.
    refills: AtomicU64,
    refill_failures: AtomicU64,
    stop: AtomicBool,
}

/// Blocks of tickets of one sequence, refilled in the background.
pub struct Prefetch {
    pool: Arc<Pool>,
}

/// One thread's way to hand out tickets.
pub struct Handle {
    pool: Arc<Pool>,
    next: u64,
    step: u64,
    left: u64,
}

impl Prefetch {
    /// Starts fetching blocks of `block` tickets of `sequence` through `client`, on `runtime`.
    pub fn start(
        client: Arc<RoundRobin>,
        sequence: &str,
        block: u64,
        runtime: &tokio::runtime::Handle,
    ) -> Prefetch {
        Prefetch::start_sized(client, sequence, Sizing::fixed(block), runtime)
    }

    /// Starts fetching blocks of `sequence` sized by `sizing` (the first of `sizing.min`).
    pub fn start_sized(
        client: Arc<RoundRobin>,
        sequence: &str,
        sizing: Sizing,
        runtime: &tokio::runtime::Handle,
    ) -> Prefetch {
        let pool = Arc::new(Pool {
            blocks: Mutex::new(Blocks {
                ranges: VecDeque::new(),
                available: 0,
                failed: None,
            }),
            filled: Condvar::new(),
            wanted: tokio::sync::Notify::new(),
            sizing,
            block: AtomicU64::new(sizing.min),
            abandoned: AtomicU64::new(0),
            refills: AtomicU64::new(0),
            refill_failures: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let (refill, sequence) = (Arc::clone(&pool), sequence.to_string());
        runtime.spawn(async move { refill.refill(&client, &sequence).await });
        Prefetch { pool }
    }

    /// The size of the next block it fetches.
    pub fn block_size(&self) -> u64 {
        self.pool.block.load(Ordering::Relaxed)
    }

    /// Blocks fetched since start, and fetches that failed (every server down).
    pub fn refills(&self) -> (u64, u64) {
        (
            self.pool.refills.load(Ordering::Relaxed),
            self.pool.refill_failures.load(Ordering::Relaxed),
        )
    }

    /// Tickets fetched and not handed out: those a shutdown now would throw away (the shared
    /// blocks, and what dropped handles had left; live handles hold up to [`CHUNK`] more each).
    pub fn unused(&self) -> u64 {
        self.pool.lock().available + self.pool.abandoned.load(Ordering::Relaxed)
    }

    /// A handle for one thread.
    pub fn handle(&self) -> Handle {
        Handle {
            pool: Arc::clone(&self.pool),
            next: 0,
            step: 0,
            left: 0,
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.pool.stop.store(true, Ordering::Relaxed);
        self.pool.wanted.notify_one();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.pool.abandoned.fetch_add(self.left, Ordering::Relaxed);
    }
}

impl Handle {
    /// The next ticket: from this handle's chunk, else a new chunk of the shared blocks,
    /// waiting up to [`WAIT`] for one.
    ///
    /// # Errors
    /// When no block arrived in time (every server down): the last fetch error.
    #[inline]
    pub fn ticket(&mut self) -> Result<u64> {
        if self.left == 0 {
            self.refill()?;
        }
        let ticket = self.next;
        self.next += self.step;
        self.left -= 1;
        Ok(ticket)
    }

    /// Tickets this handle holds: as many calls to [`Handle::ticket`] return without waiting.
    pub fn buffered(&self) -> u64 {
        self.left
    }

    fn refill(&mut self) -> Result<()> {
        let pool = &self.pool;
        let mut blocks = pool.lock();
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(chunk) = take(&mut blocks, CHUNK) {
                if blocks.available < pool.block.load(Ordering::Relaxed) {
                    pool.wanted.notify_one();
                }
                (self.next, self.step, self.left) = (chunk.first, chunk.step, chunk.count);
                return Ok(());
            }
            pool.wanted.notify_one();
            let now = std::time::Instant::now();
            if now >= deadline {
                let why = blocks
                    .failed
                    .clone()
                    .unwrap_or_else(|| "no block yet".into());
                return Err(ClientError::NoBlock { wait: WAIT, why });
            }
            blocks = pool
                .filled
                .wait_timeout(blocks, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Up to `most` tickets off the front of the blocks.
fn take(blocks: &mut Blocks, most: u64) -> Option<Range> {
    let front = blocks.ranges.front_mut()?;
    let count = front.count.min(most);
    let chunk = Range {
        first: front.first,
        step: front.step,
        count,
    };
    front.first += count * front.step;
    front.count -= count;
    if front.count == 0 {
        blocks.ranges.pop_front();
    }
    blocks.available -= count;
    Some(chunk)
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Blocks> {
        self.blocks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps at least one block beyond the one in use. From the second fetch on, a block is
    /// fetched each time one has been used up: the time between fetches is how long a block
    /// lasted, which sizes the next one. (The first two come together: one to use, one ahead.)
    /// While no block is needed, the next one is resized as the wait grows, so that a service
    /// gone quiet asks for a small block when it asks again.
    async fn refill(&self, client: &RoundRobin, sequence: &str) {
        // The last fetch's time and size, once fetches follow use.
        let mut last: Option<(Instant, u64)> = None;
        let mut fetches = 0u64;
        let adaptive = self.sizing.min < self.sizing.max;
        while !self.stop.load(Ordering::Relaxed) {
            let block = self.block.load(Ordering::Relaxed);
            if self.lock().available >= block {
                if !adaptive {
                    self.wanted.notified().await;
                    continue;
                }
                let wait = self.sizing.target.saturating_mul(2);
                if tokio::time::timeout(wait, self.wanted.notified())
                    .await
                    .is_err()
                {
                    if let Some((at, size)) = last {
                        let next = self.sizing.next(size, at.elapsed());
                        self.block.store(next.min(block), Ordering::Relaxed);
                    }
                }
                continue;
            }
            match client.range(sequence, block).await {
                Ok(range) => {
                    let now = Instant::now();
                    fetches += 1;
                    self.refills.fetch_add(1, Ordering::Relaxed);
                    if let Some((at, size)) = last {
                        let next = self.sizing.next(size, now - at);
                        self.block.store(next, Ordering::Relaxed);
                    }
                    if fetches >= 2 {
                        last = Some((now, block));
                    }
                    let mut blocks = self.lock();
                    blocks.available += range.count;
                    blocks.ranges.push_back(range);
                    blocks.failed = None;
                }
                Err(e) => {
                    self.refill_failures.fetch_add(1, Ordering::Relaxed);
                    self.lock().failed = Some(e.to_string());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            self.filled.notify_all();
        }
    }
}

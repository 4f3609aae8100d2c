//! The DATESEQ witness file (`idgen.dateseq-witness-file`): a background thread that appends
//! each counter's reservations ([`idgen_core::dateseq::ledger`]) and syncs them before the values
//! below them are handed out.
//!
//! Commands never wait for the disk: a value above its counter's reservation is replied to once
//! the thread has written a block above it (the client is blocked meanwhile, see
//! `dateseq.rs`), and a counter in steady use has its next block asked half a block ahead, so
//! it never waits. Only inside MULTI or a script, where a client cannot be blocked, does the
//! command wait for the write itself, and then only at a block's end.
//!
//! Writes are grouped: every reservation asked while one write syncs goes out in the next, in
//! one append and one fsync. The file is rewritten whole ([`durable::replace`]) at load and
//! whenever its lines outnumber four times the counters it holds, dropping periods long over.
//! At a clean shutdown it is rewritten with what each counter actually handed out, so a clean
//! restart skips nothing.
//!
//! The file is locked while the module runs (`<file>.lock`): two servers on one witness file
//! would each take the other's reservations for their own.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use idgen_core::dateseq::ledger::{self, Crashed, Entry, Ledger};
use idgen_core::dateseq::witness::{GRACE_MS, NEW_COUNTER_BLOCK};
use idgen_core::{durable, Clock, SystemClock};

/// The file is rewritten once its lines outnumber this many times the counters it holds...
const REWRITE_RATIO: u64 = 4;
/// ...and at least this many.
const REWRITE_MIN_LINES: u64 = 100_000;

/// The longest period a counter has (a leap year): a crashed run's window is kept this long.
const LONGEST_PERIOD_MS: i64 = 366 * 86_400_000;

/// A reservation to write: values of counter `name` up to `entry.reserved`.
pub struct Ask {
    /// The counter's witness name (its hash, `Witnesses::name`).
    pub name: u64,
    pub entry: Entry,
}

/// Told when the write that holds every reservation asked before it is synced, or failed.
pub type Waiter = Box<dyn FnOnce(Result<(), String>) + Send>;

/// The outcome of one reservation, for the commands' witnesses: `(name, reserved, written)`.
pub type Confirmation = (u64, u64, bool);

/// The witness file and its writer. Dropping it writes what is queued and stops the thread.
pub struct WitnessFile {
    path: PathBuf,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Held open (and locked) while the module runs.
    _lock: File,
}

/// What the commands and the thread share.
#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Whether `confirmed` holds any: the one load each DATESEQ.NEXT pays.
    news: AtomicBool,
    confirmed: Mutex<Vec<Confirmation>>,
    /// Writes (appends and fsyncs) made, lines written, clients that waited.
    writes: AtomicU64,
    lines: AtomicU64,
    waits: AtomicU64,
    /// Why the last write failed; `None` while writes succeed.
    failure: Mutex<Option<String>>,
    /// Whether any write of blocks failed in this run: a new counter's block may be missing
    /// then, though its first values went out under the `every` line.
    lost_blocks: AtomicBool,
}

#[derive(Default)]
struct Queue {
    asks: Vec<Ask>,
    waiters: Vec<Waiter>,
    stop: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl WitnessFile {
    /// Takes the lock, reads what earlier runs reserved (the periods not long over), rewrites
    /// the file with one line per counter, and starts the writer.
    ///
    /// # Errors
    /// When another process holds the lock, or the file cannot be read, is not this module's,
    /// or cannot be written: the module must not load then, and the file is left as it was.
    pub fn open(path: PathBuf) -> Result<(WitnessFile, Ledger), String> {
        let lock_file = durable::lock(
            &path,
            "two servers on one DATESEQ witness file would take each other's reservations for \
             their own",
        )?;
        let text = durable::read(&path).map_err(|e| e.to_string())?;
        let found = ledger::parse(text.unwrap_or_default().as_bytes()).map_err(|e| {
            format!(
                "{}: {e}; move it away only if no DATESEQ counter of a live period must carry on \
                 above what it recorded",
                path.display()
            )
        })?;
        let now = SystemClock.now_ms();
        let entries = ledger::fold(found.entries, now);
        // A run that left its `every` line crashed: its window closes now, and is kept as long
        // as a period that overlapped it can be under way.
        let mut crashed = found.crashed;
        if let Some((floor, from_ms)) = found.every {
            crashed.push(Crashed {
                floor,
                from_ms,
                to_ms: now,
            });
        }
        crashed.retain(|c| now < c.to_ms.saturating_add(LONGEST_PERIOD_MS + GRACE_MS));
        let every = (NEW_COUNTER_BLOCK, now);
        let text = ledger::render(Some(every), &crashed, &entries);
        durable::replace(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let append = open_append(&path)?;
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = Arc::clone(&shared);
            let mut writer = Writer {
                path: path.clone(),
                file: append,
                every,
                crashed: crashed.clone(),
                live: entries.len() as u64,
                lines: entries.len() as u64,
                synced_len: text.len() as u64,
                torn: false,
            };
            std::thread::Builder::new()
                .name("idgen-dateseq-witness".into())
                .spawn(move || writer.run(&shared))
                .map_err(|e| format!("cannot start the DATESEQ witness writer: {e}"))?
        };
        let file = WitnessFile {
            path,
            shared,
            thread: Some(thread),
            _lock: lock_file,
        };
        Ok((
            file,
            Ledger {
                every: None,
                crashed,
                entries,
            },
        ))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues a reservation for the next write.
    pub fn ask(&self, ask: Ask) {
        self.queue(|queue| queue.asks.push(ask));
    }

    /// Has `waiter` told when every reservation asked so far is written (or failed).
    pub fn wait(&self, waiter: Waiter) {
        self.shared.waits.fetch_add(1, Ordering::Relaxed);
        self.queue(|queue| queue.waiters.push(waiter));
    }

    /// Adds to the queue, waking the writer only if it was empty: otherwise the writer was
    /// woken already, or is writing and takes the whole queue next (a wake is a system call,
    /// which the first values of new counters would pay each).
    fn queue(&self, add: impl FnOnce(&mut Queue)) {
        let mut queue = lock(&self.shared.queue);
        let idle = queue.asks.is_empty() && queue.waiters.is_empty();
        add(&mut queue);
        drop(queue);
        if idle {
            self.shared.wake.notify_one();
        }
    }

    /// Waits here until every reservation asked so far is written: for callers that cannot be
    /// blocked (MULTI, scripts).
    ///
    /// # Errors
    /// Why the write failed.
    pub fn wait_here(&self) -> Result<(), String> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.wait(Box::new(move |result| {
            let _ = tx.send(result);
        }));
        rx.recv()
            .unwrap_or_else(|_| Err("the DATESEQ witness writer stopped".into()))
    }

    /// Whether outcomes of writes wait for [`WitnessFile::confirmations`].
    #[inline]
    pub fn has_news(&self) -> bool {
        self.shared.news.load(Ordering::Acquire)
    }

    /// The outcomes of the writes since the last call.
    pub fn confirmations(&self) -> Vec<Confirmation> {
        let mut confirmed = lock(&self.shared.confirmed);
        self.shared.news.store(false, Ordering::Release);
        std::mem::take(&mut *confirmed)
    }

    /// Writes made, lines written, clients that waited for a write.
    pub fn counts(&self) -> (u64, u64, u64) {
        let s = &self.shared;
        (
            s.writes.load(Ordering::Relaxed),
            s.lines.load(Ordering::Relaxed),
            s.waits.load(Ordering::Relaxed),
        )
    }

    /// Why the last write failed, if it did.
    pub fn failure(&self) -> Option<String> {
        lock(&self.shared.failure).clone()
    }

    /// At a clean shutdown: finishes the queued writes, stops the writer, and rewrites the file
    /// with `handed_out(name)` for each counter (what it actually handed out, never above its
    /// reservation), so the next start skips nothing; unless a write of blocks failed in this
    /// run, which the file then keeps as a crashed run.
    ///
    /// # Errors
    /// When the file cannot be read or written; it then keeps the reservations, which are safe.
    pub fn close_exact(&mut self, handed_out: impl Fn(&[u8]) -> Option<u64>) -> Result<(), String> {
        self.stop();
        let text = durable::read(&self.path).map_err(|e| e.to_string())?;
        let found = ledger::parse(text.unwrap_or_default().as_bytes())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let mut entries = ledger::fold(found.entries, SystemClock.now_ms());
        for entry in &mut entries {
            if let Some(highest) = handed_out(&entry.name) {
                entry.reserved = entry.reserved.min(highest);
            }
        }
        // Every counter used is named (the writer wrote every block asked before it stopped),
        // so the line that covered new counters goes.
        // Blocks that could not be written leave counters that went out unnamed: this run then
        // stays reckoned with, as a crash would.
        let mut crashed = found.crashed;
        if let Some((floor, from_ms)) = found.every {
            if self.shared.lost_blocks.load(Ordering::Relaxed) {
                let to_ms = SystemClock.now_ms();
                crashed.push(Crashed {
                    floor,
                    from_ms,
                    to_ms,
                });
            }
        }
        durable::replace(&self.path, &ledger::render(None, &crashed, &entries))
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    /// Finishes what is queued and stops the writer.
    fn stop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WitnessFile {
    fn drop(&mut self) {
        self.stop();
    }
}

fn open_append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// The thread's side.
struct Writer {
    path: PathBuf,
    file: File,
    /// The file's `every` line, and the crashed runs it keeps.
    every: (u64, i64),
    crashed: Vec<Crashed>,
    /// Counters in the file at its last rewrite, and lines in it now.
    live: u64,
    lines: u64,
    /// The file's length after the last synced write, and whether a failed write may have left
    /// part of a line after it (cut off before the next write, so no line is ever torn).
    synced_len: u64,
    torn: bool,
}

impl Writer {
    fn run(&mut self, shared: &Shared) {
        loop {
            let (asks, waiters, stop) = {
                let mut queue = lock(&shared.queue);
                while queue.asks.is_empty() && queue.waiters.is_empty() && !queue.stop {
                    queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
                }
                let asks = std::mem::take(&mut queue.asks);
                (asks, std::mem::take(&mut queue.waiters), queue.stop)
            };
            let result = if asks.is_empty() {
                Ok(())
            } else {
                self.append(&asks)
            };
            match &result {
                Ok(()) => {
                    shared
                        .writes
                        .fetch_add(u64::from(!asks.is_empty()), Ordering::Relaxed);
                    shared.lines.fetch_add(asks.len() as u64, Ordering::Relaxed);
                    *lock(&shared.failure) = None;
                }
                Err(why) => {
                    shared.lost_blocks.store(true, Ordering::Relaxed);
                    crate::ffi::log("warning", &format!("idgen: {why}"));
                    *lock(&shared.failure) = Some(why.clone());
                }
            }
            if !asks.is_empty() {
                let written = result.is_ok();
                let mut confirmed = lock(&shared.confirmed);
                confirmed.extend(asks.iter().map(|a| (a.name, a.entry.reserved, written)));
                shared.news.store(true, Ordering::Release);
            }
            for waiter in waiters {
                waiter(result.clone());
            }
            if result.is_ok() && self.lines > (REWRITE_RATIO * self.live).max(REWRITE_MIN_LINES) {
                if let Err(why) = self.rewrite() {
                    crate::ffi::log("warning", &format!("idgen: {why}"));
                }
            }
            if stop {
                let queue = lock(&shared.queue);
                if queue.asks.is_empty() && queue.waiters.is_empty() {
                    return;
                }
            }
        }
    }

    /// Appends `asks` as lines and syncs them.
    fn append(&mut self, asks: &[Ask]) -> Result<(), String> {
        let mut out = Vec::with_capacity(asks.len() * 48);
        for ask in asks {
            ask.entry.write(&mut out);
        }
        let fail = |e: std::io::Error| {
            format!(
                "cannot write the DATESEQ witness file {}: {e}",
                self.path.display()
            )
        };
        if self.torn {
            self.file.set_len(self.synced_len).map_err(fail)?;
            self.torn = false;
        }
        self.torn = true;
        self.file.write_all(&out).map_err(fail)?;
        self.file.sync_data().map_err(fail)?;
        self.torn = false;
        self.synced_len += out.len() as u64;
        self.lines += asks.len() as u64;
        Ok(())
    }

    /// Rewrites the file with one line per counter of a live period.
    fn rewrite(&mut self) -> Result<(), String> {
        let text = durable::read(&self.path).map_err(|e| e.to_string())?;
        let found = ledger::parse(text.unwrap_or_default().as_bytes())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let entries = ledger::fold(found.entries, SystemClock.now_ms());
        let text = ledger::render(Some(self.every), &self.crashed, &entries);
        durable::replace(&self.path, &text)
            .map_err(|e| format!("cannot rewrite {}: {e}", self.path.display()))?;
        self.file = open_append(&self.path)?;
        self.synced_len = text.len() as u64;
        self.live = entries.len() as u64;
        self.lines = self.live;
        Ok(())
    }
}

//! A file of lines appended from a background thread, each append synced before anyone waiting
//! on it is told: the writer of the witness files (`witness_file.rs` for DATESEQ counters,
//! `lease_witness.rs` for lease namespaces).
//!
//! Commands never wait for the disk: they queue lines ([`Journal::ask`]) and, when a reply must
//! not go out before its lines are on disk, have a blocked client answered once they are
//! ([`Journal::wait`]). Writes are grouped: every line queued while one write syncs goes out in
//! the next, in one append and one `fdatasync`.
//!
//! A waiter is told of success only when every line queued before it is written and synced. A
//! write that fails (short, ENOSPC, EIO, a failed sync) fails every waiter of its batch, and its
//! lines are kept and written again at the head of the next batch (folded by the book, so a
//! long outage holds one line per name, not one per call): so a waiter that comes after the
//! failure, even with no line of its own, is not told of success until those lines are on disk.
//! A failed write may leave part of a line behind; it is cut off at once, or else before the
//! next write, so no line is ever torn but the last one of a crash (which the files' readers
//! skip, `crate::files::lines::whole`). The file is rewritten whole ([`durable::replace`]) once
//! its lines outnumber four times what it holds.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use idgen_core::{Clock, SystemClock};
use idgen_durable as durable;

/// The file is rewritten once its lines outnumber this many times the entries it holds...
const REWRITE_RATIO: u64 = 4;
/// ...and at least this many.
const REWRITE_MIN_LINES: u64 = 100_000;

/// What one kind of journal writes, and how it is rewritten.
pub trait Book: Send + 'static {
    /// What a line says.
    type Line: Send + 'static;
    /// Appends `line` as text, with its newline.
    fn write(line: &Self::Line, out: &mut Vec<u8>);
    /// Told on the writer's thread after each append: its lines, and whether they were synced.
    fn appended(&mut self, _lines: &[Self::Line], _written: bool) {}
    /// The lines of a failed write, kept to be written again: as few as say the same (each
    /// name at its highest), so that a disk full for long holds no more than one per name.
    fn fold(lines: Vec<Self::Line>) -> Vec<Self::Line> {
        lines
    }
    /// The whole file made anew from what it holds at `now_ms` (`text`), and how many entries
    /// that is.
    ///
    /// # Errors
    /// When `text` is not the journal's.
    fn rewrite(&mut self, text: &[u8], now_ms: i64) -> Result<(Vec<u8>, u64), String>;
}

/// Told when the write that holds every line queued before it is synced, or failed.
pub type Waiter = Box<dyn FnOnce(Result<(), String>) + Send>;

/// A file a reply can wait for: both witness files (`crate::cmd::durable_reply`).
pub trait Durable {
    /// Has `waiter` told when every line asked so far is written (or failed).
    fn wait(&self, waiter: Waiter);

    /// Waits here until every line asked so far is written: for callers that cannot be
    /// blocked (MULTI, scripts).
    ///
    /// # Errors
    /// Why the write failed.
    fn wait_here(&self) -> Result<(), String>;
}

/// The file and its writer. Dropping it writes what is queued and stops the thread.
pub struct Journal<L> {
    path: PathBuf,
    shared: Arc<Shared<L>>,
    thread: Option<JoinHandle<()>>,
    /// Held open (and locked) while the module runs.
    _lock: File,
}

/// What the commands and the thread share.
struct Shared<L> {
    queue: Mutex<Queue<L>>,
    wake: Condvar,
    /// Writes (appends and syncs) made, lines written, waits asked.
    writes: AtomicU64,
    lines: AtomicU64,
    waits: AtomicU64,
    /// Why the last write failed; `None` while writes succeed.
    failure: Mutex<Option<String>>,
    /// Whether any write failed in this run.
    failed_once: AtomicBool,
}

struct Queue<L> {
    lines: Vec<L>,
    waiters: Vec<Waiter>,
    stop: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<L: Send + 'static> Journal<L> {
    /// Starts the writer of `path` (which `lock` guards), a file of `len` bytes holding
    /// `entries` entries, as made by `book`; `what` names the file in errors.
    ///
    /// # Errors
    /// When the file cannot be opened for appending or the thread cannot start.
    pub fn start<B: Book<Line = L>>(
        path: PathBuf,
        lock: File,
        what: &'static str,
        (len, entries): (u64, u64),
        book: B,
    ) -> Result<Journal<L>, String> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                lines: Vec::new(),
                waiters: Vec::new(),
                stop: false,
            }),
            wake: Condvar::new(),
            writes: AtomicU64::new(0),
            lines: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            failure: Mutex::new(None),
            failed_once: AtomicBool::new(false),
        });
        let mut writer = Writer {
            file: open_append(&path)?,
            path: path.clone(),
            what,
            book,
            live: entries,
            lines: entries,
            synced_len: len,
            torn: false,
            failed: Vec::new(),
        };
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("idgen-witness".into())
                .spawn(move || writer.run(&shared))
                .map_err(|e| format!("cannot start the writer of {what}: {e}"))?
        };
        Ok(Journal {
            path,
            shared,
            thread: Some(thread),
            _lock: lock,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `line` for the next write.
    pub fn ask(&self, line: L) {
        self.queue(|queue| queue.lines.push(line));
    }

    /// Adds to the queue, waking the writer only if it was empty: otherwise the writer was
    /// woken already, or is writing and takes the whole queue next (a wake is a system call,
    /// which every new DATESEQ counter's first value would pay).
    fn queue(&self, add: impl FnOnce(&mut Queue<L>)) {
        let mut queue = lock(&self.shared.queue);
        let idle = queue.lines.is_empty() && queue.waiters.is_empty();
        add(&mut queue);
        drop(queue);
        if idle {
            self.shared.wake.notify_one();
        }
    }

    /// Writes made, lines written, waits asked.
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

    /// Whether any write failed in this run.
    pub fn failed_once(&self) -> bool {
        self.shared.failed_once.load(Ordering::Relaxed)
    }
}

/// Every witness file is a journal: one "reply once durable" (`crate::cmd::durable_reply`)
/// for both books.
impl<L: Send + 'static> Durable for Journal<L> {
    fn wait(&self, waiter: Waiter) {
        self.shared.waits.fetch_add(1, Ordering::Relaxed);
        self.queue(|queue| queue.waiters.push(waiter));
    }

    /// Also for the rare event that must not go on before its line is.
    fn wait_here(&self) -> Result<(), String> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.wait(Box::new(move |result| {
            let _ = tx.send(result);
        }));
        rx.recv()
            .unwrap_or_else(|_| Err(format!("the writer of {} stopped", self.path.display())))
    }
}

impl<L> Journal<L> {
    /// Finishes what is queued and stops the writer.
    pub fn stop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl<L> Drop for Journal<L> {
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
struct Writer<B: Book> {
    path: PathBuf,
    what: &'static str,
    file: File,
    book: B,
    /// Entries in the file at its last rewrite, and lines in it now.
    live: u64,
    lines: u64,
    /// The file's length after the last synced write, and whether a failed write may have left
    /// part of a line after it.
    synced_len: u64,
    torn: bool,
    /// The lines of the last failed write, to go out first in the next.
    failed: Vec<B::Line>,
}

impl<B: Book> Writer<B> {
    fn run(&mut self, shared: &Shared<B::Line>) {
        loop {
            let (lines, waiters, stop) = {
                let mut queue = lock(&shared.queue);
                while queue.lines.is_empty() && queue.waiters.is_empty() && !queue.stop {
                    queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
                }
                let mut lines = std::mem::take(&mut self.failed);
                lines.append(&mut queue.lines);
                (lines, std::mem::take(&mut queue.waiters), queue.stop)
            };
            let result = if lines.is_empty() {
                Ok(())
            } else {
                self.append(&lines)
            };
            match &result {
                Ok(()) => {
                    shared
                        .writes
                        .fetch_add(u64::from(!lines.is_empty()), Ordering::Relaxed);
                    shared
                        .lines
                        .fetch_add(lines.len() as u64, Ordering::Relaxed);
                    *lock(&shared.failure) = None;
                }
                Err(why) => {
                    shared.failed_once.store(true, Ordering::Relaxed);
                    crate::ffi::log("warning", &format!("idgen: {why}"));
                    *lock(&shared.failure) = Some(why.clone());
                }
            }
            if !lines.is_empty() {
                self.book.appended(&lines, result.is_ok());
            }
            if result.is_err() {
                self.failed = B::fold(lines);
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
                if queue.lines.is_empty() && queue.waiters.is_empty() {
                    return;
                }
            }
        }
    }

    /// Appends `lines` and syncs them.
    fn append(&mut self, lines: &[B::Line]) -> Result<(), String> {
        let mut out = Vec::with_capacity(lines.len() * 48);
        for line in lines {
            B::write(line, &mut out);
        }
        let fail =
            |e: std::io::Error| format!("cannot write {} {}: {e}", self.what, self.path.display());
        if self.torn {
            self.file.set_len(self.synced_len).map_err(fail)?;
            self.torn = false;
        }
        self.torn = true;
        if let Err(e) = self
            .file
            .write_all(&out)
            .and_then(|()| self.file.sync_data())
        {
            // Cut back now, so that a restart before the next write finds no part of these.
            if self.file.set_len(self.synced_len).is_ok() {
                self.torn = false;
            }
            return Err(fail(e));
        }
        self.torn = false;
        self.synced_len += out.len() as u64;
        self.lines += lines.len() as u64;
        Ok(())
    }

    /// Rewrites the file with what it holds, one entry a line.
    fn rewrite(&mut self) -> Result<(), String> {
        let text = durable::read(&self.path).map_err(|e| e.to_string())?;
        let (text, live) = self
            .book
            .rewrite(text.unwrap_or_default().as_bytes(), SystemClock.now_ms())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        durable::replace(&self.path, &text)
            .map_err(|e| format!("cannot rewrite {}: {e}", self.path.display()))?;
        self.file = open_append(&self.path)?;
        self.synced_len = text.len() as u64;
        self.live = live;
        self.lines = live;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A journal of plain words.
    struct Words;

    impl Book for Words {
        type Line = String;

        fn write(line: &String, out: &mut Vec<u8>) {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }

        fn rewrite(&mut self, text: &[u8], _: i64) -> Result<(Vec<u8>, u64), String> {
            Ok((text.to_vec(), 0))
        }
    }

    /// A journal on /dev/full, where every write fails with ENOSPC.
    fn on_a_full_disk(dir: &tempfile::TempDir) -> Journal<String> {
        let lock = File::create(dir.path().join("lock")).unwrap();
        let full = PathBuf::from("/dev/full");
        Journal::start(full, lock, "the test journal", (0, 0), Words).unwrap()
    }

    #[test]
    fn a_waiter_after_a_failed_write_is_not_told_of_success() {
        let dir = tempfile::tempdir().unwrap();
        let journal = on_a_full_disk(&dir);
        journal.ask("reserved 100".into());
        // The writer takes the line alone, before anyone waits, and fails on it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while journal.failure().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let failure = journal.failure().expect("the write to /dev/full failed");
        assert!(failure.contains("the test journal"), "{failure}");
        // Waiting now, with no line of its own: the lost line is still owed.
        let told = journal.wait_here();
        assert!(
            told.is_err(),
            "told of success though its line is not on disk"
        );
        assert_eq!(journal.counts().0, 0, "no write succeeded");
    }
}

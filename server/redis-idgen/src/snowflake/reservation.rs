//! The durable reservation that keeps Snowflake IDs unique across restarts and crashes.
//!
//! A background thread keeps a small file (`idgen.state-file`, in Redis's working directory)
//! holding a time [`MARGIN_MS`] ahead of the last issued ID (or of the clock), written
//! atomically and fsynced *before* the generator may issue IDs up to it. On load the module
//! resumes above the time in the file (and above the load time plus the drift limit, the
//! witness left when the file is lost: `resumed.rs`). So however the process ends (kill -9,
//! power loss), every ID it issued lies below the time on disk and the next run starts above
//! it, even if the generator had borrowed ahead of the clock. If the file cannot be written the
//! reservation runs out and SNOWFLAKE.NEXT refuses with an error instead of risking repeats.
//! Redis's own thread never waits for the disk here, except once at load time.
//!
//! Beside the time, the file records the layout and epoch the IDs are made under
//! (`<ms> layout=<spec> epoch=<ms>`), so that a restart under other settings is checked
//! against what was issued ([`crate::snowflake::lineage::Lineage`]) before anything is written.
//!
//! The file is locked while the module runs: a second server started on the same directory
//! (the same configuration twice) refuses to load instead of handing out the same IDs. The lock
//! and the temporary file are named by appending `.lock` and `.tmp` to the state file's name, so
//! no choice of name makes two of them one file; the lock file is never truncated.
//!
//! The thread wakes every [`TICK`], and at once when a command finds the reservation less than
//! half a margin ahead of IDs that left the clock (a burst that borrows ticks, or a clock that
//! jumped past the reservation). IDs that keep to the clock need no word: the thread reads the
//! clock itself.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use idgen_core::{Clock, SystemClock};
use idgen_durable as durable;

use crate::ffi::log;

/// How far the reservation reaches beyond the last issued ID or the clock, whichever is later.
pub const MARGIN_MS: i64 = 500;
/// How often the thread looks at the reservation.
const TICK: Duration = Duration::from_millis(25);

/// The reservation: its file's lock, and the thread that keeps it ahead of the IDs. Dropping it
/// stops the thread and lets the lock go.
pub struct Reservation {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Held open (and locked) while the module runs.
    _lock: File,
}

/// What the commands and the thread share.
#[derive(Default)]
struct Shared {
    /// IDs may be issued in ticks before this time (ms since 1970).
    durable_until: AtomicI64,
    /// The tick of the last ID issued, ms since 1970.
    last_issued: AtomicI64,
    stop: AtomicBool,
    /// Whether [`Shared::failure`] is set, readable without a lock on every call.
    failing: AtomicBool,
    /// Why the last write of the state file failed; `None` while writes succeed.
    failure: Mutex<Option<String>>,
}

impl Reservation {
    /// The time below which IDs are durably reserved.
    pub fn durable_until(&self) -> i64 {
        self.shared.durable_until.load(Ordering::Acquire)
    }

    /// Tells the thread how far IDs have gone, where they left the clock, so the reservation
    /// keeps ahead of them; wakes it when they come within half a margin of its end, unless its
    /// writes are failing (it then retries on its own tick: a wake per call would be a failed
    /// write per call).
    pub fn note_issued(&self, tick_ms: i64) {
        self.shared.last_issued.store(tick_ms, Ordering::Relaxed);
        if self.durable_until() - tick_ms < MARGIN_MS / 2
            && !self.shared.failing.load(Ordering::Relaxed)
        {
            if let Some(thread) = &self.thread {
                thread.thread().unpark();
            }
        }
    }

    /// Why the state file cannot be written right now, if it cannot.
    pub fn failure(&self) -> Option<String> {
        if !self.shared.failing.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.shared.failure).clone()
    }

    /// Why IDs must not be issued now, even below the reservation, if they must not: while
    /// the file cannot be written, a clock past the reservation is not waited out by issuing
    /// IDs that lag it (the reservation is not coming), but refused, saying why.
    #[inline]
    pub fn refusal(&self) -> Option<String> {
        if !self.shared.failing.load(Ordering::Acquire) {
            return None;
        }
        self.refusal_while_failing()
    }

    /// [`Reservation::refusal`] once writes fail: out of the path every ID takes.
    #[cold]
    fn refusal_while_failing(&self) -> Option<String> {
        if SystemClock.now_ms() < self.durable_until() {
            return None;
        }
        self.failure()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn set_failure(&self, why: Option<String>) {
        let mut failure = lock(&self.failure);
        self.failing.store(why.is_some(), Ordering::Release);
        *failure = why;
    }

    /// The later of the clock and the last issued ID.
    fn high_water(&self) -> i64 {
        SystemClock
            .now_ms()
            .max(self.last_issued.load(Ordering::Relaxed))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The latest reservation a state file may hold: the last ms of the year 9999.
const LATEST_MS: i64 = 253_402_300_799_999;

/// What the state file held at load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// No file: a first start, or the file was lost.
    Missing,
    /// A file with nothing in it: truncated by hand, or emptied by a file system that lost it.
    Empty,
    /// An earlier run's reservation (ms since 1970) and the words after it (the lineage; `None`
    /// in a file from before lineages were recorded).
    Reserved(i64, Option<String>),
}

impl Found {
    /// The reservation's time, if the file held one.
    pub fn reserved_ms(&self) -> Option<i64> {
        match self {
            Found::Reserved(ms, _) => Some(*ms),
            Found::Missing | Found::Empty => None,
        }
    }

    /// A word for INFO and the log.
    pub fn word(&self) -> &'static str {
        match self {
            Found::Missing => "missing",
            Found::Empty => "empty",
            Found::Reserved(..) => "reserved",
        }
    }
}

/// Reads the reservation left by an earlier run, if any.
///
/// # Errors
/// When something other than a text file is in its place, or its text does not start with a
/// time: this module never writes that, so it may be someone else's file.
fn read(path: &Path) -> Result<Found, String> {
    let Some(text) = durable::read(path).map_err(|e| e.to_string())? else {
        return Ok(Found::Missing);
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(Found::Empty);
    }
    let (time, rest) = text.split_once(' ').unwrap_or((text, ""));
    let until = time
        .parse::<i64>()
        .ok()
        .filter(|t| (0..=LATEST_MS).contains(t))
        .ok_or_else(|| {
            format!(
                "{}: its reservation time {} is not a time in ms from 0 to {LATEST_MS} (the year \
                 9999): this module never writes that; fix or remove the file only if you know \
                 the last ID this server issued",
                path.display(),
                crate::error::shown(time.as_bytes())
            )
        })?;
    let rest = rest.trim();
    Ok(Found::Reserved(
        until,
        (!rest.is_empty()).then(|| rest.to_string()),
    ))
}

/// Writes `until_ms` and the lineage `record` to `path` so that a crash at any point leaves
/// the old or the new file ([`durable::replace`]).
fn write(path: &Path, until_ms: i64, record: &str) -> std::io::Result<()> {
    durable::replace(path, format!("{until_ms} {record}\n").as_bytes())
}

/// Takes the lock, reads what the earlier run left, lets `check` refuse its reservation (given
/// the time and the lineage words the file recorded), makes the first reservation above both it
/// and `at_least_ms` under `record`, and keeps extending it from a background thread.
///
/// # Errors
/// When another process holds the lock, the file cannot be read or written, or `check`
/// refuses: the module must not load then, and the file is left as it was.
pub fn start(
    path: PathBuf,
    record: String,
    at_least_ms: i64,
    check: impl FnOnce(i64, Option<&str>) -> Result<(), String>,
) -> Result<(Reservation, Found), String> {
    let lock_file = durable::lock(
        &path,
        "two servers on one configuration would issue the same IDs",
    )?;
    let found = read(&path)?;
    if let Found::Reserved(until, recorded) = &found {
        check(*until, recorded.as_deref())?;
    }
    let shared = Arc::new(Shared::default());
    let floor = found.reserved_ms().unwrap_or(0).max(at_least_ms);
    let first = shared.high_water().max(floor) + MARGIN_MS;
    write(&path, first, &record).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    shared.durable_until.store(first, Ordering::Release);
    let thread = {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("idgen-reserve".into())
            .spawn(move || keep_extending(&shared, &path, &record))
            .map_err(|e| format!("cannot start the reservation thread: {e}"))?
    };
    let reservation = Reservation {
        shared,
        thread: Some(thread),
        _lock: lock_file,
    };
    Ok((reservation, found))
}

fn keep_extending(shared: &Shared, path: &Path, record: &str) {
    let mut failing = false;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(TICK);
        let durable = shared.durable_until.load(Ordering::Acquire);
        let high = shared.high_water();
        if durable - high > MARGIN_MS / 2 {
            continue;
        }
        let next = (high + MARGIN_MS).max(durable);
        match write(path, next, record) {
            Ok(()) => {
                // Cleared first: once IDs flow again, INFO no longer reports the failure.
                if failing {
                    shared.set_failure(None);
                    log("warning", "idgen: state file writable again");
                    failing = false;
                }
                shared.durable_until.store(next, Ordering::Release);
            }
            Err(e) => {
                let why = format!("cannot write {}: {e}", path.display());
                if !failing {
                    log(
                        "warning",
                        &format!("idgen: {why}; SNOWFLAKE.NEXT will refuse once the reservation runs out"),
                    );
                    failing = true;
                }
                shared.set_failure(Some(why));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// `text` written to `name` in a directory of its own, removed when the test ends.
    fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_missing_file_is_a_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent/absent.state");
        assert_eq!(read(&path), Ok(Found::Missing));
    }

    #[test]
    fn a_written_reservation_reads_back_with_its_lineage() {
        let (_dir, path) = file("round-trip.state", "");
        write(
            &path,
            1_795_000_000_500,
            "layout=twitter epoch=1288834974657",
        )
        .unwrap();
        assert_eq!(
            read(&path),
            Ok(Found::Reserved(
                1_795_000_000_500,
                Some("layout=twitter epoch=1288834974657".into())
            ))
        );
        assert!(
            !durable::temporary(&path).exists(),
            "the temporary file was renamed"
        );
    }

    #[test]
    fn a_bare_number_is_a_file_from_before_lineages() {
        let (_dir, path) = file("bare.state", "1795000000500\n");
        assert_eq!(read(&path), Ok(Found::Reserved(1_795_000_000_500, None)));
    }

    #[test]
    fn a_time_idgen_never_writes_is_refused_naming_the_file() {
        for text in ["-5 layout=twitter", "yesterday", "253402300800000", "1.5"] {
            let (_dir, path) = file("bad.state", text);
            let err = read(&path).unwrap_err();
            assert!(
                err.starts_with(&path.display().to_string()) && err.contains("reservation time"),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn an_empty_file_is_told_from_a_missing_one() {
        for text in ["", "\n", "  \n"] {
            assert_eq!(
                read(&file("empty.state", text).1),
                Ok(Found::Empty),
                "{text:?}"
            );
        }
    }
}

//! Durable ticket sequences: a ticket once handed out is never handed out again, through
//! kill -9, restart and power loss.
//!
//! Each sequence hands out `offset, offset + increment, offset + 2 * increment, ...`. Tickets
//! are issued only below a *bound* that is already on disk: a file per sequence, replaced
//! atomically (temporary file, fsync, rename, fsync of the directory). The bound moves a block
//! ahead in the background when half the block is used, so callers rarely wait for the disk. On
//! restart a sequence resumes at the bound: the rest of the last block is a gap, never a
//! repeat. When the bound cannot be written (a full disk), the tickets already covered are
//! still handed out; past them callers get an error, and the write is retried at most every
//! [`RETRY_WRITE_EVERY`] until it succeeds, when issuing resumes by itself: never above what is
//! on disk.

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

mod bound_file;
mod error;
mod fields;
mod highest;
mod ledger;
mod marker;
mod open_error;
mod sequence;
mod step;

use bound_file::{read_bound, read_bound_file, write_bound};
pub use error::StoreError;
pub use fields::LAST_TICKET;
pub use highest::highest_handed_out;
use ledger::Ledger;
pub use marker::Start;
use marker::{open_marker, sequence_path};
pub use open_error::OpenError;
use prometheus_client::metrics::histogram::Histogram;
use sequence::Place;
pub use sequence::Sequence;
pub use step::Step;

/// How often at most a failed bound write is tried again (by the calls that need it).
pub const RETRY_WRITE_EVERY: Duration = Duration::from_millis(100);

/// The sequence that commands take when none is named.
pub const DEFAULT_SEQUENCE: &str = "default";

/// Most sequences one server keeps.
pub const MAX_SEQUENCES: usize = 1024;

/// All sequences of one server, in one data directory.
pub struct Store {
    dir: PathBuf,
    step: Step,
    block: u64,
    /// Every ticket is at least this (from `--start-above`); 0 for none.
    floor: u64,
    sequences: Mutex<HashMap<String, Arc<Sequence>>>,
    /// The marker's record of each sequence's last bound (`ledger.rs`).
    ledger: Arc<Ledger>,
    /// The `default` sequence once used: TICKET.NEXT without a name takes it without the map's
    /// lock and hashing (about a twentieth of a call, docs/benchmarks.md).
    default: OnceLock<Arc<Sequence>>,
    /// Seconds each durable write of a bound took.
    bound_writes: Histogram,
    /// `LOCK` in the directory, held while the store is open: two servers on one directory
    /// would hand out the same tickets.
    _lock: File,
}

/// The buckets of the bound-write histogram, in seconds: 50 µs doubling to 1.6 s.
pub fn bound_write_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.000_05, 2.0, 16)
}

impl Store {
    /// Opens (creating) `dir` for a server handing out `step`, reserving `block` tickets at a
    /// time; a blank directory only as `start` allows.
    ///
    /// # Errors
    /// When the directory cannot be made, is blank and `start` is [`Start::Existing`], or holds
    /// sequences of another offset or increment.
    pub fn open(dir: &Path, step: Step, block: u64, start: Start) -> Result<Store, OpenError> {
        fs::create_dir_all(dir).map_err(OpenError::io(dir))?;
        let lock_path = dir.join("LOCK");
        let lock = File::create(&lock_path).map_err(OpenError::io(&lock_path))?;
        if lock.try_lock().is_err() {
            return Err(OpenError::InUse(dir.to_path_buf()));
        }
        let record = open_marker(dir, step, start)?;
        let store = Store {
            dir: dir.to_path_buf(),
            step,
            block: block.max(1),
            floor: record.floor,
            sequences: Mutex::new(HashMap::new()),
            ledger: Arc::new(Ledger::new(dir.to_path_buf(), step, record)),
            default: OnceLock::new(),
            bound_writes: Histogram::new(bound_write_buckets()),
            _lock: lock,
        };
        for entry in fs::read_dir(dir).map_err(OpenError::io(dir))? {
            let path = entry.map_err(OpenError::io(dir))?.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".seq"))
            else {
                continue;
            };
            store.sequence(name)?;
        }
        Ok(store)
    }

    /// The sequence `name` if it exists (was loaded at start or has handed out tickets): a read
    /// creates nothing, so reads of made-up names cannot use up [`MAX_SEQUENCES`].
    ///
    /// # Errors
    /// [`StoreError::BadName`] for a name outside the alphabet.
    pub fn existing(&self, name: &str) -> Result<Option<Arc<Sequence>>, StoreError> {
        check_name(name)?;
        let sequences = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        Ok(sequences.get(name).cloned())
    }

    /// The sequence named [`DEFAULT_SEQUENCE`], loaded or created.
    ///
    /// # Errors
    /// As [`Store::sequence`].
    pub fn default_sequence(&self) -> Result<&Arc<Sequence>, OpenError> {
        if let Some(seq) = self.default.get() {
            return Ok(seq);
        }
        let seq = self.sequence(DEFAULT_SEQUENCE)?;
        Ok(self.default.get_or_init(|| seq))
    }

    /// The sequence `name`, loaded or created.
    ///
    /// # Errors
    /// [`StoreError`] for a bad name or too many sequences; an I/O or format error for a file
    /// that cannot be trusted.
    pub fn sequence(&self, name: &str) -> Result<Arc<Sequence>, OpenError> {
        let mut sequences = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(seq) = sequences.get(name) {
            return Ok(Arc::clone(seq));
        }
        check_name(name)?;
        if sequences.len() >= MAX_SEQUENCES {
            return Err(StoreError::TooManySequences.into());
        }
        let path = sequence_path(&self.dir, name);
        // Above the store's floor and the marker's record, for a sequence on disk or not.
        let recorded = self.ledger.recorded(name).unwrap_or(0);
        let bound = read_bound(&path, self.step)?.max(self.floor).max(recorded);
        let next = self.step.index_at(bound);
        let seq = Arc::new(Sequence::new(
            Place {
                path,
                name: name.to_string(),
                ledger: Arc::clone(&self.ledger),
            },
            self.step,
            self.block,
            next,
            self.bound_writes.clone(),
        ));
        sequences.insert(name.to_string(), Arc::clone(&seq));
        Ok(seq)
    }

    /// Stops every sequence and records its exact next ticket as its bound, so that a clean
    /// restart continues without a gap (a crash still skips the rest of the block).
    pub async fn close(&self) {
        let all: Vec<Arc<Sequence>> = {
            let sequences = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
            sequences.values().cloned().collect()
        };
        for seq in all {
            seq.close().await;
        }
    }

    /// Every ticket of this store is at least this (0 for none).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Every sequence with its next ticket and the bound on disk, by name.
    /// The histogram of bound writes, in seconds (buckets: [`bound_write_buckets`]).
    pub fn bound_writes(&self) -> &Histogram {
        &self.bound_writes
    }

    pub fn snapshot(&self) -> Vec<(String, u64, u64)> {
        let sequences = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<_> = sequences
            .iter()
            .map(|(name, seq)| {
                let (next, limit) = seq.indexes();
                let ticket = |i| self.step.ticket(i).unwrap_or(u64::MAX);
                (name.clone(), ticket(next), ticket(limit))
            })
            .collect();
        all.sort();
        all
    }
}
/// 1 to 64 of `A-Z a-z 0-9 _ . -`.
pub(super) fn check_name(name: &str) -> Result<(), StoreError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if valid {
        Ok(())
    } else {
        Err(StoreError::BadName)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store directory not made yet, inside a scratch directory removed when the test ends
    /// (also when it fails).
    fn dir() -> (tempfile::TempDir, PathBuf) {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("store");
        (scratch, dir)
    }

    const ODD: Step = Step {
        offset: 1,
        increment: 2,
    };

    #[tokio::test]
    async fn hands_out_the_progression_and_resumes_above_the_bound() {
        let (_scratch, d) = dir();
        let store = Store::open(&d, ODD, 10, Start::Init).unwrap();
        let seq = store.sequence("default").unwrap();
        let mut got = Vec::new();
        for _ in 0..7 {
            got.push(seq.take(1).await.unwrap());
        }
        assert_eq!(got, vec![1, 3, 5, 7, 9, 11, 13]);
        assert_eq!(seq.current(), Some(13));
        let batch = seq.take(30).await.unwrap();
        assert_eq!(batch, 15);
        drop(store);
        // A restart: everything below the bound on disk is skipped.
        let store = Store::open(&d, ODD, 10, Start::Init).unwrap();
        let seq = store.sequence("default").unwrap();
        let after = seq.take(1).await.unwrap();
        assert!(after > 15 + 29 * 2, "{after} repeats a ticket");
        assert_eq!(after % 2, 1);
    }

    #[tokio::test]
    async fn refuses_a_data_dir_of_another_step() {
        let (_scratch, d) = dir();
        let store = Store::open(&d, ODD, 10, Start::Init).unwrap();
        store.sequence("default").unwrap().take(1).await.unwrap();
        drop(store);
        let err = Store::open(
            &d,
            Step {
                offset: 1,
                increment: 3,
            },
            10,
            Start::Init,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("offset 1 of increment 2"), "{err}");
    }

    #[tokio::test]
    async fn concurrent_takers_never_share_a_ticket() {
        let (_scratch, d) = dir();
        let store = Arc::new(
            Store::open(
                &d,
                Step {
                    offset: 2,
                    increment: 2,
                },
                64,
                Start::Init,
            )
            .unwrap(),
        );
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    let seq = store.sequence("s").unwrap();
                    let mut mine = Vec::new();
                    for _ in 0..500 {
                        mine.push(seq.take(1).await.unwrap());
                    }
                    mine
                })
            })
            .collect();
        let mut all = std::collections::HashSet::new();
        for t in tasks {
            for ticket in t.await.unwrap() {
                assert_eq!(ticket % 2, 0);
                assert!(all.insert(ticket), "{ticket} twice");
            }
        }
    }

    #[tokio::test]
    async fn a_failed_write_stops_issuing_past_the_bound_until_a_retry_works() {
        let (_scratch, d) = dir();
        let store = Store::open(&d, ODD, 4, Start::Init).unwrap();
        let seq = store.sequence("default").unwrap();
        seq.take(1).await.unwrap();
        fs::remove_dir_all(&d).unwrap(); // the disk "fails": the directory is gone
        let mut issued = vec![];
        let mut result = Ok(0);
        for _ in 0..10 {
            result = seq.take(1).await;
            match result {
                Ok(t) => issued.push(t),
                Err(_) => break,
            }
        }
        assert!(matches!(result, Err(StoreError::Failed(_))), "{result:?}");
        assert!(
            matches!(seq.take(1).await, Err(StoreError::Failed(_))),
            "no retry before RETRY_WRITE_EVERY"
        );
        // Nothing was issued beyond what was on disk before the failure.
        let bound_before = ODD.ticket(4).unwrap();
        assert!(issued.iter().all(|&t| t < bound_before), "{issued:?}");
        // The disk comes back: after the retry interval issuing resumes by itself, above all.
        fs::create_dir_all(&d).unwrap();
        tokio::time::sleep(RETRY_WRITE_EVERY).await;
        let t = seq.take(1).await.unwrap();
        assert!(issued.iter().all(|&i| i < t));
        assert!(
            read_bound(&d.join("default.seq"), ODD).unwrap() > t,
            "the new bound is on disk"
        );
    }

    #[tokio::test]
    async fn a_blank_directory_needs_init_or_a_floor() {
        let (_scratch, d) = dir();
        let err = Store::open(&d, ODD, 4, Start::Existing)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("holds no ticket store"), "{err}");
        let store = Store::open(&d, ODD, 4, Start::Init).unwrap();
        assert_eq!(store.sequence("a").unwrap().take(1).await.unwrap(), 1);
        drop(store);
        // Initialised once, it opens as it is.
        assert!(Store::open(&d, ODD, 4, Start::Existing).is_ok());
        fs::remove_dir_all(&d).unwrap();
        // A lost store continues above the floor, for every sequence, and keeps the floor.
        let store = Store::open(&d, ODD, 4, Start::Above(100)).unwrap();
        assert_eq!(store.sequence("a").unwrap().take(1).await.unwrap(), 101);
        drop(store);
        let store = Store::open(&d, ODD, 4, Start::Existing).unwrap();
        assert!(store.sequence("new").unwrap().take(1).await.unwrap() > 100);
    }

    #[tokio::test]
    async fn a_new_generation_continues_above_and_a_cut_short_one_can_be_finished() {
        let (_scratch, d) = dir();
        let three = Step {
            offset: 1,
            increment: 3,
        };
        // A block large enough that no write of the bound is left running in the background.
        let store = Store::open(&d, ODD, 100, Start::Init).unwrap();
        let last = store.sequence("a").unwrap().take(3).await.unwrap() + 4;
        drop(store);
        let err = Store::open(&d, three, 4, Start::Existing).err().unwrap();
        assert!(err.to_string().contains("new generation"), "{err}");
        // Renumbering cut short after the marker: the sequence file still has the old step.
        fs::write(
            d.join("STORE"),
            "ticket-store v1 offset=1 increment=3 floor=0\n",
        )
        .unwrap();
        assert!(Store::open(&d, three, 4, Start::Existing).is_err());
        // The same flags again finish it, and the sequence continues above what it covered.
        let store = Store::open(&d, three, 4, Start::Above(last)).unwrap();
        let next = store.sequence("a").unwrap().take(1).await.unwrap();
        assert!(next > last && next % 3 == 1, "{next}");
    }

    /// A store of `ODD` in `d` whose sequence `a` handed out tickets and was closed, and the
    /// text of its file after its first block (an older copy).
    async fn used_store(d: &Path) -> String {
        let store = Store::open(d, ODD, 4, Start::Init).unwrap();
        let seq = store.sequence("a").unwrap();
        seq.take(1).await.unwrap();
        let older = fs::read_to_string(d.join("a.seq")).unwrap();
        seq.take(20).await.unwrap();
        store.close().await;
        older
    }

    #[tokio::test]
    async fn a_sequence_file_lost_or_put_back_older_is_refused_naming_it_and_the_way_out() {
        type Lose = fn(&Path, &str);
        let losses: [(&str, Lose, &str); 4] = [
            (
                "deleted",
                |d, _| fs::remove_file(d.join("a.seq")).unwrap(),
                "is missing",
            ),
            (
                "older",
                |d, older| fs::write(d.join("a.seq"), older).unwrap(),
                "below the bound",
            ),
            (
                "renamed away",
                |d, _| fs::rename(d.join("a.seq"), d.join("a.seq.old")).unwrap(),
                "is missing",
            ),
            (
                "a directory in its place",
                |d, _| {
                    fs::remove_file(d.join("a.seq")).unwrap();
                    fs::create_dir(d.join("a.seq")).unwrap()
                },
                "not a regular file",
            ),
        ];
        for (loss, lose, says) in losses {
            let (_scratch, d) = dir();
            let older = used_store(&d).await;
            let highest = highest_handed_out(std::slice::from_ref(&d));
            assert!(highest.is_err(), "{loss}: a set of one of increment 2");
            lose(&d, &older);
            let err = Store::open(&d, ODD, 4, Start::Existing)
                .err()
                .unwrap_or_else(|| panic!("{loss}: opened"))
                .to_string();
            assert!(err.contains(says), "{loss}: {err}");
            assert!(
                err.contains(&d.join("a.seq").display().to_string()),
                "{loss}: {err}"
            );
            if says != "not a regular file" {
                assert!(
                    err.contains("--start-above N, N at least 42"),
                    "{loss}: {err}"
                );
            }
        }
    }

    #[tokio::test]
    async fn below_the_marker_start_above_still_continues_above_what_the_marker_saw() {
        let (_scratch, d) = dir();
        used_store(&d).await;
        fs::remove_file(d.join("a.seq")).unwrap();
        // The operator's N is too low: the marker's record wins.
        let store = Store::open(&d, ODD, 4, Start::Above(3)).unwrap();
        let t = store.sequence("a").unwrap().take(1).await.unwrap();
        assert!(t > 41, "{t} repeats a ticket");
    }

    #[tokio::test]
    async fn sequence_files_without_their_marker_are_refused() {
        let (_scratch, d) = dir();
        used_store(&d).await;
        fs::remove_file(d.join("STORE")).unwrap();
        for start in [Start::Existing, Start::Init] {
            let err = Store::open(&d, ODD, 4, start).err().unwrap().to_string();
            assert!(
                err.contains("no STORE marker") && err.contains("--start-above"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn a_closed_store_restarts_without_a_gap_and_a_crashed_one_above_its_block() {
        let (_scratch, d) = dir();
        let store = Store::open(&d, ODD, 100, Start::Init).unwrap();
        let seq = store.sequence("a").unwrap();
        assert_eq!(seq.take(1).await.unwrap(), 1);
        store.close().await;
        drop(store);
        let store = Store::open(&d, ODD, 100, Start::Existing).unwrap();
        let seq = store.sequence("a").unwrap();
        assert_eq!(
            seq.take(1).await.unwrap(),
            3,
            "the marker was lowered with the file"
        );
        drop(store);
        let store = Store::open(&d, ODD, 100, Start::Existing).unwrap();
        assert!(store.sequence("a").unwrap().take(1).await.unwrap() > 3);
    }

    #[test]
    fn one_data_directory_serves_one_store_at_a_time() {
        let (_scratch, d) = dir();
        let first = Store::open(&d, ODD, 4, Start::Init).unwrap();
        let err = Store::open(&d, ODD, 4, Start::Init)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("in use by another ticket server"), "{err}");
        drop(first);
        assert!(Store::open(&d, ODD, 4, Start::Init).is_ok());
    }

    #[test]
    fn bad_names_and_limits() {
        let (_scratch, d) = dir();
        let store = Store::open(&d, ODD, 4, Start::Init).unwrap();
        for bad in ["", "a/b", "..\u{0}", &"x".repeat(65)] {
            assert!(store.sequence(bad).is_err(), "{bad:?}");
        }
        assert!(Step {
            offset: 1,
            increment: 2
        }
        .ticket(u64::MAX / 2)
        .is_none());
    }
}

//! The marker's record of every sequence and the last bound written for it, kept while the
//! store is open: the witness each sequence file is checked against at the next start.
//!
//! A sequence's new bound goes to its own file first and to the marker second, and tickets
//! below it are handed out only once both are on disk; a crash between the two leaves the file
//! ahead of the marker, which is safe. Closing lowers a bound to the exact next ticket in the
//! other order, marker first, for the same reason. So a sequence file found missing or behind
//! the marker at start was lost or put back from an older copy, and the store refuses it.

use std::path::PathBuf;
use std::sync::Mutex;

use super::marker::{write_marker, Record};
use super::{OpenError, Step};

/// The marker of an open store, and the record it holds.
pub(super) struct Ledger {
    dir: PathBuf,
    step: Step,
    record: Mutex<Record>,
}

impl Ledger {
    /// The ledger of the store in `dir`, as opened.
    pub fn new(dir: PathBuf, step: Step, record: Record) -> Ledger {
        Ledger {
            dir,
            step,
            record: Mutex::new(record),
        }
    }

    /// The bound last recorded for `name`, if any.
    pub fn recorded(&self, name: &str) -> Option<u64> {
        self.lock().bounds.get(name).copied()
    }

    /// Records `bound` as `name`'s and writes the marker durably; on failure the record is as
    /// it was. Writes are one at a time: the marker holds every sequence.
    pub fn record(&self, name: &str, bound: u64) -> Result<(), OpenError> {
        let mut record = self.lock();
        let old = record.bounds.insert(name.to_string(), bound);
        let written = write_marker(&self.dir, self.step, &record);
        if written.is_err() {
            match old {
                Some(old) => record.bounds.insert(name.to_string(), old),
                None => record.bounds.remove(name),
            };
        }
        written
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }
}

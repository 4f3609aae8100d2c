//! Why a data directory was not opened as a store, or a sequence not loaded: each case with the
//! path and the values it found, so the message says exactly what is wrong and what to do.

use std::path::{Path, PathBuf};

use super::{Step, StoreError, LAST_TICKET};

/// Why a store was not opened (or `highest` not read).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another server holds the directory's lock.
    #[error(
        "{} is in use by another ticket server: two servers on one data directory would hand out \
         the same tickets", .0.display()
    )]
    InUse(PathBuf),
    /// The path is not a directory (a wrong path, an unmounted disk).
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// A directory without a store, opened without `--init` or `--start-above`.
    #[error(
        "{} holds no ticket store: a blank directory would hand out every ticket again. On a \
         first start make the store with `ticket-server init` (or serve --init); after losing or \
         restoring this server's disk pass --start-above N, N at least the highest ticket it may \
         have handed out", .0.display()
    )]
    NoStore(PathBuf),
    /// A store would be made in a directory holding someone else's files.
    #[error(
        "{} holds {file:?}, which is not a ticket store's: a store is made only in an empty \
         directory (is this the right path?)", dir.display()
    )]
    Foreign { dir: PathBuf, file: String },
    /// The store or a sequence belongs to another server of another set.
    #[error(
        "{} belongs to offset {} of increment {}, not {} of {}: renumbering a running set of \
         servers would repeat tickets; start a new generation with --start-above H, H the \
         highest ticket any server of the old set handed out (docs/ticket-server.md: growing the set)",
        path.display(), found.offset, found.increment, wanted.offset, wanted.increment
    )]
    OtherStep {
        path: PathBuf,
        found: Step,
        wanted: Step,
    },
    /// `--start-above N` leaves no ticket below the end of the range.
    #[error(
        "--start-above {0} leaves no ticket: tickets end at {LAST_TICKET} (2^63-1); this store \
         is exhausted"
    )]
    Exhausted(u64),
    /// A file that does not start as the store's files do.
    #[error("{} is not a {what}: it starts {starts:?}, not {header:?}", path.display())]
    NotOurs {
        path: PathBuf,
        what: &'static str,
        starts: String,
        header: &'static str,
    },
    /// A store file without one of its fields.
    #[error("{}: no {name}= field", path.display())]
    MissingField { path: PathBuf, name: &'static str },
    /// A store file field holding a value idgen never writes.
    #[error(
        "{}: {name}={raw} is out of range: it must be an integer from {min} to {max}",
        path.display()
    )]
    FieldRange {
        path: PathBuf,
        name: &'static str,
        raw: String,
        min: u64,
        max: u64,
    },
    /// A sequence name or count the store refuses.
    #[error(transparent)]
    Sequence(#[from] StoreError),
    /// Sequence files without the `STORE` marker that witnesses them.
    #[error(
        "{} holds sequence files but no STORE marker, the record they are checked against: \
         they may be older copies. If the server's disk was restored or its files lost, pass \
         --start-above N, N at least the highest ticket it may have handed out", .0.display()
    )]
    NoMarker(PathBuf),
    /// A sequence the marker records, whose file is gone.
    #[error(
        "{} is missing, yet the store's marker records it with bound {recorded}: it would hand \
         out its tickets again. Put the file back, or pass --start-above N, N at least {} (the \
         highest ticket it may have handed out)",
        path.display(), recorded.saturating_sub(1)
    )]
    SequenceMissing { path: PathBuf, recorded: u64 },
    /// A sequence file behind the bound the marker records: an older copy.
    #[error(
        "{} holds bound {bound}, below the bound {recorded} the store's marker records for it: \
         an older copy would hand out tickets again. Put the newer file back, or pass \
         --start-above N, N at least {}",
        path.display(), recorded.saturating_sub(1)
    )]
    SequenceBehind {
        path: PathBuf,
        bound: u64,
        recorded: u64,
    },
    /// A data directory a running server holds, given to `highest`.
    #[error(
        "{} is held by a running ticket server: stop every server of the set before reading \
         the highest ticket (its bounds still move)", .0.display()
    )]
    Running(PathBuf),
    /// `highest` given directories that are not one whole set of servers.
    #[error("not one whole set of servers: {0}")]
    NotOneSet(String),
    /// A state file that is not a readable text file (a directory, a link to nothing, ...).
    #[error(transparent)]
    Unreadable(#[from] idgen_durable::ReadError),
}

impl OpenError {
    /// An I/O error on `path`.
    pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OpenError + '_ {
        move |source| OpenError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

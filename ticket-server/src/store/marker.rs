//! The `STORE` marker of a data directory: which server (offset, increment) it belongs to and
//! the floor every ticket is above. It guards two ways of handing a ticket out twice:
//!
//! - a **lost disk**: a blank directory would start every sequence from the beginning, so it is
//!   refused unless the operator says `--init` (first start) or `--start-above N` (after a loss);
//! - **growth**: going from N to N+k servers renumbers them, and a renumbered server would hand
//!   out tickets the others already did. Renumbering is allowed only as a new *generation*, with
//!   `--start-above H`, H at least the highest ticket any server of the old set handed out: the
//!   directory's sequences all continue above it under the new offset and increment.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::fields::{Fields, LAST_TICKET};
use super::{read_bound_file, write_bound, OpenError, Step};

/// How a data directory may be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The directory must already hold this server's store.
    Existing,
    /// First start: a blank directory becomes a new store (`--init`).
    Init,
    /// Every sequence continues above this ticket (`--start-above N`): after a lost disk, or to
    /// renumber the server into a new generation.
    Above(u64),
}

/// The marker file's name.
const MARKER: &str = "STORE";
/// Its first words.
const HEADER: &str = "ticket-store v1";
/// What else a store's directory may hold: its lock, temporary files, and what a freshly made
/// file system puts at its root.
const OURS: &[&str] = &["LOCK", "STORE.tmp", "lost+found"];

/// Opens the marker of `dir` for a server of `step`, writing it as `start` allows: the floor
/// every ticket must reach (0 for none).
pub(super) fn open_marker(dir: &Path, step: Step, start: Start) -> Result<u64, OpenError> {
    let path = dir.join(MARKER);
    let recorded = read_marker(&path)?;
    let sequences = sequence_files(dir)?;
    let floor = match (recorded, start) {
        (Some((found, _)), Start::Existing | Start::Init) if found != step => {
            return Err(OpenError::OtherStep {
                path: dir.to_path_buf(),
                found,
                wanted: step,
            })
        }
        (Some((_, floor)), Start::Existing | Start::Init) => return Ok(floor),
        (recorded, Start::Above(n)) => {
            if recorded.is_none() && sequences.is_empty() {
                refuse_foreign(dir)?;
            }
            let floor = n
                .checked_add(1)
                .filter(|f| *f <= LAST_TICKET)
                .ok_or(OpenError::Exhausted(n))?;
            return renumber(
                dir,
                step,
                recorded.map_or(0, |(_, f)| f).max(floor),
                &sequences,
            );
        }
        // Written before the marker existed: the sequence files make it a store.
        (None, _) if !sequences.is_empty() => 0,
        (None, Start::Init) => {
            refuse_foreign(dir)?;
            0
        }
        (None, Start::Existing) => return Err(OpenError::NoStore(dir.to_path_buf())),
    };
    write_marker(dir, step, floor)?;
    Ok(floor)
}

/// Makes `dir` a store of `step` whose every ticket is at least `floor`: after a lost disk, or
/// as a new generation. Sequence files of another step (all of them when renumbering; some when
/// an earlier renumbering was cut short) are folded into the floor and rewritten for `step`.
fn renumber(
    dir: &Path,
    step: Step,
    mut floor: u64,
    sequences: &[PathBuf],
) -> Result<u64, OpenError> {
    let mut foreign = Vec::new();
    for file in sequences {
        if let Some((file_step, bound)) = read_bound_file(file)? {
            if file_step != step {
                floor = floor.max(bound);
                foreign.push(file);
            }
        }
    }
    // The marker first: cut short here, a restart with the same flags finishes the job.
    write_marker(dir, step, floor)?;
    for file in &foreign {
        write_bound(file, step, floor).map_err(OpenError::io(file))?;
    }
    if !foreign.is_empty() {
        tracing::warn!(dir = %dir.display(), step.offset, step.increment, floor,
            "renumbered into a new generation");
    }
    Ok(floor)
}

/// Refuses to make a store in a directory that holds files no store has: a wrong path.
fn refuse_foreign(dir: &Path) -> Result<(), OpenError> {
    for entry in fs::read_dir(dir).map_err(OpenError::io(dir))? {
        let name = entry.map_err(OpenError::io(dir))?.file_name();
        let name = name.to_string_lossy();
        if !OURS.contains(&name.as_ref()) && !name.ends_with(".seq.tmp") {
            return Err(OpenError::Foreign {
                dir: dir.to_path_buf(),
                file: name.into_owned(),
            });
        }
    }
    Ok(())
}

/// The highest ticket the store in `dir` may have handed out (0 for none): what the next
/// generation must start above. Read with the servers stopped.
///
/// # Errors
/// When the directory or a file in it cannot be read, or it holds no store: a wrong path or an
/// unmounted disk would understate the highest ticket, and the new generation repeat tickets.
pub fn highest_handed_out(dir: &Path) -> Result<u64, OpenError> {
    if !dir.is_dir() {
        return Err(OpenError::NotADirectory(dir.to_path_buf()));
    }
    let marker = read_marker(&dir.join(MARKER))?;
    let sequences = sequence_files(dir)?;
    if marker.is_none() && sequences.is_empty() {
        return Err(OpenError::NoStore(dir.to_path_buf()));
    }
    let mut bound = marker.map_or(0, |(_, floor)| floor);
    for file in sequences {
        if let Some((_, b)) = read_bound_file(&file)? {
            bound = bound.max(b);
        }
    }
    // Tickets are handed out only below a bound.
    Ok(bound.saturating_sub(1))
}

fn sequence_files(dir: &Path) -> Result<Vec<PathBuf>, OpenError> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(OpenError::io(dir))? {
        let path = entry.map_err(OpenError::io(dir))?.path();
        if path.to_string_lossy().ends_with(".seq") {
            files.push(path);
        }
    }
    Ok(files)
}

fn read_marker(path: &Path) -> Result<Option<(Step, u64)>, OpenError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OpenError::io(path)(e)),
    };
    let fields = Fields::new(path, &text, HEADER, "ticket store marker")?;
    Ok(Some((fields.step()?, fields.get("floor", 0, LAST_TICKET)?)))
}

/// Replaces the marker atomically (temporary file, fsync, rename, directory fsync).
fn write_marker(dir: &Path, step: Step, floor: u64) -> Result<(), OpenError> {
    let path = dir.join(MARKER);
    let text = format!(
        "{HEADER} offset={} increment={} floor={floor}\n",
        step.offset, step.increment
    );
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut file = File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&tmp, &path)?;
        File::open(dir)?.sync_all()
    };
    write().map_err(OpenError::io(&path))
}

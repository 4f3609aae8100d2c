//! The `STORE` marker of a data directory: which server (offset, increment) it belongs to and
//! the floor every ticket is above. It guards two ways of handing a ticket out twice:
//!
//! - a **lost disk**: a blank directory would start every sequence from the beginning, so it is
//!   refused unless the operator says `--init` (first start) or `--start-above N` (after a loss);
//! - **growth**: going from N to N+k servers renumbers them, and a renumbered server would hand
//!   out tickets the others already did. Renumbering is allowed only as a new *generation*, with
//!   `--start-above H`, H at least the highest ticket any server of the old set handed out: the
//!   directory's sequences all continue above it under the new offset and increment.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use idgen_durable as durable;

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
/// The first word of each of its sequence lines, before the name.
const SEQUENCE: &str = "sequence=";
/// What else a store's directory may hold: its lock, temporary files, and what a freshly made
/// file system puts at its root.
const OURS: &[&str] = &["LOCK", "STORE.tmp", "lost+found"];

/// What a store's marker records: the server's step, the floor every ticket is above, and the
/// last bound written for each sequence (the witness its file is checked against).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Record {
    pub floor: u64,
    pub bounds: BTreeMap<String, u64>,
}

/// Opens the marker of `dir` for a server of `step`, writing it as `start` allows, and checks
/// every sequence file against it: the floor every ticket must reach (0 for none) and the
/// bounds recorded.
pub(super) fn open_marker(dir: &Path, step: Step, start: Start) -> Result<Record, OpenError> {
    let path = dir.join(MARKER);
    let recorded = read_marker(&path)?;
    let sequences = sequence_files(dir)?;
    match (recorded, start) {
        (Some((found, _)), Start::Existing | Start::Init) if found != step => {
            Err(OpenError::OtherStep {
                path: dir.to_path_buf(),
                found,
                wanted: step,
            })
        }
        (Some((_, record)), Start::Existing | Start::Init) => {
            check_sequences(dir, step, &record)?;
            adopt(step, record, &sequences)
        }
        (recorded, Start::Above(n)) => {
            if recorded.is_none() && sequences.is_empty() {
                refuse_foreign(dir)?;
            }
            let floor = n
                .checked_add(1)
                .filter(|f| *f <= LAST_TICKET)
                .ok_or(OpenError::Exhausted(n))?;
            // What the marker witnessed stays a floor, whatever the operator says.
            let witnessed = recorded.map_or(0, |(_, r)| {
                r.bounds.values().copied().fold(r.floor, u64::max)
            });
            renumber(dir, step, witnessed.max(floor), &sequences)
        }
        // Sequence files without the marker that witnesses them: they may be older copies.
        (None, _) if !sequences.is_empty() => Err(OpenError::NoMarker(dir.to_path_buf())),
        (None, Start::Init) => {
            refuse_foreign(dir)?;
            let record = Record::default();
            write_marker(dir, step, &record)?;
            Ok(record)
        }
        (None, Start::Existing) => Err(OpenError::NoStore(dir.to_path_buf())),
    }
}

/// Refuses a sequence the marker records whose file is gone, of another step, or behind the
/// bound recorded: it would hand out again what it handed out before.
pub(super) fn check_sequences(dir: &Path, step: Step, record: &Record) -> Result<(), OpenError> {
    for (name, &recorded) in &record.bounds {
        let path = sequence_path(dir, name);
        match read_bound_file(&path)? {
            None => return Err(OpenError::SequenceMissing { path, recorded }),
            Some((found, _)) if found != step => {
                return Err(OpenError::OtherStep {
                    path,
                    found,
                    wanted: step,
                })
            }
            Some((_, bound)) if bound < recorded => {
                return Err(OpenError::SequenceBehind {
                    path,
                    bound,
                    recorded,
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The record with the sequence files it does not name yet: a sequence made just before a
/// crash, whose file was written and the marker not (its file is then its own witness).
fn adopt(step: Step, mut record: Record, sequences: &[PathBuf]) -> Result<Record, OpenError> {
    for file in sequences {
        if let std::collections::btree_map::Entry::Vacant(unnamed) =
            record.bounds.entry(sequence_name(file))
        {
            unnamed.insert(super::read_bound(file, step)?);
        }
    }
    Ok(record)
}

/// Makes `dir` a store of `step` whose every ticket is at least `floor`: after a lost disk, or
/// as a new generation. Sequence files of another step (all of them when renumbering; some when
/// an earlier renumbering was cut short) are folded into the floor and rewritten for `step`.
fn renumber(
    dir: &Path,
    step: Step,
    mut floor: u64,
    sequences: &[PathBuf],
) -> Result<Record, OpenError> {
    let mut foreign = Vec::new();
    let mut bounds = BTreeMap::new();
    for file in sequences {
        if let Some((file_step, bound)) = read_bound_file(file)? {
            if file_step != step {
                floor = floor.max(bound);
                foreign.push(file);
            } else {
                bounds.insert(sequence_name(file), bound);
            }
        }
    }
    for file in &foreign {
        bounds.insert(sequence_name(file), floor);
    }
    let record = Record { floor, bounds };
    // The marker first: cut short here, a restart with the same flags finishes the job.
    write_marker(dir, step, &record)?;
    for file in &foreign {
        write_bound(file, step, floor).map_err(OpenError::io(file))?;
    }
    if !foreign.is_empty() {
        tracing::warn!(dir = %dir.display(), step.offset, step.increment, floor,
            "renumbered into a new generation");
    }
    Ok(record)
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

/// The step of the store in `dir` and the highest ticket it may have handed out (0 for none):
/// what the next generation must start above. Read with the server stopped.
///
/// # Errors
/// When the directory or a file in it cannot be read, it holds no store, or a sequence file is
/// missing or behind the marker: a wrong path, an unmounted disk or a lost file would
/// understate the highest ticket, and the new generation repeat tickets.
pub(super) fn highest_in(dir: &Path) -> Result<(Step, u64), OpenError> {
    if !dir.is_dir() {
        return Err(OpenError::NotADirectory(dir.to_path_buf()));
    }
    let marker = read_marker(&dir.join(MARKER))?;
    let sequences = sequence_files(dir)?;
    let (step, record) = match marker {
        Some(found) => found,
        None if sequences.is_empty() => return Err(OpenError::NoStore(dir.to_path_buf())),
        None => return Err(OpenError::NoMarker(dir.to_path_buf())),
    };
    check_sequences(dir, step, &record)?;
    let mut bound = record.bounds.values().copied().fold(record.floor, u64::max);
    for file in sequences {
        if let Some((_, b)) = read_bound_file(&file)? {
            bound = bound.max(b);
        }
    }
    // Tickets are handed out only below a bound.
    Ok((step, bound.saturating_sub(1)))
}

/// `<dir>/<name>.seq`.
pub(super) fn sequence_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.seq"))
}

/// The sequence a `.seq` file is of.
fn sequence_name(file: &Path) -> String {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    name.strip_suffix(".seq").unwrap_or(&name).to_string()
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

fn read_marker(path: &Path) -> Result<Option<(Step, Record)>, OpenError> {
    let Some(text) = durable::read(path)? else {
        return Ok(None);
    };
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let fields = Fields::new(path, first, HEADER, "ticket store marker")?;
    let mut record = Record {
        floor: fields.get("floor", 0, LAST_TICKET)?,
        bounds: BTreeMap::new(),
    };
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let fields = Fields::new(path, line, SEQUENCE, "ticket store marker's sequence line")?;
        let name = line[SEQUENCE.len()..]
            .split_whitespace()
            .next()
            .filter(|n| super::check_name(n).is_ok())
            .ok_or_else(|| OpenError::NotOurs {
                path: path.to_path_buf(),
                what: "ticket store marker's sequence line (name)",
                starts: line.chars().take(64).collect(),
                header: SEQUENCE,
            })?;
        record
            .bounds
            .insert(name.to_string(), fields.get("bound", 0, LAST_TICKET)?);
    }
    Ok(Some((fields.step()?, record)))
}

/// Replaces the marker durably ([`durable::replace`]): the step and floor on its first line,
/// then a line per sequence with the last bound written for it.
pub(super) fn write_marker(dir: &Path, step: Step, record: &Record) -> Result<(), OpenError> {
    let path = dir.join(MARKER);
    let mut text = format!(
        "{HEADER} offset={} increment={} floor={}\n",
        step.offset, step.increment, record.floor
    );
    for (name, bound) in &record.bounds {
        text.push_str(&format!("{SEQUENCE}{name} bound={bound}\n"));
    }
    durable::replace(&path, text.as_bytes()).map_err(OpenError::io(&path))
}

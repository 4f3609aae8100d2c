//! `ticket-server highest`: the highest ticket a stopped set of servers may have handed out,
//! what a new generation (a grown set) must start above. Only a whole set is read: a missing
//! server, or one counted twice, or a server still running would understate it.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::marker::highest_in;
use super::OpenError;

/// The highest ticket handed out by the set of servers whose data directories are `dirs`.
///
/// # Errors
/// Any directory [`highest_in`] refuses, one held by a running server, or directories that are
/// not one whole set: one increment, and every offset from 1 to it exactly once.
pub fn highest_handed_out(dirs: &[PathBuf]) -> Result<u64, OpenError> {
    let mut offsets: BTreeMap<u64, &Path> = BTreeMap::new();
    // The set's increment, and the directory it was first read from.
    let mut set: Option<(u64, &Path)> = None;
    let mut highest = 0;
    for dir in dirs {
        refuse_running(dir)?;
        let (step, h) = highest_in(dir)?;
        highest = highest.max(h);
        match set {
            Some((increment, first)) if increment != step.increment => {
                return Err(OpenError::NotOneSet(format!(
                    "{} is a server of increment {}, {} of increment {increment}",
                    dir.display(),
                    step.increment,
                    first.display()
                )))
            }
            Some(_) => {}
            None => set = Some((step.increment, dir)),
        }
        if let Some(other) = offsets.insert(step.offset, dir) {
            return Err(OpenError::NotOneSet(format!(
                "{} and {} are both offset {} of increment {}",
                other.display(),
                dir.display(),
                step.offset,
                step.increment
            )));
        }
    }
    let increment = set.map_or(0, |(increment, _)| increment);
    let missing: Vec<String> = (1..=increment)
        .filter(|o| !offsets.contains_key(o))
        .map(|o| o.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(OpenError::NotOneSet(format!(
            "offsets {} of increment {increment} are not given: pass the data directory of \
             every server of the set",
            missing.join(", ")
        )));
    }
    Ok(highest)
}

/// Refuses a directory whose lock a running server holds: its bounds are still moving.
fn refuse_running(dir: &Path) -> Result<(), OpenError> {
    let Ok(lock) = File::open(dir.join("LOCK")) else {
        return Ok(());
    };
    if lock.try_lock().is_err() {
        return Err(OpenError::Running(dir.to_path_buf()));
    }
    Ok(())
}

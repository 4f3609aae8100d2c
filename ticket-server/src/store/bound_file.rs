//! A sequence's bound file, `<name>.seq`: one line naming the server's step and the bound below
//! which tickets may be issued. Replaced atomically, so a crash leaves the old bound or the new
//! one, never neither.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::fields::{Fields, LAST_TICKET};
use super::{OpenError, Step};

const HEADER: &str = "ticket-sequence v1";

/// The bound in `path` (0 for a new sequence), checked against this server's step.
pub(crate) fn read_bound(path: &Path, step: Step) -> Result<u64, OpenError> {
    let Some((found, bound)) = read_bound_file(path)? else {
        return Ok(0);
    };
    if found != step {
        return Err(OpenError::OtherStep {
            path: path.to_path_buf(),
            found,
            wanted: step,
        });
    }
    Ok(bound)
}

/// The step and bound a sequence file records; `None` when there is no file.
pub(crate) fn read_bound_file(path: &Path) -> Result<Option<(Step, u64)>, OpenError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OpenError::io(path)(e)),
    };
    let fields = Fields::new(path, &text, HEADER, "ticket sequence file")?;
    Ok(Some((fields.step()?, fields.get("bound", 0, LAST_TICKET)?)))
}

pub(crate) fn write_bound(path: &Path, step: Step, bound: u64) -> std::io::Result<()> {
    // Appended, not swapped in for the extension: `..seq` (the sequence `.`) has none to swap.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp)?;
    writeln!(
        file,
        "{HEADER} offset={} increment={} bound={bound}",
        step.offset, step.increment
    )?;
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()
}

//! A sequence's bound file, `<name>.seq`: one line naming the server's step and the bound below
//! which tickets may be issued. Replaced atomically, so a crash leaves the old bound or the new
//! one, never neither.

use std::path::Path;

use idgen_durable as durable;

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
    let Some(text) = durable::read(path)? else {
        return Ok(None);
    };
    let fields = Fields::new(path, &text, HEADER, "ticket sequence file")?;
    Ok(Some((fields.step()?, fields.get("bound", 0, LAST_TICKET)?)))
}

pub(crate) fn write_bound(path: &Path, step: Step, bound: u64) -> std::io::Result<()> {
    let text = format!(
        "{HEADER} offset={} increment={} bound={bound}\n",
        step.offset, step.increment
    );
    durable::replace(path, text.as_bytes())
}

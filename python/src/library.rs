//! `idgen.install_library`: idgen's Functions library put on a Redis that cannot load the
//! module, as `idgen-lease-worker install-library` does it.

use idgen_client::library::{self, Installed, LibraryError};
use pyo3::prelude::*;

use crate::errors::{value_error, LibraryRefused};

/// Installs idgen's Functions library on the server at `url`, or upgrades it; on a Cluster
/// node, on every primary it knows. Returns `(address, what was done)` per server: "installed",
/// "upgraded from X" or "reloaded". A newer library already there is left alone and raises
/// LibraryRefused, as does a server that refuses (a user without FUNCTION, say); a horizon
/// out of range raises ValueError.
/// `horizon_ms` is the lease horizon fixed in the library (the module's
/// idgen.workerid-horizon-ms).
#[pyfunction]
#[pyo3(signature = (url, *, horizon_ms = 30_000))]
pub fn install_library(
    py: Python<'_>,
    url: &str,
    horizon_ms: u64,
) -> PyResult<Vec<(String, String)>> {
    let settings = library::Settings { horizon_ms };
    let done = py
        .detach(|| library::install_everywhere(url, &settings))
        .map_err(|e| match e {
            LibraryError::BadSetting(_) => value_error(e),
            e => LibraryRefused::new_err(e.to_string()),
        })?;
    Ok(done
        .into_iter()
        .map(|(at, installed)| {
            let what = match installed {
                Installed::Fresh => "installed".to_string(),
                Installed::Upgraded(from) => format!("upgraded from {from}"),
                Installed::Same => "reloaded".to_string(),
            };
            (at, what)
        })
        .collect())
}

/// The version of the Functions library this package installs.
#[pyfunction]
pub fn library_version() -> &'static str {
    library::version()
}

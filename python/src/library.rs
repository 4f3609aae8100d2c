//! `idgen.install_library`: idgen's Functions library put on a Redis that cannot load the
//! module, as `idgen-lease-worker install-library` does it.

use idgen_functions::{self as library, Installed, LibraryError};
use pyo3::prelude::*;

use crate::errors::{value_error, LibraryRefused};

/// Installs idgen's Functions library on the server at `url`, or upgrades it; on a Cluster
/// node, on every primary it knows. Returns `(address, what was done)` per server: "installed",
/// "upgraded from X", "reloaded", or on a server without FUNCTION (Redis 6) "installed as N
/// scripts (EVALSHA; ...)". A newer library already there is left alone and raises
/// LibraryRefused, as does a server that refuses (a user without FUNCTION, say); a horizon
/// out of range raises ValueError.
/// `horizon_ms` is the lease horizon fixed in the library (the module's
/// idgen.workerid-horizon-ms); `time_zone` the zone of date sequences' labels (the module's
/// idgen.dateseq-timezone), `sqids_alphabet` and `sqids_min_length` those of SQIDS replies;
/// a bad one raises ValueError.
#[pyfunction]
#[pyo3(signature = (
    url, *, horizon_ms = 30_000, time_zone = "UTC",
    sqids_alphabet = idgen_core::sqid::DEFAULT_ALPHABET, sqids_min_length = 0
))]
pub fn install_library(
    py: Python<'_>,
    url: &str,
    horizon_ms: u64,
    time_zone: &str,
    sqids_alphabet: &str,
    sqids_min_length: u8,
) -> PyResult<Vec<(String, String)>> {
    let settings = library::Settings {
        horizon_ms,
        time_zone: time_zone.to_string(),
        sqids_alphabet: sqids_alphabet.to_string(),
        sqids_min_length,
    };
    let done = py
        .detach(|| idgen_functions::install::install_everywhere(url, &settings))
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
                Installed::Scripts(loaded) => format!(
                    "installed as {} scripts (EVALSHA; no FUNCTION on this server)",
                    loaded.len()
                ),
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

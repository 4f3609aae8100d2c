//! The `idgen` Python package's native part (`idgen._idgen`): thin bindings over the project's
//! Rust crates, so that Python gets the same lease protocol, fencing and prefetching as Rust,
//! from one implementation.

mod codecs;
mod errors;
mod fork;
mod leased;
mod library;
mod tickets;

use idgen_core::{Layout, Settings, TWITTER_EPOCH_MS};
use pyo3::prelude::*;

use crate::errors::value_error;

/// Snowflake settings for `layout` (a profile name or a field spec, as the module's
/// idgen.layout) and `epoch_ms` (the profile's own epoch when None).
pub(crate) fn snowflake_settings(layout: &str, epoch_ms: Option<i64>) -> PyResult<Settings> {
    let parsed =
        Layout::parse(layout).map_err(|e| value_error(format!("layout={layout:?}: {e}")))?;
    let default_epoch = Layout::profile(layout).map_or(TWITTER_EPOCH_MS, |p| p.epoch_ms);
    Ok(Settings {
        layout: parsed,
        epoch_ms: epoch_ms.unwrap_or(default_epoch),
        ..Settings::default()
    })
}

#[pymodule]
fn _idgen(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<leased::LeasedSnowflake>()?;
    m.add_class::<tickets::TicketClient>()?;
    m.add_class::<codecs::Decoded>()?;
    m.add_class::<codecs::Sqids>()?;
    m.add_class::<codecs::Sealer>()?;
    m.add_function(wrap_pyfunction!(codecs::decode, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::from_time, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::uuid7, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::ulid, m)?)?;
    m.add_function(wrap_pyfunction!(fork::after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(library::install_library, m)?)?;
    m.add_function(wrap_pyfunction!(library::library_version, m)?)?;
    m.add("MAX_BATCH", leased::MAX_BATCH)?;
    errors::register(m)
}

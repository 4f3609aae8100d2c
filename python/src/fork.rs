//! Which process an object was made in.
//!
//! A forked child inherits its parent's objects, but not their threads, and it shares their
//! sockets. A lease, a block of tickets or a generator's random state in the child is the
//! parent's too: used as is, both would issue the same IDs. `idgen/__init__.py` calls
//! [`after_fork_in_child`] from `os.register_at_fork`, and each object compares the generation
//! it was made in with the current one before it issues anything.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;

/// Forks this process descends through: 0 in the process that imported idgen first.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The fork generation of this process.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Marks this process as a forked child: objects made before now belong to the parent.
#[pyfunction]
pub fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// What an object does on its first use in a forked child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFork {
    /// Raise `idgen.ForkedError`: the child makes its own object.
    Refuse,
    /// Start afresh in the child: a lease of its own, blocks of its own.
    Renew,
}

impl AfterFork {
    /// `"refuse"` or `"renew"`.
    pub fn parse(text: &str) -> PyResult<AfterFork> {
        match text {
            "refuse" => Ok(AfterFork::Refuse),
            "renew" => Ok(AfterFork::Renew),
            other => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "after_fork={other:?}: expected \"refuse\" or \"renew\""
            ))),
        }
    }
}

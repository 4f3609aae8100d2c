//! Which process an object was made in.
//!
//! A forked child inherits its parent's objects, but not their threads, and it shares their
//! sockets. A lease, a block of tickets or a generator's random state in the child is the
//! parent's too: used as is, both would issue the same IDs. `idgen/__init__.py` calls
//! [`after_fork_in_child`] from `os.register_at_fork`, and each object compares the generation
//! it was made in with the current one before it issues anything.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

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

/// A value that belongs to the process that made it, and, in a forked child allowed to renew,
/// the child's own value in its place.
///
/// The parent's value is never dropped in a child (forgotten instead): its threads do not
/// exist there, so joining them would hang, and its sockets and lease are the parent's.
pub struct PerProcess<T> {
    born: u64,
    own: Option<T>,
    /// A forked child's value and the generation it belongs to.
    child: Mutex<Option<(u64, T)>>,
}

impl<T> PerProcess<T> {
    /// `value`, belonging to this process.
    pub fn new(value: T) -> Self {
        PerProcess {
            born: generation(),
            own: Some(value),
            child: Mutex::new(None),
        }
    }

    /// Whether this is the process that made the value.
    pub fn is_own_process(&self) -> bool {
        generation() == self.born
    }

    /// The value, if this is the process that made it.
    pub fn own(&self) -> Option<&T> {
        self.own.as_ref().filter(|_| self.is_own_process())
    }

    /// `read` of this process's value, without waiting: None while a child's is being made.
    pub fn try_read<R>(&self, read: impl FnOnce(&T) -> Option<R>) -> Option<R> {
        if let Some(own) = self.own() {
            return read(own);
        }
        let generation = generation();
        let child = self.child.try_lock().ok()?;
        let (_, value) = child.as_ref().filter(|(g, _)| *g == generation)?;
        read(value)
    }

    /// `use_it` on the child's value, made by `start` on first use in this child. It may wait
    /// on the lock and the network: call it with the GIL released, so that a thread holding
    /// the GIL never waits on one that needs it back.
    pub fn with_child<R, E>(
        &self,
        start: impl FnOnce() -> Result<T, E>,
        use_it: impl FnOnce(&T) -> R,
    ) -> Result<R, E> {
        let generation = generation();
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let value = match child.take() {
            Some((g, value)) if g == generation => value,
            // A grandchild holds its parent's child value: forgotten like `own`.
            stale => {
                std::mem::forget(stale);
                start()?
            }
        };
        let result = use_it(&value);
        *child = Some((generation, value));
        Ok(result)
    }

    /// Takes the child's value out, if this process made it (to drop it: a close).
    pub fn take_child(&self) -> Option<T> {
        let generation = generation();
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        match child.take() {
            Some((g, value)) if g == generation => Some(value),
            stale => {
                std::mem::forget(stale);
                None
            }
        }
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        if !self.is_own_process() {
            std::mem::forget(self.own.take());
        }
        let generation = generation();
        let child = self.child.get_mut().unwrap_or_else(|p| p.into_inner());
        if child.as_ref().is_some_and(|(g, _)| *g != generation) {
            std::mem::forget(child.take());
        }
    }
}

//! `idgen.LeasedSnowflake`: Snowflake IDs made in this process under a worker-ID lease, through
//! the Rust lease client (`idgen-client`), so that Python gets the same protocol and fencing.
//!
//! `next()` holds the GIL and takes the generator's lock, which the renewal thread only holds
//! for a few instructions (never across a network call): it never waits for I/O. Acquiring the
//! first lease and closing it wait for the network with the GIL released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use idgen_client::{IssueError, LeaseOptions, LeasedGenerator};
use pyo3::prelude::*;

use crate::errors::{issue_error, lease_error, ForkedError, LeaseLost};
use crate::fork::{self, AfterFork};
use crate::snowflake_settings;

/// The most IDs one `next_many` call makes: it builds them all before it returns.
pub const MAX_BATCH: usize = 1_000_000;

/// Snowflake IDs under a worker-ID lease from the idgen Redis module.
/// (Subclassed by `idgen.LeasedSnowflake`, which notes each one to close at exit.)
#[pyclass(frozen, subclass, weakref, module = "idgen")]
pub struct LeasedSnowflake {
    options: LeaseOptions,
    after_fork: AfterFork,
    /// The fork generation that made `ids`.
    born: u64,
    /// The generator of the process that made this object. Taken and forgotten, never dropped,
    /// in a forked child: its renewal thread does not exist there, and its socket and lease
    /// are the parent's.
    ids: Option<LeasedGenerator>,
    /// A forked child's own generator (`after_fork="renew"`) and the generation it belongs to.
    child: Mutex<Option<(u64, LeasedGenerator)>>,
    closed: AtomicBool,
}

#[pymethods]
impl LeasedSnowflake {
    /// Acquires a worker ID in `namespace` on the coordinator at `url`, then renews it in the
    /// background every third of `ttl_ms`.
    #[new]
    #[pyo3(signature = (url, namespace, *, ttl_ms = 10_000, layout = "twitter", epoch_ms = None,
        max_drift_ms = 1_000, replicas = 0, start_within_ms = None, after_fork = "refuse"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &str,
        namespace: &str,
        ttl_ms: u64,
        layout: &str,
        epoch_ms: Option<i64>,
        max_drift_ms: u64,
        replicas: usize,
        start_within_ms: Option<u64>,
        after_fork: &str,
    ) -> PyResult<Self> {
        let after_fork = AfterFork::parse(after_fork)?;
        if ttl_ms < 30 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "ttl_ms={ttl_ms}: the lease must last at least 30 ms"
            )));
        }
        let mut options = LeaseOptions::new(url, namespace).ttl(Duration::from_millis(ttl_ms));
        options.replicas = replicas;
        if let Some(ms) = start_within_ms {
            options.start_within = Duration::from_millis(ms);
        }
        options.settings = snowflake_settings(layout, epoch_ms)?;
        options.settings.max_drift_ms = max_drift_ms;
        let ids = start(py, &options)?;
        Ok(LeasedSnowflake {
            options,
            after_fork,
            born: fork::generation(),
            ids: Some(ids),
            child: Mutex::new(None),
            closed: AtomicBool::new(false),
        })
    }

    /// The next ID.
    ///
    /// Raises LeaseLost while no lease is certainly alive, ClockBehind or AheadOfLease when the
    /// generator refuses, ForkedError in a forked child (after_fork="refuse").
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        match &self.ids {
            Some(ids) if fork::generation() == self.born => {
                ids.next_id().map_err(|e| self.issue_error(e))
            }
            _ => self.in_child(py, |ids| ids.next_id()),
        }
    }

    /// `n` increasing IDs, all or none (at most 1,000,000 a call).
    fn next_many(&self, py: Python<'_>, n: usize) -> PyResult<Vec<u64>> {
        if n > MAX_BATCH {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "next_many({n}): at most {MAX_BATCH} IDs a call"
            )));
        }
        let take = |ids: &LeasedGenerator| {
            let mut out = Vec::with_capacity(n);
            ids.next_ids(n, &mut out).map(|()| out)
        };
        match &self.ids {
            Some(ids) if fork::generation() == self.born => {
                take(ids).map_err(|e| self.issue_error(e))
            }
            _ => self.in_child(py, take),
        }
    }

    /// The worker ID leased now, or None while no lease is certainly alive.
    #[getter]
    fn worker_id(&self) -> Option<u32> {
        self.current(|ids| ids.lease().map(|g| g.worker_id))
    }

    /// The lease's fencing token, or None while no lease is certainly alive.
    #[getter]
    fn token(&self) -> Option<u64> {
        self.current(|ids| ids.lease().map(|g| g.token))
    }

    /// Unix time in ms until which the lease is certainly alive by this process's clock (the
    /// coordinator holds it a margin longer), or None while none is.
    #[getter]
    fn lease_until(&self) -> Option<i64> {
        let left = self.current(LeasedGenerator::lease_left)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        i64::try_from((now + left).as_millis()).ok()
    }

    /// Stops renewing and releases the lease; later calls raise LeaseLost. A forked child's
    /// close releases only the child's own lease.
    fn close(&self, py: Python<'_>) {
        let generation = fork::generation();
        py.detach(|| {
            if generation == self.born {
                self.closed.store(true, Ordering::Relaxed);
                if let Some(ids) = &self.ids {
                    ids.close();
                }
            }
            let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
            match child {
                Some((g, ids)) if g == generation => {
                    self.closed.store(true, Ordering::Relaxed);
                    drop(ids);
                }
                other => std::mem::forget(other),
            }
        });
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        match self.current(LeasedGenerator::lease) {
            Some(g) => format!(
                "LeasedSnowflake(namespace={:?}, worker_id={}, token={})",
                self.options.namespace, g.worker_id, g.token
            ),
            None => format!(
                "LeasedSnowflake(namespace={:?}, no live lease)",
                self.options.namespace
            ),
        }
    }
}

impl LeasedSnowflake {
    /// `read` of the generator this process issues from: its own, or a forked child's (None
    /// while that one is being made).
    fn current<T>(&self, read: impl FnOnce(&LeasedGenerator) -> Option<T>) -> Option<T> {
        let generation = fork::generation();
        match &self.ids {
            Some(ids) if generation == self.born => read(ids),
            _ => {
                let child = self.child.try_lock().ok()?;
                let (_, ids) = child.as_ref().filter(|(g, _)| *g == generation)?;
                read(ids)
            }
        }
    }

    fn issue_error(&self, e: IssueError) -> PyErr {
        if e == IssueError::NoLease && self.closed.load(Ordering::Relaxed) {
            return LeaseLost::new_err("this LeasedSnowflake is closed");
        }
        issue_error(e)
    }

    /// Issues through the forked child's own generator, taking its lease on first use (the
    /// one call that waits for the network). The lock on it is only waited for with the GIL
    /// released: a thread holding the GIL never waits on one that needs it back.
    fn in_child<T: Send>(
        &self,
        py: Python<'_>,
        issue: impl Fn(&LeasedGenerator) -> Result<T, IssueError> + Send + Sync,
    ) -> PyResult<T> {
        if self.after_fork == AfterFork::Refuse {
            return Err(ForkedError::new_err(format!(
                "this LeasedSnowflake holds its parent's lease (namespace {:?}): a forked child \
                 must not issue under it; make a new one in the child, or pass \
                 after_fork=\"renew\" to take a lease of its own",
                self.options.namespace
            )));
        }
        let generation = fork::generation();
        if let Ok(child) = self.child.try_lock() {
            if let Some((_, ids)) = child.as_ref().filter(|(g, _)| *g == generation) {
                return issue(ids).map_err(|e| self.issue_error(e));
            }
        }
        let result = py.detach(|| {
            let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
            let ids = match child.take() {
                Some((g, ids)) if g == generation => ids,
                stale => {
                    // A grandchild holds its parent's child generator: forgotten like `ids`.
                    std::mem::forget(stale);
                    LeasedGenerator::start(self.options.clone()).map_err(Err)?
                }
            };
            let issued = issue(&ids).map_err(Ok);
            *child = Some((generation, ids));
            issued
        });
        result.map_err(|e| match e {
            Ok(issue) => self.issue_error(issue),
            Err(lease) => lease_error(lease),
        })
    }
}

impl Drop for LeasedSnowflake {
    fn drop(&mut self) {
        if fork::generation() != self.born {
            std::mem::forget(self.ids.take());
        }
        let child = self.child.get_mut().unwrap_or_else(|p| p.into_inner());
        if child
            .as_ref()
            .is_some_and(|(g, _)| *g != fork::generation())
        {
            std::mem::forget(child.take());
        }
    }
}

/// Takes a first lease with the GIL released.
fn start(py: Python<'_>, options: &LeaseOptions) -> PyResult<LeasedGenerator> {
    py.detach(|| LeasedGenerator::start(options.clone()))
        .map_err(lease_error)
}

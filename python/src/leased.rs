//! `idgen.LeasedSnowflake`: Snowflake IDs made in this process under a worker-ID lease, through
//! the Rust lease client (`idgen-client`), so that Python gets the same protocol and fencing.
//!
//! `next()` holds the GIL and takes the generator's lock, which the renewal thread only holds
//! for a few instructions (never across a network call): it never waits for I/O. Acquiring the
//! first lease and closing it wait for the network with the GIL released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use idgen_client::metrics;
use idgen_client::{Backend, IssueError, LeaseOptions, LeasedGenerator};
use pyo3::prelude::*;

use crate::errors::{issue_error, lease_error, value_error, ForkedError, LeaseLost};
use crate::fork::{AfterFork, PerProcess};
use crate::snowflake_settings;

/// The most IDs one `next_many` call makes: it builds them all before it returns.
pub const MAX_BATCH: usize = 1_000_000;

/// Snowflake IDs under a worker-ID lease from the idgen Redis module.
/// (Subclassed by `idgen.LeasedSnowflake`, which notes each one to close at exit.)
#[pyclass(frozen, subclass, weakref, module = "idgen")]
pub struct LeasedSnowflake {
    options: LeaseOptions,
    after_fork: AfterFork,
    ids: PerProcess<LeasedGenerator>,
    closed: AtomicBool,
}

#[pymethods]
impl LeasedSnowflake {
    /// Acquires a worker ID in `namespace` on the coordinator at `url`, then renews it in the
    /// background every third of `ttl_ms`.
    #[new]
    #[pyo3(signature = (url, namespace, *, ttl_ms = 10_000, layout = "twitter", epoch_ms = None,
        max_drift_ms = 1_000, replicas = 0, start_within_ms = None, after_fork = "refuse",
        backend = "auto"))]
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
        backend: &str,
    ) -> PyResult<Self> {
        let after_fork = AfterFork::parse(after_fork)?;
        let backend: Backend = backend.parse().map_err(value_error)?;
        if ttl_ms < 30 {
            return Err(value_error(format!(
                "ttl_ms={ttl_ms}: the lease must last at least 30 ms"
            )));
        }
        let mut options = LeaseOptions::new(url, namespace).ttl(Duration::from_millis(ttl_ms));
        options.replicas = replicas;
        options.backend = backend;
        if let Some(ms) = start_within_ms {
            options.start_within = Duration::from_millis(ms);
        }
        options.settings = snowflake_settings(layout, epoch_ms)?;
        options.settings.max_drift_ms = max_drift_ms;
        let ids = py
            .detach(|| LeasedGenerator::start(options.clone()))
            .map_err(lease_error)?;
        Ok(LeasedSnowflake {
            options,
            after_fork,
            ids: PerProcess::new(ids),
            closed: AtomicBool::new(false),
        })
    }

    /// The next ID.
    ///
    /// Raises LeaseLost while no lease is certainly alive, ClockBehind or AheadOfLease when the
    /// generator refuses, ForkedError in a forked child (after_fork="refuse").
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        self.issue(py, LeasedGenerator::next_id)
    }

    /// `n` increasing IDs, all or none (at most 1,000,000 a call).
    fn next_many(&self, py: Python<'_>, n: usize) -> PyResult<Vec<u64>> {
        if n > MAX_BATCH {
            return Err(value_error(format!(
                "next_many({n}): at most {MAX_BATCH} IDs a call"
            )));
        }
        self.issue(py, |ids| {
            let mut out = Vec::with_capacity(n);
            ids.next_ids(n, &mut out).map(|()| out)
        })
    }

    /// The worker ID leased now, or None while no lease is certainly alive.
    #[getter]
    fn worker_id(&self) -> Option<u32> {
        self.ids.try_read(|ids| ids.lease().map(|g| g.worker_id))
    }

    /// The lease's fencing token, or None while no lease is certainly alive.
    #[getter]
    fn token(&self) -> Option<u64> {
        self.ids.try_read(|ids| ids.lease().map(|g| g.token))
    }

    /// Unix time in ms until which the lease is certainly alive by this process's clock (the
    /// coordinator holds it a margin longer), or None while none is.
    #[getter]
    fn lease_until(&self) -> Option<i64> {
        let left = self.ids.try_read(LeasedGenerator::lease_left)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        i64::try_from((now + left).as_millis()).ok()
    }

    /// Stops renewing and releases the lease; later calls raise LeaseLost. A forked child's
    /// close releases only the child's own lease.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            if let Some(ids) = self.ids.own() {
                self.closed.store(true, Ordering::Relaxed);
                ids.close();
            }
            if let Some(ids) = self.ids.take_child() {
                self.closed.store(true, Ordering::Relaxed);
                drop(ids);
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

    /// The lease's metrics in the Prometheus text format (`idgen_lease_live`, `_worker_id`,
    /// `_token`, `_until_ms`, `_renewals_total`, `_failures_total`), for the service to serve
    /// beside its own.
    fn metrics(&self) -> String {
        // Made afresh from this process's lease: a forked child's counts are its own.
        self.ids
            .try_read(|ids| Some(metrics::render(&ids.stats())))
            .unwrap_or_default()
    }

    fn __repr__(&self) -> String {
        match self.ids.try_read(LeasedGenerator::lease) {
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
    /// `issue` on this process's generator: its own, or a forked child's (taking the child's
    /// lease on first use, the one call that waits for the network).
    fn issue<T: Send>(
        &self,
        py: Python<'_>,
        issue: impl Fn(&LeasedGenerator) -> Result<T, IssueError> + Send + Sync,
    ) -> PyResult<T> {
        if let Some(ids) = self.ids.own() {
            return issue(ids).map_err(|e| self.issue_error(e));
        }
        if self.after_fork == AfterFork::Refuse {
            return Err(ForkedError::new_err(format!(
                "this LeasedSnowflake holds its parent's lease (namespace {:?}): a forked child \
                 must not issue under it; make a new one in the child, or pass \
                 after_fork=\"renew\" to take a lease of its own",
                self.options.namespace
            )));
        }
        if let Some(issued) = self.ids.try_read(|ids| Some(issue(ids))) {
            return issued.map_err(|e| self.issue_error(e));
        }
        if self.closed.load(Ordering::Relaxed) {
            // Closed in this child: never a new lease behind the caller's back.
            return Err(self.issue_error(IssueError::NoLease));
        }
        py.detach(|| {
            self.ids
                .with_child(|| LeasedGenerator::start(self.options.clone()), &issue)
        })
        .map_err(lease_error)?
        .map_err(|e| self.issue_error(e))
    }

    fn issue_error(&self, e: IssueError) -> PyErr {
        if e == IssueError::NoLease && self.closed.load(Ordering::Relaxed) {
            return LeaseLost::new_err("this LeasedSnowflake is closed");
        }
        issue_error(e)
    }
}

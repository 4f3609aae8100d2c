//! `idgen.TicketClient`: tickets from Flickr-style ticket servers through the Rust prefetching
//! client, which takes them in blocks (`TICKET.RANGE`) in the background and rides out a dead
//! server.
//!
//! `next()` hands out a ticket from the block in hand with the GIL held; only when that block
//! is spent does it wait, with the GIL released, for the next one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use ticket_client::prefetch::{Handle, Prefetch};
use ticket_client::prefetch_metrics;
use ticket_client::sizing::Sizing;
use ticket_client::{ClientError, RoundRobin};

use crate::errors::{ticket_error, value_error, ForkedError};
use crate::fork::{AfterFork, PerProcess};
use crate::leased::MAX_BATCH;

/// What it takes to fetch tickets: the servers, the sequence and how blocks are sized.
#[derive(Clone)]
struct Source {
    servers: Vec<String>,
    sequence: String,
    password: Option<String>,
    sizing: Sizing,
    /// Plain Redis servers holding segments (`INCRBY`), not ticket servers.
    plain_redis: bool,
}

/// A running prefetcher: its runtime (one thread), the blocks and this process's handle.
struct Tickets {
    /// Declared first: dropped (its blocks abandoned) before the runtime it runs on.
    prefetch: Prefetch,
    handle: Mutex<Handle>,
    _runtime: tokio::runtime::Runtime,
}

impl Tickets {
    fn start(source: &Source) -> Result<Tickets, ClientError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("idgen-tickets")
            .enable_all()
            .build()
            .map_err(|e| ClientError::BadReply(format!("could not start a runtime: {e}")))?;
        let client = if source.plain_redis {
            RoundRobin::segments(&source.servers, source.password.clone())?
        } else {
            RoundRobin::with_password(&source.servers, source.password.clone())?
        };
        let prefetch = Prefetch::start_sized(
            Arc::new(client),
            &source.sequence,
            source.sizing,
            runtime.handle(),
        );
        let handle = Mutex::new(prefetch.handle());
        Ok(Tickets {
            prefetch,
            handle,
            _runtime: runtime,
        })
    }

    /// A ticket without waiting, if the block in hand has one and no other thread holds it.
    fn ready(&self) -> Option<Result<u64, ClientError>> {
        let mut handle = self.handle.try_lock().ok()?;
        (handle.buffered() > 0).then(|| handle.ticket())
    }

    /// `n` tickets, waiting for blocks as needed (call with the GIL released).
    fn take(&self, n: usize) -> Result<Vec<u64>, ClientError> {
        let mut handle = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        (0..n).map(|_| handle.ticket()).collect()
    }
}

/// Tickets from one or more ticket servers, prefetched in blocks.
#[pyclass(frozen, module = "idgen")]
pub struct TicketClient {
    source: Source,
    after_fork: AfterFork,
    tickets: PerProcess<Tickets>,
}

#[pymethods]
impl TicketClient {
    /// Tickets of `sequence` from `servers` ("host:port" or "redis://host:port"), in blocks of
    /// `block`; with `max_block`, blocks grow from `block` up to `max_block` so that one lasts
    /// about `target_ms`. With `plain_redis`, `servers` are plain Redis servers (a managed
    /// service's) that hand out segments with INCRBY, server i of k taking tickets i, i+k, ...
    #[new]
    #[pyo3(signature = (servers, sequence = "default", *, block = 1_000, max_block = None,
        target_ms = 1_000, password = None, after_fork = "refuse", plain_redis = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        servers: Vec<String>,
        sequence: &str,
        block: u64,
        max_block: Option<u64>,
        target_ms: u64,
        password: Option<String>,
        after_fork: &str,
        plain_redis: bool,
    ) -> PyResult<Self> {
        let after_fork = AfterFork::parse(after_fork)?;
        let max = max_block.unwrap_or(block);
        if block == 0 || max < block {
            return Err(value_error(format!(
                "block={block}, max_block={max}: blocks must hold at least one ticket, and \
                 max_block must be at least block"
            )));
        }
        let sizing = match max_block {
            None => Sizing::fixed(block),
            Some(_) => Sizing::adaptive(block, max, Duration::from_millis(target_ms.max(1))),
        };
        let source = Source {
            servers: servers.iter().map(|s| address(s)).collect(),
            sequence: sequence.to_string(),
            password,
            sizing,
            plain_redis,
        };
        let tickets = py
            .detach(|| Tickets::start(&source))
            .map_err(ticket_error)?;
        Ok(TicketClient {
            source,
            after_fork,
            tickets: PerProcess::new(tickets),
        })
    }

    /// The next ticket. Raises TicketsUnavailable when no server gave a block in time.
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        if let Some(ticket) = self.tickets.try_read(Tickets::ready) {
            return ticket.map_err(ticket_error);
        }
        let taken = self.take(py, 1)?;
        taken
            .first()
            .copied()
            .ok_or_else(|| ticket_error(ClientError::BadReply("no ticket".into())))
    }

    /// `n` tickets (at most 1,000,000 a call), increasing within each server's block.
    fn next_many(&self, py: Python<'_>, n: usize) -> PyResult<Vec<u64>> {
        if n > MAX_BATCH {
            return Err(value_error(format!(
                "next_many({n}): at most {MAX_BATCH} tickets a call"
            )));
        }
        self.take(py, n)
    }

    /// The size of the next block fetched.
    #[getter]
    fn block_size(&self) -> Option<u64> {
        self.tickets.try_read(|t| Some(t.prefetch.block_size()))
    }

    /// Blocks fetched since start.
    #[getter]
    fn refills(&self) -> Option<u64> {
        self.tickets.try_read(|t| Some(t.prefetch.refills().0))
    }

    /// Tickets fetched and not handed out yet: a restart now would skip them.
    #[getter]
    fn unused(&self) -> Option<u64> {
        self.tickets.try_read(|t| Some(t.prefetch.unused()))
    }

    /// The client's metrics in the Prometheus text format (`idgen_prefetch_block_size`,
    /// `_unused`, `_refills_total`, `_refill_failures_total`), for the service to serve beside
    /// its own.
    fn metrics(&self) -> String {
        self.tickets
            .try_read(|t| Some(prefetch_metrics::render(&t.prefetch)))
            .unwrap_or_default()
    }

    fn __repr__(&self) -> String {
        format!(
            "TicketClient(servers={:?}, sequence={:?})",
            self.source.servers, self.source.sequence
        )
    }
}

impl TicketClient {
    /// Tickets with the GIL released, from this process's prefetcher or (in a forked child
    /// that may renew) the child's own.
    fn take(&self, py: Python<'_>, n: usize) -> PyResult<Vec<u64>> {
        if let Some(tickets) = self.tickets.own() {
            return py.detach(|| tickets.take(n)).map_err(ticket_error);
        }
        if self.after_fork == AfterFork::Refuse {
            return Err(ForkedError::new_err(
                "this TicketClient holds its parent's blocks of tickets: a forked child must not \
                 hand them out too; make a new one in the child, or pass after_fork=\"renew\" to \
                 fetch blocks of its own",
            ));
        }
        py.detach(|| {
            self.tickets
                .with_child(|| Tickets::start(&self.source), |t| t.take(n))
        })
        .and_then(|taken| taken)
        .map_err(ticket_error)
    }
}

/// `host:port` from `redis://host:port/` or `host:port`.
fn address(server: &str) -> String {
    let bare = server.strip_prefix("redis://").unwrap_or(server);
    bare.trim_end_matches('/').to_string()
}

//! What all connections of one server share: a cheap `Clone` handle.

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Instant;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::store::Store;

/// The server's shared state.
#[derive(Clone)]
pub struct Shared(Arc<Inner>);

/// Behind [`Shared`].
pub struct Inner {
    pub config: Config,
    pub store: Store,
    pub started: Instant,
    /// Connections open now.
    pub clients: AtomicUsize,
    /// Tickets handed out, errors and the rest: INFO and `--metrics-listen` read them.
    pub metrics: Metrics,
    /// Client IDs, as CLIENT ID reports them.
    pub next_client_id: AtomicU64,
}

impl Shared {
    /// State for a server with `config` over `store`.
    pub fn new(config: Config, store: Store) -> Self {
        let metrics = Metrics::new(store.bound_writes().clone());
        Shared(Arc::new(Inner {
            config,
            store,
            metrics,
            started: Instant::now(),
            clients: AtomicUsize::new(0),
            next_client_id: AtomicU64::new(1),
        }))
    }
}

impl std::ops::Deref for Shared {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

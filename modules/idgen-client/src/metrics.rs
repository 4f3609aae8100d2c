//! The lease in Prometheus terms: [`LeaseMetrics`] registers its metrics in a registry and
//! [`LeaseMetrics::render`] brings them up to date from [`LeaseStats`] and writes the text
//! format (`idgen-lease-worker --metrics-listen` serves it).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::LeaseStats;

/// The lease's metrics, prefixed `idgen_lease_`.
pub struct LeaseMetrics {
    registry: Registry,
    live: Gauge,
    worker_id: Gauge,
    token: Gauge,
    until_ms: Gauge,
    renewals: Counter,
    failures: Counter,
}

impl Default for LeaseMetrics {
    fn default() -> Self {
        LeaseMetrics::new()
    }
}

impl LeaseMetrics {
    /// The metrics, registered.
    pub fn new() -> LeaseMetrics {
        let mut registry = Registry::with_prefix("idgen_lease");
        let (live, worker_id, token, until_ms) = Default::default();
        let (renewals, failures): (Counter, Counter) = Default::default();
        registry.register(
            "live",
            "1 while a lease is certainly alive",
            Clone::clone(&live),
        );
        registry.register(
            "worker_id",
            "The worker ID leased (-1: none)",
            Clone::clone(&worker_id),
        );
        registry.register(
            "token",
            "The lease's fencing token (-1: none)",
            Clone::clone(&token),
        );
        registry.register(
            "until_ms",
            "The UNTIL the coordinator has on record, Unix ms (-1: none)",
            Clone::clone(&until_ms),
        );
        registry.register("renewals", "RENEWs that succeeded", renewals.clone());
        registry.register(
            "failures",
            "Lease calls that failed: refused, unreachable, not replicated",
            failures.clone(),
        );
        LeaseMetrics {
            registry,
            live,
            worker_id,
            token,
            until_ms,
            renewals,
            failures,
        }
    }

    /// The metrics as of `stats`, in the Prometheus text format.
    pub fn render(&self, stats: &LeaseStats) -> String {
        let lease = stats.lease;
        self.live.set(i64::from(lease.is_some()));
        self.worker_id
            .set(lease.map_or(-1, |g| i64::from(g.worker_id)));
        self.token
            .set(lease.map_or(-1, |g| g.token.min(i64::MAX as u64) as i64));
        self.until_ms.set(stats.until_ms.unwrap_or(-1));
        // Counters only go up: add what happened since the last render.
        self.renewals
            .inc_by(stats.renewals.saturating_sub(self.renewals.get()));
        self.failures
            .inc_by(stats.failures.saturating_sub(self.failures.get()));
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

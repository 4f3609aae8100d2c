//! The prefetching client in Prometheus terms: [`PrefetchMetrics`] registers its metrics in a
//! registry and [`PrefetchMetrics::render`] brings them up to date from a [`Prefetch`] and
//! writes the text format, for the service that holds the client to serve with its own.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::prefetch::Prefetch;

/// The client's metrics, prefixed `idgen_prefetch_`.
pub struct PrefetchMetrics {
    registry: Registry,
    block_size: Gauge,
    unused: Gauge,
    refills: Counter,
    refill_failures: Counter,
}

impl Default for PrefetchMetrics {
    fn default() -> Self {
        PrefetchMetrics::new()
    }
}

impl PrefetchMetrics {
    /// The metrics, registered.
    pub fn new() -> PrefetchMetrics {
        let mut registry = Registry::with_prefix("idgen_prefetch");
        let (block_size, unused): (Gauge, Gauge) = Default::default();
        let (refills, refill_failures): (Counter, Counter) = Default::default();
        registry.register(
            "block_size",
            "Tickets in the next block it fetches",
            block_size.clone(),
        );
        registry.register(
            "unused",
            "Tickets fetched and not handed out: what a shutdown now would lose",
            unused.clone(),
        );
        registry.register("refills", "Blocks fetched", refills.clone());
        registry.register(
            "refill_failures",
            "Block fetches that failed: every server down or refusing",
            refill_failures.clone(),
        );
        PrefetchMetrics {
            registry,
            block_size,
            unused,
            refills,
            refill_failures,
        }
    }

    /// The metrics as of now, in the Prometheus text format.
    pub fn render(&self, prefetch: &Prefetch) -> String {
        let gauge = |n: u64| n.min(i64::MAX as u64) as i64;
        self.block_size.set(gauge(prefetch.block_size()));
        self.unused.set(gauge(prefetch.unused()));
        // Counters only go up: add what happened since the last render.
        let (refills, failures) = prefetch.refills();
        self.refills
            .inc_by(refills.saturating_sub(self.refills.get()));
        self.refill_failures
            .inc_by(failures.saturating_sub(self.refill_failures.get()));
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

//! The prefetching client in Prometheus terms: [`render`] writes its figures in the text format,
//! for the service that holds the client to serve beside its own metrics.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::prefetch::Prefetch;

/// The client's metrics as of now, prefixed `idgen_prefetch_`. Made afresh from the client's own
/// totals on each call, so nothing is kept between scrapes.
pub fn render(prefetch: &Prefetch) -> String {
    let gauge = |n: u64| {
        let g = Gauge::<i64>::default();
        g.set(n.min(i64::MAX as u64) as i64);
        g
    };
    let counter = |n: u64| {
        let c = Counter::<u64>::default();
        c.inc_by(n);
        c
    };
    let (refills, failures) = prefetch.refills();
    let mut registry = Registry::with_prefix("idgen_prefetch");
    registry.register(
        "block_size",
        "Tickets in the next block it fetches",
        gauge(prefetch.block_size()),
    );
    registry.register(
        "unused",
        "Tickets fetched and not handed out: what a shutdown now would lose",
        gauge(prefetch.unused()),
    );
    registry.register("refills", "Blocks fetched", counter(refills));
    registry.register(
        "refill_failures",
        "Block fetches that failed: every server down or refusing",
        counter(failures),
    );
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

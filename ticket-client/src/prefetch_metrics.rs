//! The prefetching client in Prometheus terms: [`render`] writes its figures in the OpenMetrics
//! text format, for the service that holds the client to serve beside its own metrics.

use idgen_openmetrics::{self as openmetrics, gauge, Metric, Value};

use crate::prefetch::Prefetch;

/// The client's metrics as of now, prefixed `idgen_prefetch_`. Made afresh from the client's own
/// totals on each call, so nothing is kept between scrapes.
pub fn render(prefetch: &Prefetch) -> String {
    let (refills, failures) = prefetch.refills();
    let metrics = [
        Metric {
            name: "block_size",
            help: "Tickets in the next block it fetches",
            value: gauge(prefetch.block_size()),
        },
        Metric {
            name: "unused",
            help: "Tickets fetched and not handed out: what a shutdown now would lose",
            value: gauge(prefetch.unused()),
        },
        Metric {
            name: "refills",
            help: "Blocks fetched",
            value: Value::Counter(refills),
        },
        Metric {
            name: "refill_failures",
            help: "Block fetches that failed: every server down or refusing",
            value: Value::Counter(failures),
        },
    ];
    openmetrics::render("idgen_prefetch", &metrics)
}

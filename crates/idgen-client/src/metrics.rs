//! The lease in Prometheus terms: [`render`] writes [`LeaseStats`] in the OpenMetrics text format
//! (`idgen-lease-worker --metrics-listen` serves it; the Python bindings return it). Made afresh
//! from the generator's own totals on each call, so nothing is kept between scrapes.

use idgen_openmetrics::{self as openmetrics, gauge, Metric, Value};

use crate::LeaseStats;

/// The lease's metrics as of `stats`, prefixed `idgen_lease_`.
pub fn render(stats: &LeaseStats) -> String {
    let lease = stats.lease;
    let metrics = [
        Metric {
            name: "live",
            help: "1 while a lease is certainly alive",
            value: Value::Gauge(i64::from(lease.is_some())),
        },
        Metric {
            name: "worker_id",
            help: "The worker ID leased (-1: none)",
            value: Value::Gauge(lease.map_or(-1, |g| i64::from(g.worker_id))),
        },
        Metric {
            name: "token",
            help: "The lease's fencing token (-1: none)",
            value: lease.map_or(Value::Gauge(-1), |g| gauge(g.token)),
        },
        Metric {
            name: "until_ms",
            help: "The UNTIL the coordinator has on record, Unix ms (-1: none)",
            value: Value::Gauge(stats.until_ms.unwrap_or(-1)),
        },
        Metric {
            name: "renewals",
            help: "RENEWs that succeeded",
            value: Value::Counter(stats.renewals),
        },
        Metric {
            name: "failures",
            help: "Lease calls that failed: refused, unreachable, not replicated",
            value: Value::Counter(stats.failures),
        },
    ];
    openmetrics::render("idgen_lease", &metrics)
}

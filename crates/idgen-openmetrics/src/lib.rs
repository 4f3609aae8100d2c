//! The OpenMetrics text format for a handful of gauges and counters, written without a registry.
//!
//! The clients' metrics (the lease, the prefetching ticket client) are a few numbers read afresh
//! on each scrape; rendering them here keeps a metrics library out of the libraries and the
//! Python bindings. The output is what prometheus-client writes for the same metrics, byte for
//! byte (a test compares them), so servers that do use a registry serve the same format.

use std::fmt::Write;

/// One metric's value, and so its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// A value that goes up and down.
    Gauge(i64),
    /// A total that only goes up; exposed with the `_total` suffix.
    Counter(u64),
}

/// One metric: its name under the prefix, what it means, and its value now.
#[derive(Clone, Copy, Debug)]
pub struct Metric<'a> {
    /// The name after `<prefix>_`.
    pub name: &'a str,
    /// One line of help (a full stop is added, as prometheus-client does).
    pub help: &'a str,
    /// The value.
    pub value: Value,
}

/// The metrics as one exposition, each name prefixed `<prefix>_`, ending with `# EOF`.
pub fn render(prefix: &str, metrics: &[Metric]) -> String {
    let mut text = String::new();
    for metric in metrics {
        let (kind, suffix, value) = match metric.value {
            Value::Gauge(n) => ("gauge", "", i128::from(n)),
            Value::Counter(n) => ("counter", "_total", i128::from(n)),
        };
        let name = format!("{prefix}_{}", metric.name);
        // Writing to a String cannot fail.
        let _ = write!(
            text,
            "# HELP {name} {help}.\n# TYPE {name} {kind}\n{name}{suffix} {value}\n",
            help = metric.help,
        );
    }
    text.push_str("# EOF\n");
    text
}

/// `n` as a gauge's value: figures above `i64::MAX` show as `i64::MAX`.
pub fn gauge(n: u64) -> Value {
    Value::Gauge(i64::try_from(n).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::Registry;

    /// The same metrics through prometheus-client's registry and encoder.
    fn by_the_library(prefix: &str, metrics: &[Metric]) -> String {
        let mut registry = Registry::with_prefix(prefix);
        for metric in metrics {
            match metric.value {
                Value::Gauge(n) => {
                    let gauge = Gauge::<i64>::default();
                    gauge.set(n);
                    registry.register(metric.name, metric.help, gauge);
                }
                Value::Counter(n) => {
                    let counter = Counter::<u64>::default();
                    counter.inc_by(n);
                    registry.register(metric.name, metric.help, counter);
                }
            }
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn the_text_is_what_prometheus_client_writes() {
        let metrics = [
            Metric {
                name: "live",
                help: "1 while a lease is certainly alive",
                value: Value::Gauge(1),
            },
            Metric {
                name: "token",
                help: "The lease's fencing token (-1: none)",
                value: Value::Gauge(-1),
            },
            Metric {
                name: "until_ms",
                help: "The UNTIL on record, Unix ms",
                value: gauge(u64::MAX),
            },
            Metric {
                name: "renewals",
                help: "RENEWs that succeeded",
                value: Value::Counter(u64::MAX),
            },
            Metric {
                name: "failures",
                help: "Calls that failed: refused, unreachable",
                value: Value::Counter(0),
            },
        ];
        assert_eq!(
            render("idgen_lease", &metrics),
            by_the_library("idgen_lease", &metrics)
        );
        assert_eq!(render("x", &[]), by_the_library("x", &[]));
    }
}

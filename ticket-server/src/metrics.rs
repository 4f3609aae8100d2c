//! The server's Prometheus metrics (served by `metrics_server.rs`). Counters count on the
//! request path; the per-sequence gauges and the open connections are set from a [`Snapshot`]
//! of the server's state when scraped.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::store::LAST_TICKET;

/// What the gauges show, read from the server when scraped.
pub struct Snapshot {
    /// Connections open now.
    pub connections: usize,
    /// The set's increment: each sequence's tickets step by it.
    pub increment: u64,
    /// Per sequence: name, next ticket, durable bound.
    pub sequences: Vec<(String, u64, u64)>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SequenceLabel {
    sequence: String,
}

/// One server's metrics.
pub struct Metrics {
    registry: Registry,
    /// Tickets handed out since start.
    pub issued: Counter,
    errors: Family<KindLabel, Counter>,
    auth_failures: Counter,
    tls_failures: Counter,
    connections: Gauge,
    bound: Family<SequenceLabel, Gauge>,
    headroom: Family<SequenceLabel, Gauge>,
}

impl Metrics {
    /// Metrics over the store's histogram of bound writes.
    pub fn new(bound_writes: Histogram) -> Metrics {
        let mut registry = Registry::with_prefix("ticket_server");
        let metrics = Metrics {
            registry: Registry::default(),
            issued: Counter::default(),
            errors: Family::default(),
            auth_failures: Counter::default(),
            tls_failures: Counter::default(),
            connections: Gauge::default(),
            bound: Family::default(),
            headroom: Family::default(),
        };
        registry.register(
            "tickets_issued",
            "Tickets handed out since start",
            metrics.issued.clone(),
        );
        registry.register(
            "errors",
            "Error replies, by kind (wrongpass, syntax, store, ...)",
            metrics.errors.clone(),
        );
        registry.register(
            "auth_failures",
            "AUTH and HELLO ... AUTH with a wrong password",
            metrics.auth_failures.clone(),
        );
        registry.register(
            "tls_handshake_failures",
            "TLS handshakes that failed or timed out (a bad or missing client certificate, say)",
            metrics.tls_failures.clone(),
        );
        registry.register(
            "connections",
            "Client connections open now",
            metrics.connections.clone(),
        );
        registry.register(
            "durable_bound",
            "Per sequence: tickets below this bound are on disk and may be handed out",
            metrics.bound.clone(),
        );
        registry.register(
            "headroom_tickets",
            "Per sequence: tickets this server can still hand out before the sequence is spent",
            metrics.headroom.clone(),
        );
        registry.register(
            "bound_write_seconds",
            "Time to write a sequence's bound durably: its file, then the marker's record of it \
             (each write, fsync, rename, directory fsync)",
            bound_writes,
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// Counts an error reply of `kind` (`CmdError::kind`); `wrongpass` is a failed
    /// authentication too.
    pub fn error(&self, kind: &'static str) {
        self.errors.get_or_create(&KindLabel { kind }).inc();
        if kind == "wrongpass" {
            self.auth_failures.inc();
        }
    }

    /// Counts a failed TLS handshake.
    pub fn tls_failure(&self) {
        self.tls_failures.inc();
    }

    /// The metrics in the Prometheus text format, with the gauges set from `now`.
    pub fn render(&self, now: Snapshot) -> String {
        self.connections.set(now.connections as i64);
        let increment = now.increment.max(1);
        for (name, next, bound) in now.sequences {
            let label = SequenceLabel { sequence: name };
            let left =
                LAST_TICKET.saturating_sub(next) / increment + u64::from(next <= LAST_TICKET);
            self.bound
                .get_or_create(&label)
                .set(bound.min(i64::MAX as u64) as i64);
            self.headroom
                .get_or_create(&label)
                .set(left.min(i64::MAX as u64) as i64);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

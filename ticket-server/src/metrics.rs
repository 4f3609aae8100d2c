//! The server's Prometheus metrics, served in the text format on `--metrics-listen` (GET
//! /metrics). Counters count on the request path; the per-sequence gauges and the open
//! connections are read from the server's own state when scraped.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::cmd::CmdError;
use crate::shared::Shared;
use crate::store::LAST_TICKET;

/// The buckets of the bound-write histogram, in seconds: 50 µs doubling to 1.6 s.
pub fn bound_write_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.000_05, 2.0, 16)
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
            "Time to write a sequence's bound durably (write, fsync, rename, directory fsync)",
            bound_writes,
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// Counts an error reply (and a failed authentication).
    pub fn error(&self, e: &CmdError) {
        self.errors
            .get_or_create(&KindLabel { kind: e.kind() })
            .inc();
        if matches!(e, CmdError::WrongPass) {
            self.auth_failures.inc();
        }
    }

    /// Counts a failed TLS handshake.
    pub fn tls_failure(&self) {
        self.tls_failures.inc();
    }

    /// The metrics in the Prometheus text format, with the gauges read from `shared` now.
    pub fn render(&self, shared: &Shared) -> String {
        self.connections
            .set(shared.clients.load(Ordering::Relaxed) as i64);
        let increment = shared.config.increment.max(1);
        for (name, next, bound) in shared.store.snapshot() {
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

/// Serves GET /metrics on `addr` until the process ends.
///
/// # Errors
/// When `addr` cannot be bound.
pub async fn serve(addr: SocketAddr, shared: Shared) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving Prometheus metrics on /metrics");
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = shared.metrics.render(&shared);
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    text,
                )
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics server stopped");
        }
    });
    Ok(())
}

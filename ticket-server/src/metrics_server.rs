//! `--metrics-listen`: GET /metrics over HTTP (axum), rendering the server's metrics with a
//! snapshot of its connections and sequences taken at each scrape.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use crate::metrics::Snapshot;
use crate::shared::Shared;

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
            let text = shared.metrics.render(Snapshot {
                connections: shared.clients.load(Ordering::Relaxed),
                increment: shared.config.increment,
                sequences: shared.store.snapshot(),
            });
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

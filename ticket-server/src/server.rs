//! The accept loop: a bound listener in, a shutdown future to stop it.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc};

use crate::cmd::CmdError;
use crate::connection;
use crate::shared::Shared;

/// How long shutdown waits for connections to finish their current requests.
const DRAIN: Duration = Duration::from_secs(5);
/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Serves connections from `listener` until `shutdown` completes, then closes them all and
/// records each sequence's exact next ticket.
pub async fn run(listener: TcpListener, shared: Shared, shutdown: impl Future) {
    let (notify, _) = broadcast::channel::<()>(1);
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    tokio::select! {
        _ = accept(&listener, &shared, &notify, &done_tx) => {}
        _ = shutdown => tracing::info!("shutting down"),
    }
    drop(notify);
    drop(done_tx);
    // Every connection task holds a sender; the channel closes when the last one ends.
    let _ = tokio::time::timeout(DRAIN, done_rx.recv()).await;
    // No gap after a clean stop: the exact next ticket goes to disk.
    shared.store.close().await;
}

async fn accept(
    listener: &TcpListener,
    shared: &Shared,
    notify: &broadcast::Sender<()>,
    done: &mpsc::Sender<()>,
) {
    loop {
        let (mut socket, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if shared.clients.load(Ordering::Relaxed) >= shared.config.max_clients {
            tracing::warn!(%peer, "refused: max clients reached");
            shared.metrics.error(CmdError::MaxClients.kind());
            let _ = socket
                .write_all(format!("-{}\r\n", CmdError::MaxClients.text()).as_bytes())
                .await;
            continue;
        }
        let _ = socket.set_nodelay(true);
        shared.clients.fetch_add(1, Ordering::Relaxed);
        let (shared, shutdown, done) = (shared.clone(), notify.subscribe(), done.clone());
        tokio::spawn(async move {
            match shared.config.tls.clone() {
                None => connection::serve(socket, shared.clone(), shutdown).await,
                Some(tls) => {
                    let handshake = tokio_rustls::TlsAcceptor::from(tls).accept(socket);
                    match tokio::time::timeout(HANDSHAKE, handshake).await {
                        Ok(Ok(stream)) => connection::serve(stream, shared.clone(), shutdown).await,
                        Ok(Err(e)) => {
                            tracing::info!(%peer, error = %e, "TLS handshake failed");
                            shared.metrics.tls_failure();
                        }
                        Err(_) => {
                            tracing::info!(%peer, "TLS handshake timed out");
                            shared.metrics.tls_failure();
                        }
                    }
                }
            }
            shared.clients.fetch_sub(1, Ordering::Relaxed);
            drop(done);
        });
    }
}

//! One client connection: read requests, run them in order, write the replies in one batch.
//!
//! Bounded: a request larger than [`MAX_QUERY`] or malformed gets an error and a closed
//! connection; an idle client is dropped after the configured timeout; a client that stops
//! reading its replies is dropped after [`WRITE_TIMEOUT`].

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::broadcast;
use tokio::time::timeout;

use crate::cmd::{execute, Session};
use crate::frame::{parse_request, Reply};
use crate::shared::Shared;

/// Most bytes of requests a client may have buffered without a complete one.
pub const MAX_QUERY: usize = 1024 * 1024;
/// How long a reply may take to be accepted by a client.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `socket` until the client leaves, misbehaves, idles out, or the server shuts down.
pub async fn serve(mut socket: TcpStream, shared: Shared, mut shutdown: broadcast::Receiver<()>) {
    let id = shared
        .next_client_id
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut session = Session {
        id,
        authenticated: shared.config.requirepass.is_none(),
        ..Session::default()
    };
    let mut input = BytesMut::with_capacity(16 * 1024);
    let mut out = BytesMut::with_capacity(16 * 1024);
    loop {
        let mut close = false;
        loop {
            match parse_request(&mut input) {
                Ok(Some(args)) => {
                    let mut reply = Reply {
                        out: &mut out,
                        resp3: session.resp3,
                    };
                    execute(&args, &mut session, &shared, &mut reply).await;
                    if session.quit {
                        close = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    Reply {
                        out: &mut out,
                        resp3: session.resp3,
                    }
                    .error(&format!("ERR Protocol error: {}", e.0));
                    close = true;
                    break;
                }
            }
        }
        if !close && input.len() > MAX_QUERY {
            Reply {
                out: &mut out,
                resp3: session.resp3,
            }
            .error("ERR Protocol error: request too large");
            close = true;
        }
        if !out.is_empty() {
            match timeout(WRITE_TIMEOUT, socket.write_all(&out)).await {
                Ok(Ok(())) => out.clear(),
                _ => return,
            }
        }
        if close {
            return;
        }
        let read = socket.read_buf(&mut input);
        let idle = shared.config.idle_timeout;
        tokio::select! {
            result = async { match idle { Some(limit) => timeout(limit, read).await.ok(), None => Some(read.await) } } => {
                match result {
                    Some(Ok(n)) if n > 0 => {}
                    _ => return, // closed, failed, or idle too long
                }
            }
            _ = shutdown.recv() => return,
        }
    }
}

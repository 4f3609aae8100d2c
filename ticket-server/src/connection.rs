//! One client connection: read requests, run them in order, write the replies in one batch.
//!
//! Bounded: a request larger than [`MAX_QUERY`] or malformed gets an error and a closed
//! connection; an idle client is dropped after the configured timeout; replies are sent in
//! batches of about [`REPLY_BATCH`] bytes, so a client that pipelines without reading holds at
//! most one batch and one request's reply in memory, and is dropped after [`WRITE_TIMEOUT`].

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::broadcast;
use tokio::time::{timeout, Instant};

use crate::cmd::{execute, CmdError, Session};
use crate::deadline::RequestClock;
use crate::frame::{parse_request, Reply};
use crate::shared::Shared;

/// Most bytes of requests a client may have buffered without a complete one.
pub const MAX_QUERY: usize = 1024 * 1024;
/// How long a reply may take to be accepted by a client.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Replies are sent once they reach this many bytes, before more requests run.
const REPLY_BATCH: usize = 64 * 1024;

/// Bytes of room made in the input buffer before each read.
const READ_CHUNK: usize = 16 * 1024;

/// How often at most the idle timer is pushed back: resetting a timer on every request would
/// cost more than the request.
const IDLE_RESOLUTION: Duration = Duration::from_secs(1);

/// A client's byte stream: plain TCP, or TLS over it.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send {
    /// Writes what the socket takes now without waiting; 0 when that cannot be known.
    fn write_now(&mut self, bytes: &[u8]) -> usize;
}

impl Transport for TcpStream {
    fn write_now(&mut self, bytes: &[u8]) -> usize {
        self.try_write(bytes).unwrap_or(0)
    }
}

impl Transport for tokio_rustls::server::TlsStream<TcpStream> {
    fn write_now(&mut self, _bytes: &[u8]) -> usize {
        0 // TLS records are written by write_all
    }
}

/// Serves `socket` until the client leaves, misbehaves, idles out, or the server shuts down.
pub async fn serve(
    mut socket: impl Transport,
    shared: Shared,
    mut shutdown: broadcast::Receiver<()>,
) {
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
    // Without a timeout the timer is set a year ahead, which is as good as never.
    let idle = shared
        .config
        .idle_timeout
        .unwrap_or(Duration::from_secs(365 * 86_400));
    let mut pushed_back = Instant::now();
    let idle_timer = tokio::time::sleep(idle);
    let shutting_down = shutdown.recv();
    tokio::pin!(idle_timer, shutting_down);
    let mut request_clock = RequestClock::default();
    loop {
        let Batch { progressed, close } =
            run_batch(&mut input, &mut out, &mut session, &shared).await;
        let batch_full = out.len() >= REPLY_BATCH;
        if !out.is_empty() && !flush(&mut socket, &mut out).await {
            return;
        }
        if close {
            return;
        }
        if batch_full {
            continue; // requests may be waiting in the buffer already
        }
        request_clock.update(!input.is_empty(), progressed);
        let deadline = request_clock.deadline();
        input.reserve(READ_CHUNK);
        tokio::select! {
            biased;
            read = socket.read_buf(&mut input) => {
                // No readiness is cleared by hand after a short read: bytes arriving between
                // the read and the clearing would then wait for the next event, which may never
                // come (a request split across two segments went unanswered).
                let Ok(1..) = read else {
                    return; // closed or failed
                };
                let now = Instant::now();
                if now - pushed_back >= IDLE_RESOLUTION {
                    pushed_back = now;
                    idle_timer.as_mut().reset(now + idle);
                }
            }
            _ = &mut idle_timer => return,
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                return; // an incomplete request past its deadline
            }
            _ = &mut shutting_down => return,
        }
    }
}

/// What one run of requests left behind.
struct Batch {
    /// At least one request ran.
    progressed: bool,
    /// The connection is to be closed once the replies are sent.
    close: bool,
}

/// Runs the complete requests in `input` until the replies make a batch worth sending: a client
/// pipelining many large requests without reading must not make the server buffer all their
/// replies.
async fn run_batch(
    input: &mut BytesMut,
    out: &mut BytesMut,
    session: &mut Session,
    shared: &Shared,
) -> Batch {
    let mut progressed = false;
    while out.len() < REPLY_BATCH {
        let mut reply = Reply {
            out,
            resp3: session.resp3,
        };
        match parse_request(input) {
            Ok(Some(args)) => {
                progressed = true;
                execute(&args, session, shared, &mut reply).await;
                if session.quit {
                    return Batch {
                        progressed,
                        close: true,
                    };
                }
            }
            Ok(None) => break,
            Err(e) => {
                let error = CmdError::Protocol(e.0);
                shared.metrics.error(error.kind());
                reply.error(&error.text());
                return Batch {
                    progressed,
                    close: true,
                };
            }
        }
    }
    let close = input.len() > MAX_QUERY;
    if close {
        let error = CmdError::Protocol("request too large");
        shared.metrics.error(error.kind());
        Reply {
            out,
            resp3: session.resp3,
        }
        .error(&error.text());
    }
    Batch { progressed, close }
}

/// Sends `out` and clears it; false when the client is gone or reads too slowly.
async fn flush(socket: &mut impl Transport, out: &mut BytesMut) -> bool {
    // Most replies fit the socket buffer at once; only a slow reader needs the timer.
    let sent = socket.write_now(out);
    if sent < out.len() {
        match timeout(WRITE_TIMEOUT, socket.write_all(&out[sent..])).await {
            Ok(Ok(())) => {}
            _ => return false,
        }
    }
    out.clear();
    true
}

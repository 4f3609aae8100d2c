//! The round-robin client: one handle per ticket server, an atomic counter picks the next.
//!
//! A server that errors or times out is skipped and probed again after [`RETRY_AFTER`]; a call
//! fails only when every server has failed it. Tickets from different servers never collide
//! (each has its own offset), so any server's answer is as good as another's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use crate::error::{ClientError, Result};

/// How long a failed server is skipped before it is tried again.
pub const RETRY_AFTER: Duration = Duration::from_millis(500);
/// How long one call to one server may take.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(1000);

/// The URL of a server given as `host:port` (plain), or as a `redis://` or `rediss://` URL
/// (TLS: the server's certificate is checked against the system's roots, or `SSL_CERT_FILE`).
fn server_url(addr: &str) -> String {
    if addr.contains("://") {
        addr.to_string()
    } else {
        format!("redis://{addr}/")
    }
}

/// One handle per address, connecting lazily, with AUTH `password` when given; plain Redis
/// servers holding segments when `segments`.
fn connect(addrs: &[String], password: Option<&str>, segments: bool) -> Result<Vec<Server>> {
    if addrs.is_empty() {
        return Err(ClientError::NoServers);
    }
    addrs
        .iter()
        .enumerate()
        .map(|(position, addr)| {
            let bad = |source| ClientError::BadAddress {
                addr: addr.clone(),
                source,
            };
            let mut info =
                redis::IntoConnectionInfo::into_connection_info(server_url(addr)).map_err(bad)?;
            if let Some(password) = password {
                let settings = info.redis_settings().clone().set_password(password);
                info = info.set_redis_settings(settings);
            }
            Ok(Server {
                segment: segments.then(|| Segment::of(position, addrs.len())),
                addr: addr.clone(),
                client: redis::Client::open(info).map_err(bad)?,
                connection: tokio::sync::Mutex::new(None),
                down_until: Mutex::new(None),
            })
        })
        .collect()
}

/// What one call asks a server for.
#[derive(Clone, Copy, Debug)]
enum Ask {
    One,
    Many(u64),
    Range(u64),
}

/// Tickets `first, first + step, ...`, `count` of them, from one server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// The first ticket.
    pub first: u64,
    /// The distance between tickets: the server's increment.
    pub step: u64,
    /// How many.
    pub count: u64,
}

struct Server {
    /// Set for a plain Redis server that hands out segments with `INCRBY`.
    segment: Option<Segment>,
    addr: String,
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    down_until: Mutex<Option<Instant>>,
}

/// Tickets from several servers, round robin.
pub struct RoundRobin {
    /// Swapped whole by [`RoundRobin::set_servers`]; a call holds its own reference.
    servers: std::sync::RwLock<Arc<Vec<Server>>>,
    next: AtomicUsize,
    password: Option<String>,
    /// Plain Redis servers holding segments ([`RoundRobin::segments`]).
    segments: bool,
}

impl RoundRobin {
    /// A client for `addrs` (`host:port`), connecting lazily.
    ///
    /// # Errors
    /// When `addrs` is empty or an address is malformed.
    pub fn new(addrs: &[String]) -> Result<Self> {
        RoundRobin::with_password(addrs, None)
    }

    /// A client for `addrs` that AUTHs with `password` (servers started with a password).
    ///
    /// # Errors
    /// When `addrs` is empty or an address is malformed.
    pub fn with_password(addrs: &[String], password: Option<String>) -> Result<Self> {
        Ok(RoundRobin {
            servers: std::sync::RwLock::new(Arc::new(connect(addrs, password.as_deref(), false)?)),
            next: AtomicUsize::new(0),
            password,
            segments: false,
        })
    }

    /// A client that takes tickets from plain Redis servers (a managed service, or any Redis
    /// without a ticket server): Leaf's segments on Redis. Server `i` of `k` (in the order
    /// given, from 1) hands out `i, i + k, i + 2k, ...`, as a ticket server with offset `i` and
    /// increment `k` does, counting in the key `idgen:tickets:<sequence>` with `INCRBY`. Each
    /// server records its place (`idgen:tickets-layout`, `"<offset> <increment>"`) on first
    /// use and refuses a client that gives it another: a reordered, grown or shrunk list
    /// would repeat tickets.
    ///
    /// Tickets are as durable as the server keeps its writes: an `INCRBY` lost in a restart
    /// or a failover (without `appendfsync always`, or with asynchronous replication) hands
    /// its tickets out again.
    ///
    /// # Errors
    /// When `addrs` is empty or an address is malformed.
    pub fn segments(addrs: &[String], password: Option<String>) -> Result<Self> {
        Ok(RoundRobin {
            servers: std::sync::RwLock::new(Arc::new(connect(addrs, password.as_deref(), true)?)),
            next: AtomicUsize::new(0),
            password,
            segments: true,
        })
    }

    /// Follows a new set of servers (after the set grew into a new generation): calls started
    /// from now on use `addrs`.
    ///
    /// # Errors
    /// When `addrs` is empty or an address is malformed; the old set stays then.
    pub fn set_servers(&self, addrs: &[String]) -> Result<()> {
        let servers = Arc::new(connect(addrs, self.password.as_deref(), self.segments)?);
        *self.servers.write().unwrap_or_else(|p| p.into_inner()) = servers;
        Ok(())
    }

    fn current(&self) -> Arc<Vec<Server>> {
        Arc::clone(&self.servers.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The next ticket of `sequence`.
    ///
    /// # Errors
    /// When every server failed; the message lists each one's error.
    pub async fn next(&self, sequence: &str) -> Result<u64> {
        let tickets = self.call(sequence, Ask::One).await?;
        tickets
            .first()
            .copied()
            .ok_or_else(|| ClientError::BadReply("an empty reply".into()))
    }

    /// `count` tickets of `sequence`, all from one server, increasing.
    ///
    /// # Errors
    /// When every server failed.
    pub async fn next_many(&self, sequence: &str, count: u64) -> Result<Vec<u64>> {
        self.call(sequence, Ask::Many(count)).await
    }

    /// `count` tickets of `sequence` from one server as a range (`TICKET.RANGE`): a reply
    /// that does not grow with the count.
    ///
    /// # Errors
    /// When every server failed.
    pub async fn range(&self, sequence: &str, count: u64) -> Result<Range> {
        match self.call(sequence, Ask::Range(count)).await?[..] {
            [first, step, count] => Ok(Range { first, step, count }),
            ref other => Err(ClientError::BadReply(format!(
                "TICKET.RANGE replied {other:?}"
            ))),
        }
    }

    /// The servers skipped for now because they could not be reached (I/O error or timeout).
    pub fn down_servers(&self) -> Vec<String> {
        self.current()
            .iter()
            .filter(|s| s.is_down())
            .map(|s| s.addr.clone())
            .collect()
    }

    async fn call(&self, sequence: &str, ask: Ask) -> Result<Vec<u64>> {
        let servers = self.current();
        let n = servers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut errors = Vec::new();
        // First the servers not marked down, in turn; then, if all failed, the skipped ones.
        for probe_down in [false, true] {
            for i in 0..n {
                let server = &servers[(start + i) % n];
                if server.is_down() != probe_down {
                    continue;
                }
                match tokio::time::timeout(CALL_TIMEOUT, server.call(sequence, ask)).await {
                    Ok(Ok(tickets)) => {
                        server.mark_up();
                        return Ok(tickets);
                    }
                    // An error reply (a bad name, a full disk) is an answer: the server is up.
                    // The next one may still serve the call.
                    Ok(Err(e)) if !is_unreachable(&e) => {
                        errors.push(format!("{}: {e}", server.addr));
                        continue;
                    }
                    Ok(Err(e)) => errors.push(format!("{}: {e}", server.addr)),
                    Err(_) => errors.push(format!("{}: timed out", server.addr)),
                }
                server.mark_down().await;
            }
        }
        Err(ClientError::AllFailed(errors))
    }
}

/// Whether `e` says the server could not be reached (not an error reply from it).
fn is_unreachable(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout()
}

impl Server {
    fn is_down(&self) -> bool {
        let down = self.down_until.lock().unwrap_or_else(|p| p.into_inner());
        down.is_some_and(|until| Instant::now() < until)
    }

    fn mark_up(&self) {
        *self.down_until.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn mark_down(&self) {
        *self.down_until.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Instant::now() + RETRY_AFTER);
        *self.connection.lock().await = None;
    }

    async fn call(&self, sequence: &str, ask: Ask) -> redis::RedisResult<Vec<u64>> {
        let mut connection = {
            let mut slot = self.connection.lock().await;
            match slot.as_ref() {
                Some(connection) => connection.clone(),
                None => {
                    let mut connection = self.client.get_multiplexed_async_connection().await?;
                    if let Some(segment) = &self.segment {
                        segment.claim(&mut connection).await?;
                    }
                    *slot = Some(connection.clone());
                    connection
                }
            }
        };
        if let Some(segment) = &self.segment {
            return segment.call(&mut connection, sequence, ask).await;
        }
        let mut cmd = redis::cmd(if matches!(ask, Ask::Range(_)) {
            "TICKET.RANGE"
        } else {
            "TICKET.NEXT"
        });
        cmd.arg(sequence);
        match ask {
            Ask::Many(n) | Ask::Range(n) => {
                cmd.arg("COUNT").arg(n).query_async(&mut connection).await
            }
            Ask::One => cmd
                .query_async::<u64>(&mut connection)
                .await
                .map(|t| vec![t]),
        }
    }
}

/// A plain Redis server's place among `increment` servers: it hands out `offset`,
/// `offset + increment`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    offset: u64,
    increment: u64,
}

/// The most tickets one call lists, and one range holds, as a ticket server allows them.
const SEGMENT_MAX_COUNT: u64 = 100_000;
const SEGMENT_MAX_RANGE: u64 = 100_000_000;

/// The key where a plain Redis server records its place.
const LAYOUT_KEY: &str = "idgen:tickets-layout";

impl Segment {
    fn of(position: usize, servers: usize) -> Segment {
        Segment {
            offset: position as u64 + 1,
            increment: servers as u64,
        }
    }

    fn text(&self) -> String {
        format!("{} {}", self.offset, self.increment)
    }

    /// Records this place on the server, or checks it against the one recorded.
    async fn claim(&self, connection: &mut MultiplexedConnection) -> redis::RedisResult<()> {
        let before: Option<String> = redis::cmd("SET")
            .arg(LAYOUT_KEY)
            .arg(self.text())
            .arg("NX")
            .arg("GET")
            .query_async(connection)
            .await?;
        match before {
            Some(recorded) if recorded != self.text() => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "another place",
                format!(
                    "this server holds tickets as offset/increment {recorded:?}, and this client \
                     gives it {:?}: the list of servers changed order or size, which would \
                     repeat tickets; give the servers in their first order",
                    self.text()
                ),
            ))),
            _ => Ok(()),
        }
    }

    /// `ask` as one `INCRBY` of the sequence's counter: the segment's tickets.
    async fn call(
        &self,
        connection: &mut MultiplexedConnection,
        sequence: &str,
        ask: Ask,
    ) -> redis::RedisResult<Vec<u64>> {
        // The ticket server's bounds: a list of tickets is built here, a range is not.
        let (count, most) = match ask {
            Ask::One => (1, 1),
            Ask::Many(n) => (n, SEGMENT_MAX_COUNT),
            Ask::Range(n) => (n, SEGMENT_MAX_RANGE),
        };
        if !(1..=most).contains(&count) {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "bad count",
                format!("COUNT must be between 1 and {most}, got {count}"),
            )));
        }
        let counted: u64 = redis::cmd("INCRBY")
            .arg(format!("idgen:tickets:{sequence}"))
            .arg(count)
            .query_async(connection)
            .await?;
        let range = self.range(counted, count).ok_or_else(|| {
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "spent",
                format!("the counter of {sequence:?} is at {counted}: its tickets would pass 2^64"),
            ))
        })?;
        Ok(match ask {
            Ask::Range(_) => vec![range.first, range.step, range.count],
            _ => (0..range.count)
                .map(|i| range.first + i * range.step)
                .collect(),
        })
    }

    /// The tickets of the `count` counts up to `counted`, or None past 2^64.
    fn range(&self, counted: u64, count: u64) -> Option<Range> {
        let before = counted.checked_sub(count).filter(|_| count > 0)?;
        let first = before
            .checked_mul(self.increment)?
            .checked_add(self.offset)?;
        (count - 1)
            .checked_mul(self.increment)?
            .checked_add(first)?;
        Some(Range {
            first,
            step: self.increment,
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_of_k_servers_interleave_like_ticket_servers() {
        let (a, b, c) = (Segment::of(0, 3), Segment::of(1, 3), Segment::of(2, 3));
        assert_eq!(a.range(1, 1).unwrap().first, 1);
        assert_eq!(b.range(1, 1).unwrap().first, 2);
        assert_eq!(c.range(1, 1).unwrap().first, 3);
        // The second block of 4 from server b: counts 5..=8, tickets 14, 17, 20, 23.
        let r = b.range(8, 4).unwrap();
        assert_eq!((r.first, r.step, r.count), (14, 3, 4));
        let mut all: Vec<u64> = Vec::new();
        for s in [a, b, c] {
            for block in [(2, 2), (5, 3), (6, 1)] {
                let r = s.range(block.0, block.1).unwrap();
                all.extend((0..r.count).map(|i| r.first + i * r.step));
            }
        }
        all.sort_unstable();
        assert_eq!(all, (1..=18).collect::<Vec<_>>(), "every ticket once");
        let alone = Segment::of(0, 1);
        assert_eq!(alone.range(u64::MAX, 1).unwrap().first, u64::MAX);
        assert_eq!(b.range(u64::MAX, 1), None, "past 2^64 is refused");
        assert_eq!(a.range(3, 4), None);
    }
}

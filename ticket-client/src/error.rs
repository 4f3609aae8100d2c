//! Why a client call got no tickets.

use std::time::Duration;

/// Why a round-robin or prefetching client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The client was given no servers.
    #[error("no ticket servers given")]
    NoServers,
    /// A server address the `redis` crate cannot use.
    #[error("bad ticket server address {addr}: {source}")]
    BadAddress {
        addr: String,
        source: redis::RedisError,
    },
    /// A server answered with a reply of another shape.
    #[error("{0}")]
    BadReply(String),
    /// Every server failed this call: each one's error.
    #[error("every ticket server failed: {}", .0.join("; "))]
    AllFailed(Vec<String>),
    /// A server did not answer in time.
    #[error("{addr} did not answer within {after:?}")]
    Timeout { addr: String, after: Duration },
    /// A server's answer was an error, or the connection failed.
    #[error("no answer from {addr}: {source}")]
    Redis {
        addr: String,
        source: redis::RedisError,
    },
    /// The prefetching client had no block in time.
    #[error("no tickets within {wait:?}: {why}")]
    NoBlock { wait: Duration, why: String },
}

/// A client call's result.
pub type Result<T> = std::result::Result<T, ClientError>;

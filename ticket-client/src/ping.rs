//! A health check: does a ticket server answer? For container health checks, where no
//! redis-cli may be installed (`ticket-server ping`).

use std::time::Duration;

use crate::error::{ClientError, Result};

/// How long a health check waits for the connection and the reply.
pub const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Sends PING to the server at `addr` (host:port) and returns its answer: "PONG", or
/// "NOAUTH" from a server that wants a password (it is up, and says so without one).
pub async fn ping(addr: &str) -> Result<&'static str> {
    let client = redis::Client::open(format!("redis://{addr}/")).map_err(|source| {
        ClientError::BadAddress {
            addr: addr.to_string(),
            source,
        }
    })?;
    let reply = tokio::time::timeout(PING_TIMEOUT, async {
        let mut con = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut con).await
    })
    .await
    .map_err(|_| ClientError::Timeout {
        addr: addr.to_string(),
        after: PING_TIMEOUT,
    })?;
    match reply {
        Ok(pong) if pong == "PONG" => Ok("PONG"),
        Ok(other) => Err(ClientError::BadReply(format!(
            "{addr} answered PING with {other:?}"
        ))),
        Err(e) if e.code() == Some("NOAUTH") => Ok("NOAUTH"),
        Err(source) => Err(ClientError::Redis {
            addr: addr.to_string(),
            source,
        }),
    }
}

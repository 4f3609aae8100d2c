//! Clients of the ticket servers (`ticket-server`): [`RoundRobin`], one handle per server with
//! an atomic counter that picks the next, and [`prefetch::Prefetch`], a pool of tickets fetched
//! ahead in blocks sized to the rate ([`sizing`]).
//!
//! ```no_run
//! # async fn demo() -> ticket_client::Result<()> {
//! let servers = ["127.0.0.1:7001".to_string(), "127.0.0.1:7002".to_string()];
//! let tickets = ticket_client::RoundRobin::new(&servers)?;
//! let ticket = tickets.next("orders").await?;
//! # Ok(()) }
//! ```
//!
//! A server that errors or times out is skipped and probed again after [`RETRY_AFTER`]; a call
//! fails only when every server has failed it.

mod error;
pub mod ping;
pub mod prefetch;
pub mod prefetch_metrics;
mod round_robin;
pub mod sizing;

pub use error::{ClientError, Result};
pub use round_robin::{Range, RoundRobin, CALL_TIMEOUT, RETRY_AFTER};

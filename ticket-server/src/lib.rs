//! Flickr-style ticket servers, without MySQL: server `k` of `N` hands out `k, k+N, k+2N, ...`
//! (with N = 2, one server is odd and the other even), durably, over RESP, so that redis-cli,
//! redis-benchmark and any Redis client work unchanged. The clients (round robin over several
//! servers, prefetching) are the `ticket-client` crate; `ticket-server next` uses it.
//!
//! ```text
//! ticket-server serve --listen 127.0.0.1:7001 --offset 1 --increment 2 --data-dir /var/lib/t1 --init
//! ticket-server serve --listen 127.0.0.1:7002 --offset 2 --increment 2 --data-dir /var/lib/t2 --init
//! ticket-server next --servers 127.0.0.1:7001,127.0.0.1:7002 --count 4
//! ```
//!
//! Map: [`config`] (validated flags), [`server::run`] (accept loop, shutdown), [`connection`]
//! (one client), [`deadline`] (incomplete requests), [`frame`] (RESP), [`cmd`] (one file per
//! command, [`cmd::CmdError`]), [`store`] (durable sequences, the `STORE` marker).

pub mod cmd;
pub mod config;
pub mod connection;
pub mod deadline;
pub mod frame;
pub mod metrics;
pub mod metrics_server;
pub mod server;
pub mod shared;
pub mod store;
pub mod tls;

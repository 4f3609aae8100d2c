//! The harness for integration tests: real `redis-server` processes with the module loaded, on
//! free loopback ports, stopped when their guard drops; ticket servers ([`ticket`]). The Docker
//! images' harness is the container suite's own (`tests/containers/docker.rs`), so nothing else
//! that uses this crate compiles testcontainers.
//!
//! The module is `target/release/libredis_idgen.so` (override with `IDGEN_MODULE`); `make test`
//! builds it first. The server is `redis-server`, or the program `IDGEN_SERVER` names
//! (`valkey-server`: `make test` runs the module's suites on both). A missing module or server
//! fails the test with a message saying so.

pub use redis;

pub mod backend;
pub mod burst;
mod checkout;
pub mod clock;
pub mod cluster;
pub mod comebacks;
mod connection;
mod dirs;
pub mod docs;
pub mod ext4;
pub mod file_losses;
pub mod lease;
pub mod library;
pub mod losses;
pub mod needs;
pub mod partition;
pub mod places;
mod ports;
mod python;
mod replies;
pub mod sentinel;
mod server;
pub mod ticket;
pub mod tmpfs;
mod waiting;
pub mod witness_file;
pub mod writefault;

pub use checkout::{
    compiled, demoter, lease_worker_binary, module_path, newer_source, release_artifact,
    try_compiled, workspace_root,
};
pub use connection::Connection;
pub use dirs::{data_dir, TempDir};
pub use ports::{free_port, TEST_PORTS};
pub use python::run_python;
pub use replies::{
    cmd, decode, error_of, error_text, modules_listed, pairs, quotes, sample, try_when_caught_up,
    when_caught_up, Decoded,
};
pub use server::{
    library_server_program, server_program, KillOnDrop, Options, Server, LIBRARY_SERVER_VAR,
    SERVER_VAR,
};
pub use waiting::{now_ms, wait_for};

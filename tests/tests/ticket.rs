//! The ticket server's suites: one test binary, each suite a file of its own beside this one
//! and a module here (`cargo test --test ticket ticket_store::` runs one).

#[path = "ticket_hostile.rs"]
mod ticket_hostile;
#[path = "ticket_prefetch.rs"]
mod ticket_prefetch;
#[path = "ticket_protocol.rs"]
mod ticket_protocol;
#[path = "ticket_sealed.rs"]
mod ticket_sealed;
#[path = "ticket_segments.rs"]
mod ticket_segments;
#[path = "ticket_server.rs"]
mod ticket_server;
#[path = "ticket_store.rs"]
mod ticket_store;
#[path = "ticket_tls.rs"]
mod ticket_tls;
#[path = "ticket_witness_matrix.rs"]
mod ticket_witness_matrix;

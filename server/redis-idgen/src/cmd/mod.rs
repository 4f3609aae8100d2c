//! The command handlers, one file per command family: each parses its arguments, reads the
//! clock, calls the feature folders with the time and their key interfaces, and replies.
//! Registered in `lib.rs`; so is `arrival.rs`, the handler of the keyspace events that bring
//! state here from another node.

pub mod arrival;
pub mod dateseq;
pub mod durable_reply;
pub mod form;
pub mod identity;
pub mod lease_reply;
pub mod seal;
pub mod snowflake;
pub mod time128;
pub mod workerid;

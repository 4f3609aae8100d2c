//! The command handlers, one file per command family: each parses its arguments, asks the
//! feature folders' state, and replies. Registered in `lib.rs`.

pub mod dateseq;
pub mod durable_reply;
pub mod form;
pub mod lease_reply;
pub mod seal;
pub mod snowflake;
pub mod time128;
pub mod workerid;

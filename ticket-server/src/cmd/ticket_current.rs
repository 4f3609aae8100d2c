//! `TICKET.CURRENT [sequence]`: the last ticket this server handed out of a sequence, or nil.

use bytes::Bytes;

use super::ticket_next::DEFAULT_SEQUENCE;
use super::{wrong_arity, CmdResult};
use crate::frame::Reply;
use crate::shared::Shared;
use crate::store::StoreError;

pub fn run(args: &[Bytes], shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
    let name = match args.len() {
        1 => DEFAULT_SEQUENCE,
        2 => std::str::from_utf8(&args[1]).map_err(|_| StoreError::BadName)?,
        _ => return Err(wrong_arity(args)),
    };
    // Only a sequence that exists: a read creates nothing.
    let seq = shared.store.existing(name)?;
    match seq.and_then(|s| s.current()) {
        Some(ticket) => reply.integer(ticket as i64),
        None => reply.null(),
    }
    Ok(())
}

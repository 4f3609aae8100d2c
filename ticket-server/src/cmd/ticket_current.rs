//! `TICKET.CURRENT [sequence]`: the last ticket this server handed out of a sequence, or nil.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Command};
use crate::frame::Reply;
use crate::shared::Shared;
use crate::store::StoreError;
use crate::store::DEFAULT_SEQUENCE;

/// `TICKET.CURRENT`, parsed.
#[derive(Debug)]
pub struct TicketCurrent {
    sequence: Bytes,
}

impl TicketCurrent {
    pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
        let sequence = match args.len() {
            1 => Bytes::from_static(DEFAULT_SEQUENCE.as_bytes()),
            2 => args[1].clone(),
            _ => return Err(wrong_arity(args)),
        };
        Ok(Command::TicketCurrent(TicketCurrent { sequence }))
    }

    pub fn apply(self, shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
        let name = std::str::from_utf8(&self.sequence).map_err(|_| StoreError::BadName)?;
        // Only a sequence that exists: a read creates nothing.
        let seq = shared.store.existing(name)?;
        match seq.and_then(|s| s.current()) {
            Some(ticket) => reply.integer(ticket as i64),
            None => reply.null(),
        }
        Ok(())
    }
}

//! `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`: transactions as Redis runs them, which is
//! what redis-py's default `pipeline()` sends. A ticket server has no keys, so a watched key is
//! never modified and EXEC never aborts for WATCH.

use super::{CmdError, CmdResult, Command, Session};
use crate::frame::Reply;

/// Most commands one transaction queues.
pub const MAX_QUEUED: usize = 100_000;
/// Most bytes of arguments one transaction queues: a client that never sends EXEC must not make
/// the server hold unbounded memory (each queued command keeps its request's bytes).
pub const MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Queued {
    /// The queued commands, applied in order by EXEC; one that failed to parse answers with
    /// its error in its place.
    pub commands: Vec<Result<Command, CmdError>>,
    /// Bytes of arguments of the queued commands.
    bytes: usize,
    /// An unknown command, a wrong arity or a transaction too large: EXEC discards it.
    pub refused: bool,
}

impl Queued {
    /// Queues `command`, whose request's arguments take `bytes`; past [`MAX_QUEUED`] or
    /// [`MAX_QUEUED_BYTES`] nothing more is kept and the transaction is doomed.
    pub fn push(&mut self, command: Result<Command, CmdError>, bytes: usize) -> CmdResult {
        if self.commands.len() >= MAX_QUEUED || self.bytes + bytes > MAX_QUEUED_BYTES {
            self.refused = true;
            return Err(CmdError::Refused(
                "transaction too large (at most 100000 commands and 16 MB of arguments); it will be discarded",
            ));
        }
        self.bytes += bytes;
        self.commands.push(command);
        Ok(())
    }
}

/// `MULTI`.
pub fn multi(session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    if session.queued.is_some() {
        return Err(CmdError::Refused("MULTI calls can not be nested"));
    }
    session.queued = Some(Queued::default());
    reply.simple("OK");
    Ok(())
}

/// `DISCARD`.
pub fn discard(session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    session
        .queued
        .take()
        .ok_or(CmdError::Refused("DISCARD without MULTI"))?;
    reply.simple("OK");
    Ok(())
}

/// `EXEC`: the queued commands to apply, once the array header for their replies is written.
pub fn exec(
    session: &mut Session,
    reply: &mut Reply<'_>,
) -> Result<Vec<Result<Command, CmdError>>, CmdError> {
    let queued = session
        .queued
        .take()
        .ok_or(CmdError::Refused("EXEC without MULTI"))?;
    if queued.refused {
        return Err(CmdError::ExecAbort);
    }
    reply.array(queued.commands.len());
    Ok(queued.commands)
}

/// `WATCH key [key ...]`: accepted outside a transaction; nothing here can change a key.
pub fn watch(session: &Session, reply: &mut Reply<'_>) -> CmdResult {
    if session.queued.is_some() {
        return Err(CmdError::Refused("WATCH inside MULTI is not allowed"));
    }
    reply.simple("OK");
    Ok(())
}

/// `UNWATCH`.
pub fn unwatch(reply: &mut Reply<'_>) -> CmdResult {
    reply.simple("OK");
    Ok(())
}

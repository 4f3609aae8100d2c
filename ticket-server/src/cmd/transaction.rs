//! `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`: transactions as Redis runs them, which is
//! what redis-py's default `pipeline()` sends. A ticket server has no keys, so a watched key is
//! never modified and EXEC never aborts for WATCH.

use super::{CmdError, CmdResult, Command, Session};
use crate::frame::Reply;

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Queued {
    /// The queued commands, applied in order by EXEC; one that failed to parse answers with
    /// its error in its place.
    pub commands: Vec<Result<Command, CmdError>>,
    /// An unknown command or a wrong arity while queuing: EXEC discards the transaction.
    pub refused: bool,
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

//! `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`: transactions as Redis runs them, which is
//! what redis-py's default `pipeline()` sends. A ticket server has no keys, so a watched key is
//! never modified and EXEC never aborts for WATCH.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Session};
use crate::frame::Reply;

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Queued {
    /// The queued requests, run in order by EXEC.
    pub requests: Vec<Vec<Bytes>>,
    /// A request was refused while queuing: EXEC discards the transaction.
    pub refused: bool,
}

/// `MULTI`.
pub fn multi(args: &[Bytes], session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    if args.len() != 1 {
        return Err(wrong_arity(args));
    }
    if session.queued.is_some() {
        return Err(CmdError::Refused("MULTI calls can not be nested"));
    }
    session.queued = Some(Queued::default());
    reply.simple("OK");
    Ok(())
}

/// `DISCARD`.
pub fn discard(args: &[Bytes], session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    if args.len() != 1 {
        return Err(wrong_arity(args));
    }
    session
        .queued
        .take()
        .ok_or(CmdError::Refused("DISCARD without MULTI"))?;
    reply.simple("OK");
    Ok(())
}

/// `EXEC`: the queued requests to run, once the array header is written.
pub fn exec(
    args: &[Bytes],
    session: &mut Session,
    reply: &mut Reply<'_>,
) -> Result<Vec<Vec<Bytes>>, CmdError> {
    if args.len() != 1 {
        return Err(wrong_arity(args));
    }
    let queued = session
        .queued
        .take()
        .ok_or(CmdError::Refused("EXEC without MULTI"))?;
    if queued.refused {
        return Err(CmdError::ExecAbort);
    }
    reply.array(queued.requests.len());
    Ok(queued.requests)
}

/// `WATCH key [key ...]` and `UNWATCH`: accepted; nothing here can change a key.
pub fn watch(args: &[Bytes], session: &Session, reply: &mut Reply<'_>) -> CmdResult {
    let unwatch = args[0].eq_ignore_ascii_case(b"UNWATCH");
    if (unwatch && args.len() != 1) || (!unwatch && args.len() < 2) {
        return Err(wrong_arity(args));
    }
    if !unwatch && session.queued.is_some() {
        return Err(CmdError::Refused("WATCH inside MULTI is not allowed"));
    }
    reply.simple("OK");
    Ok(())
}

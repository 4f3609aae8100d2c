//! `AUTH [username] password`: against `--requirepass`, for the `default` user.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Session};
use crate::frame::Reply;
use crate::shared::Shared;

pub fn run(
    args: &[Bytes],
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) -> CmdResult {
    let (user, password) = match args.len() {
        2 => (&b"default"[..], &args[1][..]),
        3 => (&args[1][..], &args[2][..]),
        _ => return Err(wrong_arity(args)),
    };
    check(shared, session, user, password)?;
    reply.simple("OK");
    Ok(())
}

/// Checks a user and password; shared with HELLO's AUTH option.
pub fn check(shared: &Shared, session: &mut Session, user: &[u8], password: &[u8]) -> CmdResult {
    let Some(expected) = &shared.config.requirepass else {
        return Err(CmdError::Refused(
            "AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    };
    if user != b"default" || password != expected.as_bytes() {
        return Err(CmdError::WrongPass);
    }
    session.authenticated = true;
    Ok(())
}

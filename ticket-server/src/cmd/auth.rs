//! `AUTH [username] password`: against `--requirepass`, for the `default` user.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Command, Session};
use crate::frame::Reply;
use crate::shared::Shared;

/// `AUTH`, parsed.
#[derive(Debug)]
pub struct Auth {
    user: Bytes,
    password: Bytes,
}

impl Auth {
    pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
        let (user, password) = match args.len() {
            2 => (Bytes::from_static(b"default"), args[1].clone()),
            3 => (args[1].clone(), args[2].clone()),
            _ => return Err(wrong_arity(args)),
        };
        Ok(Command::Auth(Auth { user, password }))
    }

    pub fn apply(self, session: &mut Session, shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
        check(shared, session, &self.user, &self.password)?;
        reply.simple("OK");
        Ok(())
    }
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

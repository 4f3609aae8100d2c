//! `PING [message]`: PONG, or the message.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Command};
use crate::frame::Reply;

pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
    match args.len() {
        1 => Ok(Command::Ping(None)),
        2 => Ok(Command::Ping(Some(args[1].clone()))),
        _ => Err(wrong_arity(args)),
    }
}

pub fn apply(message: Option<Bytes>, reply: &mut Reply<'_>) -> CmdResult {
    match message {
        None => reply.simple("PONG"),
        Some(message) => reply.bulk(&message),
    }
    Ok(())
}

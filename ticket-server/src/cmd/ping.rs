//! `PING [message]`: PONG, or the message.

use bytes::Bytes;

use super::{wrong_arity, CmdResult};
use crate::frame::Reply;

pub fn run(args: &[Bytes], reply: &mut Reply<'_>) -> CmdResult {
    match args.len() {
        1 => reply.simple("PONG"),
        2 => reply.bulk(&args[1]),
        _ => return Err(wrong_arity(args)),
    }
    Ok(())
}

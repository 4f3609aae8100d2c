//! `ECHO message`.

use bytes::Bytes;

use super::{wrong_arity, CmdResult};
use crate::frame::Reply;

pub fn run(args: &[Bytes], reply: &mut Reply<'_>) -> CmdResult {
    if args.len() != 2 {
        return Err(wrong_arity(args));
    }
    reply.bulk(&args[1]);
    Ok(())
}

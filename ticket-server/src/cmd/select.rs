//! `SELECT 0`: there is one database; clients that select it explicitly get OK.

use bytes::Bytes;

use super::{parse_u64, wrong_arity, CmdError, CmdResult};
use crate::frame::Reply;

pub fn run(args: &[Bytes], reply: &mut Reply<'_>) -> CmdResult {
    if args.len() != 2 {
        return Err(wrong_arity(args));
    }
    if parse_u64(&args[1])? != 0 {
        return Err(CmdError::Refused("DB index is out of range"));
    }
    reply.simple("OK");
    Ok(())
}

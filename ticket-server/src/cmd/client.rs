//! `CLIENT SETNAME|GETNAME|SETINFO|ID|NO-EVICT|NO-TOUCH`: what client libraries send on connect.

use bytes::Bytes;

use super::{wrong_arity, CmdResult, Session};
use crate::frame::Reply;

pub fn run(args: &[Bytes], session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    let sub = args
        .get(1)
        .map(|s| s.to_ascii_uppercase())
        .ok_or_else(|| wrong_arity(args))?;
    match (sub.as_slice(), args.len()) {
        (b"SETNAME", 3) => {
            if args[2].iter().any(|&b| b <= b' ' || b > b'~') {
                return Err(
                    "ERR Client names cannot contain spaces, newlines or special characters."
                        .into(),
                );
            }
            session.name = (!args[2].is_empty()).then(|| args[2].clone());
            reply.simple("OK");
        }
        (b"GETNAME", 2) => match &session.name {
            Some(name) => reply.bulk(name),
            None => reply.null(),
        },
        (b"ID", 2) => reply.integer(session.id as i64),
        (b"SETINFO", 4) | (b"NO-EVICT", 3) | (b"NO-TOUCH", 3) => reply.simple("OK"),
        (b"SETNAME" | b"GETNAME" | b"ID" | b"SETINFO" | b"NO-EVICT" | b"NO-TOUCH", _) => {
            return Err(wrong_arity(args))
        }
        _ => {
            return Err(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&args[1])
            ))
        }
    }
    Ok(())
}

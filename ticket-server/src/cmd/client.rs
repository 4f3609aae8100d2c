//! `CLIENT SETNAME|GETNAME|SETINFO|ID|NO-EVICT|NO-TOUCH|INFO|LIST`: what client libraries send on
//! connect and what tools read. The server keeps no table of connections: `CLIENT LIST` shows the
//! calling one only.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Session};
use crate::frame::Reply;

pub fn run(args: &[Bytes], session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    let sub = args
        .get(1)
        .map(|s| s.to_ascii_uppercase())
        .ok_or_else(|| wrong_arity(args))?;
    match (sub.as_slice(), args.len()) {
        (b"SETNAME", 3) => {
            if args[2].iter().any(|&b| b <= b' ' || b > b'~') {
                return Err(CmdError::Refused(
                    "Client names cannot contain spaces, newlines or special characters.",
                ));
            }
            session.name = (!args[2].is_empty()).then(|| args[2].clone());
            reply.simple("OK");
        }
        (b"GETNAME", 2) => match &session.name {
            Some(name) => reply.bulk(name),
            None => reply.null(),
        },
        (b"ID", 2) => reply.integer(session.id as i64),
        (b"INFO", 2) | (b"LIST", 2) => {
            let name = session
                .name
                .as_ref()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .unwrap_or_default();
            let multi = session
                .queued
                .as_ref()
                .map_or(-1, |q| q.requests.len() as i64);
            let resp = if reply.resp3 { 3 } else { 2 };
            let line = format!(
                "id={} name={name} db=0 multi={multi} resp={resp} cmd=client|{}\n",
                session.id,
                String::from_utf8_lossy(&sub).to_lowercase()
            );
            reply.bulk(line.as_bytes());
        }
        (b"SETINFO", 4) | (b"NO-EVICT", 3) | (b"NO-TOUCH", 3) => reply.simple("OK"),
        (b"SETNAME" | b"GETNAME" | b"ID" | b"SETINFO" | b"NO-EVICT" | b"NO-TOUCH" | b"INFO", _) => {
            return Err(wrong_arity(args))
        }
        _ => {
            return Err(CmdError::UnknownSubcommand {
                command: "CLIENT",
                sub: String::from_utf8_lossy(&args[1]).into_owned(),
            })
        }
    }
    Ok(())
}

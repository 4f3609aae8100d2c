//! `CLIENT SETNAME|GETNAME|SETINFO|ID|NO-EVICT|NO-TOUCH|INFO|LIST`: what client libraries send on
//! connect and what tools read. The server keeps no table of connections: `CLIENT LIST` shows the
//! calling one only.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Command, Session};
use crate::frame::Reply;

/// A `CLIENT` subcommand, parsed.
#[derive(Debug)]
pub enum Client {
    /// A name to set; empty clears it.
    SetName(Bytes),
    GetName,
    Id,
    /// `INFO` or `LIST` (named in the reply's `cmd=`).
    Describe(&'static str),
    /// `SETINFO`, `NO-EVICT`, `NO-TOUCH`: accepted, nothing to change here.
    Accept,
}

impl Client {
    pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
        let sub = args[1].to_ascii_uppercase();
        let client = match (sub.as_slice(), args.len()) {
            (b"SETNAME", 3) => {
                if args[2].iter().any(|&b| b <= b' ' || b > b'~') {
                    return Err(CmdError::Refused(
                        "Client names cannot contain spaces, newlines or special characters.",
                    ));
                }
                Client::SetName(args[2].clone())
            }
            (b"GETNAME", 2) => Client::GetName,
            (b"ID", 2) => Client::Id,
            (b"INFO", 2) => Client::Describe("info"),
            (b"LIST", 2) => Client::Describe("list"),
            (b"SETINFO", 4) | (b"NO-EVICT", 3) | (b"NO-TOUCH", 3) => Client::Accept,
            (
                b"SETNAME" | b"GETNAME" | b"ID" | b"SETINFO" | b"NO-EVICT" | b"NO-TOUCH" | b"INFO",
                _,
            ) => return Err(wrong_arity(args)),
            _ => {
                return Err(CmdError::UnknownSubcommand {
                    command: "CLIENT",
                    sub: String::from_utf8_lossy(&args[1]).into_owned(),
                })
            }
        };
        Ok(Command::Client(client))
    }

    pub fn apply(self, session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
        match self {
            Client::SetName(name) => {
                session.name = (!name.is_empty()).then_some(name);
                reply.simple("OK");
            }
            Client::GetName => match &session.name {
                Some(name) => reply.bulk(name),
                None => reply.null(),
            },
            Client::Id => reply.integer(session.id as i64),
            Client::Describe(sub) => {
                let name = session
                    .name
                    .as_ref()
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_default();
                let multi = session
                    .queued
                    .as_ref()
                    .map_or(-1, |q| q.commands.len() as i64);
                let resp = if reply.resp3 { 3 } else { 2 };
                let line = format!(
                    "id={} name={name} db=0 multi={multi} resp={resp} cmd=client|{sub}\n",
                    session.id,
                );
                reply.bulk(line.as_bytes());
            }
            Client::Accept => reply.simple("OK"),
        }
        Ok(())
    }
}

//! `HELLO [protover [AUTH username password] [SETNAME name]]`: picks RESP2 or RESP3 and
//! describes the server, as Redis does.

use bytes::Bytes;

use super::{auth, parse_u64, CmdError, CmdResult, Session};
use crate::frame::Reply;
use crate::shared::Shared;

pub fn run(
    args: &[Bytes],
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) -> CmdResult {
    let mut resp3 = session.resp3;
    if let Some(version) = args.get(1) {
        resp3 = match parse_u64(version) {
            Ok(2) => false,
            Ok(3) => true,
            _ => return Err(CmdError::NoProto),
        };
    }
    let mut rest = args.iter().skip(2);
    let mut name = None;
    while let Some(option) = rest.next() {
        if option.eq_ignore_ascii_case(b"AUTH") {
            let (Some(user), Some(password)) = (rest.next(), rest.next()) else {
                return Err(CmdError::Syntax(Some("auth".into())));
            };
            auth::check(shared, session, user, password)?;
        } else if option.eq_ignore_ascii_case(b"SETNAME") {
            name = Some(
                rest.next()
                    .ok_or(CmdError::Syntax(Some("setname".into())))?
                    .clone(),
            );
        } else {
            return Err(CmdError::Syntax(Some(
                String::from_utf8_lossy(option).into_owned(),
            )));
        }
    }
    if !session.authenticated {
        return Err(CmdError::NoAuth(
            "HELLO must be called with the client already authenticated, otherwise the \
                    HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
                    select the RESP protocol version at the same time",
        ));
    }
    if name.is_some() {
        session.name = name;
    }
    session.resp3 = resp3;
    reply.resp3 = resp3;
    reply.map(7);
    reply.bulk(b"server");
    reply.bulk(b"ticket-server");
    reply.bulk(b"version");
    reply.bulk(env!("CARGO_PKG_VERSION").as_bytes());
    reply.bulk(b"proto");
    reply.integer(if resp3 { 3 } else { 2 });
    reply.bulk(b"id");
    reply.integer(session.id as i64);
    reply.bulk(b"mode");
    reply.bulk(b"standalone");
    reply.bulk(b"role");
    reply.bulk(b"master");
    reply.bulk(b"modules");
    reply.array(0);
    Ok(())
}

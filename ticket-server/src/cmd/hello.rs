//! `HELLO [protover [AUTH username password] [SETNAME name]]`: picks RESP2 or RESP3 and
//! describes the server, as Redis does.

use bytes::Bytes;

use super::{auth, parse_u64, CmdError, CmdResult, Command, Session};
use crate::frame::Reply;
use crate::shared::Shared;

/// `HELLO`, parsed.
#[derive(Debug)]
pub struct Hello {
    /// `Some(true)` for RESP3; `None` keeps the connection's protocol.
    resp3: Option<bool>,
    auth: Option<(Bytes, Bytes)>,
    name: Option<Bytes>,
}

impl Hello {
    pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
        let resp3 = match args.get(1).map(|v| parse_u64(v)) {
            None => None,
            Some(Ok(2)) => Some(false),
            Some(Ok(3)) => Some(true),
            Some(_) => return Err(CmdError::NoProto),
        };
        let mut hello = Hello {
            resp3,
            auth: None,
            name: None,
        };
        let mut rest = args.iter().skip(2);
        while let Some(option) = rest.next() {
            if option.eq_ignore_ascii_case(b"AUTH") {
                let (Some(user), Some(password)) = (rest.next(), rest.next()) else {
                    return Err(CmdError::Syntax(Some("auth".into())));
                };
                hello.auth = Some((user.clone(), password.clone()));
            } else if option.eq_ignore_ascii_case(b"SETNAME") {
                let name = rest
                    .next()
                    .ok_or(CmdError::Syntax(Some("setname".into())))?;
                hello.name = Some(name.clone());
            } else {
                return Err(CmdError::Syntax(Some(
                    String::from_utf8_lossy(option).into_owned(),
                )));
            }
        }
        Ok(Command::Hello(hello))
    }

    pub fn apply(self, session: &mut Session, shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
        if let Some((user, password)) = &self.auth {
            auth::check(shared, session, user, password)?;
        }
        if !session.authenticated {
            return Err(CmdError::NoAuth(
                "HELLO must be called with the client already authenticated, otherwise the \
                 HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client \
                 and select the RESP protocol version at the same time",
            ));
        }
        if self.name.is_some() {
            session.name = self.name;
        }
        let resp3 = self.resp3.unwrap_or(session.resp3);
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
}

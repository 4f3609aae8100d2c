//! `ROLE`, `TIME`, `DBSIZE`, `RESET`: what clients and tools ask of any Redis server, answered
//! as a primary with no replicas and no keys would.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{CmdResult, Session};
use crate::frame::Reply;
use crate::shared::Shared;

/// `ROLE`: a primary at replication offset 0 with no replicas.
pub fn role(reply: &mut Reply<'_>) -> CmdResult {
    reply.array(3);
    reply.bulk(b"master");
    reply.integer(0);
    reply.array(0);
    Ok(())
}

/// `TIME`: seconds and microseconds, as two bulk strings.
pub fn time(reply: &mut Reply<'_>) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    reply.array(2);
    reply.bulk(now.as_secs().to_string().as_bytes());
    reply.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}

/// `DBSIZE`: sequences are not keys.
pub fn dbsize(reply: &mut Reply<'_>) -> CmdResult {
    reply.integer(0);
    Ok(())
}

/// `RESET`: the connection as new: RESP2, no name, no transaction, and unauthenticated when a
/// password is set.
pub fn reset(session: &mut Session, shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
    *session = Session {
        id: session.id,
        authenticated: shared.config.requirepass.is_none(),
        ..Session::default()
    };
    reply.resp3 = false;
    reply.simple("RESET");
    Ok(())
}

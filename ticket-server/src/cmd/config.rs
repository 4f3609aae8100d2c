//! `CONFIG GET parameter`: the parameters tools ask about (redis-benchmark: `save`,
//! `appendonly`), answered for this server; others are unknown and give an empty reply, as in
//! Redis. No glob patterns.

use bytes::Bytes;

use super::{wrong_arity, CmdError, CmdResult, Command};
use crate::frame::Reply;
use crate::shared::Shared;

pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
    if !args[1].eq_ignore_ascii_case(b"GET") {
        return Err(CmdError::UnknownSubcommand {
            command: "CONFIG",
            sub: String::from_utf8_lossy(&args[1]).into_owned(),
        });
    }
    if args.len() != 3 {
        return Err(wrong_arity(args));
    }
    Ok(Command::ConfigGet(args[2].clone()))
}

/// The value of one parameter, or an empty map for an unknown one.
pub fn get(parameter: &[u8], shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
    let parameter = parameter.to_ascii_lowercase();
    let c = &shared.config;
    let value: Option<String> = match parameter.as_slice() {
        b"save" => Some(String::new()),
        b"appendonly" => Some("no".into()),
        b"databases" => Some("1".into()),
        b"maxclients" => Some(c.max_clients.to_string()),
        b"timeout" => Some(c.idle_timeout.map_or(0, |t| t.as_secs()).to_string()),
        b"port" => Some(c.listen.port().to_string()),
        b"bind" => Some(c.listen.ip().to_string()),
        b"dir" => Some(c.data_dir.display().to_string()),
        // Not the alphabet: its order is the operator's secret.
        b"sqids-min-length" => Some(c.sqids.min_length().to_string()),
        _ => None,
    };
    match value {
        Some(v) => {
            reply.map(1);
            reply.bulk(&parameter);
            reply.bulk(v.as_bytes());
        }
        None => reply.map(0),
    }
    Ok(())
}

//! `CONFIG GET parameter`: what redis-benchmark asks at start (`save`, `appendonly`); other
//! parameters are unknown and give an empty reply, as in Redis.

use bytes::Bytes;

use super::{wrong_arity, CmdResult};
use crate::frame::Reply;

pub fn run(args: &[Bytes], reply: &mut Reply<'_>) -> CmdResult {
    let sub = args
        .get(1)
        .map(|s| s.to_ascii_uppercase())
        .ok_or_else(|| wrong_arity(args))?;
    if sub != b"GET" {
        return Err(format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(&args[1])
        ));
    }
    if args.len() != 3 {
        return Err(wrong_arity(args));
    }
    let value: Option<&[u8]> = match args[2].to_ascii_lowercase().as_slice() {
        b"save" => Some(b""),
        b"appendonly" => Some(b"no"),
        _ => None,
    };
    match value {
        Some(v) => {
            reply.map(1);
            reply.bulk(&args[2].to_ascii_lowercase());
            reply.bulk(v);
        }
        None => reply.map(0),
    }
    Ok(())
}

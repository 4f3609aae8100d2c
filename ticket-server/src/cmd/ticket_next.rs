//! `TICKET.NEXT [sequence] [COUNT n]`: the next ticket of a sequence (`default` when omitted),
//! or an array of the next `n` (1 to 100000), increasing. `TICKET.RANGE [sequence] COUNT n`: the
//! next `n` (1 to 100000000) as `[first, step, n]`, a reply that does not grow with `n` (for
//! clients that hand tickets out of blocks).

use bytes::Bytes;

use super::{parse_u64, wrong_arity, CmdError, CmdResult};
use crate::frame::Reply;
use crate::shared::Shared;
use crate::store::StoreError;

/// Most tickets one call returns.
pub const MAX_COUNT: u64 = 100_000;
/// Most tickets one TICKET.RANGE takes.
pub const MAX_RANGE: u64 = 100_000_000;

/// The sequence used when none is named.
pub const DEFAULT_SEQUENCE: &str = "default";

pub async fn run(args: &[Bytes], shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
    let range = args[0].eq_ignore_ascii_case(b"TICKET.RANGE");
    let most = if range { MAX_RANGE } else { MAX_COUNT };
    let (sequence, count) = match args.len() {
        1 | 2 if range => return Err(wrong_arity(args)),
        1 => (DEFAULT_SEQUENCE.as_bytes(), None),
        2 => (&args[1][..], None),
        3 | 4 => {
            let (sequence, rest) = if args.len() == 3 {
                (DEFAULT_SEQUENCE.as_bytes(), &args[1..])
            } else {
                (&args[1][..], &args[2..])
            };
            if !rest[0].eq_ignore_ascii_case(b"COUNT") {
                return Err(CmdError::Syntax(None));
            }
            let n = parse_u64(&rest[1])?;
            if !(1..=most).contains(&n) {
                return Err(CmdError::OutOfRange(format!(
                    "COUNT must be between 1 and {most}"
                )));
            }
            (sequence, Some(n))
        }
        _ => return Err(wrong_arity(args)),
    };
    let name = std::str::from_utf8(sequence).map_err(|_| StoreError::BadName)?;
    let seq = shared.store.sequence(name)?;
    let first = seq.take(count.unwrap_or(1)).await?;
    shared
        .issued
        .fetch_add(count.unwrap_or(1), std::sync::atomic::Ordering::Relaxed);
    let step = shared.config.increment;
    match count {
        Some(n) if range => {
            reply.array(3);
            reply.integer(first as i64);
            reply.integer(step as i64);
            reply.integer(n as i64);
        }
        None => reply.integer(first as i64),
        Some(n) => {
            reply.array(n as usize);
            for i in 0..n {
                reply.integer((first + i * step) as i64);
            }
        }
    }
    Ok(())
}

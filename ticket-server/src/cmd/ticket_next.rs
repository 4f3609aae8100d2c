//! `TICKET.NEXT [sequence] [COUNT n] [SQIDS] [SEALED]`: the next ticket of a sequence (`default`
//! when omitted), or an array of the next `n` (1 to 100000), increasing; as Sqids (strings in
//! the server's `--sqids-alphabet`, for showing outside) with SQIDS, and sealed (a keyed
//! permutation that hides the count: `idgen_core::seal`, under `--seal-key-file`) with SEALED,
//! each up to [`MAX_SQIDS`] at a time. These last words may come in either order; a sequence
//! named `sqids` or `sealed` is then named before them: `TICKET.NEXT sqids SQIDS`. `TICKET.RANGE [sequence] COUNT n`: the next `n` (1 to 100000000)
//! as `[first, step, n]`, a reply that does not grow with `n` (for clients that hand tickets
//! out of blocks).

use bytes::Bytes;

use super::{parse_u64, wrong_arity, CmdError, CmdResult, Command};
use crate::frame::Reply;
use crate::shared::Shared;
use crate::store::StoreError;

/// Most tickets one call returns.
pub const MAX_COUNT: u64 = 100_000;
/// Most tickets one TICKET.RANGE takes.
pub const MAX_RANGE: u64 = 100_000_000;
/// Most tickets one call returns as Sqids (each takes about 12 µs to encode).
pub const MAX_SQIDS: u64 = 1_000;

/// `TICKET.NEXT` or `TICKET.RANGE`, parsed.
#[derive(Debug)]
pub struct TicketNext {
    /// The sequence named; `None` for [`crate::store::DEFAULT_SEQUENCE`].
    sequence: Option<Bytes>,
    /// `COUNT n`; `None` for one ticket as an integer reply.
    count: Option<u64>,
    /// TICKET.RANGE: reply `[first, step, n]`.
    range: bool,
    /// Reply with Sqids.
    sqids: bool,
    /// Seal the tickets first.
    sealed: bool,
}

impl TicketNext {
    /// `TICKET.NEXT [sequence] [COUNT n]`.
    pub fn parse_next(args: &[Bytes]) -> Result<Command, CmdError> {
        Self::parse(args, false).map(Command::TicketNext)
    }

    /// `TICKET.RANGE [sequence] COUNT n`.
    pub fn parse_range(args: &[Bytes]) -> Result<Command, CmdError> {
        Self::parse(args, true).map(Command::TicketNext)
    }

    fn parse(args: &[Bytes], range: bool) -> Result<TicketNext, CmdError> {
        let (mut args, mut sqids, mut sealed) = (args, false, false);
        while let Some((last, rest)) = args.split_last().filter(|_| !range && args.len() > 1) {
            let flag = if last.eq_ignore_ascii_case(b"SQIDS") {
                &mut sqids
            } else if last.eq_ignore_ascii_case(b"SEALED") {
                &mut sealed
            } else {
                break;
            };
            if *flag {
                break;
            }
            *flag = true;
            args = rest;
        }
        let (sequence, count) = match args.len() {
            1 | 2 if range => return Err(wrong_arity(args)),
            1 => (None, None),
            2 => (Some(args[1].clone()), None),
            3 => (None, Some(count(&args[1..], range)?)),
            4 => (Some(args[1].clone()), Some(count(&args[2..], range)?)),
            _ => return Err(wrong_arity(args)),
        };
        if (sqids || sealed) && count.unwrap_or(1) > MAX_SQIDS {
            let with = if sqids { "SQIDS" } else { "SEALED" };
            return Err(CmdError::OutOfRange(format!(
                "COUNT must be between 1 and {MAX_SQIDS} with {with}"
            )));
        }
        Ok(TicketNext {
            sequence,
            count,
            range,
            sqids,
            sealed,
        })
    }

    pub async fn apply(self, shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
        // Refused before a ticket is taken.
        let sealer = match (self.sealed, &shared.config.sealer) {
            (true, None) => {
                return Err(CmdError::OutOfRange(
                    "no sealing key: start the server with --seal-key-file".into(),
                ))
            }
            (true, Some(sealer)) => Some(sealer),
            (false, _) => None,
        };
        let named;
        let seq = match &self.sequence {
            None => shared.store.default_sequence()?,
            Some(name) => {
                let name = std::str::from_utf8(name).map_err(|_| StoreError::BadName)?;
                named = shared.store.sequence(name)?;
                &named
            }
        };
        let n = self.count.unwrap_or(1);
        let first = seq.take(n).await?;
        shared.metrics.issued.inc_by(n);
        let step = shared.config.increment;
        if let Some(sealer) = sealer {
            let sealed = (0..n)
                .map(|i| sealer.seal(first + i * step))
                .collect::<Result<Vec<u64>, _>>()
                .map_err(|e| CmdError::OutOfRange(e.to_string()))?;
            return reply_each(shared, &sealed, self.count.is_some(), self.sqids, reply);
        }
        if self.sqids {
            return reply_sqids(shared, first, step, self.count, reply);
        }
        match self.count {
            None => reply.integer(first as i64),
            Some(n) if self.range => {
                reply.array(3);
                reply.integer(first as i64);
                reply.integer(step as i64);
                reply.integer(n as i64);
            }
            Some(n) => {
                reply.array(n as usize);
                for i in 0..n {
                    reply.integer((first + i * step) as i64);
                }
            }
        }
        Ok(())
    }
}

/// The tickets as Sqids: one, or an array with COUNT. All are made before any is sent, so a
/// refusal (a blocklist that leaves no string) is one error reply; its tickets are skipped.
fn reply_sqids(
    shared: &Shared,
    first: u64,
    step: u64,
    count: Option<u64>,
    reply: &mut Reply<'_>,
) -> CmdResult {
    let n = count.unwrap_or(1);
    let sqids = (shared.config.sqids)
        .encode_each((0..n).map(|i| first + i * step))
        .map_err(|e| CmdError::OutOfRange(e.to_string()))?;
    if count.is_some() {
        reply.array(sqids.len());
    }
    for sqid in &sqids {
        reply.bulk(sqid.as_bytes());
    }
    Ok(())
}

/// `values` (sealed tickets) as integers or, with `sqids`, as Sqids: one, or an array.
fn reply_each(
    shared: &Shared,
    values: &[u64],
    array: bool,
    sqids: bool,
    reply: &mut Reply<'_>,
) -> CmdResult {
    if sqids {
        let texts = (shared.config.sqids)
            .encode_each(values.iter().copied())
            .map_err(|e| CmdError::OutOfRange(e.to_string()))?;
        if array {
            reply.array(texts.len());
        }
        for text in &texts {
            reply.bulk(text.as_bytes());
        }
        return Ok(());
    }
    if array {
        reply.array(values.len());
    }
    for &value in values {
        reply.integer(value as i64);
    }
    Ok(())
}

/// `COUNT n`, within the command's limit.
fn count(option: &[Bytes], range: bool) -> Result<u64, CmdError> {
    if !option[0].eq_ignore_ascii_case(b"COUNT") {
        return Err(CmdError::Syntax(None));
    }
    let most = if range { MAX_RANGE } else { MAX_COUNT };
    let n = parse_u64(&option[1])?;
    if !(1..=most).contains(&n) {
        return Err(CmdError::OutOfRange(format!(
            "COUNT must be between 1 and {most}"
        )));
    }
    Ok(n)
}

//! `DATESEQ.NEXT` and `DATESEQ.CURRENT`: `yyyyMMdd * 10^digits + seq` from a per-day counter.
//!
//! The counter is a plain string key named from the prefix and today's date (see
//! `idgen_core::dateseq::counter_key`), in the prefix's Cluster slot. It reaches replicas and the
//! AOF as `INCR key` (plus `PEXPIREAT` when created), never as `DATESEQ.NEXT`: a replica
//! replaying the command would read the date off its own clock.

use std::sync::atomic::{AtomicU64, Ordering};

use idgen_core::dateseq::{check_digits, compose, counter_key, Day};
use idgen_core::{Clock, SystemClock};

use crate::config::{DATESEQ_DIGITS, DATESEQ_TTL};
use crate::counter::{Counter, KeyName};
use crate::ctx::{Args, Ctx};
use crate::error::CommandError;
use crate::state;

/// DATESEQ.NEXT values issued since load.
pub static ISSUED: AtomicU64 = AtomicU64::new(0);
/// DATESEQ.NEXT calls refused since load.
pub static REFUSED: AtomicU64 = AtomicU64::new(0);

/// `DATESEQ.NEXT prefix [DIGITS d]`: the next value of today's counter for `prefix`.
pub fn next(ctx: &Ctx, args: Args) -> Result<(), CommandError> {
    let result = next_value(ctx, args);
    let outcome = if result.is_ok() { &ISSUED } else { &REFUSED };
    outcome.fetch_add(1, Ordering::Relaxed);
    ctx.reply_i64(result?)
}

fn next_value(ctx: &Ctx, args: Args) -> Result<i64, CommandError> {
    let (prefix, digits) = parse(args)?;
    let (day, name) = locate(prefix)?;
    let counter = Counter::open(ctx, &name, true)?;
    let old = counter.get()?;
    let seq = old.unwrap_or(0) + 1;
    let value = compose(day.date, digits, seq)?;
    match old {
        None => {
            let ttl_ms = DATESEQ_TTL.load(Ordering::Relaxed).saturating_mul(1000);
            counter.create(day.end_ms.saturating_add(ttl_ms))?
        }
        Some(old) => counter.increment(old)?,
    }
    Ok(value)
}

/// `DATESEQ.CURRENT prefix [DIGITS d]`: the last value `DATESEQ.NEXT` gave today, or nil.
pub fn current(ctx: &Ctx, args: Args) -> Result<(), CommandError> {
    let (prefix, digits) = parse(args)?;
    let (day, name) = locate(prefix)?;
    let seq = Counter::open(ctx, &name, false)?.get()?;
    match seq {
        None | Some(0) => ctx.reply_null(),
        Some(seq) => ctx.reply_i64(compose(day.date, digits, seq)?),
    }
}

/// Today and the name of today's counter key for `prefix`.
fn locate(prefix: &[u8]) -> Result<(Day, KeyName), CommandError> {
    let now = SystemClock.now_ms();
    state::with(|s| {
        let day = s.days.day_of(now);
        counter_key(prefix, day.date, &mut s.key_buf)?;
        Ok((day, s.key_names.get(&s.key_buf)?))
    })?
}

/// `prefix [DIGITS d]`, DIGITS defaulting to `idgen.dateseq-digits`.
fn parse<'a>(mut args: Args<'a>) -> Result<(&'a [u8], u32), CommandError> {
    if args.len() != 2 && args.len() != 4 {
        return Err(CommandError::WrongArity);
    }
    let prefix = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let mut digits = DATESEQ_DIGITS.load(Ordering::Relaxed);
    args.options(|name, args| {
        if !name.eq_ignore_ascii_case(b"DIGITS") {
            return Ok(false);
        }
        digits = args.next_i64()?;
        Ok(true)
    })?;
    Ok((prefix, check_digits(digits)?))
}

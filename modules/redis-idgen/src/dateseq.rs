//! `DATESEQ.NEXT` and `DATESEQ.CURRENT`: `yyyyMMdd * 10^digits + seq` from a per-day counter,
//! or with `PERIOD month` / `PERIOD year`, `yyyyMM` / `yyyy * 10^digits + seq` from a counter
//! that starts again each month or year (in `idgen.dateseq-timezone`).
//!
//! The counter is a plain string key named from the prefix and the period's label (see
//! `idgen_core::dateseq::counter_key`), in the prefix's Cluster slot. It reaches replicas and the
//! AOF as `INCR key` or `INCRBY key n` (plus `PEXPIREAT` when created), never as `DATESEQ.NEXT`:
//! a replica replaying the command would read the date off its own clock.
//!
//! After this node is promoted to primary, each counter skips `idgen.dateseq-failover-gap`
//! values on its first use, so values the old primary acknowledged but never replicated are
//! not handed out again (the skip reaches replicas as part of the INCRBY).

use idgen_core::dateseq::{check_digits, compose, Day, Period, ValueError};
use idgen_core::{Clock, SystemClock};

use crate::args::Args;
use crate::callers::Callers;
use crate::config::MAX_DATESEQ_COUNT;
use crate::error::CommandError;
use crate::eviction::Keys;
use crate::ffi::ctx::Ctx;
use crate::ffi::key::{self, Step};
use crate::form::Form;
use crate::snowflake::parse_count;
use crate::state::State;

/// What a call asked for.
struct Request<'a> {
    prefix: &'a [u8],
    /// Whose counter: today's, this month's or this year's.
    period: Period,
    /// Whether the values go out sealed.
    sealed: bool,
    digits: u32,
    /// `Some(n)` when COUNT was given: the reply is then the range `[first, last]` (every
    /// value, with SQIDS).
    count: Option<u64>,
    form: Form,
}

/// `DATESEQ.NEXT prefix [DIGITS d] [COUNT n] [STRING | SQIDS] [PERIOD day|month|year]
/// [SEALED]`: the next value of the period's counter for `prefix` (today's by default); with
/// COUNT, the next `n` as the array `[first, last]`. As strings with STRING, and from a script
/// when above 2^53. As Sqids with SQIDS, sealed with SEALED; with COUNT (up to 1000), all `n`
/// of them then, since the values between first and last cannot be told from them.
pub fn next(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    let result = parse(args, true, s).and_then(|req| issue(ctx, &req, s).map(|v| (req, v)));
    let (req, (first, last)) = match result {
        Ok(ok) => ok,
        Err(e) => {
            s.dateseq.refused += 1;
            return Err(e);
        }
    };
    s.dateseq.issued += req.count.unwrap_or(1);
    // Sealed values may be anywhere up to 2^63: a script gets them all as strings.
    let exact = if req.sealed {
        !ctx.called_by_script(&mut s.callers)
    } else {
        !needs_string(ctx, last, &mut s.callers)
    };
    let form = req.form.exact_or_decimal(exact);
    let sealer = s.sealer.as_ref().filter(|_| req.sealed);
    match (req.count, form, sealer) {
        (None, form, None) => form.reply(ctx, first as u64, &s.sqids),
        (None, form, Some(sealer)) => form.reply(ctx, sealer.seal(first as u64)?, &s.sqids),
        // Sqids and sealed values do not show their order: every value, not the range.
        (Some(_), form, sealer) if form == Form::Sqid || sealer.is_some() => {
            let all = (first as u64..=last as u64)
                .map(|v| sealer.map_or(Ok(v), |sealer| sealer.seal(v)))
                .collect::<Result<Vec<u64>, _>>()?;
            form.reply_all(ctx, &all, &s.sqids)
        }
        (Some(_), form, _) => form.reply_all(ctx, &[first as u64, last as u64], &s.sqids),
    }
}

/// Whether `value` must go out as a string although the caller did not ask: a script's Lua
/// numbers are doubles, exact only up to 2^53 (DIGITS up to 8 stays below it until the year
/// 9007). Asked only then, as asking Redis costs more than the rest of the reply.
fn needs_string(ctx: &Ctx, value: i64, callers: &mut Callers) -> bool {
    value > 1 << 53 && ctx.called_by_script(callers)
}

/// Moves the counter on by the request's count (after the failover gap, on the counter's first
/// use since a promotion, and from above its witness if it was found below it); the first and
/// last values issued.
fn issue(ctx: &Ctx, req: &Request, s: &mut State) -> Result<(i64, i64), CommandError> {
    let config = s.config;
    s.eviction
        .check(Keys::Counters, config.flag(|c| &c.accept_eviction))?;
    let n = req.count.unwrap_or(1);
    let now_ms = SystemClock.now_ms();
    let (day, fenced) = locate(req, s, now_ms);
    let gap = if fenced {
        config.int(|c| &c.dateseq_failover_gap) as u64
    } else {
        0
    };
    let ttl_ms = config.int(|c| &c.dateseq_ttl).saturating_mul(1000);
    let witnesses = &mut s.witnesses;
    let (name, witness) = s
        .key_names
        .get(req.prefix, day.date, |k| witnesses.name(k))?;
    let mark = witnesses
        .slot(witness, day.end_ms, now_ms)
        .map_err(|full| CommandError::OutOfRange(full.to_string()))?;
    let mut lowered = None;
    let (first, last, seq) = key::advance(ctx, name, |old| {
        let found = old.unwrap_or(0);
        let (base, below) = mark.resume(found);
        lowered = below;
        // Checked before anything is written: a spent day is an error, never a wrap.
        let last = compose(day.date, req.digits, base + gap + n).map_err(|e| match e {
            ValueError::SequenceOverflow { .. } if gap > 0 => CommandError::OutOfRange(format!(
                "{e} after the failover gap of {gap} this counter skips once after a promotion \
                 (idgen.dateseq-failover-gap): lower the gap or use more DIGITS"
            )),
            // Spent only when not one more value fits; else it is this COUNT that does not.
            ValueError::SequenceOverflow { .. }
                if compose(day.date, req.digits, base + 1).is_ok() =>
            {
                let left = 10u64.pow(req.digits) - 1 - base;
                CommandError::OutOfRange(format!(
                    "COUNT {n} does not fit: {left} values are left for {} in {} DIGITS",
                    day.date, req.digits
                ))
            }
            e => e.into(),
        })?;
        let step = Step {
            by: base - found + gap + n,
            expire_at_ms: day.end_ms.saturating_add(ttl_ms),
        };
        Ok((step, (last - (n as i64 - 1), last, base + gap + n)))
    })?;
    mark.note(seq);
    if let Some(lowered) = lowered {
        s.dateseq.lowered += 1;
        crate::ffi::log(
            "warning",
            &format!(
                "idgen: DATESEQ counter {} was found at {}, below the {} this node handed out \
                 in its period (deleted, lowered, flushed, renamed or restored from an older \
                 copy): continued above {}",
                crate::error::shown(s.key_names.bytes()),
                lowered.found,
                lowered.highest,
                lowered.highest
            ),
        );
    }
    if fenced {
        s.fence.pass(req.prefix, day.date);
        s.dateseq.gaps += 1;
        s.dateseq.skipped += gap;
    }
    Ok((first, last))
}

/// `DATESEQ.CURRENT prefix [DIGITS d] [STRING | SQIDS] [PERIOD day|month|year]`: the last value
/// `DATESEQ.NEXT` gave in the period (today by default), or nil.
pub fn current(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    let req = parse(args, false, s)?;
    let (day, _) = locate(&req, s, SystemClock.now_ms());
    let witnesses = &s.witnesses;
    let (name, witness) = s
        .key_names
        .get(req.prefix, day.date, |k| witnesses.name(k))?;
    // A counter found below its witness is shown as the next call would carry it on.
    let witnessed = witnesses.mark(witness).map_or(0, |m| m.highest);
    let seq = key::read(ctx, name)?.map(|seq| seq.max(witnessed));
    match seq.or((witnessed > 0).then_some(witnessed)) {
        None | Some(0) => ctx.reply_null(),
        Some(seq) => {
            let value = compose(day.date, req.digits, seq)?;
            let form = req
                .form
                .exact_or_decimal(!needs_string(ctx, value, &mut s.callers));
            form.reply(ctx, value as u64, &s.sqids)
        }
    }
}

/// The request's period now (today, this month or this year), whether its counter must skip
/// the failover gap first.
fn locate(req: &Request, s: &mut State, now_ms: i64) -> (Day, bool) {
    let day = s.days.period_of(now_ms, req.period);
    let fenced = s.fence.needs_gap(req.prefix, day.date);
    (day, fenced)
}

/// `prefix [DIGITS d] [COUNT n] [STRING | SQIDS] [PERIOD p]`, DIGITS defaulting to
/// `idgen.dateseq-digits`; COUNT only where `counted`.
fn parse<'a>(mut args: Args<'a>, counted: bool, s: &State) -> Result<Request<'a>, CommandError> {
    let most = if counted { 10 } else { 7 };
    if args.len() < 2 || args.len() > most {
        return Err(CommandError::WrongArity);
    }
    let Some(prefix) = args.next_bytes() else {
        return Err(CommandError::WrongArity);
    };
    let mut digits = s.config.int(|c| &c.dateseq_digits);
    let (mut count, mut form, mut period, mut sealed) = (None, Form::Integer, Period::Day, false);
    args.options(|name, args| {
        if form.take(name)? || (counted && crate::seal::take(&mut sealed, name)) {
            return Ok(true);
        } else if name.eq_ignore_ascii_case(b"PERIOD") {
            let word = args.next_bytes().ok_or(CommandError::Syntax)?;
            period = Period::parse(word).ok_or_else(|| {
                CommandError::OutOfRange(format!(
                    "PERIOD {} must be day, month or year",
                    crate::error::shown(word)
                ))
            })?;
        } else if name.eq_ignore_ascii_case(b"DIGITS") {
            digits = args.next_i64()?;
        } else if counted && name.eq_ignore_ascii_case(b"COUNT") {
            count = Some(parse_count(args, MAX_DATESEQ_COUNT)? as u64);
        } else {
            return Ok(false);
        }
        Ok(true)
    })?;
    form.check_count(count.unwrap_or(1))?;
    crate::seal::check(s, sealed, count.unwrap_or(1))?;
    Ok(Request {
        prefix,
        period,
        sealed,
        digits: check_digits(digits)?,
        count,
        form,
    })
}

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
//!
//! Each counter has a witness (`crate::dateseq::witness`): a counter found below the
//! values handed out carries on above them. With `idgen.dateseq-witness-file`, values are also
//! reserved on disk in blocks ahead of use (`witness_file.rs`), and a reply whose values are
//! not yet reserved waits, with its client blocked, until they are: so a restart from an older
//! RDB or AOF, or a crash before the AOF was synced, never hands a value out twice.

use std::sync::Arc;

use idgen_core::dateseq::{check_digits, compose, Period};
use idgen_core::{Clock, SqidCodec, SystemClock};

use crate::args::Args;
use crate::cmd::durable_reply::{once_written, Reply};
use crate::cmd::form::Form;
use crate::config::MAX_DATESEQ_COUNT;
use crate::dateseq::counters::{At, Issued};
use crate::error::CommandError;
use crate::eviction::Keys;
use crate::ffi::ctx::Ctx;
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
    let (req, Issued { first, last, wait }) = match result {
        Ok(ok) => ok,
        Err(e) => {
            s.dateseq_mut().refused();
            return Err(e);
        }
    };
    s.dateseq_mut().issued(req.count.unwrap_or(1));
    // Sealed values may be anywhere up to 2^63: a script gets them all as strings.
    let exact = if req.sealed {
        !s.called_by_script(ctx)
    } else {
        !needs_string(ctx, last as i64, s)
    };
    let form = req.form.exact_or_decimal(exact);
    let values = values(&req, first, last, s)?;
    match s.dateseq().file() {
        Some(file) if wait => {
            let codec = Arc::clone(s.sqids());
            once_written(
                ctx,
                file,
                Waiting {
                    form,
                    values,
                    codec,
                },
                CommandError::WitnessFile,
            )
        }
        _ => send(ctx, form, &values, s.sqids()),
    }
}

/// The values a call replies with: one, or the range `[first, last]`, or (as Sqids or sealed,
/// which do not show their order) every value of it.
enum Values {
    One(u64),
    Range(u64, u64),
    Many(Vec<u64>),
}

fn send(ctx: &Ctx, form: Form, values: &Values, codec: &SqidCodec) -> Result<(), CommandError> {
    match values {
        Values::One(value) => form.reply(ctx, *value, codec),
        Values::Range(first, last) => form.reply_all(ctx, &[*first, *last], codec),
        Values::Many(values) => form.reply_all(ctx, values, codec),
    }
}

/// A reply that waits for the witness file to hold its values.
struct Waiting {
    form: Form,
    values: Values,
    codec: Arc<SqidCodec>,
}

impl Reply for Waiting {
    fn send(self, ctx: &Ctx) -> Result<(), CommandError> {
        send(ctx, self.form, &self.values, &self.codec)
    }
}

/// The values of `first..=last` as the request replies with them.
fn values(req: &Request, first: u64, last: u64, s: &State) -> Result<Values, CommandError> {
    let sealer = s.sealer().ok().filter(|_| req.sealed);
    Ok(match (req.count, sealer) {
        (None, None) => Values::One(first),
        (None, Some(sealer)) => Values::One(sealer.seal(first)?),
        // Sqids and sealed values do not show their order: every value, not the range.
        (Some(_), sealer) if req.form == Form::Sqid || sealer.is_some() => Values::Many(
            (first..=last)
                .map(|v| sealer.map_or(Ok(v), |sealer| sealer.seal(v)))
                .collect::<Result<Vec<u64>, _>>()?,
        ),
        (Some(_), _) => Values::Range(first, last),
    })
}

/// Whether `value` must go out as a string although the caller did not ask: a script's Lua
/// numbers are doubles, exact only up to 2^53 (DIGITS up to 8 stays below it until the year
/// 9007). Asked only then, as asking Redis costs more than the rest of the reply.
fn needs_string(ctx: &Ctx, value: i64, s: &mut State) -> bool {
    value > 1 << 53 && s.called_by_script(ctx)
}

/// Moves the counter on by the request's count (`crate::dateseq::Counters::next` decides how):
/// the values issued, and whether the reply must wait for the witness file to hold them.
fn issue(ctx: &Ctx, req: &Request, s: &mut State) -> Result<Issued, CommandError> {
    let config = s.config();
    s.check_eviction(Keys::Counters, config.flag(|c| &c.accept_eviction))?;
    let at = At {
        prefix: req.prefix,
        period: req.period,
        digits: req.digits,
        count: req.count.unwrap_or(1),
        now_ms: SystemClock.now_ms(),
        failover_gap: config.int(|c| &c.dateseq_failover_gap) as u64,
        ttl_ms: config.int(|c| &c.dateseq_ttl).saturating_mul(1000),
    };
    let (counters, mut keys) = s.dateseq_keys(ctx);
    counters.next(&at, &mut keys)
}

/// `DATESEQ.CURRENT prefix [DIGITS d] [STRING | SQIDS] [PERIOD day|month|year]`: the last value
/// `DATESEQ.NEXT` gave in the period (today by default), or nil.
pub fn current(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    let req = parse(args, false, s)?;
    let now_ms = SystemClock.now_ms();
    let (counters, mut keys) = s.dateseq_keys(ctx);
    match counters.current(req.prefix, req.period, now_ms, &mut keys)? {
        (_, 0) => ctx.reply_null(),
        (date, seq) => {
            let value = compose(date, req.digits, seq)?;
            let form = req.form.exact_or_decimal(!needs_string(ctx, value, s));
            form.reply(ctx, value as u64, s.sqids())
        }
    }
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
    let mut digits = s.config().int(|c| &c.dateseq_digits);
    let (mut count, mut form, mut period, mut sealed) = (None, Form::Integer, Period::Day, false);
    args.options(|name, args| {
        if form.take(name)? || (counted && crate::cmd::seal::take(&mut sealed, name)) {
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
            count = Some(args.next_count(MAX_DATESEQ_COUNT)? as u64);
        } else {
            return Ok(false);
        }
        Ok(true)
    })?;
    form.check_count(count.unwrap_or(1))?;
    crate::cmd::seal::check(s, sealed, count.unwrap_or(1))?;
    Ok(Request {
        prefix,
        period,
        sealed,
        digits: check_digits(digits)?,
        count,
        form,
    })
}

//! `SNOWFLAKE.NEXT` and `SNOWFLAKE.DECODE`.

use idgen_core::{Clock, GenerateError, SystemClock};
use jiff::Timestamp;

use crate::args::{time_and_end, Args, MAX_COUNT};
use crate::cmd::form::Form;
use crate::cmd::seal;
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::snowflake::reservation::Reservation;
use crate::state::State;

/// What a `SNOWFLAKE.NEXT` call asked for.
#[derive(Default)]
struct Request {
    count: Option<usize>,
    form: Form,
    sealed: bool,
}

impl Request {
    /// `[COUNT n] [STRING | SQIDS] [SEALED]`.
    fn parse(mut args: Args, s: &State) -> Result<Request, CommandError> {
        let mut req = Request::default();
        if args.len() > 5 {
            return Err(CommandError::WrongArity);
        }
        args.options(|name, args| {
            if req.form.take(name)? || seal::take(&mut req.sealed, name) {
                return Ok(true);
            } else if name.eq_ignore_ascii_case(b"COUNT") {
                req.count = Some(args.next_count(MAX_COUNT)? as usize);
            } else {
                return Ok(false);
            }
            Ok(true)
        })?;
        let n = req.count.unwrap_or(1) as u64;
        req.form.check_count(n)?;
        seal::check(s, req.sealed, n)?;
        Ok(req)
    }
}

/// `SNOWFLAKE.NEXT [COUNT n] [STRING | SQIDS] [SEALED]`: one ID, or an array of `n` strictly
/// increasing IDs; as strings with STRING, and always when called from a script (Lua numbers
/// are doubles and would round an ID above 2^53); as Sqids with SQIDS (COUNT up to 1000);
/// sealed with SEALED (COUNT up to 1000; Sqids of the sealed IDs with SQIDS too).
///
/// Refused on a replica, which shares its primary's worker-id and would repeat its IDs.
pub fn next(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() == 1 {
        // The plain call, and most calls: a constant request, which `issue` folds to one
        // integer, where parsing no options and matching on them is work for nothing.
        return issue(ctx, s, Request::default());
    }
    let req = Request::parse(args, s)?;
    issue(ctx, s, req)
}

/// Issues what `req` asks for, unless this node must not issue IDs now.
#[inline(always)]
fn issue(ctx: &Ctx, s: &mut State, req: Request) -> Result<(), CommandError> {
    if s.replica {
        return Err(CommandError::Replica);
    }
    if let Some(why) = &s.primary_conflict {
        return Err(CommandError::WorkerClaim(why.clone()));
    }
    if let Some(why) = s
        .cluster
        .as_ref()
        .and_then(|w| w.refusal(SystemClock.now_ms()))
    {
        return Err(CommandError::WorkerClaim(why));
    }
    let form = match req.form {
        Form::Integer if ctx.called_by_script(&mut s.callers) => Form::Decimal,
        form => form,
    };
    let State {
        ids,
        reservation,
        id_buf,
        sqids,
        sealer,
        ..
    } = s;
    // Checked by Request::parse: a sealer is set when SEALED is given.
    let sealer = sealer.as_ref().filter(|_| req.sealed);
    if let Some(reservation) = reservation {
        if let Some(why) = reservation.refusal() {
            return Err(CommandError::StateFile(why));
        }
        ids.set_ceiling(reservation.durable_until());
    }
    // Generated, the reservation told how far IDs went (a refusal at its end wakes its
    // thread), then the reply.
    let generated = match req.count {
        None => ids.next_id().map(Some),
        Some(n) => {
            id_buf.clear();
            ids.next_ids(n, id_buf).map(|()| None)
        }
    };
    // The reservation's thread reads the clock itself: it needs telling only where the IDs
    // left the clock.
    if let Some(reservation) = reservation {
        if generated.is_err() || !ids.on_the_clock() {
            reservation.note_issued(ids.last_tick_unix_ms());
        }
    }
    match generated {
        // The plain integer reply on its own arm: Form::reply is not inlined.
        Ok(Some(id)) => match (sealer, form) {
            (None, Form::Integer) => ctx.reply_i64(id as i64),
            (None, form) => form.reply(ctx, id, sqids),
            (Some(sealer), form) => form.reply(ctx, sealer.seal(id)?, sqids),
        },
        Ok(None) => {
            if let Some(sealer) = sealer {
                for id in id_buf.iter_mut() {
                    *id = sealer.seal(*id)?;
                }
            }
            form.reply_all(ctx, id_buf, sqids)
        }
        Err(e) => Err(refusal(e, reservation.as_ref())),
    }
}

/// A `COUNT n` value in `1..=max`.
/// The generator's refusal, told as what really happened: a reservation that ran out because
/// its file cannot be written is a disk problem, not a burst.
fn refusal(e: GenerateError, reservation: Option<&Reservation>) -> CommandError {
    match (&e, reservation.and_then(Reservation::failure)) {
        (GenerateError::NotReserved { .. }, Some(why)) => CommandError::StateFile(why),
        _ => CommandError::Generate(e),
    }
}

/// `SNOWFLAKE.DECODE id`: the ID's time (ms and ISO-8601), datacenter, worker and sequence,
/// under this server's layout and epoch, and that epoch.
pub fn decode(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let id = CommandError::check_range("id", args.next_i64()?, 0, i64::MAX)?;
    let (d, epoch_ms) = (s.ids.decode(id as u64), s.ids.settings().epoch_ms);
    let iso = Timestamp::from_millisecond(d.unix_ms)
        .map(|t| format!("{t:.3}"))
        .unwrap_or_default();
    ctx.reply_map(6)?;
    ctx.reply_bytes(b"time_ms")?;
    ctx.reply_i64(d.unix_ms)?;
    ctx.reply_bytes(b"time")?;
    ctx.reply_bytes(iso.as_bytes())?;
    ctx.reply_bytes(b"datacenter")?;
    ctx.reply_i64(d.datacenter as i64)?;
    ctx.reply_bytes(b"worker")?;
    ctx.reply_i64(d.worker as i64)?;
    ctx.reply_bytes(b"sequence")?;
    ctx.reply_i64(d.sequence as i64)?;
    ctx.reply_bytes(b"epoch_ms")?;
    ctx.reply_i64(epoch_ms)
}

/// `SNOWFLAKE.FROMTIME t [MAX]`: the lowest ID (with MAX, the highest) any node can make in the
/// tick holding `t` (Unix ms or ISO-8601) under this server's layout and epoch; a string when a
/// script calls.
pub fn fromtime(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    let (unix_ms, end) = time_and_end(&mut args)?;
    let settings = s.ids.settings();
    let id = idgen_core::snowflake_at(&settings.layout, settings.epoch_ms, unix_ms, end)?;
    Form::Integer
        .exact_or_decimal(id < 1 << 53 || !ctx.called_by_script(&mut s.callers))
        .reply(ctx, id, &s.sqids)
}

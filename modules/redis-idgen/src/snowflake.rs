//! `SNOWFLAKE.NEXT` and `SNOWFLAKE.DECODE`.

use idgen_core::GenerateError;
use jiff::Timestamp;

use crate::error::CommandError;
use crate::ffi::ctx::{Args, Ctx};
use crate::form::Form;
use crate::{cluster, reservation, role, state};

/// Most IDs one `SNOWFLAKE.NEXT COUNT n` returns.
pub const MAX_COUNT: i64 = 100_000;

/// `SNOWFLAKE.NEXT [COUNT n] [STRING | SQIDS]`: one ID, or an array of `n` strictly increasing
/// IDs; as strings with STRING, and always when called from a script (Lua numbers are doubles
/// and would round an ID above 2^53); as Sqids with SQIDS (COUNT up to 1000).
///
/// Refused on a replica, which shares its primary's worker-id and would repeat its IDs.
pub fn next(ctx: &Ctx, mut args: Args) -> Result<(), CommandError> {
    if args.len() > 4 {
        return Err(CommandError::WrongArity);
    }
    let mut count = None;
    let mut form = Form::Integer;
    args.options(|name, args| {
        if form.take(name)? {
            return Ok(true);
        } else if name.eq_ignore_ascii_case(b"COUNT") {
            count = Some(parse_count(args, MAX_COUNT)? as usize);
        } else {
            return Ok(false);
        }
        Ok(true)
    })?;
    form.check_count(count.unwrap_or(1) as u64)?;
    if role::is_replica() {
        return Err(CommandError::Replica);
    }
    if let Some(why) = cluster::refusal() {
        return Err(CommandError::WorkerClaim(why));
    }
    let form = form.exact_or_decimal(!ctx.called_by_script());
    if let Some(why) = reservation::refusal() {
        return Err(CommandError::StateFile(why));
    }
    state::with(|s| {
        s.ids.set_ceiling(reservation::durable_until());
        let result = issue(ctx, s, count, form);
        reservation::note_issued(s.ids.last_tick_unix_ms());
        result
    })?
}

/// A `COUNT n` value in `1..=max`.
pub fn parse_count(args: &mut Args, max: i64) -> Result<i64, CommandError> {
    CommandError::check_range("COUNT", args.next_i64()?, 1, max)
}

fn issue(
    ctx: &Ctx,
    s: &mut state::State,
    count: Option<usize>,
    form: Form,
) -> Result<(), CommandError> {
    match count {
        None => form.reply(ctx, s.ids.next_id().map_err(refusal)?, &s.sqids),
        Some(n) => {
            let mut ids = std::mem::take(&mut s.id_buf);
            ids.clear();
            let result = s.ids.next_ids(n, &mut ids).map_err(refusal);
            let result = result.and_then(|()| form.reply_all(ctx, &ids, &s.sqids));
            s.id_buf = ids;
            result
        }
    }
}

/// The generator's refusal, told as what really happened: a reservation that ran out because
/// its file cannot be written is a disk problem, not a burst.
fn refusal(e: GenerateError) -> CommandError {
    match (&e, reservation::failure()) {
        (GenerateError::NotReserved { .. }, Some(why)) => CommandError::StateFile(why),
        _ => CommandError::Generate(e),
    }
}

/// `SNOWFLAKE.DECODE id`: the ID's time (ms and ISO-8601), datacenter, worker and sequence,
/// under this server's layout and epoch, and that epoch.
pub fn decode(ctx: &Ctx, mut args: Args) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let id = CommandError::check_range("id", args.next_i64()?, 0, i64::MAX)?;
    let (d, epoch_ms) = state::with(|s| (s.ids.decode(id as u64), s.ids.settings().epoch_ms))?;
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

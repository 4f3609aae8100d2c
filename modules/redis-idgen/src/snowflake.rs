//! `SNOWFLAKE.NEXT` and `SNOWFLAKE.DECODE`.

use jiff::Timestamp;

use crate::ctx::{Args, Ctx};
use crate::error::CommandError;
use crate::{reservation, role, state};

/// Most IDs one `SNOWFLAKE.NEXT COUNT n` returns.
pub const MAX_COUNT: i64 = 100_000;

/// `SNOWFLAKE.NEXT [COUNT n]`: one ID, or an array of `n` strictly increasing IDs.
///
/// Refused on a replica, which shares its primary's worker-id and would repeat its IDs.
pub fn next(ctx: &Ctx, mut args: Args) -> Result<(), CommandError> {
    if args.len() != 1 && args.len() != 3 {
        return Err(CommandError::WrongArity);
    }
    let mut count = None;
    args.options(|name, args| {
        if !name.eq_ignore_ascii_case(b"COUNT") {
            return Ok(false);
        }
        let n = args.next_i64()?;
        if !(1..=MAX_COUNT).contains(&n) {
            return Err(CommandError::OutOfRange(format!(
                "COUNT must be between 1 and {MAX_COUNT}"
            )));
        }
        count = Some(n as usize);
        Ok(true)
    })?;
    if role::is_replica() {
        return Err(CommandError::Replica);
    }
    state::with(|s| {
        s.ids.set_ceiling(reservation::durable_until());
        let result = issue(ctx, s, count);
        reservation::note_issued(s.ids.last_tick_unix_ms());
        result
    })?
}

fn issue(ctx: &Ctx, s: &mut state::State, count: Option<usize>) -> Result<(), CommandError> {
    match count {
        None => ctx.reply_i64(s.ids.next_id()? as i64),
        Some(n) => {
            let mut ids = std::mem::take(&mut s.id_buf);
            ids.clear();
            let result = s.ids.next_ids(n, &mut ids).map_err(CommandError::from);
            let result = result.and_then(|()| ctx.reply_i64s(&ids));
            s.id_buf = ids;
            result
        }
    }
}

/// `SNOWFLAKE.DECODE id`: the ID's time (ms and ISO-8601), datacenter, worker and sequence,
/// under this server's layout and epoch.
pub fn decode(ctx: &Ctx, mut args: Args) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let id = args.next_i64()?;
    if id < 0 {
        return Err(CommandError::OutOfRange("id must not be negative".into()));
    }
    let d = state::with(|s| s.ids.decode(id as u64))?;
    let iso = Timestamp::from_millisecond(d.unix_ms)
        .map(|t| format!("{t:.3}"))
        .unwrap_or_default();
    ctx.reply_map(5)?;
    ctx.reply_str("time_ms")?;
    ctx.reply_i64(d.unix_ms)?;
    ctx.reply_str("time")?;
    ctx.reply_str(&iso)?;
    ctx.reply_str("datacenter")?;
    ctx.reply_i64(d.datacenter as i64)?;
    ctx.reply_str("worker")?;
    ctx.reply_i64(d.worker as i64)?;
    ctx.reply_str("sequence")?;
    ctx.reply_i64(d.sequence as i64)
}

//! `SNOWFLAKE.NEXT` and `SNOWFLAKE.DECODE`.

use idgen_core::with_utc_text;

use crate::args::{time_and_end, Args, MAX_COUNT};
use crate::cmd::form::Form;
use crate::cmd::seal;
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::snowflake::issuer::Issued;
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
    s.may_issue_snowflakes()?;
    let form = match req.form {
        Form::Integer if s.called_by_script(ctx) => Form::Decimal,
        form => form,
    };
    let (snowflakes, sqids, sealer) = s.snowflakes_and_forms();
    // Checked by Request::parse: a sealer is set when SEALED is given.
    let sealer = sealer.filter(|_| req.sealed);
    match snowflakes.issue(req.count)? {
        // The plain integer reply on its own arm: Form::reply is not inlined.
        Issued::One(id) => match (sealer, form) {
            (None, Form::Integer) => ctx.reply_i64(id as i64),
            (None, form) => form.reply(ctx, id, sqids),
            (Some(sealer), form) => form.reply(ctx, sealer.seal(id)?, sqids),
        },
        Issued::Many(ids) => {
            if let Some(sealer) = sealer {
                for id in ids.iter_mut() {
                    *id = sealer.seal(*id)?;
                }
            }
            form.reply_all(ctx, ids, sqids)
        }
    }
}

/// `SNOWFLAKE.DECODE id`: the ID's time (ms and ISO-8601), datacenter, worker and sequence,
/// under this server's layout and epoch, and that epoch.
pub fn decode(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let id = CommandError::check_range("id", args.next_i64()?, 0, i64::MAX)?;
    let ids = s.snowflakes().generator();
    let (d, epoch_ms) = (ids.decode(id as u64), ids.settings().epoch_ms);
    ctx.reply_map(6)?;
    ctx.reply_bytes(b"time_ms")?;
    ctx.reply_i64(d.unix_ms)?;
    ctx.reply_bytes(b"time")?;
    with_utc_text(d.unix_ms, |iso| ctx.reply_bytes(iso.as_bytes()))?;
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
    let settings = s.snowflakes().generator().settings();
    let id = idgen_core::snowflake_at(&settings.layout, settings.epoch_ms, unix_ms, end)?;
    Form::Integer
        .exact_or_decimal(id < 1 << 53 || !s.called_by_script(ctx))
        .reply(ctx, id, s.sqids())
}

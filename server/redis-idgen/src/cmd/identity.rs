//! `IDGEN.CLAIM datacenter worker`: the pair this node's primary puts into its IDs, sent over
//! the replication link (`crate::identity` decides what it means here).

use redis_module::ContextFlags;

use crate::args::Args;
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::state::State;

/// Taken only over the replication link; an AOF's copy, replayed at load, is ignored.
pub fn claim(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    let flags = ctx.safe().get_flags();
    if flags.contains(ContextFlags::LOADING) {
        return ctx.reply_ok();
    }
    if !flags.contains(ContextFlags::REPLICATED) {
        return Err(CommandError::OutOfRange(
            "IDGEN.CLAIM is sent by a primary to its replicas over the replication link, not \
             by clients"
                .into(),
        ));
    }
    let primary = (args.next_i64()?, args.next_i64()?);
    let me = s.claim();
    if let Some((level, line)) = s.identity_mut().primary_claims(me, primary) {
        crate::ffi::log(level, &line);
    }
    ctx.reply_ok()
}

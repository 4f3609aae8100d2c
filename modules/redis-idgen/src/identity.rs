//! One identity per node, across replication: a primary sends its worker-id claim to each
//! replica that comes online (`IDGEN.CLAIM datacenter worker`, over the replication link; a
//! partial resynchronization is a coming online too, so a restarted replica and the replicas
//! of a newly promoted one hear it again, `tests/identity.rs`), and
//! a replica configured with the same pair (one templated configuration for both, say) says so
//! at once, in its log and `INFO idgen`, and refuses SNOWFLAKE.NEXT after a promotion: promoted,
//! it would issue the IDs its primary issued in the same milliseconds (the two clocks differ, and
//! the primary may have borrowed ahead). Cluster nodes hear each other's claims over the bus
//! (`cluster.rs`) besides.

use redis_module::ContextFlags;

use crate::args::Args;
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::state::State;

/// `IDGEN.CLAIM datacenter worker`: the pair this node's primary puts into its IDs. Taken only
/// over the replication link; an AOF's copy, replayed at load, is ignored.
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
    let datacenter = args.next_i64()?;
    let worker = args.next_i64()?;
    let me = s.claim();
    let shared = (me.datacenter as i64, me.worker as i64) == (datacenter, worker);
    let verdict = shared.then(|| {
        format!(
            "worker-id conflict: this node's primary issues IDs as datacenter {datacenter} \
             worker {worker} too (idgen.datacenter-id, idgen.worker-id): promoted, this node \
             would issue the IDs its primary issued; SNOWFLAKE.NEXT is refused here until it is \
             restarted with a pair of its own"
        )
    });
    if verdict.as_deref() != s.primary_conflict() {
        match &verdict {
            Some(why) => crate::ffi::log("warning", &format!("idgen: {why}")),
            None => crate::ffi::log(
                "notice",
                "idgen: this node's primary issues IDs under another worker-id pair",
            ),
        }
        s.set_primary_conflict(verdict);
    }
    ctx.reply_ok()
}

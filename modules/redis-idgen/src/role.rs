//! Whether this server is a replica, followed through role-change events so that
//! SNOWFLAKE.NEXT does not have to ask Redis on every call; a promotion also starts a new
//! DATESEQ term (see `idgen_core::dateseq::fence`).

use std::sync::atomic::{AtomicBool, Ordering};

use idgen_core::{Clock, SystemClock};
use redis_module::raw;

use crate::config::WORKERID_HORIZON_MS;

use crate::ffi::module;
use crate::state;

static IS_REPLICA: AtomicBool = AtomicBool::new(false);

/// The fence lease grants start above when this server loads or is promoted: now plus the
/// horizon. The namespaces it holds may lack renewals that reached only an older copy (a
/// restore, an AOF without `appendfsync always`, a replica behind its primary), and a holder
/// that made them may issue IDs up to a horizon past its last one.
pub fn lease_fence_from_now() -> i64 {
    SystemClock
        .now_ms()
        .saturating_add(WORKERID_HORIZON_MS.load(Ordering::Relaxed))
}

/// Whether this server replicates another one right now.
pub fn is_replica() -> bool {
    IS_REPLICA.load(Ordering::Relaxed)
}

/// Reads the current role and subscribes to changes.
///
/// # Errors
/// When Redis lacks the APIs or refuses the subscription.
pub fn follow(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    IS_REPLICA.store(module::is_replica(ctx)?, Ordering::Relaxed);
    module::on_role_change(ctx, changed)
}

fn changed(replica: bool) {
    IS_REPLICA.store(replica, Ordering::Relaxed);
    if !replica {
        // Events arrive on Redis's thread between commands: the state is free.
        let _ = state::with(|s| {
            s.fence.new_term();
            s.lease_fence_ms = lease_fence_from_now();
        });
    }
}

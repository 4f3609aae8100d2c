//! Whether this server is a replica, followed through role-change events so that
//! SNOWFLAKE.NEXT does not have to ask Redis on every call.

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

static IS_REPLICA: AtomicBool = AtomicBool::new(false);

/// Whether this server replicates another one right now.
pub fn is_replica() -> bool {
    IS_REPLICA.load(Ordering::Relaxed)
}

/// Reads the current role and subscribes to changes.
///
/// # Errors
/// When Redis lacks the APIs or refuses the subscription.
pub fn follow(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let flags =
        unsafe { raw::RedisModule_GetContextFlags }.ok_or("no RedisModule_GetContextFlags")?;
    let replica = unsafe { flags(ctx) } as u32 & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0;
    IS_REPLICA.store(replica, Ordering::Relaxed);
    let subscribe = unsafe { raw::RedisModule_SubscribeToServerEvent }
        .ok_or("no RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        dataver: 1,
    };
    if unsafe { subscribe(ctx, event, Some(on_role_changed)) } != raw::REDISMODULE_OK as c_int {
        return Err("could not subscribe to replication role changes".into());
    }
    Ok(())
}

extern "C" fn on_role_changed(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    let replica = subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA;
    IS_REPLICA.store(replica, Ordering::Relaxed);
}

//! A primary's replicas: told when one comes online, and sent this node's worker-id claim over
//! the replication link (`identity.rs`). Raw because redis-module 2.0 has no handler for the
//! replica-change event, and its `replicate` builds a C string per call from a `&str` command.

use std::os::raw::{c_longlong, c_void};

use redis_module::{raw, Context};

use super::api;

/// What Redis calls on a server event.
pub type EventCallback =
    extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

/// Has Redis call `callback` on this node's replica-change events; `is_online` tells which.
///
/// # Errors
/// When Redis lacks server events or refuses the subscription.
pub fn on_change(ctx: &Context, callback: EventCallback) -> Result<(), String> {
    let subscribe = api!(RedisModule_SubscribeToServerEvent)
        .ok_or("this Redis lacks RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_REPLICA_CHANGE,
        dataver: 1,
    };
    // SAFETY: called from OnLoad with its live context; the callback is a plain function that
    // lives as long as the process (the module is never unloaded).
    let status = unsafe { subscribe(ctx.ctx, event, Some(callback)) };
    if status == raw::REDISMODULE_OK as i32 {
        Ok(())
    } else {
        Err("Redis refused the replica-change event's subscription".into())
    }
}

/// Whether a replica-change event's subevent says a replica came online.
pub fn is_online(subevent: u64) -> bool {
    subevent == raw::REDISMODULE_SUBEVENT_REPLICA_CHANGE_ONLINE
}

/// Sends `IDGEN.CLAIM datacenter worker` to the replicas (and the AOF, whose replay ignores it).
pub fn send_claim(ctx: &Context, datacenter: u64, worker: u64) {
    let Some(replicate) = api!(RedisModule_Replicate) else {
        return;
    };
    // SAFETY: a live context (a timer's, on Redis's thread); "ll" matches the two integers.
    unsafe {
        replicate(
            ctx.ctx,
            c"IDGEN.CLAIM".as_ptr(),
            c"ll".as_ptr(),
            datacenter as c_longlong,
            worker as c_longlong,
        )
    };
}

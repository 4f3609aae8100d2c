//! A primary's replicas: told when one comes online, sent this node's worker-id claim over the
//! replication link (`crate::identity`), asked how far they are (`replica_acks.rs`). Raw because
//! redis-module 2.0 has no handler for the replica-change event, and its `replicate` builds a C
//! string per call from a `&str` command and has no flags.

use std::os::raw::{c_longlong, c_void};

use redis_module::{raw, Context, RedisValue};

use super::api;
use crate::replica_acks::Replication;

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

/// This primary's replication offset and its online replicas' (INFO replication).
pub fn replication(ctx: &Context) -> Replication {
    match ctx.call("INFO", &["replication"]) {
        Ok(RedisValue::SimpleString(text) | RedisValue::BulkString(text)) => {
            Replication::parse(&text)
        }
        _ => Replication::default(),
    }
}

/// `min-replicas-to-write` (0 when it cannot be read).
pub fn min_replicas_to_write(ctx: &Context) -> i64 {
    match ctx.call("CONFIG", &["GET", "min-replicas-to-write"]) {
        Ok(RedisValue::Array(pair)) => match pair.get(1) {
            Some(RedisValue::BulkString(n) | RedisValue::SimpleString(n)) => n.parse().unwrap_or(0),
            _ => 0,
        },
        _ => 0,
    }
}

/// `RedisModule_Replicate`, where this node may add to the replication stream from a timer:
/// not while clients are paused (CLIENT PAUSE, a manual failover), where Redis asserts that
/// nothing is propagated.
fn replicator() -> Option<Replicate> {
    let replicate = api!(RedisModule_Replicate)?;
    let avoid = api!(RedisModule_AvoidReplicaTraffic)?;
    // SAFETY: takes nothing and reads a server flag; called on Redis's thread.
    (unsafe { avoid() } == 0).then_some(replicate)
}

type Replicate = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *const std::os::raw::c_char,
    *const std::os::raw::c_char,
    ...
) -> std::os::raw::c_int;

/// Asks the replicas to acknowledge their offsets now (`REPLCONF GETACK *`, as `WAIT` does),
/// from a timer (after the writes waited for were propagated), to the replicas only. Nothing
/// while clients are paused: the replicas still acknowledge once a second by themselves.
pub fn ask_for_acks(ctx: &Context) {
    let Some(replicate) = replicator() else {
        return;
    };
    // SAFETY: a live context (a timer's, on Redis's thread); "A" keeps the command out of the
    // AOF, "cc" matches the two C strings.
    unsafe {
        replicate(
            ctx.ctx,
            c"REPLCONF".as_ptr(),
            c"Acc".as_ptr(),
            c"GETACK".as_ptr(),
            c"*".as_ptr(),
        )
    };
}

/// Sends `IDGEN.CLAIM datacenter worker` to the replicas (and the AOF, whose replay ignores it),
/// from a timer; not while clients are paused (the next replica to come online hears it).
pub fn send_claim(ctx: &Context, datacenter: u64, worker: u64) {
    let Some(replicate) = replicator() else {
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

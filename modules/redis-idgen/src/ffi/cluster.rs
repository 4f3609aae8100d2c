//! Redis Cluster's bus for modules: whether this server is a cluster node, messages to every
//! other node, and a repeating timer on Redis's thread to send them from.

use std::os::raw::{c_char, c_uchar, c_void};
use std::sync::OnceLock;

use redis_module::raw;

use super::api;

/// Whether this server runs with `cluster-enabled yes`.
pub fn is_cluster_node(ctx: *mut raw::RedisModuleCtx) -> bool {
    match api!(RedisModule_GetContextFlags) {
        // SAFETY: a live context (OnLoad's, or a timer's).
        Some(flags) => (unsafe { flags(ctx) }) as u32 & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0,
        None => false,
    }
}

/// Has Redis call `receive(sender_node_id, payload)` for each message of `kind` from another
/// node. One receiver per module.
///
/// # Errors
/// When Redis lacks the API.
pub fn on_message(
    ctx: *mut raw::RedisModuleCtx,
    kind: u8,
    receive: fn(&str, &[u8]),
) -> Result<(), String> {
    static RECEIVE: OnceLock<fn(&str, &[u8])> = OnceLock::new();
    extern "C" fn call(
        _: *mut raw::RedisModuleCtx,
        sender: *const c_char,
        _: u8,
        payload: *const c_uchar,
        len: u32,
    ) {
        let Some(receive) = RECEIVE.get() else { return };
        if sender.is_null() || (payload.is_null() && len > 0) {
            return;
        }
        // SAFETY: Redis passes the sender's node ID as REDISMODULE_NODE_ID_LEN bytes, not
        // NUL-terminated; it lives for this call.
        let id = unsafe { std::slice::from_raw_parts(sender.cast::<u8>(), NODE_ID_LEN) };
        let payload = if len == 0 {
            &[][..]
        } else {
            // SAFETY: `len` bytes of payload, alive for this call (checked non-null above).
            unsafe { std::slice::from_raw_parts(payload, len as usize) }
        };
        receive(&String::from_utf8_lossy(id), payload);
    }
    let _ = RECEIVE.set(receive);
    let register = api!(RedisModule_RegisterClusterMessageReceiver)
        .ok_or("no RedisModule_RegisterClusterMessageReceiver")?;
    // SAFETY: the OnLoad context and a callback of the expected signature.
    unsafe { register(ctx, kind, Some(call)) };
    Ok(())
}

/// Length of a cluster node ID.
const NODE_ID_LEN: usize = raw::REDISMODULE_NODE_ID_LEN as usize;

/// Sends `payload` as a message of `kind` to every other node; false if Redis refused (not a
/// cluster node, or the bus is down).
pub fn broadcast(ctx: *mut raw::RedisModuleCtx, kind: u8, payload: &[u8]) -> bool {
    let Some(send) = api!(RedisModule_SendClusterMessage) else {
        return false;
    };
    // SAFETY: a live context; a null target means every node; Redis copies `payload`.
    let status = unsafe {
        send(
            ctx,
            std::ptr::null(),
            kind,
            payload.as_ptr().cast::<c_char>(),
            payload.len() as u32,
        )
    };
    status == raw::REDISMODULE_OK as i32
}

/// Calls `tick(ctx)` on Redis's thread every `period_ms`, from now on, for the life of the
/// server (the module cannot be unloaded).
///
/// # Errors
/// When Redis lacks the timer API.
pub fn every(
    ctx: *mut raw::RedisModuleCtx,
    period_ms: i64,
    tick: fn(*mut raw::RedisModuleCtx),
) -> Result<(), String> {
    type Tick = fn(*mut raw::RedisModuleCtx);
    static TICK: OnceLock<(i64, Tick)> = OnceLock::new();
    extern "C" fn fire(ctx: *mut raw::RedisModuleCtx, _: *mut c_void) {
        if let Some((period, tick)) = TICK.get() {
            tick(ctx);
            // Redis timers fire once: arm the next one.
            schedule(ctx, *period);
        }
    }
    fn schedule(ctx: *mut raw::RedisModuleCtx, period_ms: i64) {
        if let Some(create) = api!(RedisModule_CreateTimer) {
            // SAFETY: a live context and a callback of the expected signature; no data.
            unsafe { create(ctx, period_ms, Some(fire), std::ptr::null_mut()) };
        }
    }
    api!(RedisModule_CreateTimer).ok_or("no RedisModule_CreateTimer")?;
    let _ = TICK.set((period_ms, tick));
    schedule(ctx, period_ms);
    Ok(())
}

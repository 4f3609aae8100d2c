//! Redis Cluster's bus for modules: messages to every other node, and the receiver of theirs.
//! Raw because redis-module 2.0 wraps neither `RM_SendClusterMessage` nor
//! `RM_RegisterClusterMessageReceiver`.

use std::os::raw::{c_char, c_uchar};

use redis_module::{raw, Context};

use super::api;

/// Length of a cluster node ID.
const NODE_ID_LEN: usize = raw::REDISMODULE_NODE_ID_LEN as usize;

/// What hears the messages of one kind from the other nodes.
pub trait Receiver {
    /// A message from node `sender` (its cluster node ID).
    fn receive(sender: &str, payload: &[u8]);
}

/// Has Redis call `R::receive` for each message of `kind` from another node.
///
/// # Errors
/// When Redis lacks the API.
pub fn on_message<R: Receiver>(ctx: &Context, kind: u8) -> Result<(), String> {
    extern "C" fn call<R: Receiver>(
        _: *mut raw::RedisModuleCtx,
        sender: *const c_char,
        _: u8,
        payload: *const c_uchar,
        len: u32,
    ) {
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
        R::receive(&String::from_utf8_lossy(id), payload);
    }
    let register = api!(RedisModule_RegisterClusterMessageReceiver)
        .ok_or("no RedisModule_RegisterClusterMessageReceiver")?;
    // SAFETY: the OnLoad context and a callback of the expected signature.
    unsafe { register(ctx.ctx, kind, Some(call::<R>)) };
    Ok(())
}

/// Sends `payload` as a message of `kind` to every other node; false if Redis refused (not a
/// cluster node, or the bus is down).
pub fn broadcast(ctx: &Context, kind: u8, payload: &[u8]) -> bool {
    let Some(send) = api!(RedisModule_SendClusterMessage) else {
        return false;
    };
    // SAFETY: a live context; a null target means every node; Redis copies `payload`.
    let status = unsafe {
        send(
            ctx.ctx,
            std::ptr::null(),
            kind,
            payload.as_ptr().cast::<c_char>(),
            payload.len() as u32,
        )
    };
    status == raw::REDISMODULE_OK as i32
}

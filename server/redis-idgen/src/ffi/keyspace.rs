//! Keyspace events: state that reaches this node from another (`restore`, which `MIGRATE`
//! runs on its target too, `copy_to`, and on a replica the `incrby` of each DATESEQ value its
//! primary handed out). Raw because redis-module subscribes only from its `redis_module!`
//! macro, at load, and a replica's subscription to string events is made only when it becomes
//! one: a primary would pay for it on every DATESEQ.NEXT, whose own `incrby` it would hear.

use std::os::raw::{c_char, c_int};

use redis_module::{raw, Context, RedisString};

use super::api;

/// What hears the events of one subscription.
pub trait Listener {
    /// `event` (Redis's name for it, e.g. `restore`) happened to `key`, on Redis's thread.
    fn heard(ctx: &Context, event: &[u8], key: &RedisString);
}

/// The kinds of event a subscription takes.
#[derive(Clone, Copy)]
pub enum Kinds {
    /// DEL, EXPIRE, RENAME, RESTORE, COPY and their like.
    Generic,
    /// What a replica takes in: writes to string keys (SET, INCRBY, ...), and each key of a
    /// full sync's RDB (`loaded`).
    Replicated,
}

/// Has Redis call `L::heard` for every event of `kinds`, for the life of the process.
///
/// # Errors
/// When Redis lacks the API or refuses.
pub fn subscribe<L: Listener>(ctx: &Context, kinds: Kinds) -> Result<(), String> {
    extern "C" fn call<L: Listener>(
        ctx: *mut raw::RedisModuleCtx,
        _: c_int,
        event: *const c_char,
        key: *mut raw::RedisModuleString,
    ) -> c_int {
        if ctx.is_null() || event.is_null() || key.is_null() {
            return raw::REDISMODULE_OK as c_int;
        }
        // SAFETY: Redis passes the event's name as a NUL-terminated static string, alive for
        // this call.
        let event = unsafe { std::ffi::CStr::from_ptr(event) }.to_bytes();
        let ctx = Context::new(ctx);
        // A copy: the key of a `loaded` event must not be retained.
        let key =
            RedisString::create_from_slice(std::ptr::null_mut(), RedisString::string_as_slice(key));
        L::heard(&ctx, event, &key);
        raw::REDISMODULE_OK as c_int
    }
    let subscribe = api!(RedisModule_SubscribeToKeyspaceEvents)
        .ok_or("no RedisModule_SubscribeToKeyspaceEvents")?;
    let types = match kinds {
        Kinds::Generic => raw::REDISMODULE_NOTIFY_GENERIC,
        Kinds::Replicated => raw::REDISMODULE_NOTIFY_STRING | raw::REDISMODULE_NOTIFY_LOADED,
    } as c_int;
    // SAFETY: a live context (OnLoad's, or a server event's on Redis's thread); the callback
    // has the signature Redis expects and lives as long as the process (the module is never
    // unloaded).
    let status = unsafe { subscribe(ctx.ctx, types, Some(call::<L>)) };
    if status == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err("Redis refused a keyspace event subscription".into())
    }
}

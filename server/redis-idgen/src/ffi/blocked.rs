//! Blocking a client until another thread has its answer, and hearing of the server's shutdown.
//!
//! Raw because the crate's `block_client` registers no reply callback: its answer must be
//! written from the other thread through a thread-safe context, where this module's replies
//! (which need the module's state: Sqids, the sealing key) cannot run. With a reply callback,
//! Redis hands the answer back to its main thread, which replies as any command does. The crate
//! has no call for the shutdown event either.

use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};

use redis_module::raw;

use super::api;
use super::ctx::Ctx;

/// An answer a blocked client gets on Redis's main thread.
pub trait Answer: Send + 'static {
    /// Replies to the client (on the main thread, with `ctx` the reply's context).
    fn answer(self, ctx: &Ctx);
}

/// A client blocked until [`Blocked::finish`] hands it its answer.
pub struct Blocked<A: Answer> {
    client: *mut raw::RedisModuleBlockedClient,
    answer: PhantomData<A>,
}

// SAFETY: RM_UnblockClient, the one call made with the handle after blocking, may be called
// from any thread (Redis takes a lock and wakes its main thread); the answer sent is `Send`.
unsafe impl<A: Answer> Send for Blocked<A> {}

impl<A: Answer> Blocked<A> {
    /// Blocks the client of the command `ctx` is running; `None` when it may not be blocked
    /// (inside MULTI, a script, or a client that forbids it) or this Redis lacks the calls.
    pub fn block(ctx: &Ctx) -> Option<Blocked<A>> {
        if !may_block(ctx) {
            return None;
        }
        let (block, _, _) = (
            api!(RedisModule_BlockClient)?,
            api!(RedisModule_UnblockClient)?,
            api!(RedisModule_GetBlockedClientPrivateData)?,
        );
        // SAFETY: a live command context (Ctx::new's contract), of a client that may block
        // (checked above); the callbacks are this file's, matching the private data's type.
        let client = unsafe { block(ctx.raw(), Some(reply::<A>), None, Some(free::<A>), 0) };
        (!client.is_null()).then_some(Blocked {
            client,
            answer: PhantomData,
        })
    }

    /// Hands the client `answer`, from any thread: Redis replies with it on its main thread.
    pub fn finish(self, answer: A) {
        let Some(unblock) = api!(RedisModule_UnblockClient) else {
            return;
        };
        let data = Box::into_raw(Box::new(Some(answer)));
        // SAFETY: the handle came from RM_BlockClient and is unblocked once (this consumes
        // it); Redis owns `data` from here and frees it through `free::<A>`.
        unsafe { unblock(self.client, data.cast()) };
    }
}

/// Whether the client of the command `ctx` is running may be blocked: not inside MULTI, a
/// script, or a client that forbids it.
pub fn may_block(ctx: &Ctx) -> bool {
    let unblockable = redis_module::ContextFlags::MULTI
        | redis_module::ContextFlags::LUA
        | redis_module::ContextFlags::DENY_BLOCKING;
    !ctx.safe().get_flags().intersects(unblockable)
}

/// Redis's reply callback: takes the answer out of the private data and replies with it.
extern "C" fn reply<A: Answer>(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let Some(data) = api!(RedisModule_GetBlockedClientPrivateData) else {
        return raw::REDISMODULE_OK as c_int;
    };
    // SAFETY: Redis calls this on its main thread with the blocked client's reply context; the
    // private data is the `Box<Option<A>>` `finish` gave, freed only by `free` after this.
    let answer = unsafe { data(ctx).cast::<Option<A>>().as_mut() }.and_then(Option::take);
    if let Some(answer) = answer {
        // SAFETY: the reply context lives for this callback, which the Ctx does not outlive.
        answer.answer(&unsafe { Ctx::new(ctx) });
    }
    raw::REDISMODULE_OK as c_int
}

/// Redis's free callback for the private data (also when the client went away unanswered).
extern "C" fn free<A: Answer>(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` is the `Box<Option<A>>` made in `finish`, freed once, here.
        drop(unsafe { Box::from_raw(data.cast::<Option<A>>()) });
    }
}

/// Has Redis call `on_shutdown` on its main thread when it shuts down cleanly (after its last
/// save, before it exits).
///
/// # Errors
/// When Redis lacks server events or refuses the subscription.
pub fn on_shutdown(
    ctx: *mut raw::RedisModuleCtx,
    on_shutdown: extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void),
) -> Result<(), String> {
    let subscribe = api!(RedisModule_SubscribeToServerEvent)
        .ok_or("this Redis lacks RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_SHUTDOWN,
        dataver: 1,
    };
    // SAFETY: called from OnLoad with its live context; the callback is a plain function that
    // lives as long as the process (the module is never unloaded).
    let status = unsafe { subscribe(ctx, event, Some(on_shutdown)) };
    if status == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err("Redis refused the shutdown event's subscription".into())
    }
}

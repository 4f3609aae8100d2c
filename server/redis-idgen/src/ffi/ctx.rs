//! The context of one command call, as Redis passed it.

use std::ffi::CString;

use redis_module::{raw, Context};

use super::api;

/// The context of one command call, valid for that call only. Its replies are in
/// `crate::reply`.
pub struct Ctx(*mut raw::RedisModuleCtx);

impl Ctx {
    /// Wraps the context Redis passed to a command.
    ///
    /// # Safety
    /// `ctx` must be the live context of the command being run, and the `Ctx` must not outlive
    /// the call.
    pub unsafe fn new(ctx: *mut raw::RedisModuleCtx) -> Self {
        Ctx(ctx)
    }

    /// The raw context, for redis-module's reply and key functions.
    pub fn raw(&self) -> *mut raw::RedisModuleCtx {
        self.0
    }

    /// The same context through redis-module's `Context` (RM_Call, flags, ACL checks).
    pub fn safe(&self) -> Context {
        Context::new(self.0)
    }

    /// The ID of this call's client; 0 when there is none. Raw, as are the two below: the
    /// crate has no call for it.
    pub fn client_id(&self) -> u64 {
        let Some(get) = api!(RedisModule_GetClientId) else {
            return 0;
        };
        // SAFETY: a live command context (Ctx::new's contract); the call only reads it.
        unsafe { get(self.0) }
    }

    /// Whether client `id` is a connection: Redis finds it among its connected clients, where
    /// the clients of scripts and of `RM_Call` never are.
    pub fn is_connection(id: u64) -> bool {
        let Some(find) = api!(RedisModule_GetClientInfoById) else {
            return false;
        };
        // SAFETY: with a null info pointer, Redis only looks the ID up and writes nothing.
        unsafe { find(std::ptr::null_mut(), id) == raw::REDISMODULE_OK as i32 }
    }

    /// Replies with an error; `text` starts with its code, e.g. `ERR`. Raw because
    /// redis-module's error replies cut every character to one byte (a quoted non-ASCII
    /// argument would make the reply invalid UTF-8) and panic on text that is not UTF-8.
    pub fn reply_error_text(&self, text: &str) {
        let Ok(text) = CString::new(text.replace(['\0', '\r', '\n'], " ")) else {
            return;
        };
        if let Some(reply) = api!(RedisModule_ReplyWithError) {
            // SAFETY: a live command context (Ctx::new's contract); `text` is NUL-terminated
            // and copied by Redis.
            unsafe { reply(self.0, text.as_ptr()) };
        }
    }
}

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

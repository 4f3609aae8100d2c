//! The context of one command call, as Redis passed it.

use redis_module::{raw, Context};

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
}

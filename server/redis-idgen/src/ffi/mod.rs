//! The calls into Redis's C API that redis-module cannot make, or makes measurably slower: the
//! rest of the crate uses the crate's safe API and has no `unsafe`. Each file says why its
//! calls are raw, and each block why it is sound; most rest on two facts about Redis:
//!
//! - Redis fills its API table (the `RedisModule_*` function pointers) in
//!   `RedisModule_Init`, before it calls anything else in the module, and never changes it;
//!   [`api!`] reads a copy of one pointer and answers `None` where this Redis lacks it.
//! - Commands, configuration callbacks and server events run on Redis's main thread, which
//!   owns every `RedisModuleCtx`, key and string handed to them for the length of the call.

pub mod blocked;
pub mod cluster;
pub mod ctx;
pub mod key;
pub mod keyspace;
pub mod module;
pub mod namespaces;
pub mod replicas;
pub mod reply;

use std::ffi::CString;

/// The Redis API function `$name`, or `None` where this Redis lacks it.
macro_rules! api {
    ($name:ident) => {{
        #[allow(unused_unsafe)]
        // SAFETY: the table is written once by RedisModule_Init, before the module runs any of
        // its code, and only read afterwards; this copies one function pointer out of it.
        let f = unsafe { redis_module::raw::$name };
        f
    }};
}
pub(crate) use api;

/// Writes a line to the Redis log at `level` (`warning`, `notice`, ...), from any thread.
/// Raw because the crate's log passes the message as the format string (a `%` in a namespace's
/// name would be read as a conversion) and panics on a NUL byte.
pub fn log(level: &str, text: &str) {
    let (Ok(level), Ok(text)) = (CString::new(level), CString::new(text.replace('\0', " "))) else {
        return;
    };
    if let Some(log) = api!(RedisModule_Log) {
        // SAFETY: RedisModule_Log accepts a null context and may be called from any thread;
        // both strings are NUL-terminated and outlive the call, and "%s" consumes exactly the
        // one argument given.
        unsafe {
            log(
                std::ptr::null_mut(),
                level.as_ptr(),
                c"%s".as_ptr(),
                text.as_ptr(),
            )
        };
    }
}

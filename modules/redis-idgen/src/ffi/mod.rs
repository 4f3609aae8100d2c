//! Every call into Redis's C API, behind small safe functions: the rest of the crate has no
//! `unsafe`. Each block says why it is sound; most rest on two facts about Redis:
//!
//! - Redis fills its API table (the `RedisModule_*` function pointers) in
//!   `RedisModule_Init`, before it calls anything else in the module, and never changes it;
//!   [`api!`] reads a copy of one pointer and answers `None` where this Redis lacks it.
//! - Commands, configuration callbacks and server events run on Redis's main thread, which
//!   owns every `RedisModuleCtx`, key and string handed to them for the length of the call.

pub mod cluster;
pub mod config;
pub mod ctx;
pub mod key;
pub mod module;

use std::ffi::CString;
use std::os::raw::c_char;

use redis_module::raw;

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

/// Like [`api!`], but returns [`crate::error::CommandError::MissingApi`] from the enclosing
/// function where this Redis lacks the function.
macro_rules! need {
    ($name:ident) => {
        match $crate::ffi::api!($name) {
            Some(f) => f,
            None => return Err($crate::error::CommandError::MissingApi(stringify!($name))),
        }
    };
}
pub(crate) use need;

/// Writes a line to the Redis log at `level` (`warning`, `notice`, ...), from any thread.
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

/// The bytes of a Redis string, borrowed for as long as Redis keeps the string alive (the
/// arguments of a command: the whole call).
///
/// # Safety
/// `s` must be a live Redis string that outlives `'a` and is not modified meanwhile.
pub unsafe fn bytes<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let Some(ptr_len) = api!(RedisModule_StringPtrLen) else {
        return &[];
    };
    let mut len = 0;
    // SAFETY: the caller promises `s` is a live Redis string; `len` is a valid out-pointer.
    let ptr: *const c_char = unsafe { ptr_len(s, &mut len) };
    if ptr.is_null() {
        return &[];
    }
    // SAFETY: Redis returns the string's buffer and its exact length; the caller promises the
    // string lives, unchanged, for 'a.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// A new Redis string holding `bytes` (NUL bytes included), owned by the caller, not tied to
/// any context. Null if Redis lacks the API.
pub fn new_string(bytes: &[u8]) -> *mut raw::RedisModuleString {
    match api!(RedisModule_CreateString) {
        // SAFETY: a null context makes an unmanaged string; Redis copies `len` bytes from `ptr`.
        Some(create) => unsafe { create(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) },
        None => std::ptr::null_mut(),
    }
}

/// Frees a string made by [`new_string`] (or retained with a null context).
pub fn free_string(s: *mut raw::RedisModuleString) {
    if s.is_null() {
        return;
    }
    if let Some(free) = api!(RedisModule_FreeString) {
        // SAFETY: `s` is an unmanaged string the caller owns one reference of, given up here.
        unsafe { free(std::ptr::null_mut(), s) };
    }
}

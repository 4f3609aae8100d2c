//! The per-day counter key, through Redis's key API: read and rewritten in place, so its TTL is
//! kept and no command is executed on the module's behalf.

use std::ffi::CStr;
use std::os::raw::c_longlong;

use redis_module::raw;

use crate::ctx::{api, Ctx};
use crate::error::CommandError;

/// A Redis string the module created, freed on drop.
pub struct KeyName<'c> {
    ctx: &'c Ctx,
    ptr: *mut raw::RedisModuleString,
}

impl<'c> KeyName<'c> {
    /// A Redis string holding `name`.
    pub fn new(ctx: &'c Ctx, name: &[u8]) -> Result<Self, CommandError> {
        let ptr =
            unsafe { api!(RedisModule_CreateString)(ctx.0, name.as_ptr().cast(), name.len()) };
        Ok(KeyName { ctx, ptr })
    }
}

impl Drop for KeyName<'_> {
    fn drop(&mut self) {
        if let Some(free) = unsafe { raw::RedisModule_FreeString } {
            unsafe { free(self.ctx.0, self.ptr) };
        }
    }
}

/// An open key, closed on drop.
pub struct Counter<'c> {
    ctx: &'c Ctx,
    name: &'c KeyName<'c>,
    key: *mut raw::RedisModuleKey,
}

impl<'c> Counter<'c> {
    /// Opens the counter key, for writing when `write`.
    pub fn open(ctx: &'c Ctx, name: &'c KeyName<'c>, write: bool) -> Result<Self, CommandError> {
        let mode = raw::REDISMODULE_READ | if write { raw::REDISMODULE_WRITE } else { 0 };
        let key = unsafe { api!(RedisModule_OpenKey)(ctx.0, name.ptr, mode as _) };
        Ok(Counter { ctx, name, key })
    }

    /// The counter's value; `None` when the key does not exist.
    ///
    /// # Errors
    /// WRONGTYPE for a non-string key, [`CommandError::BadCounter`] for a non-numeric string.
    pub fn get(&self) -> Result<Option<u64>, CommandError> {
        match unsafe { api!(RedisModule_KeyType)(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_STRING => {}
            _ => return Err(CommandError::WrongType),
        }
        let mut len = 0;
        let ptr =
            unsafe { api!(RedisModule_StringDMA)(self.key, &mut len, raw::REDISMODULE_READ as _) };
        if ptr.is_null() {
            return Err(CommandError::BadCounter);
        }
        let text = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        parse_counter(text)
            .map(Some)
            .ok_or(CommandError::BadCounter)
    }

    /// Creates the key at `value` expiring at `expire_at_ms`, and propagates
    /// `INCRBY key value` + `PEXPIREAT key expire_at_ms` to replicas and the AOF.
    pub fn create(&self, value: u64, expire_at_ms: i64) -> Result<(), CommandError> {
        let number = unsafe { api!(RedisModule_CreateStringFromLongLong)(self.ctx.0, value as _) };
        unsafe {
            api!(RedisModule_StringSet)(self.key, number);
            api!(RedisModule_FreeString)(self.ctx.0, number);
            api!(RedisModule_SetAbsExpire)(self.key, expire_at_ms);
        }
        self.propagate_incrby(value)?;
        let replicate = api!(RedisModule_Replicate);
        unsafe {
            replicate(
                self.ctx.0,
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name.ptr,
                expire_at_ms as c_longlong,
            );
        }
        Ok(())
    }

    /// Rewrites an existing key's value in place from `old` to `old + 1`, keeping its TTL, and
    /// propagates `INCRBY key 1`.
    pub fn increment(&self, old: u64) -> Result<(), CommandError> {
        let mut buf = [0u8; 20];
        let text = format_u64(old + 1, &mut buf);
        let dma = api!(RedisModule_StringDMA);
        let mut len = 0;
        let mut ptr = unsafe { dma(self.key, &mut len, raw::REDISMODULE_WRITE as _) };
        if len != text.len() {
            unsafe { api!(RedisModule_StringTruncate)(self.key, text.len()) };
            ptr = unsafe { dma(self.key, &mut len, raw::REDISMODULE_WRITE as _) };
        }
        if ptr.is_null() || len != text.len() {
            return Err(CommandError::BadCounter);
        }
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), ptr.cast::<u8>(), len) };
        self.propagate_incrby(1)
    }

    fn propagate_incrby(&self, by: u64) -> Result<(), CommandError> {
        let replicate = api!(RedisModule_Replicate);
        let notify = api!(RedisModule_NotifyKeyspaceEvent);
        unsafe {
            replicate(
                self.ctx.0,
                c"INCRBY".as_ptr(),
                c"sl".as_ptr(),
                self.name.ptr,
                by as c_longlong,
            );
            notify(
                self.ctx.0,
                raw::REDISMODULE_NOTIFY_STRING,
                INCRBY_EVENT.as_ptr(),
                self.name.ptr,
            );
        }
        Ok(())
    }
}

impl Drop for Counter<'_> {
    fn drop(&mut self) {
        if let Some(close) = unsafe { raw::RedisModule_CloseKey } {
            unsafe { close(self.key) };
        }
    }
}

const INCRBY_EVENT: &CStr = c"incrby";

/// A counter value: decimal digits only, as INCRBY writes them, and not negative.
fn parse_counter(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn format_u64(mut value: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buf[at..];
        }
    }
}

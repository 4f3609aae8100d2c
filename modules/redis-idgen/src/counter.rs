//! The per-day counter key, through Redis's key API: read and rewritten in place, so its TTL is
//! kept and no command is executed on the module's behalf.

use std::os::raw::c_longlong;

use redis_module::raw;

use crate::ctx::{api, Ctx};
use crate::error::CommandError;

/// A reference to a Redis string holding a key name, released on drop.
pub struct KeyName(*mut raw::RedisModuleString);

impl Drop for KeyName {
    fn drop(&mut self) {
        if let Some(free) = unsafe { raw::RedisModule_FreeString } {
            unsafe { free(std::ptr::null_mut(), self.0) };
        }
    }
}

/// The counter key name last used, kept between calls: most calls name the same prefix on the
/// same day, and making a fresh Redis string for each would cost an allocation.
#[derive(Default)]
pub struct KeyNameCache {
    bytes: Vec<u8>,
    name: Option<KeyName>,
}

// SAFETY: the Redis string is only touched from Redis's main thread, inside commands.
unsafe impl Send for KeyNameCache {}

impl KeyNameCache {
    /// A reference to a Redis string holding `bytes`.
    pub fn get(&mut self, bytes: &[u8]) -> Result<KeyName, CommandError> {
        let cached = match &self.name {
            Some(name) if self.bytes == bytes => name.0,
            _ => {
                self.name = None;
                let create = api!(RedisModule_CreateString);
                let ptr =
                    unsafe { create(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) };
                self.bytes.clear();
                self.bytes.extend_from_slice(bytes);
                self.name = Some(KeyName(ptr));
                ptr
            }
        };
        unsafe { api!(RedisModule_RetainString)(std::ptr::null_mut(), cached) };
        Ok(KeyName(cached))
    }
}

/// An open key, closed on drop.
pub struct Counter<'c> {
    ctx: &'c Ctx,
    name: &'c KeyName,
    key: *mut raw::RedisModuleKey,
}

impl<'c> Counter<'c> {
    /// Opens the counter key, for writing when `write`.
    pub fn open(ctx: &'c Ctx, name: &'c KeyName, write: bool) -> Result<Self, CommandError> {
        let mode = raw::REDISMODULE_READ | if write { raw::REDISMODULE_WRITE } else { 0 };
        let key = unsafe { api!(RedisModule_OpenKey)(ctx.0, name.0, mode as _) };
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

    /// Creates the key at 1 expiring at `expire_at_ms`, and propagates
    /// `INCR key` + `PEXPIREAT key expire_at_ms` to replicas and the AOF.
    pub fn create(&self, expire_at_ms: i64) -> Result<(), CommandError> {
        let number = unsafe { api!(RedisModule_CreateStringFromLongLong)(self.ctx.0, 1) };
        unsafe {
            api!(RedisModule_StringSet)(self.key, number);
            api!(RedisModule_FreeString)(self.ctx.0, number);
            api!(RedisModule_SetAbsExpire)(self.key, expire_at_ms);
        }
        self.propagate_incr()?;
        let replicate = api!(RedisModule_Replicate);
        unsafe {
            replicate(
                self.ctx.0,
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name.0,
                expire_at_ms as c_longlong,
            );
        }
        Ok(())
    }

    /// Rewrites an existing key's value in place from `old` to `old + 1`, keeping its TTL, and
    /// propagates `INCR key`.
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
        self.propagate_incr()
    }

    /// `INCR key`: the shortest explicit, deterministic form of the write, for replicas and the
    /// AOF, and the keyspace event INCR itself fires.
    fn propagate_incr(&self) -> Result<(), CommandError> {
        let replicate = api!(RedisModule_Replicate);
        let notify = api!(RedisModule_NotifyKeyspaceEvent);
        let string = raw::REDISMODULE_NOTIFY_STRING;
        unsafe {
            replicate(self.ctx.0, c"INCR".as_ptr(), c"s".as_ptr(), self.name.0);
            notify(self.ctx.0, string, c"incrby".as_ptr(), self.name.0);
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

/// A counter value: decimal digits only, as INCRBY writes them, and not negative.
fn parse_counter(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 18 {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + (b - b'0') as u64)
    })
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

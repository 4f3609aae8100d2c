//! The per-day counter key, through Redis's key API: read and rewritten in place, so its TTL is
//! kept and no command is executed on the module's behalf.

use std::os::raw::c_longlong;

use idgen_core::dateseq::counter_key;
use redis_module::raw;

use super::ctx::{decimal, Ctx};
use super::{api, free_string, need, new_string};
use crate::error::CommandError;

/// One reference to an unmanaged Redis string holding a key name, released on drop.
pub struct KeyName(*mut raw::RedisModuleString);

impl Drop for KeyName {
    fn drop(&mut self) {
        free_string(self.0);
    }
}

/// The counter key name last used, kept between calls: most calls name the same prefix on the
/// same day, and naming the key afresh (and making a Redis string of it) would cost more than
/// the rest of the call's own work.
#[derive(Default)]
pub struct KeyNameCache {
    prefix: Vec<u8>,
    date: u32,
    name: Option<KeyName>,
    buf: Vec<u8>,
}

// SAFETY: the cached Redis string is only touched on Redis's main thread, inside commands (the
// cache lives in the state mutex, which only commands lock).
unsafe impl Send for KeyNameCache {}

impl KeyNameCache {
    /// A reference to a Redis string naming the counter key of `prefix` on `date`.
    ///
    /// # Errors
    /// The prefix cannot name a key ([`counter_key`]'s errors).
    pub fn get(&mut self, prefix: &[u8], date: u32) -> Result<KeyName, CommandError> {
        let retain = need!(RedisModule_RetainString);
        let cached = match &self.name {
            Some(name) if self.date == date && self.prefix == prefix => name.0,
            _ => {
                self.name = None;
                counter_key(prefix, date, &mut self.buf)?;
                let ptr = new_string(&self.buf);
                if ptr.is_null() {
                    return Err(CommandError::MissingApi("RedisModule_CreateString"));
                }
                self.prefix.clear();
                self.prefix.extend_from_slice(prefix);
                self.date = date;
                self.name = Some(KeyName(ptr));
                ptr
            }
        };
        // SAFETY: `cached` is a live unmanaged string (the cache holds a reference); a null
        // context retains it without tying it to a call. The KeyName returned releases it.
        unsafe { retain(std::ptr::null_mut(), cached) };
        Ok(KeyName(cached))
    }
}

/// An open key, closed on drop; null when opened for reading and absent.
pub struct Counter<'c> {
    ctx: &'c Ctx,
    name: &'c KeyName,
    key: *mut raw::RedisModuleKey,
}

impl<'c> Counter<'c> {
    /// Opens the counter key, for writing when `write`.
    ///
    /// # Errors
    /// NOPERM when the caller's ACL user may not read (or write) the key: the command declares
    /// the prefix as its key, so Redis itself only checked the prefix.
    pub fn open(ctx: &'c Ctx, name: &'c KeyName, write: bool) -> Result<Self, CommandError> {
        check_acl(ctx, name, write)?;
        let open = need!(RedisModule_OpenKey);
        let mode = raw::REDISMODULE_READ | if write { raw::REDISMODULE_WRITE } else { 0 };
        // SAFETY: a live command context and key name; the key is closed on drop, before the
        // call returns (Counter borrows the context).
        let key = unsafe { open(ctx.raw(), name.0, mode as _) };
        // Opened for reading only, a key that does not exist comes back null.
        if key.is_null() && write {
            return Err(CommandError::MissingApi("RedisModule_OpenKey"));
        }
        Ok(Counter { ctx, name, key })
    }

    /// The counter's value; `None` when the key does not exist.
    ///
    /// # Errors
    /// WRONGTYPE for a non-string key, [`CommandError::BadCounter`] for a non-numeric string.
    pub fn get(&self) -> Result<Option<u64>, CommandError> {
        if self.key.is_null() {
            return Ok(None);
        }
        let key_type = need!(RedisModule_KeyType);
        let dma = need!(RedisModule_StringDMA);
        // SAFETY: an open key (self.key lives until drop).
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_STRING => {}
            _ => return Err(CommandError::WrongType),
        }
        let mut len = 0;
        // SAFETY: an open string key; Redis returns its buffer and length.
        let ptr = unsafe { dma(self.key, &mut len, raw::REDISMODULE_READ as _) };
        if ptr.is_null() {
            return Err(CommandError::BadCounter);
        }
        // SAFETY: the buffer holds `len` bytes and is not touched until we write the key.
        let text = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        parse_counter(text)
            .map(Some)
            .ok_or(CommandError::BadCounter)
    }

    /// Creates the key at `value` expiring at `expire_at_ms`, and propagates
    /// `INCRBY key value` + `PEXPIREAT key expire_at_ms` to replicas and the AOF.
    pub fn create(&self, value: u64, expire_at_ms: i64) -> Result<(), CommandError> {
        let set = need!(RedisModule_StringSet);
        let expire = need!(RedisModule_SetAbsExpire);
        let replicate = need!(RedisModule_Replicate);
        let mut buf = [0u8; 20];
        let number = KeyName(new_string(decimal(value, &mut buf)));
        // SAFETY: an open, empty key and a live string, which StringSet copies (retains).
        unsafe {
            set(self.key, number.0);
            expire(self.key, expire_at_ms);
        }
        self.propagate_add(value)?;
        // SAFETY: a live command context; "sl" matches the two arguments that follow.
        unsafe {
            replicate(
                self.ctx.raw(),
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name.0,
                expire_at_ms as c_longlong,
            )
        };
        Ok(())
    }

    /// Rewrites an existing key's value in place from `old` to `old + n`, keeping its TTL, and
    /// propagates `INCR key` (or `INCRBY key n`).
    pub fn add(&self, old: u64, n: u64) -> Result<(), CommandError> {
        let dma = need!(RedisModule_StringDMA);
        let truncate = need!(RedisModule_StringTruncate);
        let mut buf = [0u8; 20];
        let text = decimal(old + n, &mut buf);
        let mut len = 0;
        // SAFETY: an open string key; with WRITE Redis unshares the value and returns its buffer.
        let mut ptr = unsafe { dma(self.key, &mut len, raw::REDISMODULE_WRITE as _) };
        if len != text.len() {
            // SAFETY: as above; the buffer is fetched again after resizing.
            unsafe {
                truncate(self.key, text.len());
                ptr = dma(self.key, &mut len, raw::REDISMODULE_WRITE as _);
            }
        }
        if ptr.is_null() || len != text.len() {
            return Err(CommandError::BadCounter);
        }
        // SAFETY: `ptr` points to `len` writable bytes of the key's value, and `text` is `len`
        // bytes long in our own buffer: the two cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), ptr.cast::<u8>(), len) };
        self.propagate_add(n)
    }

    /// `INCR key` or `INCRBY key n`: the shortest explicit, deterministic form of the write,
    /// for replicas and the AOF, and the keyspace event INCRBY itself fires.
    fn propagate_add(&self, n: u64) -> Result<(), CommandError> {
        let replicate = need!(RedisModule_Replicate);
        let notify = need!(RedisModule_NotifyKeyspaceEvent);
        // SAFETY: a live command context and key name; each format matches its arguments.
        unsafe {
            if n == 1 {
                replicate(self.ctx.raw(), c"INCR".as_ptr(), c"s".as_ptr(), self.name.0);
            } else {
                replicate(
                    self.ctx.raw(),
                    c"INCRBY".as_ptr(),
                    c"sl".as_ptr(),
                    self.name.0,
                    n as c_longlong,
                );
            }
            notify(
                self.ctx.raw(),
                raw::REDISMODULE_NOTIFY_STRING,
                c"incrby".as_ptr(),
                self.name.0,
            );
        }
        Ok(())
    }
}

impl Drop for Counter<'_> {
    fn drop(&mut self) {
        if self.key.is_null() {
            return;
        }
        if let Some(close) = api!(RedisModule_CloseKey) {
            // SAFETY: the key was opened by Counter::open and is closed once, here.
            unsafe { close(self.key) };
        }
    }
}

/// Refuses with NOPERM when the calling user's key patterns exclude the counter key.
fn check_acl(ctx: &Ctx, name: &KeyName, write: bool) -> Result<(), CommandError> {
    let user_name = need!(RedisModule_GetCurrentUserName);
    let user_of = need!(RedisModule_GetModuleUserFromUserName);
    let check = need!(RedisModule_ACLCheckKeyPermissions);
    let free_user = need!(RedisModule_FreeModuleUser);
    // Only the access kinds are accepted here (RW/RO are refused as invalid flags).
    let flags = if write {
        raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE
            | raw::REDISMODULE_CMD_KEY_INSERT
    } else {
        raw::REDISMODULE_CMD_KEY_ACCESS
    };
    // SAFETY: a live command context. The name string is ours (freed below); the user handle
    // is checked for null and freed once; the key name is live.
    let allowed = unsafe {
        let who = user_name(ctx.raw());
        if who.is_null() {
            // Every client has a user but the primary's link and the AOF loader, which never
            // run DATESEQ (they replay INCR/INCRBY).
            return Ok(());
        }
        let user = user_of(who);
        free_string(who);
        if user.is_null() {
            return Err(CommandError::NoPermission);
        }
        let status = check(user, name.0, flags as _);
        free_user(user);
        status == raw::REDISMODULE_OK as i32
    };
    if allowed {
        Ok(())
    } else {
        Err(CommandError::NoPermission)
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

#[cfg(test)]
mod tests {
    use super::parse_counter;

    #[test]
    fn counters_are_the_digits_incrby_writes() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"42", Some(42)),
            (b"999999999999999999", Some(999_999_999_999_999_999)),
            (b"1000000000000000000", None),
            (b"-1", None),
            (b"+1", None),
            (b"", None),
            (b"1 ", None),
            (b"abc", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_counter(text),
                *want,
                "{:?}",
                text.escape_ascii().to_string()
            );
        }
    }
}

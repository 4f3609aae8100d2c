//! The per-day counter key, read and rewritten in place through redis-module's key API, so its
//! TTL is kept and no command is executed on the module's behalf.
//!
//! Raw calls remain only for propagation: `RM_Replicate` with the `s`/`sl` formats and
//! `RM_NotifyKeyspaceEvent` with a static event name. Through the crate's `replicate` and
//! `notify_keyspace_event` (a C string per call, a Redis string for INCRBY's count) DATESEQ.NEXT
//! cost a tenth more (docs/benchmarks.md, "Measurements behind the code").

use std::os::raw::c_longlong;

use idgen_core::dateseq::{counter_key, parse_counter};
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::{raw, AclPermissions, KeyType, RedisString};

use super::api;
use super::ctx::Ctx;
use crate::digits::decimal;
use crate::error::CommandError;

/// The counter key name last used, kept between calls: most calls name the same prefix on the
/// same day, and naming the key afresh (and making a Redis string of it, and hashing it for its
/// witness) would cost more than the rest of the call's own work.
#[derive(Default)]
pub struct KeyNameCache {
    prefix: Vec<u8>,
    date: u32,
    name: Option<RedisString>,
    /// The name's witness name (`crate::dateseq::witness::Witnesses::name`).
    witness: u64,
    buf: Vec<u8>,
}

// SAFETY: the cached Redis string is only touched on Redis's main thread, inside commands (the
// cache lives in the module's state, which only commands and Redis's events lock).
unsafe impl Send for KeyNameCache {}

impl KeyNameCache {
    /// The Redis string naming the counter key of `prefix` on `date`, and what `witness_name`
    /// makes of the key's bytes (worked out only when the key changes).
    ///
    /// # Errors
    /// The prefix cannot name a key ([`counter_key`]'s errors).
    pub fn get(
        &mut self,
        prefix: &[u8],
        date: u32,
        witness_name: impl FnOnce(&[u8]) -> u64,
    ) -> Result<(&RedisString, u64), CommandError> {
        let fresh = self.name.is_some() && self.date == date && self.prefix == prefix;
        if !fresh {
            counter_key(prefix, date, &mut self.buf)?;
            self.prefix.clear();
            self.prefix.extend_from_slice(prefix);
            self.date = date;
            self.witness = witness_name(&self.buf);
            let name = RedisString::create_from_slice(std::ptr::null_mut(), &self.buf);
            self.name = Some(name);
        }
        match &self.name {
            Some(name) => Ok((name, self.witness)),
            None => Err(CommandError::MissingApi("RedisModule_CreateString")),
        }
    }

    /// The bytes of the key name last made.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// The counter key, open for writing; closed on drop.
pub struct Counter<'c> {
    ctx: &'c Ctx,
    name: &'c RedisString,
    key: RedisKeyWritable,
}

/// How [`advance`] moves a counter on: by `by`, and when it is created, expiring at
/// `expire_at_ms`.
pub struct Step {
    pub by: u64,
    pub expire_at_ms: i64,
}

/// Today's value of the counter key `name`, `None` when it does not exist.
///
/// # Errors
/// NOPERM when the caller may not read it, WRONGTYPE for a non-string key,
/// [`CommandError::BadCounter`] for a non-numeric string.
pub fn read(ctx: &Ctx, name: &RedisString) -> Result<Option<u64>, CommandError> {
    check_acl(ctx, name, false)?;
    let key = RedisKey::open(ctx.raw(), name);
    match key.key_type() {
        KeyType::Empty => Ok(None),
        KeyType::String => match key.read() {
            Ok(Some(text)) => parse_counter(text)
                .map(Some)
                .ok_or(CommandError::BadCounter),
            _ => Err(CommandError::BadCounter),
        },
        _ => Err(CommandError::WrongType),
    }
}

/// Moves the counter key `name` on by the step that `plan` makes of its value (`None` when it
/// does not exist), and propagates the write; `plan`'s error leaves the key as it was. The value
/// is read and rewritten through one DMA handle.
///
/// # Errors
/// NOPERM when the caller's ACL user may not write the key (the command declares the prefix
/// as its key, so Redis itself only checked the prefix), WRONGTYPE for a non-string key,
/// [`CommandError::BadCounter`] for a non-numeric string, and `plan`'s errors.
pub fn advance<T>(
    ctx: &Ctx,
    name: &RedisString,
    plan: impl FnOnce(Option<u64>) -> Result<(Step, T), CommandError>,
) -> Result<T, CommandError> {
    check_acl(ctx, name, true)?;
    let counter = Counter {
        ctx,
        name,
        key: RedisKeyWritable::open(ctx.raw(), name),
    };
    match counter.key.key_type() {
        KeyType::Empty => {
            let (step, planned) = plan(None)?;
            counter.create(step.by, step.expire_at_ms)?;
            Ok(planned)
        }
        KeyType::String => {
            let Ok(mut dma) = counter.key.as_string_dma() else {
                return Err(CommandError::BadCounter);
            };
            let Some(old) = parse_counter(&dma) else {
                return Err(CommandError::BadCounter);
            };
            let (step, planned) = plan(Some(old))?;
            let mut buf = [0u8; 20];
            if dma.write(decimal(old + step.by, &mut buf)).is_err() {
                return Err(CommandError::BadCounter);
            }
            counter.propagate_add(step.by)?;
            // A key given a shorter life (made under another time zone, or an expiry set by
            // hand) lives at least to the end of its period in the zone now in force.
            if counter.expires_before(step.expire_at_ms) {
                counter.expire_at(step.expire_at_ms)?;
            }
            Ok(planned)
        }
        _ => Err(CommandError::WrongType),
    }
}

impl Counter<'_> {
    /// Creates the key at `value` expiring at `expire_at_ms`, and propagates
    /// `INCRBY key value` + `PEXPIREAT key expire_at_ms` to replicas and the AOF.
    fn create(&self, value: u64, expire_at_ms: i64) -> Result<(), CommandError> {
        let mut buf = [0u8; 20];
        let text = decimal(value, &mut buf);
        // Digits only: always UTF-8, never a NUL.
        let text = std::str::from_utf8(text).unwrap_or("0");
        self.key.write(text).map_err(|_| CommandError::BadCounter)?;
        self.propagate_add(value)?;
        self.expire_at(expire_at_ms)
    }

    /// Whether the key expires before `at_ms` (a key without an expiry never does).
    fn expires_before(&self, at_ms: i64) -> bool {
        let (Some(open), Some(get), Some(close)) = (
            api!(RedisModule_OpenKey),
            api!(RedisModule_GetAbsExpire),
            api!(RedisModule_CloseKey),
        ) else {
            return false;
        };
        // SAFETY: a live command context and key name (as in `propagate_add`); opened for
        // reading beside the writable handle, which Redis allows within one context, and
        // closed before the handle goes out of scope. RM_GetAbsExpire only reads the key it is
        // given (open, of any type; an empty one answers REDISMODULE_NO_EXPIRE).
        let expires_at_ms = unsafe {
            let key = open(
                self.ctx.raw(),
                self.name.inner,
                raw::REDISMODULE_READ as i32,
            );
            let left = get(key);
            close(key);
            left
        };
        // REDISMODULE_NO_EXPIRE (-1): persisted by hand, it never expires. Absolute: no clock
        // read here.
        expires_at_ms >= 0 && expires_at_ms < at_ms
    }

    /// Sets the key's expiry to `at_ms` and propagates `PEXPIREAT key at_ms`.
    fn expire_at(&self, expire_at_ms: i64) -> Result<(), CommandError> {
        self.set_abs_expire(expire_at_ms)?;
        let replicate = api!(RedisModule_Replicate).ok_or(CommandError::MissingApi("Replicate"))?;
        // SAFETY: a live command context (Ctx's contract) and key name; "sl" matches the two
        // arguments that follow.
        unsafe {
            replicate(
                self.ctx.raw(),
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name.inner,
                expire_at_ms as c_longlong,
            )
        };
        Ok(())
    }

    /// Sets the key's expiry to the absolute `at_ms`: the very ms that `PEXPIREAT` tells the
    /// replicas and the AOF. Raw because the crate only sets a relative expiry, which Redis adds
    /// to its own clock read: a ms off from `at_ms` whenever that read falls in the next ms.
    fn set_abs_expire(&self, at_ms: i64) -> Result<(), CommandError> {
        let missing = CommandError::MissingApi;
        let open = api!(RedisModule_OpenKey).ok_or(missing("OpenKey"))?;
        let set = api!(RedisModule_SetAbsExpire).ok_or(missing("SetAbsExpire"))?;
        let close = api!(RedisModule_CloseKey).ok_or(missing("CloseKey"))?;
        // SAFETY: a live command context and key name (as in `propagate_add`); the key just
        // written is opened again for writing, which Redis allows within one context, and
        // closed before the handle goes out of scope.
        let status = unsafe {
            let key = open(
                self.ctx.raw(),
                self.name.inner,
                (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as i32,
            );
            let status = set(key, at_ms as c_longlong);
            close(key);
            status
        };
        if status == raw::REDISMODULE_OK as i32 {
            Ok(())
        } else {
            Err(CommandError::BadCounter)
        }
    }

    /// `INCR key` or `INCRBY key n`: the shortest explicit, deterministic form of the write,
    /// for replicas and the AOF, and the keyspace event INCRBY itself fires.
    fn propagate_add(&self, n: u64) -> Result<(), CommandError> {
        let (Some(replicate), Some(notify)) = (
            api!(RedisModule_Replicate),
            api!(RedisModule_NotifyKeyspaceEvent),
        ) else {
            return Err(CommandError::MissingApi("Replicate"));
        };
        let (ctx, name) = (self.ctx.raw(), self.name.inner);
        // SAFETY: a live command context and key name; each format matches its arguments.
        unsafe {
            if n == 1 {
                replicate(ctx, c"INCR".as_ptr(), c"s".as_ptr(), name);
            } else {
                replicate(
                    ctx,
                    c"INCRBY".as_ptr(),
                    c"sl".as_ptr(),
                    name,
                    n as c_longlong,
                );
            }
            notify(
                ctx,
                raw::REDISMODULE_NOTIFY_STRING,
                c"incrby".as_ptr(),
                name,
            );
        }
        Ok(())
    }
}

/// Refuses with NOPERM when the calling user's key patterns exclude the counter key.
fn check_acl(ctx: &Ctx, name: &RedisString, write: bool) -> Result<(), CommandError> {
    let ctx = ctx.safe();
    let user = ctx.get_current_user();
    if user.inner.is_null() {
        // Every client has a user but the primary's link and the AOF loader, which never run
        // DATESEQ (they replay INCR/INCRBY).
        return Ok(());
    }
    // Only the access kinds are accepted here (RW/RO are refused as invalid flags).
    let permissions = if write {
        AclPermissions::ACCESS | AclPermissions::UPDATE | AclPermissions::INSERT
    } else {
        AclPermissions::ACCESS
    };
    ctx.acl_check_key_permission(&user, name, &permissions)
        .map_err(|_| CommandError::NoPermission)
}

//! DATESEQ's key interface (`crate::dateseq::keys`) on Redis: the per-day counter key, read and
//! rewritten in place through redis-module's key API, so its TTL is kept and no command is
//! executed on the module's behalf.
//!
//! Raw calls remain only for propagation: `RM_Replicate` with the `s`/`sl` formats and
//! `RM_NotifyKeyspaceEvent` with a static event name. Through the crate's `replicate` and
//! `notify_keyspace_event` (a C string per call, a Redis string for INCRBY's count) DATESEQ.NEXT
//! cost a tenth more (docs/benchmarks.md, "Measurements behind the code").

use std::os::raw::c_longlong;

use idgen_core::dateseq::parse_counter;
use redis_module::key::{RedisKey, RedisKeyWritable, StringDMA};
use redis_module::{
    raw, AclPermissions, CallOptionsBuilder, CallReply, CallResult, KeyType, RedisString,
};

use super::api;
use super::ctx::Ctx;
use crate::dateseq::slot_move;
use crate::dateseq::{self, keys::OpenCounter, keys::Step};
use crate::digits::decimal;
use crate::error::CommandError;

/// The Redis string of the counter key named last, kept between calls (making one costs more
/// than the rest of a call's own work).
#[derive(Default)]
pub struct KeyNames {
    bytes: Vec<u8>,
    name: Option<RedisString>,
}

// SAFETY: the cached Redis string is only touched on Redis's main thread, inside commands (the
// cache lives in the module's state, which only commands and Redis's events lock).
unsafe impl Send for KeyNames {}

impl KeyNames {
    /// The Redis string naming `bytes`.
    #[inline]
    fn get(&mut self, bytes: &[u8]) -> &RedisString {
        if self.bytes != bytes {
            self.bytes.clear();
            self.bytes.extend_from_slice(bytes);
            self.name = None;
        }
        let bytes = &self.bytes;
        self.name
            .get_or_insert_with(|| RedisString::create_from_slice(std::ptr::null_mut(), bytes))
    }
}

/// DATESEQ's counters as this server's string keys, for one command: each read and rewritten in
/// place through one DMA handle, so its TTL is kept and no command runs on the module's behalf.
pub struct CounterKeys<'c> {
    ctx: &'c Ctx,
    names: &'c mut KeyNames,
    /// Whether this node is in a Cluster, where a missing counter may be on its way
    /// (`crate::dateseq::slot_move`).
    cluster: bool,
    /// The key open for writing, closed on drop.
    open: Option<RedisKeyWritable>,
}

impl<'c> CounterKeys<'c> {
    pub fn new(ctx: &'c Ctx, names: &'c mut KeyNames, cluster: bool) -> Self {
        CounterKeys {
            ctx,
            names,
            cluster,
            open: None,
        }
    }
}

impl dateseq::keys::CounterKeys for CounterKeys<'_> {
    type Open<'k>
        = Counter<'k>
    where
        Self: 'k;

    /// NOPERM when the caller may not read it, WRONGTYPE for a non-string key,
    /// [`CommandError::BadCounter`] for a non-numeric string, TRYAGAIN for a missing one whose
    /// slot moves.
    fn read(&mut self, bytes: &[u8]) -> Result<Option<u64>, CommandError> {
        let name = self.names.get(bytes);
        check_acl(self.ctx, name, false)?;
        let key = RedisKey::open(self.ctx.raw(), name);
        let found = match key.key_type() {
            KeyType::Empty => None,
            KeyType::String => match key.read() {
                Ok(Some(text)) => Some(parse_counter(text).ok_or(CommandError::BadCounter)?),
                _ => return Err(CommandError::BadCounter),
            },
            _ => return Err(CommandError::WrongType),
        };
        if found.is_none() && self.cluster {
            slot_moving(self.ctx, bytes)?;
        }
        Ok(found)
    }

    /// NOPERM when the caller's ACL user may not write the key (the command declares the
    /// prefix as its key, so Redis itself only checked the prefix), and as [`Self::read`].
    fn open(&mut self, bytes: &[u8]) -> Result<Counter<'_>, CommandError> {
        let CounterKeys {
            ctx,
            names,
            cluster,
            open,
        } = self;
        let name = names.get(bytes);
        check_acl(ctx, name, true)?;
        let key = &*open.insert(RedisKeyWritable::open(ctx.raw(), name));
        let (dma, found) = match key.key_type() {
            KeyType::Empty => {
                if *cluster {
                    slot_moving(ctx, bytes)?;
                }
                (None, None)
            }
            KeyType::String => {
                let dma = key.as_string_dma().map_err(|_| CommandError::BadCounter)?;
                let found = parse_counter(&dma).ok_or(CommandError::BadCounter)?;
                (Some(dma), Some(found))
            }
            _ => return Err(CommandError::WrongType),
        };
        Ok(Counter {
            ctx,
            name,
            key,
            dma,
            found,
        })
    }
}

/// A counter key, open for writing.
pub struct Counter<'k> {
    ctx: &'k Ctx,
    name: &'k RedisString,
    key: &'k RedisKeyWritable,
    /// The value's bytes, when the key exists.
    dma: Option<StringDMA<'k>>,
    found: Option<u64>,
}

impl OpenCounter for Counter<'_> {
    fn found(&self) -> Option<u64> {
        self.found
    }

    /// Propagated as `INCR`/`INCRBY` (and `PEXPIREAT` when created or lifted).
    fn advance(mut self, step: Step) -> Result<(), CommandError> {
        let (Some(dma), Some(old)) = (&mut self.dma, self.found) else {
            return self.create(step.by, step.expire_at_ms);
        };
        let mut buf = [0u8; 20];
        if dma.write(decimal(old + step.by, &mut buf)).is_err() {
            return Err(CommandError::BadCounter);
        }
        self.propagate_add(step.by)?;
        // A key given a shorter life (made under another time zone, or an expiry set by hand)
        // lives at least to the end of its period in the zone now in force.
        if self.expires_before(step.expire_at_ms) {
            self.expire_at(step.expire_at_ms)?;
        }
        Ok(())
    }
}

/// Refuses with TRYAGAIN while the slot of the counter key `key` (missing on this node) is
/// moving to or from this node, asked through `CLUSTER KEYSLOT` and `CLUSTER NODES` (the module
/// API tells no slot's state).
///
/// # Errors
/// `crate::dateseq::slot_move::check`'s.
#[cold]
fn slot_moving(ctx: &Ctx, key: &[u8]) -> Result<(), CommandError> {
    let ctx = ctx.safe();
    let options = CallOptionsBuilder::new().errors_as_replies().build();
    let slot = match ctx.call_ext::<_, CallResult>("CLUSTER", &options, &[&b"KEYSLOT"[..], key]) {
        Ok(CallReply::I64(n)) => Some(n.to_i64()),
        _ => None,
    };
    let nodes = match ctx.call_ext::<_, CallResult>("CLUSTER", &options, &[&b"NODES"[..]]) {
        Ok(CallReply::String(text)) => Some(String::from_utf8_lossy(text.as_bytes()).into_owned()),
        _ => None,
    };
    slot_move::check(key, slot, nodes.as_deref())
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

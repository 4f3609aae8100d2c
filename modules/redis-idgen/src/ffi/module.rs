//! Registering the module with Redis: commands, the INFO section, replication role events.

use std::ffi::CString;
use std::os::raw::{c_int, c_void};

use redis_module::raw;

use super::ctx::{Args, Ctx};
use super::{api, log};
use crate::error::CommandError;

/// A command's handler: reads its arguments and replies, or returns the error to reply with.
pub type Handler = fn(&Ctx, Args) -> Result<(), CommandError>;

/// The C function Redis calls for a command, around a [`Handler`].
pub type RawHandler = raw::RedisModuleCmdFunc;

/// Turns a [`Handler`] into the C function Redis calls.
macro_rules! raw_handler {
    ($handler:path) => {{
        extern "C" fn call(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::ffi::module::dispatch(ctx, argv, argc, $handler)
        }
        Some(call as unsafe extern "C" fn(_, _, _) -> _)
    }};
}
pub(crate) use raw_handler;

/// Runs a handler for one call and replies with its error, if any.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    // SAFETY: Redis calls a command with its live context and `argc` live arguments, all valid
    // until the command returns; neither wrapper escapes this call.
    let (ctx, args) = unsafe { (Ctx::new(ctx), Args::new(argv, argc)) };
    match handler(&ctx, args) {
        Ok(()) => {}
        Err(CommandError::WrongArity) => ctx.reply_wrong_arity(),
        Err(e) => ctx.reply_error(&e.text()),
    }
    raw::REDISMODULE_OK as c_int
}

/// A command as Redis registers it.
pub struct Command {
    pub name: &'static str,
    pub handler: RawHandler,
    pub flags: &'static str,
    /// First key, last key, step between keys (0, 0, 0 for none).
    pub keys: (c_int, c_int, c_int),
    /// Redis's arity: `n` exactly `n` arguments with the name, `-n` at least `n`. Redis checks it
    /// before the call, so a wrong count inside MULTI aborts the transaction, as for its own.
    pub arity: c_int,
}

/// Registers `commands` (from the module's OnLoad).
///
/// # Errors
/// The first command Redis refused.
pub fn register_commands(
    ctx: *mut raw::RedisModuleCtx,
    commands: &[Command],
) -> Result<(), String> {
    let create = api!(RedisModule_CreateCommand).ok_or("no RedisModule_CreateCommand")?;
    for command in commands {
        let name = CString::new(command.name).map_err(|e| e.to_string())?;
        let flags = CString::new(command.flags).map_err(|e| e.to_string())?;
        let (first, last, step) = command.keys;
        // SAFETY: the OnLoad context; both strings are NUL-terminated and copied by Redis; the
        // handler has the signature Redis expects.
        let status = unsafe {
            create(
                ctx,
                name.as_ptr(),
                command.handler,
                flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not register {}", command.name));
        }
        set_arity(ctx, &name, command.arity)
            .map_err(|why| format!("could not declare the arity of {}: {why}", command.name))?;
    }
    Ok(())
}

/// Declares a registered command's arity (RM_SetCommandInfo, Redis 7.0 on); its keys stay those
/// given to RM_CreateCommand.
fn set_arity(
    ctx: *mut raw::RedisModuleCtx,
    name: &std::ffi::CStr,
    arity: c_int,
) -> Result<(), &'static str> {
    let get = api!(RedisModule_GetCommand).ok_or("no RedisModule_GetCommand")?;
    let set = api!(RedisModule_SetCommandInfo).ok_or("no RedisModule_SetCommandInfo")?;
    // SAFETY: the OnLoad context; `name` is NUL-terminated and names a command just created.
    let command = unsafe { get(ctx, name.as_ptr()) };
    if command.is_null() {
        return Err("not found");
    }
    // What the C header's REDISMODULE_COMMAND_INFO_VERSION holds: the sizes of the structures
    // this module was compiled against, so Redis reads no further than they reach.
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: std::ptr::null(),
        complexity: std::ptr::null(),
        since: std::ptr::null(),
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        arity,
        key_specs: std::ptr::null_mut(),
        args: std::ptr::null_mut(),
    };
    // SAFETY: `command` is a live command of this module; `info` and `version` outlive the call
    // and Redis copies what it keeps; null fields are "not given".
    if unsafe { set(command, &info) } != raw::REDISMODULE_OK as c_int {
        return Err("refused");
    }
    Ok(())
}

/// The `INFO` section being written.
pub struct Info(*mut raw::RedisModuleInfoCtx);

impl Info {
    /// Starts the module's section.
    pub fn section(&self) {
        if let Some(section) = api!(RedisModule_InfoAddSection) {
            // SAFETY: the live INFO context Redis passed to the callback; "" names the
            // module's default section.
            unsafe { section(self.0, c"".as_ptr()) };
        }
    }

    /// Adds `name:value`.
    pub fn int(&self, name: &str, value: i64) {
        if let (Some(add), Ok(name)) = (api!(RedisModule_InfoAddFieldLongLong), CString::new(name))
        {
            // SAFETY: as above; the name is NUL-terminated and copied.
            unsafe { add(self.0, name.as_ptr(), value) };
        }
    }

    /// Adds `name:value`.
    pub fn text(&self, name: &str, value: &str) {
        let (Some(add), Ok(name), Ok(value)) = (
            api!(RedisModule_InfoAddFieldCString),
            CString::new(name),
            CString::new(value),
        ) else {
            return;
        };
        // SAFETY: as above; both strings are NUL-terminated and copied.
        unsafe { add(self.0, name.as_ptr(), value.as_ptr()) };
    }
}

/// Has Redis call `write` for `INFO` (and crash reports): it replaces the redis-module crate's
/// default handler, which knows nothing of this module's section.
pub fn register_info(ctx: *mut raw::RedisModuleCtx, write: fn(&Info)) {
    static WRITE: std::sync::OnceLock<fn(&Info)> = std::sync::OnceLock::new();
    extern "C" fn call(info: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
        if let Some(write) = WRITE.get() {
            write(&Info(info));
        }
    }
    let _ = WRITE.set(write);
    if let Some(register) = api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: the OnLoad context and a callback of the expected signature.
        unsafe { register(ctx, Some(call)) };
    }
}

/// Whether this server replicates another one right now.
pub fn is_replica(ctx: *mut raw::RedisModuleCtx) -> Result<bool, String> {
    let flags = api!(RedisModule_GetContextFlags).ok_or("no RedisModule_GetContextFlags")?;
    // SAFETY: the OnLoad context.
    Ok(unsafe { flags(ctx) } as u32 & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0)
}

/// Has Redis call `changed(now_replica)` whenever this server becomes a replica or a primary.
///
/// # Errors
/// When Redis lacks the API or refuses the subscription.
pub fn on_role_change(ctx: *mut raw::RedisModuleCtx, changed: fn(bool)) -> Result<(), String> {
    static CHANGED: std::sync::OnceLock<fn(bool)> = std::sync::OnceLock::new();
    extern "C" fn call(
        _: *mut raw::RedisModuleCtx,
        _: raw::RedisModuleEvent,
        subevent: u64,
        _: *mut c_void,
    ) {
        if let Some(changed) = CHANGED.get() {
            changed(subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA);
        }
    }
    let _ = CHANGED.set(changed);
    let subscribe =
        api!(RedisModule_SubscribeToServerEvent).ok_or("no RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        dataver: 1,
    };
    // SAFETY: the OnLoad context, a valid event, and a callback of the expected signature.
    if unsafe { subscribe(ctx, event, Some(call)) } != raw::REDISMODULE_OK as c_int {
        return Err("could not subscribe to replication role changes".into());
    }
    Ok(())
}

/// Has Redis call `changed(ctx)` after a `CONFIG SET` (or `CONFIG REWRITE`-free reload) changes
/// any of Redis's own settings, with a context that may call Redis (`RM_Call`).
///
/// # Errors
/// When Redis lacks the API or refuses the subscription.
pub fn on_config_change(
    ctx: *mut raw::RedisModuleCtx,
    changed: fn(&redis_module::Context),
) -> Result<(), String> {
    static CHANGED: std::sync::OnceLock<fn(&redis_module::Context)> = std::sync::OnceLock::new();
    extern "C" fn call(
        ctx: *mut raw::RedisModuleCtx,
        _: raw::RedisModuleEvent,
        _: u64,
        _: *mut c_void,
    ) {
        if let Some(changed) = CHANGED.get() {
            changed(&redis_module::Context::new(ctx));
        }
    }
    let _ = CHANGED.set(changed);
    let subscribe =
        api!(RedisModule_SubscribeToServerEvent).ok_or("no RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_CONFIG,
        dataver: 1,
    };
    // SAFETY: the OnLoad context, a valid event, and a callback of the expected signature.
    if unsafe { subscribe(ctx, event, Some(call)) } != raw::REDISMODULE_OK as c_int {
        return Err("could not subscribe to configuration changes".into());
    }
    Ok(())
}

/// Logs a panic's message to the Redis log before it aborts the server.
pub fn log_panics() {
    std::panic::set_hook(Box::new(|panic| {
        log("warning", &format!("idgen panicked: {panic}"))
    }));
}

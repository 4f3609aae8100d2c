//! Registering the module's commands with Redis, and running them.
//!
//! Raw because the crate's command wrapper copies every argument into a `Vec<RedisString>` and
//! builds its reply as a `RedisValue`, and its registration cannot declare a command's arity
//! on Redis 7.0 (the `#[command]` macro's command info needs 7.2).

use std::ffi::CString;
use std::os::raw::c_int;

use redis_module::raw;

use super::api;
use super::ctx::Ctx;
use crate::error::CommandError;

/// The C function Redis calls for a command.
pub type RawHandler = raw::RedisModuleCmdFunc;

/// Runs `handler` for one call and replies with its error, if any.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: impl FnOnce(&Ctx, &[*mut raw::RedisModuleString]) -> Result<(), CommandError>,
) -> c_int {
    let argv = if argc > 0 {
        // SAFETY: Redis calls a command with `argc` (the name and its arguments) live
        // arguments at `argv`, never null, valid and unchanged until the command returns; the
        // slice does not escape this call.
        unsafe { std::slice::from_raw_parts(argv, argc as usize) }
    } else {
        &[][..]
    };
    // SAFETY: Redis's live context for this call; the Ctx does not escape it.
    let ctx = unsafe { Ctx::new(ctx) };
    if let Err(e) = handler(&ctx, argv) {
        ctx.reply_error(&e);
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

/// Has Redis apply the `idgen.*` lines of its configuration file to the settings registered so
/// far (the crate calls this only for settings declared in its `redis_module!` macro); false if
/// Redis refused one, or lacks the API.
pub fn load_configs(ctx: &redis_module::Context) -> bool {
    let Some(load) = api!(RedisModule_LoadConfigs) else {
        return false;
    };
    // SAFETY: called from the module's OnLoad with its context, as the API requires.
    unsafe { load(ctx.ctx) == raw::REDISMODULE_OK as c_int }
}

//! Registers [`crate::config::SETTINGS`] with Redis, which then serves CONFIG GET and CONFIG
//! SET and applies `idgen.*` lines of redis.conf through the callbacks below. The callbacks
//! never panic: every value goes through [`Setting`]'s checks, and a refusal is returned to
//! Redis as an error string.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use super::{api, bytes, free_string, new_string};
use crate::config::{Kind, Setting, SETTINGS};

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// What Redis hands back to the callbacks: the setting, and the string last shown for it
/// (Redis copies a string config's value but does not free it; we do, on the next get).
struct Registered {
    setting: &'static Setting,
    shown: AtomicPtr<raw::RedisModuleString>,
}

/// Applies the load arguments (`name value` pairs), registers every setting with its current
/// value as the default, and has Redis apply the `idgen.*` lines of its configuration file.
///
/// # Errors
/// The first refused load argument or setting, or a registration Redis refused: the module
/// must not load then.
pub fn register(ctx: *mut raw::RedisModuleCtx, load_args: &[&[u8]]) -> Result<(), String> {
    if !load_args.len().is_multiple_of(2) {
        return Err("load arguments must be 'name value' pairs".into());
    }
    for setting in SETTINGS {
        setting.set_default();
    }
    for pair in load_args.chunks(2) {
        // A typo must not silently leave a default: a wrong worker-id repeats another node's IDs.
        let setting = Setting::find(pair[0]).ok_or_else(|| {
            let known: Vec<_> = SETTINGS.iter().map(|s| s.name).collect();
            format!(
                "unknown load argument {}; known: {}",
                crate::error::shown(pair[0]),
                known.join(", ")
            )
        })?;
        setting.set_from_bytes(pair[1])?;
    }
    for setting in SETTINGS {
        register_one(ctx, setting)?;
    }
    let load = api!(RedisModule_LoadConfigs).ok_or("this Redis lacks RedisModule_LoadConfigs")?;
    // SAFETY: called from the module's OnLoad with its context, as the API requires.
    if unsafe { load(ctx) } != OK {
        return Err(
            "a setting in the configuration file was refused (the line above says which)".into(),
        );
    }
    Ok(())
}

fn register_one(ctx: *mut raw::RedisModuleCtx, setting: &'static Setting) -> Result<(), String> {
    let name = CString::new(setting.name).map_err(|e| e.to_string())?;
    let flags = if setting.live {
        raw::REDISMODULE_CONFIG_DEFAULT
    } else {
        raw::REDISMODULE_CONFIG_IMMUTABLE
    };
    // Lives as long as the process: Redis keeps the pointer, and the module cannot be unloaded.
    let private: *mut c_void = Box::into_raw(Box::new(Registered {
        setting,
        shown: AtomicPtr::new(std::ptr::null_mut()),
    }))
    .cast();
    let missing = || format!("this Redis lacks module configuration ({})", setting.name);
    let status = match &setting.kind {
        Kind::Int { min, max, .. } => {
            let register = api!(RedisModule_RegisterNumericConfig).ok_or_else(missing)?;
            // SAFETY: OnLoad context; `name` is NUL-terminated and copied by Redis; the
            // callbacks match the API's signatures; `private` is valid for the process.
            unsafe {
                register(
                    ctx,
                    name.as_ptr(),
                    setting.get_int(),
                    flags,
                    *min,
                    *max,
                    Some(get_int),
                    Some(set_int),
                    None,
                    private,
                )
            }
        }
        Kind::Bool { .. } => {
            let register = api!(RedisModule_RegisterBoolConfig).ok_or_else(missing)?;
            // SAFETY: as above.
            unsafe {
                register(
                    ctx,
                    name.as_ptr(),
                    setting.get_bool() as c_int,
                    flags,
                    Some(get_bool),
                    Some(set_bool),
                    None,
                    private,
                )
            }
        }
        Kind::Str { .. } => {
            let register = api!(RedisModule_RegisterStringConfig).ok_or_else(missing)?;
            // Checked values hold no NUL byte.
            let default = CString::new(setting.get_str()).map_err(|e| e.to_string())?;
            // SAFETY: as above; `default` is NUL-terminated and copied by Redis.
            unsafe {
                register(
                    ctx,
                    name.as_ptr(),
                    default.as_ptr(),
                    flags,
                    Some(get_str),
                    Some(set_str),
                    None,
                    private,
                )
            }
        }
    };
    if status != OK {
        return Err(format!("Redis refused to register idgen.{}", setting.name));
    }
    Ok(())
}

/// The registration behind a callback's `privdata`.
fn registered<'a>(private: *mut c_void) -> &'a Registered {
    // SAFETY: Redis passes back the pointer given at registration: a leaked, never freed
    // `Registered`, only read (its one mutable field is atomic).
    unsafe { &*private.cast::<Registered>() }
}

extern "C" fn get_int(_: *const c_char, private: *mut c_void) -> c_longlong {
    registered(private).setting.get_int()
}

extern "C" fn set_int(
    _: *const c_char,
    value: c_longlong,
    private: *mut c_void,
    _: *mut *mut raw::RedisModuleString,
) -> c_int {
    // Redis has parsed the number and checked it against min and max.
    registered(private).setting.set_int(value);
    OK
}

extern "C" fn get_bool(_: *const c_char, private: *mut c_void) -> c_int {
    registered(private).setting.get_bool() as c_int
}

extern "C" fn set_bool(
    _: *const c_char,
    value: c_int,
    private: *mut c_void,
    _: *mut *mut raw::RedisModuleString,
) -> c_int {
    registered(private).setting.set_bool(value != 0);
    OK
}

extern "C" fn get_str(_: *const c_char, private: *mut c_void) -> *mut raw::RedisModuleString {
    let registered = registered(private);
    let shown = new_string(registered.setting.get_str().as_bytes());
    // Redis copies the value at once; the one shown before is no longer referenced.
    free_string(registered.shown.swap(shown, Ordering::AcqRel));
    shown
}

extern "C" fn set_str(
    _: *const c_char,
    value: *mut raw::RedisModuleString,
    private: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: Redis passes a live string that it frees only after this callback returns.
    let value = unsafe { bytes(value) };
    match registered(private).setting.set_str(value) {
        Ok(()) => OK,
        Err(why) => {
            if !err.is_null() {
                // SAFETY: `err` is Redis's out-pointer for an error string, which Redis frees.
                unsafe { *err = new_string(why.as_bytes()) };
            }
            ERR
        }
    }
}

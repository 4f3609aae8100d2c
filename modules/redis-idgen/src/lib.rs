//! `idgen`: a Redis module that hands out unique 64-bit IDs, a thin layer over `idgen-core`.
//!
//! ```text
//! redis-server --loadmodule target/release/libredis_idgen.so worker-id 3 datacenter-id 1
//! ```
//!
//! | command | reply |
//! |---|---|
//! | `SNOWFLAKE.NEXT [COUNT n]` | an ID, or `n` (1..=100000) strictly increasing IDs |
//! | `SNOWFLAKE.DECODE id` | time_ms, time (ISO-8601), datacenter, worker, sequence |
//! | `DATESEQ.NEXT prefix [DIGITS d]` | `yyyyMMdd * 10^d + seq` from today's counter |
//! | `DATESEQ.CURRENT prefix [DIGITS d]` | the last value DATESEQ.NEXT gave today, or nil |
//!
//! Configuration is in [`config`]; `INFO idgen` shows the layout and counters. Handlers never
//! panic, sleep or wait for the clock: a request that cannot be served gets an `ERR` reply.

mod config;
mod counter;
mod ctx;
mod dateseq;
mod error;
mod info;
mod reservation;
mod role;
mod snowflake;
mod state;

use std::ffi::CString;
use std::os::raw::c_int;

use idgen_core::dateseq::DayCache;
use idgen_core::{Generator, SystemClock};
use redis_module::configuration::ConfigurationFlags;
use redis_module::{raw, redis_module, Context, RedisString, Status};

use crate::ctx::{Args, Ctx};
use crate::error::CommandError;

/// A command's handler: reads its arguments and replies, or returns the error to reply with.
type Handler = fn(&Ctx, Args) -> Result<(), CommandError>;

/// Turns a [`Handler`] into the C function Redis calls.
macro_rules! raw_handler {
    ($handler:path) => {{
        extern "C" fn call(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            dispatch(ctx, argv, argc, $handler)
        }
        Some(call as unsafe extern "C" fn(_, _, _) -> _)
    }};
}

/// A command as Redis registers it.
struct Command {
    name: &'static str,
    handler: raw::RedisModuleCmdFunc,
    flags: &'static str,
    /// First key, last key, step between keys (0, 0, 0 for none).
    keys: (c_int, c_int, c_int),
}

/// The commands this module adds.
#[rustfmt::skip]
const COMMANDS: &[Command] = &[
    Command { name: "SNOWFLAKE.NEXT", handler: raw_handler!(snowflake::next), flags: "", keys: (0, 0, 0) },
    Command { name: "SNOWFLAKE.DECODE", handler: raw_handler!(snowflake::decode), flags: "fast", keys: (0, 0, 0) },
    Command { name: "DATESEQ.NEXT", handler: raw_handler!(dateseq::next), flags: "write deny-oom fast", keys: (1, 1, 1) },
    Command { name: "DATESEQ.CURRENT", handler: raw_handler!(dateseq::current), flags: "readonly fast", keys: (1, 1, 1) },
];

fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    let ctx = Ctx(ctx);
    let args = unsafe { Args::new(argv, argc) };
    if let Err(e) = handler(&ctx, args) {
        e.reply(&ctx);
    }
    raw::REDISMODULE_OK as c_int
}

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    match start(ctx, args) {
        Ok(()) => Status::Ok,
        Err(why) => {
            ctx.log_warning(&format!("idgen: {why}; module not loaded"));
            Status::Err
        }
    }
}

fn start(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    // A panic aborts redis-server; at least say why in its log.
    std::panic::set_hook(Box::new(|panic| {
        ctx::log(
            std::ptr::null_mut(),
            "warning",
            &format!("idgen panicked: {panic}"),
        );
    }));
    check_load_args(args)?;
    let mut ids = Generator::new(config::settings()?, SystemClock).map_err(|e| e.to_string())?;
    let days = DayCache::new(config::calendar()?);
    role::follow(ctx.ctx)?;
    match config::state_file() {
        Some(path) => {
            let floor = reservation::start(path)?;
            ids.resume_after(floor);
        }
        None => ctx.log_warning("idgen: idgen.state-file is empty: IDs may repeat after a restart"),
    }
    let summary = format!(
        "idgen: layout {} epoch {} datacenter-id {} worker-id {}, dateseq zone {}, IDs reserved below {}",
        ids.settings().layout,
        ids.settings().epoch_ms,
        ids.settings().datacenter_id,
        ids.settings().worker_id,
        days.calendar().name(),
        reservation::durable_until(),
    );
    let registered = state::install(state::State::new(ids, days))
        .then_some(())
        .ok_or_else(|| "already initialised in this process".to_string())
        .and_then(|()| register_commands(ctx));
    if let Err(e) = registered {
        // The module is about to be unloaded: its thread must not outlive its code.
        reservation::stop();
        return Err(e);
    }
    ctx.log_notice(&summary);
    Ok(())
}

fn register_commands(ctx: &Context) -> Result<(), String> {
    let create = unsafe { raw::RedisModule_CreateCommand }.ok_or("no RedisModule_CreateCommand")?;
    for command in COMMANDS {
        let name = CString::new(command.name).unwrap_or_default();
        let flags = CString::new(command.flags).unwrap_or_default();
        let (first, last, step) = command.keys;
        let status = unsafe {
            create(
                ctx.ctx,
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
    }
    // Replaces the redis-module crate's default handler, which knows nothing of our section.
    if let Some(register) = unsafe { raw::RedisModule_RegisterInfoFunc } {
        unsafe { register(ctx.ctx, Some(info::add_info)) };
    }
    Ok(())
}

/// Load arguments come in `name value` pairs with names from [`config::NAMES`]; a typo must not
/// silently leave a default (a wrong worker-id repeats another node's IDs).
fn check_load_args(args: &[RedisString]) -> Result<(), String> {
    if !args.len().is_multiple_of(2) {
        return Err("load arguments must be 'name value' pairs".into());
    }
    for name in args.iter().step_by(2) {
        let name = name.to_string_lossy();
        if !config::NAMES.contains(&name.as_str()) {
            return Err(format!(
                "unknown load argument '{name}'; known: {}",
                config::NAMES.join(", ")
            ));
        }
    }
    Ok(())
}

fn deinit(_: &Context) -> Status {
    reservation::stop();
    Status::Ok
}

redis_module! {
    name: "idgen",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    deinit: deinit,
    commands: [],
    configurations: [
        i64: [
            ["worker-id", &config::WORKER_ID, 0, 0, config::MAX_NODE_ID, ConfigurationFlags::IMMUTABLE, None],
            ["datacenter-id", &config::DATACENTER_ID, 0, 0, config::MAX_NODE_ID, ConfigurationFlags::IMMUTABLE, None],
            ["epoch", &config::EPOCH, idgen_core::TWITTER_EPOCH_MS, 0, i64::MAX, ConfigurationFlags::IMMUTABLE, None],
            ["max-drift-ms", &config::MAX_DRIFT_MS, idgen_core::DEFAULT_MAX_DRIFT_MS as i64, 0, 86_400_000, ConfigurationFlags::DEFAULT, Some(Box::new(config::on_max_drift))],
            ["dateseq-ttl", &config::DATESEQ_TTL, config::DEFAULT_TTL_S, config::MIN_TTL_S, config::MAX_TTL_S, ConfigurationFlags::DEFAULT, None],
            ["dateseq-digits", &config::DATESEQ_DIGITS, idgen_core::dateseq::DEFAULT_DIGITS as i64, 1, idgen_core::dateseq::MAX_DIGITS as i64, ConfigurationFlags::DEFAULT, None],
        ],
        string: [
            ["layout", &config::LAYOUT, "twitter", ConfigurationFlags::IMMUTABLE, None],
            ["state-file", &config::STATE_FILE, config::DEFAULT_STATE_FILE, ConfigurationFlags::IMMUTABLE, None],
            ["dateseq-timezone", &config::DATESEQ_TIMEZONE, "UTC", ConfigurationFlags::DEFAULT, None],
        ],
        bool: [
            ["sequence-random-start", &config::RANDOM_START, false, ConfigurationFlags::DEFAULT, Some(Box::new(config::on_random_start))],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}

//! `idgen`: a Redis module that hands out unique 64-bit IDs, a thin layer over `idgen-core`.
//!
//! ```text
//! redis-server --loadmodule target/release/libredis_idgen.so worker-id 3 datacenter-id 1
//! ```
//!
//! | command | reply |
//! |---|---|
//! | `SNOWFLAKE.NEXT [COUNT n] [STRING \| SQIDS]` | an ID, or `n` (1..=100000) strictly increasing IDs |
//! | `SNOWFLAKE.DECODE id` | time_ms, time (ISO-8601), datacenter, worker, sequence, epoch_ms |
//! | `DATESEQ.NEXT prefix [DIGITS d] [COUNT n] [STRING \| SQIDS]` | `yyyyMMdd * 10^d + seq` from today's counter; with COUNT, `[first, last]` of `n` values (all `n` with SQIDS) |
//! | `DATESEQ.CURRENT prefix [DIGITS d] [STRING \| SQIDS]` | the last value DATESEQ.NEXT gave today, or nil |
//! | `IDGEN.ENCODE n [n ...]` / `IDGEN.DECODE sqid` | the Sqid of 1 to 16 numbers / the numbers of a Sqid |
//! | `UUID7.NEXT [COUNT n]` / `ULID.NEXT [COUNT n]` | a UUIDv7 / ULID in canonical text, or `n` (1..=100000) increasing |
//! | `UUID7.DECODE uuid` / `ULID.DECODE ulid` | time_ms, time (ISO-8601), random (hex) |
//! | `WORKERID.ACQUIRE ns TTL ms [MAX n]` | `[worker_id, token, expires_at_ms, start_above_ms]` |
//! | `WORKERID.RENEW ns worker_id token TTL ms [UNTIL unix_ms]` | `[expires_at_ms, until_ms]` |
//! | `WORKERID.RELEASE ns worker_id token [UNTIL unix_ms]` | OK |
//! | `WORKERID.LIST ns` | `[worker_id, token, expires_at_ms, until_ms]` per live lease |
//!
//! IDs are integers, or strings with STRING and whenever a script calls (Lua rounds integers
//! above 2^53), or Sqids with SQIDS ([`form`]). Configuration is in [`config`]; `INFO idgen` shows the layout and counters.
//! Handlers never panic, sleep or wait for the clock: a request that cannot be served gets an
//! `ERR` reply. All `unsafe` code is in [`ffi`].

#![deny(clippy::undocumented_unsafe_blocks)]
// Unit tests run without Redis: the entry points below are not built for them.
#![cfg_attr(test, allow(dead_code))]

mod cluster;
mod config;
mod dateseq;
mod error;
mod eviction;
mod ffi;
mod form;
mod info;
mod reservation;
mod role;
mod snowflake;
mod state;
mod time128;
mod workerid;

use idgen_core::dateseq::DayCache;
use idgen_core::{Clock, Generator, Lineage, SystemClock};
use redis_module::{Context, RedisString, Status};

use crate::ffi::module::{raw_handler, Command};

/// The commands this module adds.
#[rustfmt::skip]
const COMMANDS: &[Command] = &[
    Command { name: "SNOWFLAKE.NEXT", handler: raw_handler!(snowflake::next), flags: "", keys: (0, 0, 0), arity: -1 },
    Command { name: "SNOWFLAKE.DECODE", handler: raw_handler!(snowflake::decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "DATESEQ.NEXT", handler: raw_handler!(dateseq::next), flags: "write deny-oom fast", keys: (1, 1, 1), arity: -2 },
    Command { name: "DATESEQ.CURRENT", handler: raw_handler!(dateseq::current), flags: "readonly fast", keys: (1, 1, 1), arity: -2 },
    Command { name: "UUID7.NEXT", handler: raw_handler!(time128::uuid7_next), flags: "", keys: (0, 0, 0), arity: -1 },
    Command { name: "ULID.NEXT", handler: raw_handler!(time128::ulid_next), flags: "", keys: (0, 0, 0), arity: -1 },
    Command { name: "UUID7.DECODE", handler: raw_handler!(time128::uuid7_decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "ULID.DECODE", handler: raw_handler!(time128::ulid_decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "IDGEN.ENCODE", handler: raw_handler!(form::encode), flags: "fast", keys: (0, 0, 0), arity: -2 },
    Command { name: "IDGEN.DECODE", handler: raw_handler!(form::decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "WORKERID.ACQUIRE", handler: raw_handler!(workerid::acquire), flags: "write deny-oom", keys: (1, 1, 1), arity: -4 },
    Command { name: "WORKERID.RENEW", handler: raw_handler!(workerid::renew), flags: "write deny-oom", keys: (1, 1, 1), arity: -6 },
    Command { name: "WORKERID.RELEASE", handler: raw_handler!(workerid::release), flags: "write", keys: (1, 1, 1), arity: -4 },
    Command { name: "WORKERID.LIST", handler: raw_handler!(workerid::list), flags: "readonly", keys: (1, 1, 1), arity: 2 },
];

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
    ffi::module::log_panics();
    if state::is_ready() {
        // The module was unloaded (which `deinit` refuses) or loaded twice in one process.
        return Err("already loaded once in this process: restart redis-server instead".into());
    }
    let load_args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    ffi::config::register(ctx.ctx, &load_args)?;
    let mut ids = Generator::new(config::settings()?, SystemClock).map_err(|e| e.to_string())?;
    let days = DayCache::new(config::calendar()?);
    let sqids = config::sqid_codec()?;
    role::follow(ctx.ctx)?;
    eviction::follow(ctx);
    ffi::module::on_config_change(ctx.ctx, eviction::follow)?;
    cluster::start(ctx.ctx)?;
    match config::resolve_state_file()? {
        Some(path) => {
            let lineage = Lineage {
                layout: ids.settings().layout.clone(),
                epoch_ms: ids.settings().epoch_ms,
            };
            let floor = reservation::start(path, lineage.record(), |floor, recorded| {
                let warning =
                    config::check_lineage(floor, recorded, &lineage, SystemClock.now_ms())?;
                if let Some(warning) = warning {
                    ctx.log_warning(&format!("idgen: {warning}"));
                }
                Ok(())
            })?;
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
    let state =
        state::State::new(ids, days, sqids, role::lease_fence_from_now()).inspect_err(|_| {
            // The module is about to be unloaded: its thread must not outlive its code.
            reservation::stop();
        })?;
    let _ = state::install(state);
    if let Err(e) = ffi::module::register_commands(ctx.ctx, COMMANDS) {
        // The module is about to be unloaded: its thread must not outlive its code.
        reservation::stop();
        return Err(e);
    }
    ffi::module::register_info(ctx.ctx, info::write);
    ctx.log_notice(&summary);
    Ok(())
}

/// Refuses `MODULE UNLOAD`: the generator's high-water mark and the reservation's lock live in
/// this process, and a Rust library is not unmapped by Redis's dlclose, so a second load would
/// find them still there. Restart redis-server to change the module.
fn deinit(ctx: &Context) -> Status {
    ctx.log_warning(
        "idgen: MODULE UNLOAD refused: restart redis-server to unload or upgrade idgen",
    );
    Status::Err
}

// The Redis allocator exists only inside redis-server: a test build would abort on it.
#[cfg(not(test))]
redis_module::redis_module! {
    name: "idgen",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    deinit: deinit,
    commands: [],
}

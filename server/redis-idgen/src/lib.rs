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
//! | `SNOWFLAKE.FROMTIME t [MAX]` | the lowest (highest) ID of `t`'s tick: Unix ms or ISO-8601 |
//! | `DATESEQ.NEXT prefix [DIGITS d] [COUNT n] [STRING \| SQIDS] [PERIOD p]` | `yyyyMMdd * 10^d + seq` from today's counter (`yyyyMM`, `yyyy` with PERIOD month, year); with COUNT, `[first, last]` of `n` values (all `n` with SQIDS) |
//! | `DATESEQ.CURRENT prefix [DIGITS d] [STRING \| SQIDS] [PERIOD p]` | the last value DATESEQ.NEXT gave in the period, or nil |
//! | `IDGEN.ENCODE n [n ...]` / `IDGEN.DECODE sqid` | the Sqid of 1 to 16 numbers / the numbers of a Sqid |
//! | `IDGEN.SEAL id` / `IDGEN.UNSEAL sealed` | the sealed form of an ID / the ID of a sealed form ([`seal`]) |
//! | `UUID7.UNSEAL uuid` | the UUIDv7 of a sealed UUID (`UUID7.NEXT SEALED`) |
//! | `UUID7.NEXT [COUNT n]` / `ULID.NEXT [COUNT n]` | a UUIDv7 / ULID in canonical text, or `n` (1..=100000) increasing |
//! | `UUID7.DECODE uuid` / `ULID.DECODE ulid` | time_ms, time (ISO-8601), random (hex) |
//! | `UUID7.FROMTIME t [MAX]` / `ULID.FROMTIME t [MAX]` | the lowest (highest) of millisecond `t` |
//! | `WORKERID.ACQUIRE ns TTL ms [MAX n]` | `[worker_id, token, expires_at_ms, start_above_ms]` |
//! | `WORKERID.RENEW ns worker_id token TTL ms [UNTIL unix_ms]` | `[expires_at_ms, until_ms]` |
//! | `WORKERID.RELEASE ns worker_id token [UNTIL unix_ms]` | OK |
//! | `WORKERID.LIST ns` | `[worker_id, token, expires_at_ms, until_ms]` per live lease |
//!
//! IDs are integers, or strings with STRING and whenever a script calls (Lua rounds integers
//! above 2^53), or Sqids with SQIDS ([`form`]). Configuration is in [`config`]; `INFO idgen`
//! shows the layout and counters ([`info`]). Handlers never panic, sleep or wait for the clock:
//! a request that cannot be served gets an `ERR` reply. All `unsafe` code is in [`ffi`].
//!
//! This file is where Redis comes in: the one handle to the module ([`MODULE`], made by
//! [`load`]), and the entry points that hand it on: commands, server events, the cluster bus
//! and INFO. Nothing below it fetches the module from a global.

#![deny(clippy::undocumented_unsafe_blocks)]
// Unit tests run without Redis: the entry points below are not built for them.
#![cfg_attr(test, allow(dead_code))]

mod args;
mod callers;
mod cmd;
mod config;
mod dateseq;
mod deferred;
mod digits;
mod error;
mod eviction;
#[allow(unsafe_code)]
// The module's one door to Redis's C API (ARCHITECTURE.md, "Where unsafe lives").
mod ffi;
mod files;
mod identity;
mod info;
mod leases;
mod load;
mod registration;
mod replica_acks;
mod replication_guard;
mod server_version;
mod snowflake;
mod state;
mod time128;
mod version;

use std::sync::OnceLock;
use std::time::Duration;

use idgen_core::{Clock, SystemClock};
use redis_module::server_events::ServerRole;
use redis_module::{Context, InfoContext, RedisResult, RedisString, Status};
use redis_module_macros::{
    config_changed_event_handler, info_command_handler, role_changed_event_handler,
};

use crate::config::Effect;
use crate::deferred::Event;
use crate::error::{CommandError, LoadError};
use crate::ffi::ctx::Ctx;
use crate::ffi::keyspace::Kinds;
use crate::ffi::module::Command;
use crate::identity::claims::ANNOUNCE_EVERY_MS;
use crate::identity::CLAIM_MESSAGE;
use crate::state::{Module, State};

/// The module, once loaded: the one handle Redis's callbacks find it by.
static MODULE: OnceLock<Module> = OnceLock::new();

/// The C function Redis calls for a command: the module's state, entered once, handed to the
/// handler `$handler(ctx, args, state)`.
macro_rules! command {
    ($handler:path) => {{
        extern "C" fn call(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            ffi::module::dispatch(ctx, argv, argc, |ctx, argv| {
                // Matched rather than `ok_or(error)`, which builds the error (and drops it) on
                // every call.
                let Some(module) = MODULE.get() else {
                    return Err(CommandError::NotReady);
                };
                let Some(mut state) = module.enter() else {
                    return Err(CommandError::Busy);
                };
                // The arguments laid out only now, past the state's lock: SNOWFLAKE.NEXT's plain
                // call never reads them from memory.
                $handler(ctx, crate::args::Args::new(argv), &mut state)
            })
        }
        Some(call as unsafe extern "C" fn(_, _, _) -> _)
    }};
}

/// The commands this module adds.
#[rustfmt::skip]
const COMMANDS: &[Command] = &[
    Command { name: "SNOWFLAKE.NEXT", handler: command!(cmd::snowflake::next), flags: "", keys: (0, 0, 0), arity: -1 },
    Command { name: "SNOWFLAKE.DECODE", handler: command!(cmd::snowflake::decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "SNOWFLAKE.FROMTIME", handler: command!(cmd::snowflake::fromtime), flags: "fast", keys: (0, 0, 0), arity: -2 },
    Command { name: "DATESEQ.NEXT", handler: command!(cmd::dateseq::next), flags: "write deny-oom fast", keys: (1, 1, 1), arity: -2 },
    Command { name: "DATESEQ.CURRENT", handler: command!(cmd::dateseq::current), flags: "readonly fast", keys: (1, 1, 1), arity: -2 },
    Command { name: "UUID7.NEXT", handler: command!(cmd::time128::uuid7_next), flags: "", keys: (0, 0, 0), arity: -1 },
    Command { name: "ULID.NEXT", handler: command!(cmd::time128::ulid_next), flags: "", keys: (0, 0, 0), arity: -1 },
    Command { name: "UUID7.DECODE", handler: command!(cmd::time128::uuid7_decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "ULID.DECODE", handler: command!(cmd::time128::ulid_decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "UUID7.FROMTIME", handler: command!(cmd::time128::uuid7_fromtime), flags: "fast", keys: (0, 0, 0), arity: -2 },
    Command { name: "ULID.FROMTIME", handler: command!(cmd::time128::ulid_fromtime), flags: "fast", keys: (0, 0, 0), arity: -2 },
    Command { name: "IDGEN.ENCODE", handler: command!(cmd::form::encode), flags: "fast", keys: (0, 0, 0), arity: -2 },
    Command { name: "IDGEN.DECODE", handler: command!(cmd::form::decode), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "IDGEN.SEAL", handler: command!(cmd::seal::seal), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "IDGEN.UNSEAL", handler: command!(cmd::seal::unseal), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "UUID7.UNSEAL", handler: command!(cmd::seal::uuid7_unseal), flags: "fast", keys: (0, 0, 0), arity: 2 },
    Command { name: "WORKERID.ACQUIRE", handler: command!(lease_acquire), flags: "write deny-oom", keys: (1, 1, 1), arity: -4 },
    Command { name: "WORKERID.RENEW", handler: command!(lease_renew), flags: "write deny-oom", keys: (1, 1, 1), arity: -6 },
    Command { name: "WORKERID.RELEASE", handler: command!(cmd::workerid::release), flags: "write", keys: (1, 1, 1), arity: -4 },
    Command { name: "WORKERID.LIST", handler: command!(cmd::workerid::list), flags: "readonly", keys: (1, 1, 1), arity: 2 },
    Command { name: "IDGEN.CLAIM", handler: command!(cmd::identity::claim), flags: "write", keys: (0, 0, 0), arity: 3 },
];

/// WORKERID.ACQUIRE, then a timer polling the replicas if its write waits for them.
fn lease_acquire(ctx: &Ctx, args: args::Args, s: &mut State) -> Result<(), CommandError> {
    let done = cmd::workerid::acquire(ctx, args, s);
    poll_if_waiting(ctx, s);
    done
}

/// WORKERID.RENEW, then a timer polling the replicas if its write waits for them.
fn lease_renew(ctx: &Ctx, args: args::Args, s: &mut State) -> Result<(), CommandError> {
    let done = cmd::workerid::renew(ctx, args, s);
    poll_if_waiting(ctx, s);
    done
}

fn poll_if_waiting(ctx: &Ctx, s: &mut State) {
    if s.acks_mut().start_polling() {
        poll_replicas(&ctx.safe());
    }
}

/// Polls the replicas' offsets on the next turn of the event loop (after the writes waited for
/// reached the replication stream), settling what they hold or what waited too long; again
/// every millisecond while writes wait (`replica_acks.rs`).
fn poll_replicas(ctx: &Context) {
    ctx.create_timer(
        Duration::from_millis(1),
        |ctx, ()| {
            // A timer never runs inside a command: the state is free.
            let Some(mut state) = MODULE.get().and_then(Module::enter) else {
                return poll_replicas(ctx);
            };
            let replication = ffi::replicas::replication(ctx);
            let demoted = state.replica();
            let now = SystemClock.now_ms();
            let settled = state.acks_mut().poll(&replication, now, demoted);
            if state.acks_mut().ask() {
                ffi::replicas::ask_for_acks(ctx);
            }
            for (waiting, held) in settled {
                cmd::lease_reply::settle(waiting, held, state.leases().witness());
            }
            if state.acks_mut().poll_again() {
                poll_replicas(ctx);
            }
        },
        (),
    );
}

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    match start(ctx, args) {
        Ok(()) => Status::Ok,
        Err(why) => {
            ffi::log("warning", &format!("idgen: {why}; module not loaded"));
            Status::Err
        }
    }
}

fn start(ctx: &Context, args: &[RedisString]) -> Result<(), LoadError> {
    // A panic aborts redis-server; at least say why in its log.
    std::panic::set_hook(Box::new(|panic| {
        ffi::log("warning", &format!("idgen panicked: {panic}"))
    }));
    if MODULE.get().is_some() {
        return Err(LoadError::AlreadyLoaded);
    }
    // On an error from here on, the state is dropped: its reservation thread stops before
    // Redis unloads the module's code.
    let mut state = load::start(ctx, args, setting_changed)?;
    let summary = load::summary(&state);
    let cluster = state.identity().in_cluster();
    // Registered before the module is installed, so that a refusal still drops the state.
    // Redis calls none of them before OnLoad returns.
    ffi::module::register_commands(ctx.ctx, COMMANDS).map_err(LoadError::Redis)?;
    if cluster {
        ffi::cluster::on_message::<ClaimReceiver>(ctx, CLAIM_MESSAGE).map_err(LoadError::Redis)?;
    }
    ffi::blocked::on_shutdown(ctx.ctx, shutting_down).map_err(LoadError::Redis)?;
    state.set_arrivals_witnessed(hear_arrivals(ctx)?);
    ffi::replicas::on_change(ctx, replica_changed).map_err(LoadError::Redis)?;
    let replica = state.replica();
    if MODULE.set(Module::new(state)).is_err() {
        return Err(LoadError::AlreadyLoaded);
    }
    if cluster {
        announce_every(ctx);
    }
    if replica {
        hear_replication(ctx);
    }
    if let Some(module) = MODULE.get() {
        module
            .config
            .running
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    ffi::log("notice", &summary);
    Ok(())
}

/// Redis shuts down cleanly, after its last save: the DATESEQ witness file gets what each
/// counter actually handed out.
extern "C" fn shutting_down(
    _: *mut redis_module::raw::RedisModuleCtx,
    _: redis_module::raw::RedisModuleEvent,
    _: u64,
    _: *mut std::os::raw::c_void,
) {
    if let Some(mut state) = MODULE
        .get()
        .and_then(|m| entered(m, "the shutdown's witness write"))
    {
        state.dateseq_mut().close_file(SystemClock.now_ms());
    }
}

/// A live setting changed (CONFIG SET, or redis.conf while loading, before there is a module
/// to change).
fn setting_changed(effect: Effect) {
    raise(Event::Setting(effect));
}

#[role_changed_event_handler]
fn role_changed(ctx: &Context, role: ServerRole) {
    let replica = role == ServerRole::Replica;
    if replica {
        hear_replication(ctx);
    }
    raise(Event::Role { replica });
}

/// A replica came online: it hears this node's worker-id claim (`identity/`), sent from a
/// timer on the next turn of the event loop, where a module's writes reach the replicas. Online
/// or gone, the replication guard reads the replicas again there (`replication_guard.rs`).
extern "C" fn replica_changed(
    ctx: *mut redis_module::raw::RedisModuleCtx,
    _: redis_module::raw::RedisModuleEvent,
    subevent: u64,
    _: *mut std::os::raw::c_void,
) {
    Context::new(ctx).create_timer(
        Duration::ZERO,
        |ctx, online: bool| {
            if online {
                send_claim(ctx);
            }
            read_replication_guard(ctx);
        },
        ffi::replicas::is_online(subevent),
    );
}

/// Sends this node's worker-id claim to its replicas, unless it is a replica itself (its own
/// writes never reach its replicas: its primary's claim does).
fn send_claim(ctx: &Context) {
    let Some(state) = MODULE
        .get()
        .and_then(|m| entered(m, "a claim to the replicas"))
    else {
        return;
    };
    if !state.replica() {
        let me = state.claim();
        ffi::replicas::send_claim(ctx, me.datacenter, me.worker);
    }
}

/// Hears the keyspace events that bring state to this node (`arrival.rs`).
struct Arrivals;

impl ffi::keyspace::Listener for Arrivals {
    fn heard(ctx: &Context, event: &[u8], key: &RedisString) {
        if !cmd::arrival::may_bring_state(event) {
            return;
        }
        // Locked only by one of this module's commands: its own writes are not arrivals.
        if let Some(mut state) = MODULE.get().and_then(Module::enter) {
            cmd::arrival::heard(ctx, event, key, &mut state, SystemClock.now_ms());
        }
    }
}

/// Subscribes to the events of state moved here (MIGRATE, RESTORE, COPY), where that leaves
/// other clients alone; whether it did.
fn hear_arrivals(ctx: &Context) -> Result<bool, LoadError> {
    let info = match ctx.call("INFO", &["server"]) {
        Ok(
            redis_module::RedisValue::SimpleString(text)
            | redis_module::RedisValue::BulkString(text),
        ) => text,
        _ => String::new(),
    };
    if cmd::arrival::leaves_clients_on_another_db(&info) {
        ffi::log(
            "notice",
            "idgen: state moved here by MIGRATE, RESTORE or COPY is not witnessed on arrival: \
             on this server a module that hears those events leaves the client that sent MOVE \
             or COPY on another database (valkey-io/valkey#4024)",
        );
        return Ok(false);
    }
    ffi::keyspace::subscribe::<Arrivals>(ctx, Kinds::Generic).map_err(LoadError::Redis)?;
    Ok(true)
}

/// Subscribes to what a replica takes in, once: from the first time this node is a replica on.
fn hear_replication(ctx: &Context) {
    static SUBSCRIBED: std::sync::Once = std::sync::Once::new();
    SUBSCRIBED.call_once(|| {
        if let Err(why) = ffi::keyspace::subscribe::<Arrivals>(ctx, Kinds::Replicated) {
            ffi::log(
                "warning",
                &format!(
                    "idgen: {why}: this replica does not witness the DATESEQ counters it \
                     receives"
                ),
            );
        }
    });
}

/// Reads `min-replicas-to-write` and whether a replica is online, for the state to judge
/// (`replication_guard.rs`); asked before the state is locked.
fn read_replication_guard(ctx: &Context) {
    let min_replicas = ffi::replicas::min_replicas_to_write(ctx);
    let replicas = ffi::replicas::replication(ctx).online() > 0;
    raise(Event::Replication {
        min_replicas,
        replicas,
    });
}

#[config_changed_event_handler]
fn config_changed(ctx: &Context, names: &[&str]) {
    let Some(module) = MODULE.get() else { return };
    if names
        .iter()
        .any(|n| n.eq_ignore_ascii_case("min-replicas-to-write"))
    {
        read_replication_guard(ctx);
    }
    if !names
        .iter()
        .any(|n| n.eq_ignore_ascii_case("maxmemory-policy"))
    {
        return;
    }
    // Asked before the state is locked: Redis answers CONFIG GET without calling the module.
    let policy = eviction::read_policy(ctx);
    let accepted = module.config.flag(|c| &c.accept_eviction);
    raise(Event::Policy { policy, accepted });
}

/// Has the state follow `event`, now or (raised from inside a command) on the next call.
fn raise(event: Event) {
    if let Some(warning) = MODULE.get().and_then(|m| m.raise(event)) {
        ffi::log("warning", &warning);
    }
}

#[info_command_handler]
fn info_section(ctx: &InfoContext, _for_crash_report: bool) -> RedisResult<()> {
    match MODULE.get() {
        Some(module) => info::write(ctx, module),
        None => Ok(()),
    }
}

/// Hears the other cluster nodes' worker-id claims.
struct ClaimReceiver;

impl ffi::cluster::Receiver for ClaimReceiver {
    fn receive(sender: &str, payload: &[u8]) {
        let Some(mut state) = MODULE.get().and_then(|m| entered(m, "a worker-id claim")) else {
            return;
        };
        let me = state.claim();
        let heard = state
            .identity_mut()
            .heard(sender, payload, me, SystemClock.now_ms());
        for (level, line) in heard {
            ffi::log(level, &line);
        }
    }
}

/// Announces this node's claim to the others now and every [`ANNOUNCE_EVERY_MS`], on Redis's
/// thread, for the life of the server (the module cannot be unloaded).
fn announce_every(ctx: &Context) {
    let period = Duration::from_millis(ANNOUNCE_EVERY_MS as u64);
    ctx.create_timer(
        period,
        |ctx, ()| {
            if let Some(mut state) = MODULE.get().and_then(|m| entered(m, "an announcement")) {
                // Refused only while the bus is not up yet (before CLUSTER MEET): nothing to tell.
                let me = state.claim();
                ffi::cluster::broadcast(ctx, CLAIM_MESSAGE, &me.encode());
                if let Some((level, line)) =
                    state.identity_mut().announced(me, SystemClock.now_ms())
                {
                    ffi::log(level, &line);
                }
            }
            announce_every(ctx);
        },
        (),
    );
}

/// The state for an event that the next one of its kind makes good (a claim heard, an
/// announcement); `None`, with a warning naming `what` was skipped, when a command of this
/// module is running on the same thread (the event was raised from inside it).
fn entered<'m>(module: &'m Module, what: &str) -> Option<try_lock::Locked<'m, State>> {
    let state = module.enter();
    if state.is_none() {
        ffi::log(
            "warning",
            &format!("idgen: {what} was skipped: it came from inside one of idgen's commands"),
        );
    }
    state
}

/// Refuses `MODULE UNLOAD`: the generator's high-water mark and the reservation's lock live in
/// this process, and a Rust library is not unmapped by Redis's dlclose, so a second load would
/// find them still there. Restart redis-server to change the module.
fn deinit(_: &Context) -> Status {
    ffi::log(
        "warning",
        "idgen: MODULE UNLOAD refused: restart redis-server to unload or upgrade idgen",
    );
    Status::Err
}

/// The macro's data types are its one hook before it subscribes to server events.
#[cfg(not(test))]
const SERVER_VERSION_GATE: server_version::Gate = server_version::Gate;

// The Redis allocator exists only inside redis-server: a test build would abort on it.
#[cfg(not(test))]
redis_module::redis_module! {
    name: "idgen",
    version: version::ENCODED,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    // Not a data type: the version check, which must run before the macro's server events.
    data_types: [SERVER_VERSION_GATE],
    init: init,
    deinit: deinit,
    commands: [],
}

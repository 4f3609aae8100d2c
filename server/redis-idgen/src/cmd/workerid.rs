//! `WORKERID.ACQUIRE`, `WORKERID.RENEW`, `WORKERID.RELEASE`, `WORKERID.LIST`: worker-ID
//! leases for processes that make Snowflake IDs themselves (`crate::leases::pool`).
//!
//! A namespace is a plain Redis hash (the command's key, so one Cluster slot). Each command
//! reads it, decides with the primary's clock (`crate::leases::namespace`, given the time read
//! here), and writes back only the fields it changed with `HSET` carrying absolute values
//! (`crate::ffi::namespaces`): replicas and the AOF replay those writes, never the decision.
//! The namespace never keeps an expiry (each write `PERSIST`s it), and a namespace that vanished
//! or went back since this process last saw it is reset before anything else
//! (`crate::leases::pool::Pool::reset_if_behind`): its old leases are void, grants start above
//! the horizon. A live lease's record that differs from what this process last wrote was
//! changed by hand, and the namespace is refused (`crate::leases::grants`).
//!
//! ACQUIRE and RENEW reply only once what they wrote is kept (`lease_reply.rs`): on a primary
//! with replicas, once a replica holds it (`crate::replica_acks`: a failover keeps it), then,
//! with `idgen.workerid-witness-file`, once the namespace's version and token are on disk
//! (`crate::leases::witness_file`: a restart knows which namespaces hold everything their
//! holders were told, and fences only the others).

use idgen_core::limits::DEFAULT_POOL;
use idgen_core::{Clock, SystemClock};
use redis_module::Context;

use crate::args::Args;
use crate::cmd::lease_reply::{replica_wait_ms, when_witnessed, Ack, Unacknowledged};
use crate::error::CommandError;
use crate::eviction::Keys;
use crate::ffi::blocked::may_block;
use crate::ffi::ctx::Ctx;
use crate::ffi::namespaces::Namespaces;
use crate::ffi::{log, replicas};
use crate::leases::namespace::Namespace;
use crate::leases::pool::LeaseError;
use crate::replica_acks::AUTO;
use crate::state::State;

/// `WORKERID.ACQUIRE ns TTL ms [MAX n]`: `[worker_id, token, expires_at_ms, start_above_ms]`.
pub fn acquire(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if !(4..=6).contains(&args.len()) {
        return Err(CommandError::WrongArity);
    }
    let ns = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let (mut ttl, mut max) = (None, i64::from(DEFAULT_POOL));
    args.options(|name, args| {
        if name.eq_ignore_ascii_case(b"TTL") {
            ttl = Some(args.next_i64()?);
        } else if name.eq_ignore_ascii_case(b"MAX") {
            max = args.next_i64()?;
        } else {
            return Ok(false);
        }
        Ok(true)
    })?;
    let ttl = ttl.ok_or_else(|| missing("TTL"))?;
    let max = u32::try_from(max).map_err(|_| LeaseError::BadMax(max))?;
    let primary = primary(ctx, s)?;
    let needed = replicas_needed(ctx, &primary, "WORKERID.ACQUIRE", s)?;
    let grant = open(&primary, ns, true, s)?.acquire(max, ttl)?;
    acknowledge(ctx, Ack::Grant(grant), needed, ttl, s)
}

/// `WORKERID.RENEW ns worker_id token TTL ms [UNTIL unix_ms]`: `[expires_at_ms, until_ms]`.
pub fn renew(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if !(6..=8).contains(&args.len()) {
        return Err(CommandError::WrongArity);
    }
    let ns = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let (worker_id, token) = holder(&mut args)?;
    let (mut ttl, mut until) = (None, 0);
    args.options(|name, args| {
        if name.eq_ignore_ascii_case(b"TTL") {
            ttl = Some(args.next_i64()?);
        } else if name.eq_ignore_ascii_case(b"UNTIL") {
            until = CommandError::check_range("UNTIL", args.next_i64()?, 0, i64::MAX)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    })?;
    let ttl = ttl.ok_or_else(|| missing("TTL"))?;
    let primary = primary(ctx, s)?;
    let needed = replicas_needed(ctx, &primary, "WORKERID.RENEW", s)?;
    let lease = open(&primary, ns, true, s)?.renew((worker_id, token), ttl, until)?;
    acknowledge(ctx, Ack::Renewal(lease), needed, ttl, s)
}

/// How many replicas must hold this command's write before it is acknowledged; refused before
/// anything is written where its client cannot wait for them (inside MULTI or a script).
fn replicas_needed(
    ctx: &Ctx,
    primary: &Context,
    command: &'static str,
    s: &mut State,
) -> Result<u32, CommandError> {
    let setting = s.config().int(|c| &c.workerid_ack_replicas);
    // INFO replication costs more than the rest of a renewal: read only while it can matter.
    let online = if s.acks().counts_online(setting) {
        replicas::replication(primary).online()
    } else {
        0
    };
    let needed = s.acks_mut().needed(setting, online);
    if needed > 0 && !may_block(ctx) {
        return Err(CommandError::CannotWaitForReplicas(command));
    }
    Ok(needed)
}

/// Replies once the write is kept: held by `needed` replicas (the client blocked meanwhile,
/// settled by [`settle`]), then in the witness file. A holder never learns of a grant or
/// renewal that a failover or a restart could forget.
fn acknowledge(
    ctx: &Ctx,
    ack: Ack,
    needed: u32,
    ttl_ms: i64,
    s: &mut State,
) -> Result<(), CommandError> {
    if needed == 0 {
        tell_unreplicated(&ack, s);
        return when_witnessed(ctx, ack, s.leases().witness());
    }
    let waiting = Unacknowledged::block(ctx, ack)?;
    let now = SystemClock.now_ms();
    let deadline = now + replica_wait_ms(ttl_ms);
    s.acks_mut().wait(waiting, needed, now, deadline);
    Ok(())
}

/// Says once (after a load, a promotion or the setting's change) that grants are acknowledged
/// with no replica holding them: a failover or a lost disk takes them back.
fn tell_unreplicated(ack: &Ack, s: &mut State) {
    if !matches!(ack, Ack::Grant(_)) || !s.acks_mut().first_unreplicated() {
        return;
    }
    let why = if s.config().int(|c| &c.workerid_ack_replicas) == AUTO {
        "this primary has had no replica"
    } else {
        "idgen.workerid-ack-replicas is 0"
    };
    log(
        "notice",
        &format!(
            "idgen: lease grants are acknowledged before any replica holds them ({why}): a \
             failover to a replica could grant their worker IDs again (docs/leases.md, \
             \"Coordinator failover\")"
        ),
    );
}

/// `WORKERID.RELEASE ns worker_id token [UNTIL unix_ms]`: OK, and the worker ID is free at
/// once. UNTIL (the last time the holder put into an ID) lowers the record the next holder
/// must start above, never below where this holder started.
pub fn release(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() != 4 && args.len() != 6 {
        return Err(CommandError::WrongArity);
    }
    let ns = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let (worker_id, token) = holder(&mut args)?;
    let mut used = None;
    args.options(|name, args| {
        if name.eq_ignore_ascii_case(b"UNTIL") {
            used = Some(CommandError::check_range(
                "UNTIL",
                args.next_i64()?,
                0,
                i64::MAX,
            )?);
            Ok(true)
        } else {
            Ok(false)
        }
    })?;
    let primary = primary(ctx, s)?;
    open(&primary, ns, true, s)?.release((worker_id, token), used)?;
    ctx.reply_ok()
}

/// `WORKERID.LIST ns`: `[worker_id, token, expires_at_ms, until_ms]` per live lease.
pub fn list(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let ns = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let live = open(&primary(ctx, s)?, ns, false, s)?.live();
    ctx.reply_array(live.len())?;
    for (worker_id, lease) in live {
        ctx.reply_array(4)?;
        ctx.reply_i64(worker_id as i64)?;
        ctx.reply_i64(lease.token as i64)?;
        ctx.reply_i64(lease.expires_ms)?;
        ctx.reply_i64(lease.until_ms)?;
    }
    Ok(())
}

/// The context, on a primary: a replica's clock must not judge leases, and its writes would
/// not reach the others.
fn primary(ctx: &Ctx, s: &mut State) -> Result<Context, CommandError> {
    if s.replica() {
        return Err(CommandError::OutOfRange(
            "WORKERID commands are refused on a replica: send them to the primary".into(),
        ));
    }
    let accepted = s.config().flag(|c| &c.accept_eviction);
    s.check_eviction(Keys::Namespaces, accepted)?;
    Ok(ctx.safe())
}

fn missing(option: &str) -> CommandError {
    CommandError::OutOfRange(format!("syntax error: {option} is required"))
}

/// `worker_id token` arguments.
fn holder(args: &mut Args) -> Result<(i64, u64), CommandError> {
    let worker_id = args.next_i64()?;
    let token = args.next_i64()?;
    let token = CommandError::check_range("token", token, 0, i64::MAX)? as u64;
    Ok((worker_id, token))
}

/// Namespace `ns` of this server, open for one command at the clock's time
/// (`crate::leases::namespace`).
fn open<'a>(
    ctx: &'a Context,
    ns: &'a [u8],
    writable: bool,
    s: &'a mut State,
) -> Result<Namespace<'a, Namespaces<'a>>, CommandError> {
    let horizon_ms = s.config().int(|c| &c.workerid_horizon_ms);
    let keys = Namespaces::new(ctx);
    Namespace::open(
        s.leases_mut(),
        keys,
        ns,
        writable,
        (SystemClock.now_ms(), horizon_ms),
    )
}

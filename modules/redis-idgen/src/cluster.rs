//! Duplicate worker-ids on Redis Cluster: every node announces the datacenter and worker it puts
//! into its IDs over the cluster bus (`idgen_core::claims`), and a primary that hears another
//! primary claim the same pair refuses SNOWFLAKE.NEXT, as does the other, until one of them is
//! reconfigured. For a second after start, before it can have heard the others, a cluster node
//! refuses too. Outside cluster mode none of this runs.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{LazyLock, Mutex};

use idgen_core::claims::ANNOUNCE_EVERY_MS;
use idgen_core::{Claim, Claims, Clock, SystemClock};
use redis_module::raw;

use crate::config::{DATACENTER_ID, WORKER_ID};
use crate::ffi::{self, cluster};
use crate::role;

/// The cluster message type of a claim ('I' for idgen).
const CLAIM_MESSAGE: u8 = b'I';
/// How long a starting node listens before it issues: two announcement rounds.
const LISTEN_FIRST_MS: i64 = 2 * ANNOUNCE_EVERY_MS;

/// Whether this is a cluster node (set once at load).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Until when a starting node refuses.
static LISTEN_UNTIL_MS: AtomicI64 = AtomicI64::new(0);
/// Whether [`CONFLICT`] holds a refusal: read on every call without locking.
static CONFLICTED: AtomicBool = AtomicBool::new(false);
/// Why SNOWFLAKE.NEXT is refused, while another primary claims this node's pair.
static CONFLICT: Mutex<Option<String>> = Mutex::new(None);
/// The claims heard from the other nodes.
static CLAIMS: LazyLock<Mutex<Claims>> = LazyLock::new(|| Mutex::new(Claims::new()));

/// Starts announcing and listening, on a cluster node.
///
/// # Errors
/// When Redis lacks the cluster message or timer API.
pub fn start(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    if !cluster::is_cluster_node(ctx) {
        return Ok(());
    }
    LISTEN_UNTIL_MS.store(SystemClock.now_ms() + LISTEN_FIRST_MS, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Relaxed);
    cluster::on_message(ctx, CLAIM_MESSAGE, receive)?;
    cluster::every(ctx, ANNOUNCE_EVERY_MS, announce)
}

/// Why SNOWFLAKE.NEXT must be refused now, if it must.
pub fn refusal() -> Option<String> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return None;
    }
    if CONFLICTED.load(Ordering::Relaxed) {
        return lock(&CONFLICT).clone();
    }
    let listen_until = LISTEN_UNTIL_MS.load(Ordering::Relaxed);
    (SystemClock.now_ms() < listen_until).then(|| {
        format!(
            "idgen is listening for the worker-ids of the other cluster nodes for {LISTEN_FIRST_MS} ms \
             after start, so as not to issue IDs another primary issues too; retry shortly"
        )
    })
}

/// For INFO: the conflict, if any, and how many other nodes were heard lately.
pub fn status() -> Option<(String, usize)> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return None;
    }
    let conflict = CONFLICT.try_lock().ok()?.clone().unwrap_or_default();
    let heard = CLAIMS.try_lock().ok()?.nodes_heard();
    Some((conflict, heard))
}

/// This node's claim.
fn mine() -> Claim {
    Claim {
        datacenter: DATACENTER_ID.load(Ordering::Relaxed) as u64,
        worker: WORKER_ID.load(Ordering::Relaxed) as u64,
        primary: !role::is_replica(),
    }
}

fn announce(ctx: *mut raw::RedisModuleCtx) {
    // Refused only while the bus is not up yet (before CLUSTER MEET): nothing to tell anyone.
    let _ = cluster::broadcast(ctx, CLAIM_MESSAGE, &mine().encode());
    judge();
}

fn receive(node: &str, payload: &[u8]) {
    let Some(claim) = Claim::decode(payload) else {
        ffi::log(
            "warning",
            &format!("idgen: unreadable claim from node {node}: ignored"),
        );
        return;
    };
    lock(&CLAIMS).hear(node, claim, SystemClock.now_ms());
    judge();
}

/// Compares this node's claim with those heard; logs when a conflict starts or ends.
fn judge() {
    let me = mine();
    let rivals = lock(&CLAIMS).rivals(me, SystemClock.now_ms());
    let verdict = (!rivals.is_empty()).then(|| {
        format!(
            "worker-id conflict: cluster node {} also issues IDs as datacenter {} worker {} \
             (idgen.datacenter-id, idgen.worker-id): SNOWFLAKE.NEXT is refused on both until \
             one is given another pair",
            rivals.join(", "),
            me.datacenter,
            me.worker
        )
    });
    let mut conflict = lock(&CONFLICT);
    if *conflict == verdict {
        return;
    }
    match &verdict {
        Some(why) => ffi::log("warning", &format!("idgen: {why}")),
        None => ffi::log(
            "notice",
            "idgen: worker-id conflict over: SNOWFLAKE.NEXT issues again",
        ),
    }
    CONFLICTED.store(verdict.is_some(), Ordering::Relaxed);
    *conflict = verdict;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

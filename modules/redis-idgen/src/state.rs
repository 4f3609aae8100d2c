//! The module's one piece of mutable state, built once at load time.
//!
//! Redis runs commands on one thread, so the mutex is never contended; it is there so that the
//! state is `Sync` without `unsafe`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use idgen_core::dateseq::{DayCache, Fence};
use idgen_core::lease::Seen;
use idgen_core::{Form128, Generator, Generator128, SqidCodec, SystemClock};
use rand::rngs::StdRng;

use crate::ffi::key::KeyNameCache;

use crate::error::CommandError;

/// Everything the commands share.
pub struct State {
    /// The Snowflake generator.
    pub ids: Generator<SystemClock>,
    /// Today's date in the configured zone.
    pub days: DayCache,
    /// The counter key name last used.
    pub key_names: KeyNameCache,
    /// Which counters still skip the failover gap in this term (since the last promotion).
    pub fence: Fence,
    /// Reused for SNOWFLAKE.NEXT COUNT, so it does not allocate.
    pub id_buf: Vec<u64>,
    /// Sqids of the configured alphabet and minimum length.
    pub sqids: SqidCodec,
    /// UUID7.NEXT's generator.
    pub uuid7: Generator128<SystemClock, StdRng>,
    /// ULID.NEXT's generator.
    pub ulid: Generator128<SystemClock, StdRng>,
    /// Reused for UUID7.NEXT and ULID.NEXT COUNT.
    pub id128_buf: Vec<u128>,
    /// The highest version and token this process wrote or read in each lease namespace: one
    /// found below it went back (`idgen_core::lease::Pool::reset_if_behind`).
    pub lease_seen: HashMap<Vec<u8>, Seen>,
    /// Lease grants start above this: the load or latest promotion plus the horizon, as the
    /// namespaces this server holds may lack renewals an older copy never saw.
    pub lease_fence_ms: i64,
}

impl State {
    /// State around a generator, a calendar and a Sqid codec; the 128-bit generators share the
    /// Snowflake generator's drift limit.
    ///
    /// # Errors
    /// When the 128-bit generators get no random seed.
    pub fn new(
        ids: Generator<SystemClock>,
        days: DayCache,
        sqids: SqidCodec,
        lease_fence_ms: i64,
    ) -> Result<Self, String> {
        let drift = ids.settings().max_drift_ms;
        Ok(State {
            uuid7: crate::time128::generator(Form128::Uuid7, drift)?,
            ulid: crate::time128::generator(Form128::Ulid, drift)?,
            id128_buf: Vec::new(),
            ids,
            days,
            key_names: KeyNameCache::default(),
            fence: Fence::new(),
            id_buf: Vec::new(),
            sqids,
            lease_seen: HashMap::new(),
            lease_fence_ms,
        })
    }
}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();

/// Installs the state; false if it was already installed.
pub fn install(state: State) -> bool {
    STATE.set(Mutex::new(state)).is_ok()
}

/// Runs `f` on the state.
///
/// # Errors
/// [`CommandError::NotReady`] before the module finished loading.
pub fn with<R>(f: impl FnOnce(&mut State) -> R) -> Result<R, CommandError> {
    let state = STATE.get().ok_or(CommandError::NotReady)?;
    // A poisoned lock would mean a panic, and a panic aborts Redis: take the state as it is.
    let mut guard = state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(f(&mut guard))
}

/// The state if it is installed and free, without waiting: for INFO, which may run in a crash
/// report while a command holds the lock.
pub fn try_lock() -> Option<MutexGuard<'static, State>> {
    STATE.get()?.try_lock().ok()
}

/// Whether the module finished loading.
pub fn is_ready() -> bool {
    STATE.get().is_some()
}

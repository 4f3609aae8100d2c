//! The `idgen.*` configuration: readable with CONFIG GET, set as load arguments
//! (`--loadmodule libredis_idgen.so worker-id 3`) or in redis.conf (`idgen.worker-id 3`).
//!
//! Settings that would let IDs repeat if changed on a running server (worker-id, datacenter-id,
//! epoch, layout) are immutable: CONFIG SET refuses them. The others apply at once.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use idgen_core::dateseq::{Calendar, DayCache};
use idgen_core::{Layout, Settings, TWITTER_EPOCH_MS};
use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::{RedisError, RedisString};

use crate::state;

/// `idgen.worker-id`: worker (shard, machine) ID. Immutable. Default 0.
pub static WORKER_ID: AtomicI64 = AtomicI64::new(0);
/// `idgen.datacenter-id`: datacenter ID. Immutable. Default 0.
pub static DATACENTER_ID: AtomicI64 = AtomicI64::new(0);
/// `idgen.epoch`: custom epoch in ms since 1970. Immutable. Default Twitter's.
pub static EPOCH: AtomicI64 = AtomicI64::new(TWITTER_EPOCH_MS);
/// `idgen.layout`: twitter, instagram, sonyflake, or a spec. Immutable. Default twitter.
pub static LAYOUT: Mutex<String> = Mutex::new(String::new());
/// `idgen.state-file`: where the restart-safety reservation lives, relative to Redis's `dir`;
/// empty turns it off. Immutable. Default [`DEFAULT_STATE_FILE`].
pub static STATE_FILE: Mutex<String> = Mutex::new(String::new());
/// Default of `idgen.state-file`.
pub const DEFAULT_STATE_FILE: &str = "idgen-snowflake.state";
/// `idgen.sequence-random-start`: start each tick's sequence at random. Default no.
pub static RANDOM_START: AtomicBool = AtomicBool::new(false);
/// `idgen.max-drift-ms`: how far IDs may run ahead of the clock before refusing. Default 1000.
pub static MAX_DRIFT_MS: AtomicI64 = AtomicI64::new(idgen_core::DEFAULT_MAX_DRIFT_MS as i64);
/// `idgen.dateseq-timezone`: zone of DATESEQ dates. Default UTC.
pub static DATESEQ_TIMEZONE: ZoneConfig = ZoneConfig(Mutex::new(String::new()));
/// `idgen.dateseq-ttl`: seconds a day's counter key outlives its day. Default 2 days.
pub static DATESEQ_TTL: AtomicI64 = AtomicI64::new(DEFAULT_TTL_S);
/// `idgen.dateseq-digits`: default DIGITS of DATESEQ. Default 6.
pub static DATESEQ_DIGITS: AtomicI64 = AtomicI64::new(idgen_core::dateseq::DEFAULT_DIGITS as i64);

/// Default of `idgen.dateseq-ttl`.
pub const DEFAULT_TTL_S: i64 = 2 * 86_400;
/// Shortest `idgen.dateseq-ttl`: an hour, so a clock a little behind still finds yesterday's key.
pub const MIN_TTL_S: i64 = 3_600;
/// Longest `idgen.dateseq-ttl`: ten years.
pub const MAX_TTL_S: i64 = 10 * 365 * 86_400;
/// Largest worker or datacenter ID any layout may take.
pub const MAX_NODE_ID: i64 = 1 << 22;

/// Names accepted as load arguments (the config names without `idgen.`).
pub const NAMES: &[&str] = &[
    "worker-id",
    "datacenter-id",
    "epoch",
    "layout",
    "state-file",
    "sequence-random-start",
    "max-drift-ms",
    "dateseq-timezone",
    "dateseq-ttl",
    "dateseq-digits",
];

/// The generator settings the configuration describes.
///
/// # Errors
/// A message naming the setting that is wrong; the generator checks the rest.
pub fn settings() -> Result<Settings, String> {
    let spec = LAYOUT.lock().map(|s| s.clone()).unwrap_or_default();
    let layout = Layout::parse(&spec).map_err(|e| format!("idgen.layout '{spec}': {e}"))?;
    Ok(Settings {
        layout,
        epoch_ms: EPOCH.load(Ordering::Relaxed),
        datacenter_id: DATACENTER_ID.load(Ordering::Relaxed) as u64,
        worker_id: WORKER_ID.load(Ordering::Relaxed) as u64,
        random_start: RANDOM_START.load(Ordering::Relaxed),
        max_drift_ms: MAX_DRIFT_MS.load(Ordering::Relaxed) as u64,
    })
}

/// The reservation file, unless switched off.
pub fn state_file() -> Option<std::path::PathBuf> {
    let path = STATE_FILE.lock().map(|s| s.clone()).unwrap_or_default();
    (!path.is_empty()).then(|| path.into())
}

/// The DATESEQ calendar the configuration describes.
///
/// # Errors
/// The zone error's message.
pub fn calendar() -> Result<Calendar, String> {
    let zone = DATESEQ_TIMEZONE
        .0
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    Calendar::new(&zone).map_err(|e| format!("idgen.dateseq-timezone: {e}"))
}

/// Applies `idgen.sequence-random-start` to the running generator.
pub fn on_random_start(_: &ConfigurationContext, _: &str, value: &'static AtomicBool) {
    let on = value.load(Ordering::Relaxed);
    let _ = state::with(|s| s.ids.set_random_start(on));
}

/// Applies `idgen.max-drift-ms` to the running generator.
pub fn on_max_drift(_: &ConfigurationContext, _: &str, value: &'static AtomicI64) {
    let ms = value.load(Ordering::Relaxed) as u64;
    let _ = state::with(|s| s.ids.set_max_drift_ms(ms));
}

/// `idgen.dateseq-timezone`: checked when set on a running server, so CONFIG SET answers a bad
/// zone with an error. At load time the value is kept as given and checked by `init`, which
/// fails the load rather than fall back to a default.
pub struct ZoneConfig(Mutex<String>);

impl ConfigurationValue<RedisString> for ZoneConfig {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        let zone = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        RedisString::create(None, zone)
    }

    fn set(&self, _: &ConfigurationContext, value: RedisString) -> Result<(), RedisError> {
        let zone = value.try_as_str()?.to_string();
        if state::is_ready() {
            let calendar = Calendar::new(&zone).map_err(|e| RedisError::String(e.to_string()))?;
            state::with(|s| s.days = DayCache::new(calendar))
                .map_err(|e| RedisError::String(e.text()))?;
        }
        *self
            .0
            .lock()
            .map_err(|_| RedisError::Str("lock poisoned"))? = zone;
        Ok(())
    }
}

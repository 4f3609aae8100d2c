//! The `idgen.*` configuration: readable with CONFIG GET, set as load arguments
//! (`--loadmodule libredis_idgen.so worker-id 3`) or in redis.conf (`idgen.worker-id 3`).
//!
//! [`SETTINGS`] lists every setting once, one row each: its name, default, limits, where its
//! value lives in [`Config`], and what a new value changes on a running server ([`Effect`]).
//! Settings that would let IDs repeat if changed on a running server (worker-id, datacenter-id,
//! epoch, layout, state-file) are immutable: CONFIG SET refuses them. The others apply at once.
//! Every value is checked here, whichever way it arrives; a bad one is an error, never a crash.
//! This file knows nothing of Redis: `crate::registration` hands the table to it.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use idgen_core::dateseq::Calendar;
use idgen_core::sqid::{DEFAULT_ALPHABET, MAX_MIN_LENGTH};
use idgen_core::{Clock, Layout, Sealer, Settings, SqidCodec, SystemClock, TWITTER_EPOCH_MS};

use crate::error::shown;

/// The value of `idgen.epoch` that means "the layout's own epoch".
pub const LAYOUTS_EPOCH: i64 = -1;
/// Default of `idgen.state-file`.
pub const DEFAULT_STATE_FILE: &str = "idgen-snowflake.state";
/// Default of `idgen.dateseq-witness-file`.
pub const DEFAULT_WITNESS_FILE: &str = "idgen-dateseq.witness";
/// Default of `idgen.workerid-witness-file`.
pub const DEFAULT_LEASE_WITNESS_FILE: &str = "idgen-workerid.witness";
use idgen_core::limits::MAX_DRIFT_RANGE_MS;
pub use idgen_core::limits::{DEFAULT_FAILOVER_GAP, MAX_DATESEQ_COUNT};
/// Default of `idgen.dateseq-witness-max`: twice the 500,000 per-customer counters of a busy
/// day, about 100 MB of witnesses at most.
pub const DEFAULT_WITNESS_MAX: i64 = 1_000_000;
/// Largest `idgen.dateseq-witness-max`.
pub const MAX_WITNESS_MAX: i64 = 100_000_000;
/// Default of `idgen.dateseq-ttl`.
pub const DEFAULT_TTL_S: i64 = 2 * 86_400;
/// Shortest `idgen.dateseq-ttl`: an hour, so a clock a little behind still finds yesterday's key.
pub const MIN_TTL_S: i64 = 3_600;
/// Longest `idgen.dateseq-ttl`: ten years.
pub const MAX_TTL_S: i64 = 10 * 365 * 86_400;
/// Largest `idgen.workerid-ack-replicas`: more replicas than any deployment runs.
pub const MAX_ACK_REPLICAS: i64 = 1_000;
/// Largest worker or datacenter ID any layout may take.
pub const MAX_NODE_ID: i64 = 1 << 22;
/// Longest string value accepted: longer than any path, zone or layout spec needs.
pub const MAX_STRING_LEN: usize = 4096;

/// Every `idgen.*` value, as CONFIG GET shows it. Made once at load and kept for the life of
/// the process; integers and booleans are atomics, so commands read them without a lock.
#[derive(Default)]
pub struct Config {
    /// `idgen.worker-id`: worker (shard, machine) ID.
    pub worker_id: AtomicI64,
    /// `idgen.datacenter-id`: datacenter ID.
    pub datacenter_id: AtomicI64,
    /// `idgen.epoch`: custom epoch in ms since 1970, or [`LAYOUTS_EPOCH`]: the layout
    /// profile's own (Sonyflake's for `sonyflake`, ...), Twitter's for a spelled-out layout;
    /// resolved at load and stored back, so CONFIG GET shows the epoch in force.
    pub epoch: AtomicI64,
    /// Whether `idgen.epoch` was set, rather than taken from the layout (known once resolved).
    pub epoch_set: AtomicBool,
    /// `idgen.layout`: twitter, instagram, sonyflake, js53, or a spec.
    pub layout: Mutex<String>,
    /// `idgen.state-file`: where the restart-safety reservation lives; empty turns it off. A
    /// relative path is resolved against Redis's `dir` once, at load, and shown absolute after.
    pub state_file: Mutex<String>,
    /// `idgen.accept-id-overlap`: start even when the state file says this server issued IDs
    /// under another layout or epoch that the new settings' IDs may equal.
    pub accept_overlap: AtomicBool,
    /// `idgen.max-drift-ms`: how far IDs may run ahead of the clock before refusing.
    pub max_drift_ms: AtomicI64,
    /// `idgen.sequence-random-start`: start each tick's sequence at random.
    pub random_start: AtomicBool,
    /// `idgen.random-ids-on-replica`: UUID7.NEXT and ULID.NEXT answer on a replica too.
    pub random_ids_on_replica: AtomicBool,
    /// `idgen.dateseq-timezone`: zone of DATESEQ dates.
    pub dateseq_timezone: Mutex<String>,
    /// `idgen.dateseq-ttl`: seconds a day's counter key outlives its day.
    pub dateseq_ttl: AtomicI64,
    /// `idgen.dateseq-digits`: default DIGITS of DATESEQ.
    pub dateseq_digits: AtomicI64,
    /// `idgen.dateseq-failover-gap`: values each counter skips on its first use after this node
    /// is promoted to primary, covering what the old primary acknowledged but never replicated;
    /// 0 turns it off.
    pub dateseq_failover_gap: AtomicI64,
    /// `idgen.dateseq-witness-max`: most DATESEQ counters whose witness (the highest value
    /// handed out in their period) this node keeps; a new counter past it is refused.
    pub dateseq_witness_max: AtomicI64,
    /// `idgen.dateseq-witness-file`: where DATESEQ counters are reserved ahead of use, so no
    /// restart or rollback of the data repeats a value; empty turns it off. Resolved against
    /// Redis's `dir` at load, as `idgen.state-file` is.
    pub dateseq_witness_file: Mutex<String>,
    /// `idgen.workerid-horizon-ms`: the longest lease TTL, and how far past the coordinator's
    /// clock a holder may record an UNTIL: lease grants start this far above a load, a
    /// promotion or a namespace found reset.
    pub workerid_horizon_ms: AtomicI64,
    /// `idgen.workerid-witness-file`: where each lease namespace's version and token are
    /// written before a grant or renewal is acknowledged, so a restart need not fence every
    /// namespace; empty turns it off. Resolved against Redis's `dir` at load.
    pub workerid_witness_file: Mutex<String>,
    /// `idgen.workerid-ack-replicas`: how many replicas must hold a lease grant or renewal
    /// before it is acknowledged; [`crate::replica_acks::AUTO`] (-1): one once this primary has
    /// seen a replica. Setting it again forgets the replicas seen.
    pub workerid_ack_replicas: AtomicI64,
    /// `idgen.accept-eviction`: serve DATESEQ and WORKERID even when `maxmemory-policy` can
    /// evict their keys (which repeats values).
    pub accept_eviction: AtomicBool,
    /// `idgen.sqids-alphabet`: the letters of SQIDS replies and IDGEN.ENCODE, in the order that
    /// makes them (shuffle it: the order is the secret).
    pub sqids_alphabet: Mutex<String>,
    /// `idgen.sqids-min-length`: Sqids are padded to at least this many characters.
    pub sqids_min_length: AtomicI64,
    /// Whether the module has loaded: a value set from then on changes a running server, and
    /// is checked against the state it governs too (`idgen.dateseq-timezone`).
    pub running: AtomicBool,
    /// `idgen.seal-key-file`: a file whose first line is the sealing key, 64 hex digits
    /// (IDGEN.SEAL, SEALED); empty: no sealing. CONFIG GET shows the path, never the key.
    pub seal_key_file: Mutex<String>,
}

/// What a new value of a live setting changes in the running module, beyond the value itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Read where it is used: nothing to redo.
    None,
    /// The generators' drift limit.
    MaxDrift,
    /// The Snowflake generator's random sequence start.
    RandomStart,
    /// DATESEQ's calendar.
    TimeZone,
    /// The Sqid codec.
    Sqids,
    /// The sealing key.
    SealKey,
    /// The cap on DATESEQ's witnesses.
    WitnessMax,
    /// The replicas a lease write waits for: those seen are forgotten.
    AckReplicas,
    /// The lease horizon: a lower one waits for holders told under the old one.
    Horizon,
}

/// One `idgen.*` setting.
pub struct Setting {
    /// The name without `idgen.`, as load arguments spell it.
    pub name: &'static str,
    /// Whether CONFIG SET may change it on a running server.
    pub live: bool,
    /// Its type, default, limits and storage.
    pub kind: Kind,
    /// What a new value changes on a running server.
    pub effect: Effect,
}

/// A setting's type, with its default, limits and where its value lives.
pub enum Kind {
    /// An integer in `min..=max`.
    Int {
        default: i64,
        min: i64,
        max: i64,
        cell: fn(&Config) -> &AtomicI64,
    },
    /// yes or no.
    Bool {
        default: bool,
        cell: fn(&Config) -> &AtomicBool,
    },
    /// A UTF-8 string without NUL bytes, at most [`MAX_STRING_LEN`] bytes, that `check`
    /// accepts (given the rest of the configuration).
    Str {
        default: &'static str,
        cell: fn(&Config) -> &Mutex<String>,
        check: fn(&Config, &str) -> Result<(), String>,
    },
}

/// Every setting, one row each, in the order CONFIG GET idgen.* lists them.
#[rustfmt::skip]
pub static SETTINGS: &[Setting] = &[
    int("worker-id", false, 0, 0, MAX_NODE_ID, |c| &c.worker_id, Effect::None),
    int("datacenter-id", false, 0, 0, MAX_NODE_ID, |c| &c.datacenter_id, Effect::None),
    int("epoch", false, LAYOUTS_EPOCH, LAYOUTS_EPOCH, i64::MAX, |c| &c.epoch, Effect::None),
    text("layout", false, "twitter", |c| &c.layout, check_layout, Effect::None),
    text("state-file", false, DEFAULT_STATE_FILE, |c| &c.state_file, |_, _| Ok(()), Effect::None),
    boolean("accept-id-overlap", false, |c| &c.accept_overlap, Effect::None),
    int("max-drift-ms", true, idgen_core::DEFAULT_MAX_DRIFT_MS as i64, MAX_DRIFT_RANGE_MS.0, MAX_DRIFT_RANGE_MS.1, |c| &c.max_drift_ms, Effect::MaxDrift),
    boolean("sequence-random-start", true, |c| &c.random_start, Effect::RandomStart),
    boolean("random-ids-on-replica", true, |c| &c.random_ids_on_replica, Effect::None),
    text("dateseq-timezone", true, "UTC", |c| &c.dateseq_timezone, check_zone, Effect::TimeZone),
    int("dateseq-ttl", true, DEFAULT_TTL_S, MIN_TTL_S, MAX_TTL_S, |c| &c.dateseq_ttl, Effect::None),
    int("dateseq-digits", true, idgen_core::dateseq::DEFAULT_DIGITS as i64, 1, idgen_core::dateseq::MAX_DIGITS as i64, |c| &c.dateseq_digits, Effect::None),
    int("dateseq-failover-gap", true, DEFAULT_FAILOVER_GAP, 0, MAX_DATESEQ_COUNT, |c| &c.dateseq_failover_gap, Effect::None),
    int("dateseq-witness-max", true, DEFAULT_WITNESS_MAX, 1, MAX_WITNESS_MAX, |c| &c.dateseq_witness_max, Effect::WitnessMax),
    text("dateseq-witness-file", false, DEFAULT_WITNESS_FILE, |c| &c.dateseq_witness_file, |_, _| Ok(()), Effect::None),
    int("workerid-horizon-ms", true, idgen_core::lease::DEFAULT_HORIZON_MS, idgen_core::lease::HORIZON_RANGE_MS.0, idgen_core::lease::HORIZON_RANGE_MS.1, |c| &c.workerid_horizon_ms, Effect::Horizon),
    text("workerid-witness-file", false, DEFAULT_LEASE_WITNESS_FILE, |c| &c.workerid_witness_file, |_, _| Ok(()), Effect::None),
    int("workerid-ack-replicas", true, crate::replica_acks::AUTO, crate::replica_acks::AUTO, MAX_ACK_REPLICAS, |c| &c.workerid_ack_replicas, Effect::AckReplicas),
    boolean("accept-eviction", true, |c| &c.accept_eviction, Effect::None),
    text("sqids-alphabet", true, DEFAULT_ALPHABET, |c| &c.sqids_alphabet, check_alphabet, Effect::Sqids),
    int("sqids-min-length", true, 0, 0, MAX_MIN_LENGTH as i64, |c| &c.sqids_min_length, Effect::Sqids),
    text("seal-key-file", true, "", |c| &c.seal_key_file, |_, path| read_sealer(path).map(|_| ()), Effect::SealKey),
];

const fn int(
    name: &'static str,
    live: bool,
    default: i64,
    min: i64,
    max: i64,
    cell: fn(&Config) -> &AtomicI64,
    effect: Effect,
) -> Setting {
    let kind = Kind::Int {
        default,
        min,
        max,
        cell,
    };
    Setting {
        name,
        live,
        kind,
        effect,
    }
}

const fn boolean(
    name: &'static str,
    live: bool,
    cell: fn(&Config) -> &AtomicBool,
    effect: Effect,
) -> Setting {
    let kind = Kind::Bool {
        default: false,
        cell,
    };
    Setting {
        name,
        live,
        kind,
        effect,
    }
}

const fn text(
    name: &'static str,
    live: bool,
    default: &'static str,
    cell: fn(&Config) -> &Mutex<String>,
    check: fn(&Config, &str) -> Result<(), String>,
    effect: Effect,
) -> Setting {
    let kind = Kind::Str {
        default,
        cell,
        check,
    };
    Setting {
        name,
        live,
        kind,
        effect,
    }
}

impl Setting {
    /// The setting named `name` (without `idgen.`).
    pub fn find(name: &[u8]) -> Option<&'static Setting> {
        SETTINGS.iter().find(|s| s.name.as_bytes() == name)
    }

    /// Stores the built-in default.
    pub fn set_default(&self, config: &Config) {
        match &self.kind {
            Kind::Int { default, cell, .. } => cell(config).store(*default, Ordering::Relaxed),
            Kind::Bool { default, cell } => cell(config).store(*default, Ordering::Relaxed),
            Kind::Str { default, cell, .. } => *lock(cell(config)) = default.to_string(),
        }
    }

    /// Parses `raw` (a load argument) and stores it, as CONFIG SET would.
    ///
    /// # Errors
    /// Why the value is refused, naming the setting; nothing is stored then.
    pub fn set_from_bytes(&self, config: &Config, raw: &[u8]) -> Result<(), String> {
        let fail = |why: String| format!("idgen.{} {}: {why}", self.name, shown(raw));
        match &self.kind {
            Kind::Int { min, max, cell, .. } => {
                let n = text_of(raw)
                    .and_then(|t| t.parse::<i64>().map_err(|_| "not an integer".into()))
                    .map_err(fail)?;
                if !(*min..=*max).contains(&n) {
                    return Err(fail(format!("must be between {min} and {max}")));
                }
                cell(config).store(n, Ordering::Relaxed);
                Ok(())
            }
            Kind::Bool { cell, .. } => {
                let on = match text_of(raw).map_err(fail)?.to_ascii_lowercase().as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(fail("must be yes or no".into())),
                };
                cell(config).store(on, Ordering::Relaxed);
                Ok(())
            }
            Kind::Str { .. } => self.set_str(config, raw).map_err(fail),
        }
    }

    /// Checks and stores a string value given as bytes.
    ///
    /// # Errors
    /// Why the value is refused (without the setting's name); nothing is stored then.
    pub fn set_str(&self, config: &Config, raw: &[u8]) -> Result<(), String> {
        let Kind::Str { cell, check, .. } = &self.kind else {
            return Err("not a string setting".into());
        };
        let value = text_of(raw)?;
        check(config, value)?;
        *lock(cell(config)) = value.to_string();
        Ok(())
    }
}

impl Config {
    /// Every setting at its default.
    pub fn with_defaults() -> Config {
        let config = Config::default();
        for setting in SETTINGS {
            setting.set_default(&config);
        }
        config
    }

    /// Applies load arguments: `name value` pairs.
    ///
    /// # Errors
    /// An odd count, an unknown name (with the known ones) or a refused value.
    pub fn apply_load_args(&self, args: &[&[u8]]) -> Result<(), String> {
        if !args.len().is_multiple_of(2) {
            return Err("load arguments must be 'name value' pairs".into());
        }
        for pair in args.chunks(2) {
            // A typo must not silently leave a default: a wrong worker-id repeats another
            // node's IDs.
            let setting = Setting::find(pair[0]).ok_or_else(|| {
                let known: Vec<_> = SETTINGS.iter().map(|s| s.name).collect();
                format!(
                    "unknown load argument {}; known: {}",
                    shown(pair[0]),
                    known.join(", ")
                )
            })?;
            setting.set_from_bytes(self, pair[1])?;
        }
        Ok(())
    }

    /// An integer setting's value.
    pub fn int(&self, cell: fn(&Config) -> &AtomicI64) -> i64 {
        cell(self).load(Ordering::Relaxed)
    }

    /// A boolean setting's value.
    pub fn flag(&self, cell: fn(&Config) -> &AtomicBool) -> bool {
        cell(self).load(Ordering::Relaxed)
    }

    /// A string setting's value.
    pub fn text(&self, cell: fn(&Config) -> &Mutex<String>) -> String {
        lock(cell(self)).clone()
    }

    /// A string setting's value if no one is setting it now: for INFO, which may run in a
    /// crash report and must not wait.
    pub fn try_text(&self, cell: fn(&Config) -> &Mutex<String>) -> Option<String> {
        cell(self).try_lock().ok().map(|v| v.clone())
    }

    /// Stores a string setting's value (one resolved at load).
    pub fn set_text(&self, cell: fn(&Config) -> &Mutex<String>, value: String) {
        *lock(cell(self)) = value;
    }

    /// The generator settings the configuration describes, resolving the epoch (stored back,
    /// so that CONFIG GET shows the epoch in force).
    ///
    /// # Errors
    /// A message naming the setting that is wrong; the generator checks the rest.
    pub fn settings(&self) -> Result<Settings, String> {
        let spec = self.text(|c| &c.layout);
        let layout = Layout::parse(&spec).map_err(|e| format!("idgen.layout '{spec}': {e}"))?;
        Ok(Settings {
            layout,
            epoch_ms: self.resolve_epoch(&spec),
            datacenter_id: self.int(|c| &c.datacenter_id) as u64,
            worker_id: self.int(|c| &c.worker_id) as u64,
            random_start: self.flag(|c| &c.random_start),
            max_drift_ms: self.int(|c| &c.max_drift_ms) as u64,
        })
    }

    /// The epoch in force: `idgen.epoch` if set, else the layout profile's own (Twitter's for a
    /// spelled-out layout).
    fn resolve_epoch(&self, layout_spec: &str) -> i64 {
        let set = self.int(|c| &c.epoch);
        if set != LAYOUTS_EPOCH {
            self.epoch_set.store(true, Ordering::Relaxed);
            return set;
        }
        let epoch = Layout::profile(layout_spec).map_or(TWITTER_EPOCH_MS, |p| p.epoch_ms);
        self.epoch.store(epoch, Ordering::Relaxed);
        epoch
    }

    /// The DATESEQ calendar the configuration describes.
    ///
    /// # Errors
    /// The zone error's message.
    pub fn calendar(&self) -> Result<Calendar, String> {
        Calendar::new(&self.text(|c| &c.dateseq_timezone))
            .map_err(|e| format!("idgen.dateseq-timezone: {e}"))
    }

    /// The sealer of the key in `idgen.seal-key-file`; `None` when it is empty.
    ///
    /// # Errors
    /// The file cannot be read or does not hold a key.
    pub fn sealer(&self) -> Result<Option<Sealer>, String> {
        read_sealer(&self.text(|c| &c.seal_key_file))
    }

    /// The Sqid codec the configuration describes.
    ///
    /// # Errors
    /// The alphabet's error.
    pub fn sqid_codec(&self) -> Result<SqidCodec, String> {
        let min_length = self.int(|c| &c.sqids_min_length) as u8;
        SqidCodec::new(&self.text(|c| &c.sqids_alphabet), min_length)
            .map_err(|e| format!("idgen.sqids-alphabet: {e}"))
    }
}

/// The sealer of the key in the file at `path` (its first line, 64 hex digits); `None` for an
/// empty path. The key itself never appears in a message.
fn read_sealer(path: &str) -> Result<Option<Sealer>, String> {
    if path.is_empty() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let line = text.lines().next().unwrap_or_default();
    Sealer::from_hex(line)
        .map(Some)
        .map_err(|e| format!("{path}: {e}"))
}

/// A string value as text, or why it is not acceptable text.
fn text_of(raw: &[u8]) -> Result<&str, String> {
    if raw.len() > MAX_STRING_LEN {
        return Err(format!("longer than {MAX_STRING_LEN} bytes"));
    }
    if raw.contains(&0) {
        return Err("holds a NUL byte".into());
    }
    std::str::from_utf8(raw).map_err(|_| "is not UTF-8".into())
}

/// A string cell, taken as it is even if a panic poisoned it (a panic aborts Redis anyway).
fn lock(cell: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    cell.lock().unwrap_or_else(|p| p.into_inner())
}

fn check_layout(_: &Config, spec: &str) -> Result<(), String> {
    Layout::parse(spec).map(|_| ()).map_err(|e| e.to_string())
}

/// A zone that resolves; on a running server, one that does not take today's date back: the
/// day it would go back to may have ended here, its counters expired, and its values repeat.
fn check_zone(config: &Config, zone: &str) -> Result<(), String> {
    let new = Calendar::new(zone).map_err(|e| e.to_string())?;
    if !config.running.load(Ordering::Relaxed) {
        return Ok(());
    }
    let old = config.calendar()?;
    let now = SystemClock.now_ms();
    let (today, would) = (old.day_of(now), new.day_of(now));
    if would.date >= today.date {
        return Ok(());
    }
    let from = jiff::Timestamp::from_millisecond(old.same_wall_time(today.start_ms, &new))
        .map(|t| t.to_string())
        .unwrap_or_default();
    Err(format!(
        "would take DATESEQ dates back from {} (in {}) to {}, a day that has ended here: its \
         counters may have expired, and their values would repeat; set it from {from}, when {} \
         begins in {zone}",
        today.date,
        old.name(),
        would.date,
        today.date
    ))
}

fn check_alphabet(config: &Config, alphabet: &str) -> Result<(), String> {
    let min_length = config.int(|c| &c.sqids_min_length) as u8;
    SqidCodec::new(alphabet, min_length)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

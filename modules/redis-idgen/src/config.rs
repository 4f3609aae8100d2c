//! The `idgen.*` configuration: readable with CONFIG GET, set as load arguments
//! (`--loadmodule libredis_idgen.so worker-id 3`) or in redis.conf (`idgen.worker-id 3`).
//!
//! [`SETTINGS`] lists every setting once: its name, default, limits, and what a new value does.
//! Settings that would let IDs repeat if changed on a running server (worker-id, datacenter-id,
//! epoch, layout, state-file) are immutable: CONFIG SET refuses them. The others apply at once.
//! Every value is checked here, whichever way it arrives; a bad one is an error, never a crash
//! ([`crate::ffi::config`] registers the table with Redis).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use idgen_core::dateseq::{Calendar, DayCache};
use idgen_core::sqid::{DEFAULT_ALPHABET, MAX_MIN_LENGTH};
use idgen_core::{Layout, Lineage, Settings, SqidCodec, TWITTER_EPOCH_MS};

use crate::error::shown;
use crate::state;

/// `idgen.worker-id`: worker (shard, machine) ID. Immutable. Default 0.
pub static WORKER_ID: AtomicI64 = AtomicI64::new(0);
/// `idgen.datacenter-id`: datacenter ID. Immutable. Default 0.
pub static DATACENTER_ID: AtomicI64 = AtomicI64::new(0);
/// `idgen.epoch`: custom epoch in ms since 1970. Immutable. Default [`LAYOUTS_EPOCH`]: the
/// layout profile's own (Sonyflake's for `sonyflake`, ...), Twitter's for a spelled-out layout;
/// resolved at load and stored back, so CONFIG GET shows the epoch in force.
pub static EPOCH: AtomicI64 = AtomicI64::new(LAYOUTS_EPOCH);
/// The value of `idgen.epoch` that means "the layout's own epoch".
pub const LAYOUTS_EPOCH: i64 = -1;
/// Whether `idgen.epoch` was set, rather than taken from the layout (known once resolved).
static EPOCH_SET: AtomicBool = AtomicBool::new(false);
/// `idgen.accept-id-overlap`: start even when the state file says this server issued IDs under
/// another layout or epoch that the new settings' IDs may equal. Immutable. Default no.
pub static ACCEPT_OVERLAP: AtomicBool = AtomicBool::new(false);
/// `idgen.layout`: twitter, instagram, sonyflake, js53, or a spec. Immutable. Default twitter.
pub static LAYOUT: Mutex<String> = Mutex::new(String::new());
/// `idgen.state-file`: where the restart-safety reservation lives; empty turns it off. A
/// relative path is resolved against Redis's `dir` once, at load, and shown absolute after.
/// Immutable. Default [`DEFAULT_STATE_FILE`].
pub static STATE_FILE: Mutex<String> = Mutex::new(String::new());
/// Default of `idgen.state-file`.
pub const DEFAULT_STATE_FILE: &str = "idgen-snowflake.state";
/// `idgen.sequence-random-start`: start each tick's sequence at random. Default no.
pub static RANDOM_START: AtomicBool = AtomicBool::new(false);
/// `idgen.max-drift-ms`: how far IDs may run ahead of the clock before refusing. Default 1000.
pub static MAX_DRIFT_MS: AtomicI64 = AtomicI64::new(idgen_core::DEFAULT_MAX_DRIFT_MS as i64);
/// `idgen.random-ids-on-replica`: UUID7.NEXT and ULID.NEXT answer on a replica too. Default no.
pub static RANDOM_IDS_ON_REPLICA: AtomicBool = AtomicBool::new(false);
/// `idgen.dateseq-timezone`: zone of DATESEQ dates. Default UTC.
pub static DATESEQ_TIMEZONE: Mutex<String> = Mutex::new(String::new());
/// `idgen.dateseq-ttl`: seconds a day's counter key outlives its day. Default 2 days.
pub static DATESEQ_TTL: AtomicI64 = AtomicI64::new(DEFAULT_TTL_S);
/// `idgen.dateseq-digits`: default DIGITS of DATESEQ. Default 6.
pub static DATESEQ_DIGITS: AtomicI64 = AtomicI64::new(idgen_core::dateseq::DEFAULT_DIGITS as i64);

/// `idgen.dateseq-failover-gap`: values each counter skips on its first use after this node is
/// promoted to primary, covering what the old primary acknowledged but never replicated.
/// Default [`DEFAULT_FAILOVER_GAP`]; 0 turns it off.
pub static DATESEQ_FAILOVER_GAP: AtomicI64 = AtomicI64::new(DEFAULT_FAILOVER_GAP);

/// `idgen.workerid-horizon-ms`: the longest lease TTL, and how far past the coordinator's clock
/// a holder may record an UNTIL: lease grants start this far above a load, a promotion or a
/// namespace found reset. Default [`idgen_core::lease::DEFAULT_HORIZON_MS`].
pub static WORKERID_HORIZON_MS: AtomicI64 = AtomicI64::new(idgen_core::lease::DEFAULT_HORIZON_MS);
/// `idgen.accept-eviction`: serve DATESEQ and WORKERID even when `maxmemory-policy` can evict
/// their keys (which repeats values). Default no.
pub static ACCEPT_EVICTION: AtomicBool = AtomicBool::new(false);

/// `idgen.sqids-alphabet`: the letters of SQIDS replies and IDGEN.ENCODE, in the order that
/// makes them (shuffle it: the order is the secret). Default letters and digits.
pub static SQIDS_ALPHABET: Mutex<String> = Mutex::new(String::new());
/// `idgen.sqids-min-length`: Sqids are padded to at least this many characters. Default 0.
pub static SQIDS_MIN_LENGTH: AtomicI64 = AtomicI64::new(0);

/// Default of `idgen.dateseq-failover-gap`: a second of writes at 10,000 values/s.
pub const DEFAULT_FAILOVER_GAP: i64 = 10_000;
/// Default of `idgen.dateseq-ttl`.
pub const DEFAULT_TTL_S: i64 = 2 * 86_400;
/// Shortest `idgen.dateseq-ttl`: an hour, so a clock a little behind still finds yesterday's key.
pub const MIN_TTL_S: i64 = 3_600;
/// Longest `idgen.dateseq-ttl`: ten years.
pub const MAX_TTL_S: i64 = 10 * 365 * 86_400;
/// Largest worker or datacenter ID any layout may take.
pub const MAX_NODE_ID: i64 = 1 << 22;
/// Longest string value accepted: longer than any path, zone or layout spec needs.
pub const MAX_STRING_LEN: usize = 4096;

/// One `idgen.*` setting.
pub struct Setting {
    /// The name without `idgen.`, as load arguments spell it.
    pub name: &'static str,
    /// Whether CONFIG SET may change it on a running server.
    pub live: bool,
    /// Its type, default, limits and storage.
    pub kind: Kind,
}

/// A setting's type, with its default, limits, storage and what a new value does.
pub enum Kind {
    /// An integer in `min..=max`.
    Int {
        default: i64,
        min: i64,
        max: i64,
        cell: &'static AtomicI64,
        apply: fn(i64),
    },
    /// yes or no.
    Bool {
        default: bool,
        cell: &'static AtomicBool,
        apply: fn(bool),
    },
    /// A UTF-8 string without NUL bytes, at most [`MAX_STRING_LEN`] bytes, that `check` accepts.
    Str {
        default: &'static str,
        cell: &'static Mutex<String>,
        check: fn(&str) -> Result<(), String>,
    },
}

/// Every setting, in the order CONFIG GET idgen.* lists them.
pub static SETTINGS: &[Setting] = &[
    int("worker-id", false, 0, 0, MAX_NODE_ID, &WORKER_ID, none),
    int(
        "datacenter-id",
        false,
        0,
        0,
        MAX_NODE_ID,
        &DATACENTER_ID,
        none,
    ),
    int(
        "epoch",
        false,
        LAYOUTS_EPOCH,
        LAYOUTS_EPOCH,
        i64::MAX,
        &EPOCH,
        none,
    ),
    text("layout", false, "twitter", &LAYOUT, check_layout),
    text("state-file", false, DEFAULT_STATE_FILE, &STATE_FILE, any),
    Setting {
        name: "accept-id-overlap",
        live: false,
        kind: Kind::Bool {
            default: false,
            cell: &ACCEPT_OVERLAP,
            apply: |_| {},
        },
    },
    int(
        "max-drift-ms",
        true,
        idgen_core::DEFAULT_MAX_DRIFT_MS as i64,
        0,
        86_400_000,
        &MAX_DRIFT_MS,
        apply_max_drift,
    ),
    Setting {
        name: "sequence-random-start",
        live: true,
        kind: Kind::Bool {
            default: false,
            cell: &RANDOM_START,
            apply: apply_random_start,
        },
    },
    Setting {
        name: "random-ids-on-replica",
        live: true,
        kind: Kind::Bool {
            default: false,
            cell: &RANDOM_IDS_ON_REPLICA,
            apply: |_| {},
        },
    },
    text(
        "dateseq-timezone",
        true,
        "UTC",
        &DATESEQ_TIMEZONE,
        apply_timezone,
    ),
    int(
        "dateseq-ttl",
        true,
        DEFAULT_TTL_S,
        MIN_TTL_S,
        MAX_TTL_S,
        &DATESEQ_TTL,
        none,
    ),
    int(
        "dateseq-digits",
        true,
        idgen_core::dateseq::DEFAULT_DIGITS as i64,
        1,
        idgen_core::dateseq::MAX_DIGITS as i64,
        &DATESEQ_DIGITS,
        none,
    ),
    int(
        "dateseq-failover-gap",
        true,
        DEFAULT_FAILOVER_GAP,
        0,
        crate::dateseq::MAX_COUNT,
        &DATESEQ_FAILOVER_GAP,
        none,
    ),
    int(
        "workerid-horizon-ms",
        true,
        idgen_core::lease::DEFAULT_HORIZON_MS,
        idgen_core::lease::HORIZON_RANGE_MS.0,
        idgen_core::lease::HORIZON_RANGE_MS.1,
        &WORKERID_HORIZON_MS,
        none,
    ),
    Setting {
        name: "accept-eviction",
        live: true,
        kind: Kind::Bool {
            default: false,
            cell: &ACCEPT_EVICTION,
            apply: |_| {},
        },
    },
    text(
        "sqids-alphabet",
        true,
        DEFAULT_ALPHABET,
        &SQIDS_ALPHABET,
        apply_sqids_alphabet,
    ),
    int(
        "sqids-min-length",
        true,
        0,
        0,
        MAX_MIN_LENGTH as i64,
        &SQIDS_MIN_LENGTH,
        apply_sqids_min_length,
    ),
];

const fn int(
    name: &'static str,
    live: bool,
    default: i64,
    min: i64,
    max: i64,
    cell: &'static AtomicI64,
    apply: fn(i64),
) -> Setting {
    Setting {
        name,
        live,
        kind: Kind::Int {
            default,
            min,
            max,
            cell,
            apply,
        },
    }
}

const fn text(
    name: &'static str,
    live: bool,
    default: &'static str,
    cell: &'static Mutex<String>,
    check: fn(&str) -> Result<(), String>,
) -> Setting {
    Setting {
        name,
        live,
        kind: Kind::Str {
            default,
            cell,
            check,
        },
    }
}

fn none(_: i64) {}

fn any(_: &str) -> Result<(), String> {
    Ok(())
}

impl Setting {
    /// The setting named `name` (without `idgen.`).
    pub fn find(name: &[u8]) -> Option<&'static Setting> {
        SETTINGS.iter().find(|s| s.name.as_bytes() == name)
    }

    /// Stores the built-in default.
    pub fn set_default(&self) {
        match &self.kind {
            Kind::Int { default, .. } => self.set_int(*default),
            Kind::Bool { default, .. } => self.set_bool(*default),
            Kind::Str { default, cell, .. } => {
                *cell.lock().unwrap_or_else(|p| p.into_inner()) = default.to_string()
            }
        }
    }

    /// Parses `raw` (a load argument) and stores it, as CONFIG SET would.
    ///
    /// # Errors
    /// Why the value is refused, naming the setting; nothing is stored then.
    pub fn set_from_bytes(&self, raw: &[u8]) -> Result<(), String> {
        let fail = |why: String| format!("idgen.{} {}: {why}", self.name, shown(raw));
        match &self.kind {
            Kind::Int { min, max, .. } => {
                let n = text_of(raw)
                    .and_then(|t| t.parse::<i64>().map_err(|_| "not an integer".into()))
                    .map_err(fail)?;
                if !(*min..=*max).contains(&n) {
                    return Err(fail(format!("must be between {min} and {max}")));
                }
                self.set_int(n);
                Ok(())
            }
            Kind::Bool { .. } => {
                let on = match text_of(raw).map_err(fail)?.to_ascii_lowercase().as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(fail("must be yes or no".into())),
                };
                self.set_bool(on);
                Ok(())
            }
            Kind::Str { .. } => self.set_str(raw).map_err(fail),
        }
    }

    /// Stores an integer Redis has already parsed and checked against the limits.
    pub fn set_int(&self, n: i64) {
        if let Kind::Int { cell, apply, .. } = &self.kind {
            cell.store(n, Ordering::Relaxed);
            apply(n);
        }
    }

    /// Stores a boolean.
    pub fn set_bool(&self, on: bool) {
        if let Kind::Bool { cell, apply, .. } = &self.kind {
            cell.store(on, Ordering::Relaxed);
            apply(on);
        }
    }

    /// Checks and stores a string value given as bytes.
    ///
    /// # Errors
    /// Why the value is refused (without the setting's name); nothing is stored then.
    pub fn set_str(&self, raw: &[u8]) -> Result<(), String> {
        let Kind::Str { cell, check, .. } = &self.kind else {
            return Err("not a string setting".into());
        };
        let value = text_of(raw)?;
        check(value)?;
        *cell.lock().unwrap_or_else(|p| p.into_inner()) = value.to_string();
        Ok(())
    }

    /// The current integer value (0 for other kinds).
    pub fn get_int(&self) -> i64 {
        match &self.kind {
            Kind::Int { cell, .. } => cell.load(Ordering::Relaxed),
            _ => 0,
        }
    }

    /// The current boolean value (false for other kinds).
    pub fn get_bool(&self) -> bool {
        match &self.kind {
            Kind::Bool { cell, .. } => cell.load(Ordering::Relaxed),
            _ => false,
        }
    }

    /// The current string value (empty for other kinds).
    pub fn get_str(&self) -> String {
        match &self.kind {
            Kind::Str { cell, .. } => read(cell),
            _ => String::new(),
        }
    }
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

fn read(cell: &Mutex<String>) -> String {
    cell.lock()
        .map(|s| s.clone())
        .unwrap_or_else(|p| p.into_inner().clone())
}

fn check_layout(spec: &str) -> Result<(), String> {
    Layout::parse(spec).map(|_| ()).map_err(|e| e.to_string())
}

/// Checks the zone and, on a running server, switches DATESEQ to it.
fn apply_timezone(zone: &str) -> Result<(), String> {
    let calendar = Calendar::new(zone).map_err(|e| e.to_string())?;
    if state::is_ready() {
        state::with(|s| s.days = DayCache::new(calendar)).map_err(|e| e.text())?;
    }
    Ok(())
}

/// Checks the alphabet and, on a running server, makes Sqids with it from now on.
fn apply_sqids_alphabet(alphabet: &str) -> Result<(), String> {
    let min_length = SQIDS_MIN_LENGTH.load(Ordering::Relaxed) as u8;
    let codec = SqidCodec::new(alphabet, min_length).map_err(|e| e.to_string())?;
    if state::is_ready() {
        state::with(|s| s.sqids = codec).map_err(|e| e.text())?;
    }
    Ok(())
}

fn apply_sqids_min_length(min_length: i64) {
    // The stored alphabet was checked when it was set.
    if let Ok(codec) = SqidCodec::new(&read(&SQIDS_ALPHABET), min_length as u8) {
        let _ = state::with(|s| s.sqids = codec);
    }
}

fn apply_random_start(on: bool) {
    let _ = state::with(|s| s.ids.set_random_start(on));
}

fn apply_max_drift(ms: i64) {
    let _ = state::with(|s| {
        s.ids.set_max_drift_ms(ms as u64);
        s.uuid7.set_max_drift_ms(ms as u64);
        s.ulid.set_max_drift_ms(ms as u64);
    });
}

/// The generator settings the configuration describes.
///
/// # Errors
/// A message naming the setting that is wrong; the generator checks the rest.
pub fn settings() -> Result<Settings, String> {
    let spec = read(&LAYOUT);
    let layout = Layout::parse(&spec).map_err(|e| format!("idgen.layout '{spec}': {e}"))?;
    Ok(Settings {
        layout,
        epoch_ms: resolve_epoch(&spec),
        datacenter_id: DATACENTER_ID.load(Ordering::Relaxed) as u64,
        worker_id: WORKER_ID.load(Ordering::Relaxed) as u64,
        random_start: RANDOM_START.load(Ordering::Relaxed),
        max_drift_ms: MAX_DRIFT_MS.load(Ordering::Relaxed) as u64,
    })
}

/// The epoch in force: `idgen.epoch` if set, else the layout profile's own (Twitter's for a
/// spelled-out layout). Stored back, so that CONFIG GET shows it.
fn resolve_epoch(layout_spec: &str) -> i64 {
    let set = EPOCH.load(Ordering::Relaxed);
    if set != LAYOUTS_EPOCH {
        EPOCH_SET.store(true, Ordering::Relaxed);
        return set;
    }
    let epoch = Layout::profile(layout_spec).map_or(TWITTER_EPOCH_MS, |p| p.epoch_ms);
    EPOCH.store(epoch, Ordering::Relaxed);
    epoch
}

/// Checks that IDs issued under `now` carry on above those the state file says were issued
/// before `floor_ms` under `recorded` (its lineage words; `None` in a file written before
/// lineages were recorded, whose IDs used the configured epoch if one was set, else Twitter's,
/// the only default then). `idgen.accept-id-overlap yes` turns a refusal into a warning.
///
/// # Errors
/// Why the module must not start: the overlap, and what to do about it.
pub fn check_lineage(
    floor_ms: i64,
    recorded: Option<&str>,
    now: &Lineage,
    now_ms: i64,
) -> Result<Option<String>, String> {
    let issued = match recorded {
        Some(words) => Lineage::parse_record(words).map_err(|e| {
            format!(
                "idgen.state-file {} holds a lineage this module cannot read: {e}",
                read(&STATE_FILE)
            )
        })?,
        None => Lineage {
            layout: now.layout.clone(),
            epoch_ms: if EPOCH_SET.load(Ordering::Relaxed) {
                now.epoch_ms
            } else {
                TWITTER_EPOCH_MS
            },
        },
    };
    let Err(overlap) = now.carries_on_from(&issued, floor_ms, now_ms) else {
        return Ok(None);
    };
    let why = format!(
        "idgen.state-file says this server issued IDs under layout {} epoch {} until {floor_ms} \
         ms; under layout {} epoch {} {overlap}",
        issued.layout, issued.epoch_ms, now.layout, now.epoch_ms
    );
    if ACCEPT_OVERLAP.load(Ordering::Relaxed) {
        return Ok(Some(format!(
            "{why}; starting anyway, as idgen.accept-id-overlap is yes"
        )));
    }
    Err(format!(
        "{why}. Keep the old ones (idgen.epoch {} and idgen.layout {}), or, if IDs issued before \
         can never meet the new ones, start once with idgen.accept-id-overlap yes",
        issued.epoch_ms, issued.layout
    ))
}

/// The reservation file as an absolute path, unless switched off. Resolved against the working
/// directory (Redis's `dir`) now, and stored back, so that a later `CONFIG SET dir` cannot move
/// it: a restart with the original `dir` must find the reservation the running server wrote.
///
/// # Errors
/// When the working directory cannot be read.
pub fn resolve_state_file() -> Result<Option<PathBuf>, String> {
    let path = read(&STATE_FILE);
    if path.is_empty() {
        return Ok(None);
    }
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let absolute = cwd.join(path);
    *STATE_FILE.lock().unwrap_or_else(|p| p.into_inner()) = absolute.to_string_lossy().into_owned();
    Ok(Some(absolute))
}

/// The DATESEQ calendar the configuration describes.
///
/// # Errors
/// The zone error's message.
pub fn calendar() -> Result<Calendar, String> {
    Calendar::new(&read(&DATESEQ_TIMEZONE)).map_err(|e| format!("idgen.dateseq-timezone: {e}"))
}

/// The Sqid codec the configuration describes.
///
/// # Errors
/// The alphabet's error.
pub fn sqid_codec() -> Result<SqidCodec, String> {
    let min_length = SQIDS_MIN_LENGTH.load(Ordering::Relaxed) as u8;
    SqidCodec::new(&read(&SQIDS_ALPHABET), min_length)
        .map_err(|e| format!("idgen.sqids-alphabet: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The refusal of `value` for the setting `name`; panics if it was accepted.
    fn refusal(name: &str, value: &[u8]) -> String {
        let setting = Setting::find(name.as_bytes()).expect("a setting");
        setting
            .set_from_bytes(value)
            .expect_err("a bad value was accepted")
    }

    #[test]
    fn every_setting_is_found_by_its_name_and_only_so() {
        for s in SETTINGS {
            assert!(std::ptr::eq(Setting::find(s.name.as_bytes()).unwrap(), s));
        }
        assert!(Setting::find(b"workerid").is_none());
        assert!(
            Setting::find(b"idgen.worker-id").is_none(),
            "load arguments drop the prefix"
        );
    }

    #[test]
    fn settings_whose_change_could_repeat_ids_are_immutable() {
        for name in [
            "worker-id",
            "datacenter-id",
            "epoch",
            "layout",
            "state-file",
            "accept-id-overlap",
        ] {
            assert!(!Setting::find(name.as_bytes()).unwrap().live, "{name}");
        }
        for name in [
            "max-drift-ms",
            "workerid-horizon-ms",
            "accept-eviction",
            "dateseq-ttl",
        ] {
            assert!(Setting::find(name.as_bytes()).unwrap().live, "{name}");
        }
    }

    #[test]
    fn every_default_passes_its_own_checks() {
        for s in SETTINGS {
            match &s.kind {
                Kind::Int {
                    default, min, max, ..
                } => {
                    assert!((*min..=*max).contains(default), "{}", s.name)
                }
                Kind::Str { default, check, .. } if s.name != "dateseq-timezone" => {
                    assert_eq!(check(default), Ok(()), "{}", s.name)
                }
                _ => {}
            }
        }
    }

    #[test]
    fn a_worker_id_out_of_range_is_quoted_with_its_range() {
        let err = refusal("worker-id", b"-1");
        assert_eq!(
            err,
            format!("idgen.worker-id '-1': must be between 0 and {MAX_NODE_ID}")
        );
    }

    #[test]
    fn a_number_that_is_not_one_is_quoted() {
        assert_eq!(
            refusal("max-drift-ms", b"soon"),
            "idgen.max-drift-ms 'soon': not an integer"
        );
        assert!(refusal("dateseq-digits", b"1.5").contains("'1.5'"));
        assert!(refusal("dateseq-ttl", b"").contains("''"));
    }

    #[test]
    fn the_dateseq_ttl_keeps_its_bounds() {
        assert!(refusal("dateseq-ttl", b"3599").contains("between 3600 and"));
        let too_long = (MAX_TTL_S + 1).to_string();
        assert!(refusal("dateseq-ttl", too_long.as_bytes()).contains(&too_long));
    }

    #[test]
    fn the_lease_horizon_keeps_its_bounds() {
        assert!(refusal("workerid-horizon-ms", b"99").contains("between 100 and 86400000"));
        assert!(refusal("workerid-horizon-ms", b"86400001").contains("'86400001'"));
    }

    #[test]
    fn booleans_are_yes_or_no() {
        for value in [&b"true"[..], b"1", b"", b"y"] {
            assert!(
                refusal("accept-eviction", value).ends_with("must be yes or no"),
                "{value:?}"
            );
        }
    }

    #[test]
    fn a_layout_that_does_not_fit_is_refused_with_its_bits() {
        let err = refusal("layout", b"time:37,worker:20,sequence:16");
        assert!(err.contains("73 bits"), "{err}");
        assert!(refusal("layout", b"nonsense").starts_with("idgen.layout 'nonsense'"));
    }

    #[test]
    fn an_unknown_time_zone_is_refused() {
        assert!(refusal("dateseq-timezone", b"Mars/Olympus").contains("Mars/Olympus"));
    }

    #[test]
    fn a_short_or_repeating_alphabet_is_refused() {
        assert!(refusal("sqids-alphabet", b"ab").starts_with("idgen.sqids-alphabet 'ab'"));
        assert!(refusal("sqids-alphabet", b"aabbcc").starts_with("idgen.sqids-alphabet"));
    }

    #[test]
    fn strings_must_be_short_utf8_without_nul() {
        assert_eq!(text_of(b"ok"), Ok("ok"));
        assert!(text_of(b"a\0b").unwrap_err().contains("NUL"));
        assert!(text_of(b"\xff").unwrap_err().contains("UTF-8"));
        let long = vec![b'a'; MAX_STRING_LEN + 1];
        assert!(text_of(&long).unwrap_err().contains("longer than 4096"));
        assert_eq!(
            text_of(&long[..MAX_STRING_LEN]).map(str::len),
            Ok(MAX_STRING_LEN)
        );
    }

    #[test]
    fn values_are_shown_quoted_escaped_and_cut_short() {
        assert_eq!(shown(b"abc"), "'abc'");
        assert_eq!(shown(b"a\nb\xff"), "'a\\nb\\xff'");
        let long = shown(&[b'x'; 100]);
        assert!(long.ends_with("...'") && long.len() == 64 + 5, "{long}");
    }

    #[test]
    fn a_state_file_of_the_same_lineage_carries_on() {
        let now = Lineage {
            layout: Layout::parse("twitter").unwrap(),
            epoch_ms: TWITTER_EPOCH_MS,
        };
        let record = now.record();
        assert_eq!(check_lineage(1_000, Some(&record), &now, 2_000), Ok(None));
    }

    #[test]
    fn a_later_epoch_that_could_reach_old_ids_is_refused() {
        let old = Lineage {
            layout: Layout::parse("twitter").unwrap(),
            epoch_ms: TWITTER_EPOCH_MS,
        };
        let now = Lineage {
            epoch_ms: TWITTER_EPOCH_MS + 86_400_000,
            ..old.clone()
        };
        let at = TWITTER_EPOCH_MS + 10 * 86_400_000;
        let err = check_lineage(at, Some(&old.record()), &now, at).unwrap_err();
        assert!(err.contains("idgen.accept-id-overlap yes"), "{err}");
        assert!(
            err.contains(&format!("idgen.epoch {}", TWITTER_EPOCH_MS)),
            "{err}"
        );
    }

    #[test]
    fn an_unreadable_lineage_is_refused() {
        let now = Lineage {
            layout: Layout::parse("twitter").unwrap(),
            epoch_ms: TWITTER_EPOCH_MS,
        };
        for words in [
            "layout=twitter epoch=-3",
            "layout=time:80 epoch=1",
            "epoch=1",
        ] {
            let err = check_lineage(1_000, Some(words), &now, 2_000).unwrap_err();
            assert!(err.contains("cannot read"), "{words}: {err}");
        }
    }

    #[test]
    fn every_integer_setting_refuses_one_past_each_end_and_names_both() {
        for s in SETTINGS {
            if let Kind::Int { min, max, .. } = s.kind {
                for value in [min.checked_sub(1), max.checked_add(1)]
                    .into_iter()
                    .flatten()
                {
                    let err = refusal(s.name, value.to_string().as_bytes());
                    assert!(
                        err.contains(&format!("'{value}'"))
                            && err.contains(&format!("between {min} and {max}")),
                        "{}: {err}",
                        s.name
                    );
                }
            }
        }
    }

    #[test]
    fn every_string_setting_refuses_a_nul_byte() {
        for s in SETTINGS
            .iter()
            .filter(|s| matches!(s.kind, Kind::Str { .. }))
        {
            assert!(
                refusal(s.name, b"a\0b").ends_with("holds a NUL byte"),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn every_boolean_setting_refuses_anything_but_yes_or_no() {
        for s in SETTINGS
            .iter()
            .filter(|s| matches!(s.kind, Kind::Bool { .. }))
        {
            let err = refusal(s.name, b"maybe");
            assert_eq!(err, format!("idgen.{} 'maybe': must be yes or no", s.name));
        }
    }
}

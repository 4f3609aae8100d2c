//! idgen's Functions library (`idgen.lua`, beside this crate's `src/`): Snowflake IDs, date
//! sequences and worker-ID leases for a Redis that cannot load the module (docs/library.md),
//! what loads into such a server as the module loads into others. [`install()`] puts it on a
//! server, or upgrades it, and refuses a downgrade; [`install::install_on`] and
//! [`install::install_everywhere`] as scripts where the server has no `FUNCTION`
//! ([`scripts`]), and on every primary of a Cluster; [`require`] is how a client refuses a
//! library older than it needs. Its constants shared with the module come from
//! `idgen_core::limits` and `idgen_core::lease` (a test fails on any difference).

pub mod install;
pub mod scripts;
mod urls;

use std::fmt;

use idgen_core::dateseq::Calendar;
use idgen_core::lease::DEFAULT_HORIZON_MS;

/// The library's source, as `FUNCTION LOAD` takes it.
pub const SOURCE: &str = include_str!("../idgen.lua");

/// The library's name in `FUNCTION LIST`.
pub const NAME: &str = "idgen";

/// The version of [`SOURCE`] (its `VERSION`).
pub fn version() -> &'static str {
    SOURCE
        .lines()
        .find_map(|line| line.strip_prefix("local VERSION = '")?.strip_suffix('\''))
        .expect("idgen.lua declares its VERSION")
}

/// What a library is installed with, fixed in its source at install (a function cannot read
/// `CONFIG`, and a managed service denies it): the module's load settings of the same names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The lease horizon (the module's `idgen.workerid-horizon-ms`): no TTL is longer, no
    /// UNTIL further past the server's clock, and grants after a restart or a promotion start
    /// this far past it. 100 ms to a day; default 30 s.
    pub horizon_ms: u64,
    /// The time zone of date sequences' labels (the module's `idgen.dateseq-timezone`): UTC,
    /// an IANA name such as America/New_York, or an offset such as +09:00. A named zone's
    /// offsets are written into the source from 1970 to [`ZONE_END_MS`] (2100), from this
    /// machine's time-zone database; past that the library refuses date sequences.
    pub time_zone: String,
    /// The letters of `snowflake_next`'s SQIDS replies (the module's `idgen.sqids-alphabet`):
    /// 3 to 94 distinct printable ASCII characters; the IDs decode with the module's
    /// `IDGEN.DECODE` under the same setting.
    pub sqids_alphabet: String,
    /// The shortest Sqid (the module's `idgen.sqids-min-length`), 0 to 255.
    pub sqids_min_length: u8,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            horizon_ms: DEFAULT_HORIZON_MS as u64,
            time_zone: "UTC".to_string(),
            sqids_alphabet: idgen_core::sqid::DEFAULT_ALPHABET.to_string(),
            sqids_min_length: 0,
        }
    }
}

/// Where the zone's offsets written into the library end: 2100-01-01T00:00:00Z.
pub const ZONE_END_MS: i64 = 4_102_444_800_000;

/// The source's lines that hold the time zone, as it declares UTC.
const UTC_ZONE: &str = "local ZONE = 'UTC'\nlocal ZONE_FIRST_MS = 0\nlocal ZONE_CHANGES = {}\n\
                        local ZONE_END_MS = 2 ^ 53\n";

/// The library's source with `settings` in place of its defaults.
///
/// # Errors
/// [`LibraryError::BadSetting`] for a horizon outside 100 ms to a day, or a time zone that
/// is none.
pub fn source_with(settings: &Settings) -> Result<String, LibraryError> {
    source_after(settings, 0)
}

/// The library's `local EARLIER_UNTIL_MS` as the source declares it: no earlier install.
const NO_EARLIER: &str = "local EARLIER_UNTIL_MS = 0\n";

/// [`source_with`], after an install whose holders may hold UNTILs up to `earlier_until_ms`
/// (server ms; 0 for none): the library's fences reach at least to it ([`earlier_until_ms`]).
///
/// # Errors
/// As [`source_with`].
pub fn source_after(settings: &Settings, earlier_until_ms: i64) -> Result<String, LibraryError> {
    let (low, high) = idgen_core::lease::HORIZON_RANGE_MS;
    let horizon = settings.horizon_ms;
    if !(low as u64..=high as u64).contains(&horizon) {
        return Err(LibraryError::BadSetting(format!(
            "horizon_ms {horizon} must be between {low} and {high}"
        )));
    }
    let default = format!("local HORIZON_MS = {}\n", DEFAULT_HORIZON_MS);
    assert!(SOURCE.contains(&default), "idgen.lua declares HORIZON_MS");
    assert!(SOURCE.contains(UTC_ZONE), "idgen.lua declares ZONE");
    assert!(
        SOURCE.contains(NO_EARLIER),
        "idgen.lua declares EARLIER_UNTIL_MS"
    );
    let sqids = sqids_lines(&settings.sqids_alphabet, settings.sqids_min_length)?;
    Ok(SOURCE
        .replace(&default, &format!("local HORIZON_MS = {horizon}\n"))
        .replace(
            NO_EARLIER,
            &format!("local EARLIER_UNTIL_MS = {}\n", earlier_until_ms.max(0)),
        )
        .replace(UTC_ZONE, &zone_lines(&settings.time_zone)?)
        .replace(sqids_block(SOURCE), &sqids))
}

/// How far the holders of the library installed as `installed` (its source, with its settings)
/// may have been told to hold a lease, at `now_ms` on the server, when a library with
/// `horizon_ms` replaces it: its horizon past now, or the UNTIL its own earlier install left
/// (0 when neither reaches past the new horizon, which then fences far enough alone).
/// A shorter horizon would otherwise fence below leases told under the longer one: a grant
/// after a reset, a restart or a promotion would overlap them.
pub fn earlier_until_ms(installed: Option<&str>, horizon_ms: u64, now_ms: i64) -> i64 {
    let declared = |name: &str| -> i64 {
        installed
            .and_then(|text| {
                let rest = &text[text.find(&format!("local {name} = "))? + name.len() + 9..];
                rest[..rest.find('\n')?].trim().parse().ok()
            })
            .unwrap_or(0)
    };
    let told = declared("EARLIER_UNTIL_MS").max(now_ms.saturating_add(declared("HORIZON_MS")));
    if told > now_ms.saturating_add(horizon_ms as i64) {
        told
    } else {
        0
    }
}

/// The server's clock, in ms (`TIME`).
pub(crate) fn server_ms(con: &mut impl redis::ConnectionLike) -> Result<i64, LibraryError> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con)?;
    Ok(secs * 1_000 + micros / 1_000)
}

/// The source of the library installed as functions, if any (`FUNCTION LIST WITHCODE`).
fn installed_source(con: &mut impl redis::ConnectionLike) -> Result<Option<String>, LibraryError> {
    // One map per library (a flat array of names and values in RESP2); LIBRARYNAME matches
    // by pattern, so the library named exactly.
    let listed: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg(NAME)
        .arg("WITHCODE")
        .query(con)?;
    let text = |library: &std::collections::HashMap<String, redis::Value>, field: &str| {
        let value = library.get(field)?.clone();
        redis::from_redis_value::<String>(value).ok()
    };
    Ok(listed
        .iter()
        .find(|library| text(library, "library_name").as_deref() == Some(NAME))
        .and_then(|library| text(library, "library_code")))
}

/// Where the source declares its Sqids (between `-- BEGIN SQIDS` and `-- END SQIDS`).
fn sqids_block(source: &str) -> &str {
    let start = source
        .find("-- BEGIN SQIDS\n")
        .expect("idgen.lua declares its Sqids");
    let end = source[start..]
        .find("-- END SQIDS\n")
        .expect("and ends them")
        + start;
    &source[start..end + "-- END SQIDS\n".len()]
}

/// The source's Sqids lines for `alphabet` and `min_length`, as the module's codec of those
/// settings makes Sqids (idgen_core::sqid::SqidParts).
fn sqids_lines(alphabet: &str, min_length: u8) -> Result<String, LibraryError> {
    let codec = idgen_core::SqidCodec::new(alphabet, min_length)
        .map_err(|e| LibraryError::BadSetting(e.to_string()))?;
    let parts = codec.parts();
    // Every character as a decimal escape but letters and digits: an alphabet may hold quotes
    // and backslashes.
    let lua = |text: &[u8]| -> String {
        let mut quoted = String::from("'");
        for &b in text {
            if b.is_ascii_alphanumeric() {
                quoted.push(b as char);
            } else {
                quoted.push_str(&format!("\\{b}"));
            }
        }
        quoted.push('\'');
        quoted
    };
    // The blocked words in one long string (`[[...]]`, lines of words): they are lowercase
    // letters and digits, as the crate's default list holds them.
    let mut lines = format!(
        "-- BEGIN SQIDS\nlocal SQIDS_ALPHABET = {}\nlocal SQIDS_MIN_LENGTH = {}\n\
         local SQIDS_BLOCKED = [[",
        lua(&parts.shuffled),
        parts.min_length
    );
    let mut line = String::new();
    for word in &parts.blocked {
        if !word.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(LibraryError::BadSetting(format!(
                "the Sqids blocklist holds {word:?}, which the library cannot write"
            )));
        }
        if line.len() + word.len() + 1 > 100 {
            lines.push_str(&format!("\n{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    // The four bytes a word of four or more starts with, each once, each followed by '|'.
    let mut starts: Vec<&[u8]> = parts
        .blocked
        .iter()
        .filter(|w| w.len() >= 4)
        .map(|w| &w.as_bytes()[..4])
        .collect();
    starts.sort_unstable();
    starts.dedup();
    // Rows joined at load, so that no line runs past 100 characters and no separator falls
    // between the entries.
    let rows: Vec<String> = starts
        .chunks(14)
        .map(|row| {
            let entries: String = row
                .iter()
                .map(|s| format!("{}|", s.escape_ascii()))
                .collect();
            format!("'{entries}'")
        })
        .collect();
    lines.push_str(&format!(
        "\n{line}\n]]\nlocal SQIDS_STARTS = {}\n-- END SQIDS\n",
        if rows.is_empty() {
            "''".to_string()
        } else {
            rows.join(" ..\n  ")
        }
    ));
    Ok(lines)
}

/// The source's time-zone lines for `zone`.
fn zone_lines(zone: &str) -> Result<String, LibraryError> {
    let calendar = Calendar::new(zone).map_err(|e| LibraryError::BadSetting(e.to_string()))?;
    let offsets = calendar.offsets(0, ZONE_END_MS);
    let name = calendar.name();
    // Names and offsets are letters, digits and `/_+-:` (a quote would end the Lua string).
    if name.contains(['\'', '\\', '\n']) {
        return Err(LibraryError::BadSetting(format!("time zone {name:?}")));
    }
    let mut changes = String::new();
    for (at, offset_s) in &offsets.changes {
        changes.push_str(&format!("{at},{},", i64::from(*offset_s) * 1000));
    }
    let end = if offsets.changes.is_empty() {
        // A fixed offset holds forever.
        "2 ^ 53".to_string()
    } else {
        ZONE_END_MS.to_string()
    };
    Ok(format!(
        "local ZONE = '{name}'\nlocal ZONE_FIRST_MS = {}\nlocal ZONE_CHANGES = {{{changes}}}\n\
         local ZONE_END_MS = {end}\n",
        i64::from(offsets.first_s) * 1000
    ))
}

/// What [`install`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installed {
    /// The server had no idgen library.
    Fresh,
    /// It had this older version.
    Upgraded(String),
    /// It had this very version: loaded again, unchanged.
    Same,
    /// The server has no `FUNCTION` (Redis 6): installed as scripts instead
    /// ([`crate::scripts::install`]), each function's name and its script's SHA1.
    Scripts(Vec<(&'static str, String)>),
}

/// Why the library could not be installed or used.
#[derive(Debug)]
pub enum LibraryError {
    /// The server holds a newer library than this one: installing would take it back.
    Downgrade { installed: String, ours: String },
    /// The server holds an older library than the caller needs.
    TooOld { installed: String, needed: String },
    /// The server has no idgen library.
    Missing,
    /// A version that is not `major.minor.patch`.
    BadVersion(String),
    /// A setting out of its range.
    BadSetting(String),
    /// The server refused a call.
    Redis(redis::RedisError),
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LibraryError::Downgrade { installed, ours } => write!(
                f,
                "the server has idgen library {installed}, newer than this one ({ours}): not \
                 replaced (install {installed} or later from a newer release)"
            ),
            LibraryError::TooOld { installed, needed } => write!(
                f,
                "the server has idgen library {installed}, older than the {needed} this client \
                 needs: upgrade it (idgen-lease-worker install-library)"
            ),
            LibraryError::Missing => write!(
                f,
                "the server has no idgen library: install it (idgen-lease-worker \
                 install-library)"
            ),
            LibraryError::BadVersion(text) => {
                write!(f, "idgen library version '{text}' is not major.minor.patch")
            }
            LibraryError::BadSetting(why) => write!(f, "{why}"),
            LibraryError::Redis(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LibraryError {}

impl From<redis::RedisError> for LibraryError {
    fn from(e: redis::RedisError) -> Self {
        LibraryError::Redis(e)
    }
}

/// `major.minor.patch` as numbers, to compare.
fn parse(text: &str) -> Result<(u64, u64, u64), LibraryError> {
    let bad = || LibraryError::BadVersion(text.to_string());
    let mut parts = text.split('.').map(|p| p.parse::<u64>().map_err(|_| bad()));
    let version = (
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
    );
    match parts.next() {
        None => Ok(version),
        Some(_) => Err(bad()),
    }
}

/// The version of the idgen library on the server, if it has one.
///
/// # Errors
/// When the server refuses otherwise than for a missing library.
pub fn installed(con: &mut impl redis::ConnectionLike) -> Result<Option<String>, LibraryError> {
    match redis::cmd("FCALL_RO")
        .arg("idgen_version")
        .arg(0)
        .query(con)
    {
        Ok(version) => Ok(Some(version)),
        Err(e) if e.to_string().contains("Function not found") => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Installs the library on the server, or upgrades it; refuses to replace a newer one.
///
/// # Errors
/// [`LibraryError::Downgrade`], or the server's refusal (a user without `FUNCTION`, say).
pub fn install(con: &mut impl redis::ConnectionLike) -> Result<Installed, LibraryError> {
    install_with(con, &Settings::default())
}

/// [`install`] with `settings` fixed in the source.
///
/// # Errors
/// As [`install`], and [`LibraryError::BadSetting`].
pub fn install_with(
    con: &mut impl redis::ConnectionLike,
    settings: &Settings,
) -> Result<Installed, LibraryError> {
    source_with(settings)?;
    let ours = version();
    let before = installed(con)?;
    let outcome = match &before {
        None => Installed::Fresh,
        Some(theirs) if parse(theirs)? > parse(ours)? => {
            return Err(LibraryError::Downgrade {
                installed: theirs.clone(),
                ours: ours.to_string(),
            })
        }
        Some(theirs) if theirs == ours => Installed::Same,
        Some(theirs) => Installed::Upgraded(theirs.clone()),
    };
    let earlier = match before {
        None => 0,
        Some(_) => earlier_until_ms(
            installed_source(con)?.as_deref(),
            settings.horizon_ms,
            server_ms(con)?,
        ),
    };
    let source = source_after(settings, earlier)?;
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(source)
        .query(con)?;
    Ok(outcome)
}

/// The server's library version, once it is at least `needed`.
///
/// # Errors
/// [`LibraryError::Missing`] or [`LibraryError::TooOld`], naming both versions.
pub fn require(con: &mut impl redis::ConnectionLike, needed: &str) -> Result<String, LibraryError> {
    at_least(installed(con)?.ok_or(LibraryError::Missing)?, needed)
}

/// `installed`, once it is at least `needed`.
///
/// # Errors
/// [`LibraryError::TooOld`], naming both versions; [`LibraryError::BadVersion`].
pub fn at_least(installed: String, needed: &str) -> Result<String, LibraryError> {
    if parse(&installed)? < parse(needed)? {
        return Err(LibraryError::TooOld {
            installed,
            needed: needed.to_string(),
        });
    }
    Ok(installed)
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

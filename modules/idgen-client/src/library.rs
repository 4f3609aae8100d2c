//! idgen's Functions library (`library/idgen.lua`): Snowflake IDs and date sequences for a
//! Redis that cannot load the module (docs/library.md). [`install`] puts it on a server, or
//! upgrades it, and refuses a downgrade; [`require`] is how a client refuses a library older
//! than it needs.

use std::fmt;

use idgen_core::lease::DEFAULT_HORIZON_MS;

/// The library's source, as `FUNCTION LOAD` takes it.
pub const SOURCE: &str = include_str!("../library/idgen.lua");

/// The library's name in `FUNCTION LIST`.
pub const NAME: &str = "idgen";

/// The version of [`SOURCE`] (its `VERSION`).
pub fn version() -> &'static str {
    SOURCE
        .lines()
        .find_map(|line| line.strip_prefix("local VERSION = '")?.strip_suffix('\''))
        .expect("library/idgen.lua declares its VERSION")
}

/// What a library is installed with, fixed in its source at install (a function cannot read
/// `CONFIG`, and a managed service denies it): the module's load settings of the same names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The lease horizon (the module's `idgen.workerid-horizon-ms`): no TTL is longer, no
    /// UNTIL further past the server's clock, and grants after a restart or a promotion start
    /// this far past it. 100 ms to a day; default 30 s.
    pub horizon_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            horizon_ms: DEFAULT_HORIZON_MS as u64,
        }
    }
}

/// The library's source with `settings` in place of its defaults.
///
/// # Errors
/// [`LibraryError::BadSetting`] for a horizon outside 100 ms to a day.
pub fn source_with(settings: &Settings) -> Result<String, LibraryError> {
    let (low, high) = idgen_core::lease::HORIZON_RANGE_MS;
    let horizon = settings.horizon_ms;
    if !(low as u64..=high as u64).contains(&horizon) {
        return Err(LibraryError::BadSetting(format!(
            "horizon_ms {horizon} must be between {low} and {high}"
        )));
    }
    let default = format!("local HORIZON_MS = {}\n", DEFAULT_HORIZON_MS);
    assert!(
        SOURCE.contains(&default),
        "library/idgen.lua declares HORIZON_MS"
    );
    Ok(SOURCE.replace(&default, &format!("local HORIZON_MS = {horizon}\n")))
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
    let source = source_with(settings)?;
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
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(source)
        .query(con)?;
    Ok(outcome)
}

/// Installs the library on the server at `url`, or, when it is a Cluster node, on every
/// primary the node knows (each reached with `url`'s scheme, user and password): each
/// primary's address and what [`install`] did there, in `CLUSTER NODES`' order.
///
/// # Errors
/// The first primary's refusal, naming it: the ones before it are installed.
pub fn install_everywhere(
    url: &str,
    settings: &Settings,
) -> Result<Vec<(String, Installed)>, LibraryError> {
    source_with(settings)?;
    let mut con = redis::Client::open(url)?.get_connection()?;
    let info: String = redis::cmd("INFO").arg("cluster").query(&mut con)?;
    if !info.contains("cluster_enabled:1") {
        let installed = install_with(&mut con, settings)?;
        return Ok(vec![(address(url).to_string(), installed)]);
    }
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con)?;
    let mut done = Vec::new();
    for primary in primaries(&nodes) {
        let at = with_address(url, &primary);
        let installed = redis::Client::open(at.as_str())
            .and_then(|client| client.get_connection())
            .map_err(LibraryError::from)
            .and_then(|mut con| install_with(&mut con, settings))
            .map_err(|e| {
                LibraryError::Redis(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "on a Cluster primary",
                    format!("{primary}: {e}"),
                )))
            })?;
        done.push((primary, installed));
    }
    Ok(done)
}

/// The `host:port` of every live primary in a `CLUSTER NODES` reply.
fn primaries(nodes: &str) -> Vec<String> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?;
            let live = flags.split(',').any(|f| f == "master")
                && !flags.split(',').any(|f| f == "fail" || f == "noaddr");
            // `ip:port@cport[,hostname]`
            let addr = fields.get(1)?.split(['@', ',']).next()?;
            live.then(|| addr.to_string())
        })
        .collect()
}

/// Where the `host:port` part of a `redis://[user:password@]host:port[/db]` URL is.
fn address_range(url: &str) -> std::ops::Range<usize> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let start = url[start..].rfind('@').map_or(start, |i| start + i + 1);
    let end = url[start..].find('/').map_or(url.len(), |i| start + i);
    start..end
}

/// The `host:port` part of a URL.
fn address(url: &str) -> &str {
    &url[address_range(url)]
}

/// `url` with its `host:port` replaced by `addr`.
fn with_address(url: &str, addr: &str) -> String {
    let mut url = url.to_string();
    url.replace_range(address_range(&url), addr);
    url
}

/// The server's library version, once it is at least `needed`.
///
/// # Errors
/// [`LibraryError::Missing`] or [`LibraryError::TooOld`], naming both versions.
pub fn require(con: &mut impl redis::ConnectionLike, needed: &str) -> Result<String, LibraryError> {
    let installed = installed(con)?.ok_or(LibraryError::Missing)?;
    if parse(&installed)? < parse(needed)? {
        return Err(LibraryError::TooOld {
            installed,
            needed: needed.to_string(),
        });
    }
    Ok(installed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_sources_and_the_crates() {
        assert_eq!(version(), env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn settings_are_fixed_in_the_source_and_checked() {
        assert_eq!(source_with(&Settings::default()).unwrap(), SOURCE);
        let short = source_with(&Settings { horizon_ms: 2_000 }).unwrap();
        assert!(short.contains("local HORIZON_MS = 2000\n"), "{short}");
        assert!(!short.contains("local HORIZON_MS = 30000"));
        for bad in [99, 86_400_001] {
            let e = source_with(&Settings { horizon_ms: bad }).unwrap_err();
            assert!(
                e.to_string().contains(&format!("horizon_ms {bad} must be")),
                "{e}"
            );
        }
    }

    #[test]
    fn primaries_and_urls_of_a_cluster() {
        let nodes = "a 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n\
                     b 127.0.0.1:7002@17002,host master - 0 0 2 connected 5461-10922\n\
                     c 127.0.0.1:7003@17003 slave a 0 0 1 connected\n\
                     d 127.0.0.1:7004@17004 master,fail - 0 0 3 disconnected\n";
        assert_eq!(primaries(nodes), ["127.0.0.1:7001", "127.0.0.1:7002"]);
        let url = "redis://app:p@ss@127.0.0.1:7001/0";
        assert_eq!(address(url), "127.0.0.1:7001");
        assert_eq!(
            with_address(url, "127.0.0.1:7002"),
            "redis://app:p@ss@127.0.0.1:7002/0"
        );
        assert_eq!(with_address("redis://h:1", "k:2"), "redis://k:2");
    }

    #[test]
    fn versions_compare_as_numbers_and_bad_ones_are_refused() {
        assert!(parse("0.10.0").unwrap() > parse("0.9.9").unwrap());
        for bad in ["", "1", "1.2", "1.2.3.4", "1.x.3", "-1.2.3"] {
            assert!(
                matches!(parse(bad), Err(LibraryError::BadVersion(_))),
                "{bad}"
            );
        }
    }
}

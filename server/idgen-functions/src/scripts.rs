//! idgen's Functions library as scripts, for a server that runs Lua but has no `FUNCTION`
//! (Redis 6.x, and servers that offer `EVAL` alone): one script per function, each the whole
//! library with that function's call at its end, so that its keys, arguments, replies and
//! errors are the function's own. [`install`] keeps the library's text in [`KEY`] and loads the
//! scripts; [`Library`] calls a function by `FCALL` or by `EVALSHA`, whichever the server
//! has, and loads a script again after `NOSCRIPT` (a restart or `SCRIPT FLUSH` empties a
//! server's script cache; the key stays, with the settings it was installed with).
//!
//! The library keeps state between calls (what each process issued, its mark, its fences):
//! a function library's locals live as long as it is loaded. A script's do not, so the first
//! script run after the server's Lua state was made (a start, `SCRIPT FLUSH`) loads the
//! library into a global table, where the next calls find it: a reload, as `FUNCTION LOAD
//! REPLACE` is, which the library's fences cover. Redis 7 and later make a script's globals
//! read-only; there the scripts refuse, saying to install the functions.

use std::collections::HashMap;

use crate::{self as library, LibraryError, Settings};

/// The key that holds the library's text (with the settings it was installed with), from
/// which a client makes the scripts again after `NOSCRIPT`.
pub const KEY: &str = "idgen:library";

/// The library's functions, and whether each only reads (`FCALL_RO`).
pub const FUNCTIONS: [(&str, bool); 8] = [
    ("snowflake_next", false),
    ("dateseq_next", false),
    ("dateseq_current", true),
    ("idgen_version", true),
    ("workerid_acquire", false),
    ("workerid_renew", false),
    ("workerid_release", false),
    ("workerid_list", true),
];

/// The global table a server's Lua state holds the loaded library in.
const GLOBAL: &str = "idgen_library";

/// The library's text with `settings`, as the scripts hold it (no `#!lua` line, which only
/// `FUNCTION LOAD` reads).
///
/// # Errors
/// [`LibraryError::BadSetting`], as [`library::source_with`].
pub fn text(settings: &Settings) -> Result<String, LibraryError> {
    text_after(settings, 0)
}

/// [`text`] after an install whose holders may hold UNTILs up to `earlier_until_ms`
/// ([`library::source_after`]).
///
/// # Errors
/// As [`text`].
pub fn text_after(settings: &Settings, earlier_until_ms: i64) -> Result<String, LibraryError> {
    let source = library::source_after(settings, earlier_until_ms)?;
    Ok(source
        .split_once('\n')
        .map_or(source.as_str(), |(_, rest)| rest)
        .to_string())
}

/// The script that runs `function` of the library `text` (as [`text`] makes it).
pub fn script(text: &str, function: &str) -> String {
    // The library's identity is its text: another text (another version or other settings)
    // loads over it, as FUNCTION LOAD REPLACE would.
    let id = redis::Script::new(text).get_hash().to_string();
    let body = text.replace("redis.register_function", "register");
    format!(
        "-- idgen library: {function} as a script (EVALSHA), made from idgen.lua\n\
         local loaded = rawget(_G, '{GLOBAL}')\n\
         if not loaded or loaded.id ~= '{id}' then\n\
         local functions = {{}}\n\
         local function register(name, callback)\n\
         if type(name) == 'table' then name, callback = name.function_name, name.callback end\n\
         functions[name] = callback\n\
         end\n\
         do\n{body}\nend\n\
         loaded = {{ id = '{id}', functions = functions }}\n\
         if not pcall(rawset, _G, '{GLOBAL}', loaded) then\n\
         return redis.error_reply('ERR this server keeps no Lua state between scripts (its \
         globals are read-only): install the idgen library as functions (idgen-lease-worker \
         install-library uses FUNCTION LOAD where the server has it)')\n\
         end\n\
         end\n\
         local ok, reply = pcall(loaded.functions['{function}'], KEYS, ARGV)\n\
         if ok or type(reply) ~= 'string' then return reply end\n\
         -- A command's error inside the library (a wrong type, a write on a replica) as a\n\
         -- function replies it: the server's own error, its code first, without the script's\n\
         -- position ('@user_script: 670: -READONLY ...').\n\
         local own = string.match(reply, '^@user_script: ?%d+: %-?(.-)%s*$') or reply\n\
         if string.match(own, '^%u[%u_]*[ %-]') then return redis.error_reply(own) end\n\
         return redis.error_reply('ERR ' .. reply)\n"
    )
}

/// Puts the library on a server without `FUNCTION`: its text in [`KEY`], and every
/// function's script in the server's script cache. Each function's name and its script's
/// SHA1, for `EVALSHA`. A newer library already in [`KEY`] is left alone, as the functions'
/// installer leaves a newer one.
///
/// # Errors
/// [`LibraryError::BadSetting`], [`LibraryError::Downgrade`], or the server's refusal.
pub fn install(
    con: &mut impl redis::ConnectionLike,
    settings: &Settings,
) -> Result<Vec<(&'static str, String)>, LibraryError> {
    let text = text(settings)?;
    // In a Cluster the key lives on one primary: the others load the scripts, and clients
    // read the text where the key is (Library::find_at).
    let before: Option<String> = match redis::cmd("GET").arg(KEY).query(con) {
        Err(e) if e.redirect_node().is_some() => return load_scripts(con, &text),
        read => read?,
    };
    if let Some(theirs) = before.as_deref().and_then(version_of) {
        let ours = library::version();
        if library::at_least(theirs.to_string(), ours).is_ok() && theirs != ours {
            return Err(LibraryError::Downgrade {
                installed: theirs.to_string(),
                ours: ours.to_string(),
            });
        }
    }
    let text = match before.as_deref() {
        None => text,
        Some(theirs) => {
            let now = library::server_ms(con)?;
            text_after(
                settings,
                library::earlier_until_ms(Some(theirs), settings.horizon_ms, now),
            )?
        }
    };
    let _: () = redis::cmd("SET").arg(KEY).arg(&text).query(con)?;
    load_scripts(con, &text)
}

/// Loads every function's script of the library `text` into the server's script cache.
fn load_scripts(
    con: &mut impl redis::ConnectionLike,
    text: &str,
) -> Result<Vec<(&'static str, String)>, LibraryError> {
    let mut loaded = Vec::new();
    for (function, _) in FUNCTIONS {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(script(text, function))
            .query(con)?;
        loaded.push((function, sha));
    }
    Ok(loaded)
}

/// The version a library's text declares (`local VERSION = 'x.y.z'`).
fn version_of(text: &str) -> Option<&str> {
    let rest = &text[text.find("local VERSION = '")? + "local VERSION = '".len()..];
    Some(&rest[..rest.find('\'')?])
}

/// How a server runs the library.
#[derive(Clone, Debug)]
pub enum Form {
    /// `FCALL`: the library is loaded as functions.
    Functions,
    /// `EVALSHA`: the server has no `FUNCTION`; the scripts, by function.
    Scripts(HashMap<&'static str, redis::Script>),
}

/// The library on one server, called in whichever form it has.
#[derive(Clone, Debug)]
pub struct Library {
    form: Form,
}

impl Library {
    /// Finds how the server behind `con` runs the library: as functions where it has
    /// `FUNCTION`, else as scripts made from the text in [`KEY`].
    ///
    /// # Errors
    /// [`LibraryError::Missing`] where neither is installed; the server's refusal otherwise.
    pub fn find(con: &mut impl redis::ConnectionLike) -> Result<Library, LibraryError> {
        match library::installed(con) {
            Ok(Some(_)) => Ok(Library {
                form: Form::Functions,
            }),
            Ok(None) => Err(LibraryError::Missing),
            Err(LibraryError::Redis(e)) if no_functions(&e) => {
                let text: Option<String> = redis::cmd("GET").arg(KEY).query(con)?;
                Ok(Library::scripts(&text.ok_or(LibraryError::Missing)?))
            }
            Err(e) => Err(e),
        }
    }

    /// [`Library::find`] on the server at `url`, through `con` (a connection to it): in a
    /// Cluster, where [`KEY`] lives on another primary, the text is read there (at `url`
    /// with that primary's address, the same user and password).
    ///
    /// # Errors
    /// As [`Library::find`].
    pub fn find_at(
        url: &str,
        con: &mut impl redis::ConnectionLike,
    ) -> Result<Library, LibraryError> {
        match Library::find(con) {
            Err(LibraryError::Redis(e)) if e.redirect_node().is_some() => {
                let (addr, _) = e.redirect_node().expect("a redirect");
                let owner = crate::urls::with_address(url, addr);
                let mut there = redis::Client::open(owner.as_str())?.get_connection()?;
                let text: Option<String> = redis::cmd("GET").arg(KEY).query(&mut there)?;
                Ok(Library::scripts(&text.ok_or(LibraryError::Missing)?))
            }
            found => found,
        }
    }

    /// The library `text` as scripts.
    fn scripts(text: &str) -> Library {
        let scripts = FUNCTIONS
            .iter()
            .map(|(function, _)| (*function, redis::Script::new(&script(text, function))))
            .collect();
        Library {
            form: Form::Scripts(scripts),
        }
    }

    /// [`Library::find_at`], once the library found is at least `needed`.
    ///
    /// # Errors
    /// As [`Library::find`]; [`LibraryError::TooOld`], naming both versions.
    pub fn require(
        url: &str,
        con: &mut impl redis::ConnectionLike,
        needed: &str,
    ) -> Result<Library, LibraryError> {
        let found = Library::find_at(url, con)?;
        let installed: String = found.call(con, "idgen_version", &[], &[])?;
        library::at_least(installed, needed)?;
        Ok(found)
    }

    /// `FCALL` or `EVALSHA`: which this server takes.
    pub fn form(&self) -> &'static str {
        match self.form {
            Form::Functions => "FCALL",
            Form::Scripts(_) => "EVALSHA",
        }
    }

    /// Calls `function` with `keys` and `args`, as `FCALL` (`FCALL_RO` for one that only
    /// reads) or `EVALSHA`, loading its script first if the server has lost it.
    ///
    /// # Errors
    /// The function's refusal, or the server's; a function the library does not have.
    pub fn call<T: redis::FromRedisValue>(
        &self,
        con: &mut impl redis::ConnectionLike,
        function: &str,
        keys: &[&str],
        args: &[&str],
    ) -> redis::RedisResult<T> {
        let unknown = || {
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "no such function in the idgen library",
                function.to_string(),
            ))
        };
        match &self.form {
            Form::Functions => {
                let (_, read_only) = FUNCTIONS
                    .iter()
                    .find(|(name, _)| *name == function)
                    .ok_or_else(unknown)?;
                redis::cmd(if *read_only { "FCALL_RO" } else { "FCALL" })
                    .arg(function)
                    .arg(keys.len())
                    .arg(keys)
                    .arg(args)
                    .query(con)
            }
            Form::Scripts(scripts) => {
                let script = scripts.get(function).ok_or_else(unknown)?;
                let mut invocation = script.prepare_invoke();
                for key in keys {
                    invocation.key(*key);
                }
                for arg in args {
                    invocation.arg(*arg);
                }
                invocation.invoke(con)
            }
        }
    }
}

/// Whether an error says the server has no `FCALL` (an unknown command).
pub fn no_functions(e: &redis::RedisError) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    text.contains("unknown command") && (text.contains("fcall") || text.contains("function"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_the_library_registers_has_a_script() {
        let registered: Vec<&str> = library::SOURCE
            .match_indices("redis.register_function")
            .map(|(at, _)| {
                let rest = &library::SOURCE[at..];
                let start = rest.find('\'').unwrap() + 1;
                let end = start + rest[start..].find('\'').unwrap();
                &rest[start..end]
            })
            .collect();
        let ours: Vec<&str> = FUNCTIONS.iter().map(|(name, _)| *name).collect();
        assert_eq!(registered, ours);
    }

    #[test]
    fn the_version_is_read_from_a_librarys_text() {
        let text = text(&Settings::default()).unwrap();
        assert_eq!(version_of(&text), Some(library::version()));
        assert_eq!(version_of("return 1"), None);
    }

    #[test]
    fn a_script_holds_the_library_once_and_calls_its_function() {
        let text = text(&Settings::default()).unwrap();
        assert!(!text.starts_with("#!lua"));
        let s = script(&text, "dateseq_next");
        assert!(!s.contains("redis.register_function"));
        assert!(s.contains("pcall(loaded.functions['dateseq_next'], KEYS, ARGV)\n"));
        let other = text.replace("local HORIZON_MS = 30000", "local HORIZON_MS = 2000");
        let id = |s: &str| {
            s.lines()
                .find(|l| l.contains("loaded.id ~="))
                .unwrap()
                .to_string()
        };
        assert_ne!(id(&s), id(&script(&other, "dateseq_next")));
    }
}

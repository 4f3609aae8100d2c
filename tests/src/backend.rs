//! What serves leases: the module, or the Functions library on a server without it. Suites
//! that run against both take a [`Backend`], speak the module's commands, and let
//! [`Backend::cmd`] turn them into the library's `FCALL`s (the same arguments and replies).

use std::time::Duration;

use crate::{cmd, wait_for, Options, Server};

/// Each named test function (taking a [`Backend`]) as two tests: `module::name` and
/// `library::name`.
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod module {
            $(#[test]
            fn $name() {
                super::$name($crate::backend::Backend::Module)
            })*
        }
        mod library {
            $(#[test]
            fn $name() {
                super::$name($crate::backend::Backend::Library)
            })*
        }
    };
}

/// The library's functions that write nothing (registered `no-writes`).
const READ_ONLY: [&str; 2] = ["dateseq_current", "workerid_list"];

/// The values the library skips on a server process's first use of a date sequence's key (its
/// `FAILOVER_GAP`): it cannot tell a new key from one a failover or a restart lost.
pub const LIBRARY_FIRST_USE_GAP: u64 = 10_000;

/// The module, or the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `WORKERID.*` of the idgen module.
    Module,
    /// `FCALL workerid_*` of idgen's Functions library, on a server without the module.
    Library,
}

impl Backend {
    /// Both, module first.
    pub const BOTH: [Backend; 2] = [Backend::Module, Backend::Library];

    /// Starts a server with the lease horizon `horizon_ms`, as `options` say otherwise: the
    /// module loaded with that horizon (and `options`' module arguments), or a plain server
    /// with the library installed with it (the library has no other setting).
    pub fn start(self, horizon_ms: u64, options: Options) -> Server {
        match self {
            Backend::Module => {
                let mut module_args =
                    vec!["workerid-horizon-ms".to_string(), horizon_ms.to_string()];
                module_args.extend(options.module_args.iter().cloned());
                Server::start_with(Options {
                    module_args,
                    ..options
                })
            }
            Backend::Library => {
                let server = Server::start_with(Options {
                    no_module: true,
                    module_args: Vec::new(),
                    ..options
                });
                self.install(&server, horizon_ms);
                server
            }
        }
    }

    /// Installs the library with `horizon_ms` on `server` (nothing for the module).
    pub fn install(self, server: &Server, horizon_ms: u64) {
        if self == Backend::Library {
            let settings = idgen_functions::Settings {
                horizon_ms,
                ..Default::default()
            };
            crate::library::install_with(&mut server.connection(), &settings);
        }
    }

    /// Waits past the fence every grant starts above after a start (the start plus the
    /// horizon): grants then start above what earlier holders recorded, nothing more.
    pub fn wait_past_lease_fence(self, server: &Server, horizon_ms: u64) {
        match self {
            Backend::Module => server.wait_past_lease_fence(),
            Backend::Library => {
                // The library counts from the server's start as its uptime (whole seconds,
                // rounded down) tells it.
                let past = wait_for(Duration::from_millis(horizon_ms + 5_000), || {
                    let info: String = cmd(&["INFO", "server"])
                        .query(&mut server.connection())
                        .expect("INFO server");
                    let uptime: u64 = info
                        .lines()
                        .find_map(|l| l.strip_prefix("uptime_in_seconds:"))
                        .and_then(|v| v.trim().parse().ok())
                        .expect("uptime_in_seconds");
                    uptime * 1_000 > horizon_ms + 1_000
                });
                assert!(past, "the server's uptime did not pass the horizon");
            }
        }
    }

    /// `words`, a module command (`WORKERID.ACQUIRE ns TTL 1000`), as this backend takes it:
    /// for the library, `FCALL workerid_acquire 1 ns TTL 1000` (`FCALL_RO` for a function that
    /// writes nothing, as a client allowed only to read calls it).
    pub fn cmd(self, words: &[&str]) -> redis::Cmd {
        match self {
            Backend::Module => cmd(words),
            Backend::Library => {
                let function = words[0].to_ascii_lowercase().replace('.', "_");
                let fcall = if READ_ONLY.contains(&function.as_str()) {
                    "FCALL_RO"
                } else {
                    "FCALL"
                };
                let mut call = cmd(&[fcall, &function]);
                match words.get(1) {
                    Some(key) => call.arg(1).arg(*key).arg(&words[2..]),
                    None => call.arg(0),
                };
                call
            }
        }
    }

    /// The counter a date sequence's first value takes on this backend: 1, or for the library
    /// one above its first-use gap.
    pub fn first_count(self) -> u64 {
        match self {
            Backend::Module => 1,
            Backend::Library => LIBRARY_FIRST_USE_GAP + 1,
        }
    }

    /// Where this backend keeps the counter of `prefix`'s date sequence for the day `label`
    /// (yyyyMMdd): the module's string key `{prefix}:label`, or the field `day:label` of the
    /// library's hash `prefix`.
    pub fn counter_place(self, prefix: &str, label: u32) -> (String, Option<String>) {
        match self {
            Backend::Module => {
                let mut key = Vec::new();
                idgen_core::dateseq::counter_key(prefix.as_bytes(), label, &mut key)
                    .expect("a prefix a counter key can be made of");
                (String::from_utf8(key).expect("UTF-8"), None)
            }
            Backend::Library => (prefix.to_string(), Some(format!("day:{label}"))),
        }
    }

    /// What the counter of `prefix` for the day `label` holds, read as a plain client reads it.
    pub fn counter(
        self,
        con: &mut dyn redis::ConnectionLike,
        prefix: &str,
        label: u32,
    ) -> Option<String> {
        let (key, field) = self.counter_place(prefix, label);
        let read = match &field {
            None => cmd(&["GET", &key]),
            Some(field) => cmd(&["HGET", &key, field]),
        };
        read.query(con).expect("read a counter")
    }

    /// Sets the counter of `prefix` for the day `label` to `value` by hand.
    pub fn set_counter(
        self,
        con: &mut dyn redis::ConnectionLike,
        prefix: &str,
        label: u32,
        value: &str,
    ) {
        let (key, field) = self.counter_place(prefix, label);
        let write = match &field {
            None => cmd(&["SET", &key, value]),
            Some(field) => cmd(&["HSET", &key, field, value]),
        };
        let _: redis::Value = write.query(con).expect("write a counter");
    }
}

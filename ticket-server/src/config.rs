//! Start-up settings, checked once: raw flags in, a validated [`Config`] out.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use idgen_core::SqidCodec;

use crate::store::Start;

/// Default number of tickets reserved on disk at a time.
pub const DEFAULT_BLOCK: u64 = 100_000;
/// Default cap on connections.
pub const DEFAULT_MAX_CLIENTS: usize = 10_000;
/// Default idle timeout, seconds (0 turns it off).
pub const DEFAULT_TIMEOUT_S: u64 = 300;

/// How one ticket server runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to listen on; loopback unless told otherwise.
    pub listen: SocketAddr,
    /// This server's first ticket, 1 to `increment`.
    pub offset: u64,
    /// Tickets step by this much: the number of servers.
    pub increment: u64,
    /// Where the durable bounds live.
    pub data_dir: PathBuf,
    /// Password clients must AUTH with, if any.
    pub requirepass: Option<String>,
    /// Tickets reserved on disk at a time (the most lost to a gap at a crash).
    pub block: u64,
    /// Most connections at once; more are refused.
    pub max_clients: usize,
    /// Close connections idle this long.
    pub idle_timeout: Option<Duration>,
    /// Whether a blank data directory may be used, and how (`--init`, `--start-above`).
    pub start: Start,
    /// Sqids for `TICKET.NEXT ... SQIDS` (`--sqids-alphabet`, `--sqids-min-length`).
    pub sqids: SqidCodec,
    /// The key of `TICKET.NEXT ... SEALED` (`--seal-key-file`); none: SEALED is refused.
    pub sealer: Option<std::sync::Arc<idgen_core::Sealer>>,
    /// TLS on the listening port (`--tls-cert-file` ...); none: plain TCP.
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
}

/// A start-up setting that breaks a rule, named by its flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No servers in the set.
    #[error("--increment 0 must be at least 1 (the number of servers)")]
    NoServers,
    /// An offset outside `1..=increment`.
    #[error("--offset must be between 1 and --increment ({increment}), got {offset}")]
    Offset { offset: u64, increment: u64 },
    /// An empty block.
    #[error("--block 0 must be at least 1")]
    EmptyBlock,
    /// No connection allowed.
    #[error("--max-clients 0 must be at least 1")]
    NoClients,
}

/// Checks that server `offset` of a set of `increment` exists: 1 <= offset <= increment.
///
/// # Errors
/// [`ConfigError::NoServers`] or [`ConfigError::Offset`].
pub fn check_step(offset: u64, increment: u64) -> Result<(), ConfigError> {
    if increment == 0 {
        return Err(ConfigError::NoServers);
    }
    if offset == 0 || offset > increment {
        return Err(ConfigError::Offset { offset, increment });
    }
    Ok(())
}

impl Config {
    /// Checks the rules every server must satisfy.
    ///
    /// # Errors
    /// The first rule broken, naming its flag.
    pub fn validate(self) -> Result<Self, ConfigError> {
        check_step(self.offset, self.increment)?;
        if self.block == 0 {
            return Err(ConfigError::EmptyBlock);
        }
        if self.max_clients == 0 {
            return Err(ConfigError::NoClients);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Config {
        Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            offset: 1,
            increment: 2,
            data_dir: "d".into(),
            requirepass: None,
            block: DEFAULT_BLOCK,
            max_clients: 10,
            idle_timeout: None,
            sqids: SqidCodec::default(),
            sealer: None,
            tls: None,
            start: Start::Existing,
        }
    }

    #[test]
    fn refuses_each_broken_rule() {
        let cases = [
            (
                "no servers",
                Config {
                    increment: 0,
                    ..base()
                },
                "--increment",
            ),
            (
                "offset 0",
                Config {
                    offset: 0,
                    ..base()
                },
                "--offset",
            ),
            (
                "offset above increment",
                Config {
                    offset: 3,
                    ..base()
                },
                "between 1 and --increment (2), got 3",
            ),
            ("empty block", Config { block: 0, ..base() }, "--block"),
            (
                "no clients",
                Config {
                    max_clients: 0,
                    ..base()
                },
                "--max-clients",
            ),
        ];
        for (name, config, want) in cases {
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains(want), "{name}: {err}");
        }
        assert!(base().validate().is_ok());
        assert!(Config {
            offset: 2,
            ..base()
        }
        .validate()
        .is_ok());
        assert!(Config {
            offset: 1,
            increment: 1,
            ..base()
        }
        .validate()
        .is_ok());
    }
}

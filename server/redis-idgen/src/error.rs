//! Every error a command can answer with, and the one place that turns them into Redis replies;
//! and why the module may refuse to load.

use crate::leases::pool::LeaseError;
use idgen_core::dateseq::{KeyError, ValueError};
use idgen_core::{GenerateError, SealError, SettingsError, SqidError, TimeError};

/// Why the module refuses to load; Redis's log shows it, and redis-server does not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The module was unloaded (which `deinit` refuses) or loaded twice in one process.
    #[error("already loaded once in this process: restart redis-server instead")]
    AlreadyLoaded,
    /// A load argument or an `idgen.*` value is refused: the message names it.
    #[error("{0}")]
    Setting(String),
    /// Redis refused an `idgen.*` line of its configuration file.
    #[error("a setting in the configuration file was refused (the line above says which)")]
    ConfigFile,
    /// The generator refused the layout, epoch and node IDs together.
    #[error("{0}")]
    Generator(#[from] SettingsError),
    /// The state file cannot be locked, read or written, or records IDs the new settings may
    /// repeat: the message names the file and what to do.
    #[error("{0}")]
    StateFile(String),
    /// The operating system gave no random seed for UUID7.NEXT and ULID.NEXT.
    #[error("no random seed from the OS: {0}")]
    Seed(String),
    /// Redis lacks an API the module needs, or refused a registration.
    #[error("{0}")]
    Redis(String),
}

/// An error reply, its Display the Redis error text, code first. Nothing was issued or written
/// when a command returns one.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Too few or too many arguments.
    #[error("ERR wrong number of arguments")]
    WrongArity,
    /// An unknown option or a missing value.
    #[error("ERR syntax error")]
    Syntax,
    /// An argument that should be an integer is not one: the argument, quoted for the message.
    #[error("ERR value is not an integer or out of range: {0}")]
    NotAnInteger(String),
    /// A number outside its documented range: the argument's name, its value as given, the
    /// range, and when the range applies (e.g. " with SQIDS"), if not always.
    #[error("ERR {name} {given} must be between {min} and {max}{when}")]
    Range {
        name: &'static str,
        given: i64,
        min: i64,
        max: i64,
        when: &'static str,
    },
    /// Any other argument outside what is allowed, said in full.
    #[error("ERR {0}")]
    OutOfRange(String),
    /// The key holds something other than a string.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// The caller's ACL user may not touch the counter key.
    #[error("NOPERM this user has no permissions to access one of the keys used as arguments")]
    NoPermission,
    /// The restart reservation ran out because its file cannot be written.
    #[error(
        "ERR {0}: IDs are durably reserved only up to the last write, and that is spent; \
         refusing rather than risk repeating IDs after a restart"
    )]
    StateFile(String),
    /// The DATESEQ witness file cannot be written: the values were not handed out.
    #[error(
        "ERR {0}: these values were not handed out (the counter skips them); refusing rather \
         than risk repeating them after a restart"
    )]
    WitnessFile(String),
    /// The lease witness file could not be written: the grant or renewal is not acknowledged.
    #[error(
        "ERR {0}: not acknowledged, as a restart could forget it; do not issue IDs under it \
         (a grant holds its worker ID until its TTL ends)"
    )]
    LeaseWitnessFile(String),
    /// Too few replicas held a lease grant or renewal in time (`crate::replica_acks`).
    #[error(
        "NOREPLICAS {command} not acknowledged: {held} of {needed} replicas held it within \
         {waited_ms} ms, and a primary cut off from its replicas must not extend leases that a \
         promoted replica would not know; do not issue IDs under it (a lease stands as last \
         acknowledged, a grant holds its worker ID until its TTL ends; \
         idgen.workerid-ack-replicas)"
    )]
    NotReplicated {
        command: &'static str,
        needed: u32,
        held: usize,
        waited_ms: i64,
    },
    /// A lease write that must wait for replicas, where its client cannot wait.
    #[error(
        "ERR {0} cannot wait for a replica inside MULTI or a script, and this primary \
         acknowledges leases only once a replica holds them (idgen.workerid-ack-replicas): \
         send it on its own"
    )]
    CannotWaitForReplicas(&'static str),
    /// A DATESEQ counter this node does not hold, while its Cluster slot moves (`slot_move.rs`):
    /// Cluster clients retry TRYAGAIN.
    #[error("TRYAGAIN {0}")]
    SlotMoving(String),
    /// The counter key holds a string that is not a non-negative integer.
    #[error("ERR counter key holds a value that is not a non-negative integer")]
    BadCounter,
    /// SNOWFLAKE.NEXT on a replica.
    #[error(
        "ERR SNOWFLAKE.NEXT is refused on a replica: it would repeat its primary's IDs; send \
         it to the primary"
    )]
    Replica,
    /// UUID7.NEXT or ULID.NEXT on a replica, without `idgen.random-ids-on-replica`.
    #[error(
        "ERR {0} is refused on a replica: its IDs would not be ordered with its primary's; \
         send it to the primary, or set idgen.random-ids-on-replica yes"
    )]
    ReplicaRandom(&'static str),
    /// Another primary of the cluster claims this node's worker-id (or none heard yet).
    #[error("ERR {0}")]
    WorkerClaim(String),
    /// The module did not finish loading.
    #[error("ERR idgen module is not initialised")]
    NotReady,
    /// A command of this module called from inside another of its commands (through another
    /// module's `RM_Call`).
    #[error(
        "ERR idgen was called from inside one of its own commands (another module's RM_Call \
         from a keyspace event): call it outside that command"
    )]
    Busy,
    /// Redis lacks an API the module needs.
    #[error("ERR this Redis lacks {0}")]
    MissingApi(&'static str),
    /// The generator refused.
    #[error("ERR {0}")]
    Generate(#[from] GenerateError),
    /// The date sequence refused.
    #[error("ERR {0}")]
    Value(#[from] ValueError),
    /// The prefix cannot name a counter key.
    #[error("ERR {0}")]
    Key(#[from] KeyError),
    /// A worker-ID lease operation was refused.
    #[error("ERR {0}")]
    Lease(#[from] LeaseError),
    /// A Sqid could not be made or read.
    #[error("ERR {0}")]
    Sqid(#[from] SqidError),
    /// A time that is not one, or that the IDs cannot hold.
    #[error("ERR {0}")]
    Time(#[from] TimeError),
    /// Sealing or unsealing refused the value.
    #[error("ERR {0}")]
    Seal(#[from] SealError),
    /// SEALED or IDGEN.SEAL without `idgen.seal-key-file`.
    #[error(
        "ERR no sealing key: set idgen.seal-key-file to a file whose first line is 64 hex \
         digits (openssl rand -hex 32)"
    )]
    NoSealKey,
}

impl CommandError {
    /// Checks that `given`, the argument `name`, lies in `min..=max`.
    ///
    /// # Errors
    /// [`CommandError::Range`] when it does not.
    pub fn check_range(name: &'static str, given: i64, min: i64, max: i64) -> Result<i64, Self> {
        if (min..=max).contains(&given) {
            Ok(given)
        } else {
            Err(CommandError::Range {
                name,
                given,
                min,
                max,
                when: "",
            })
        }
    }

    /// `arg` is not an integer.
    pub fn not_an_integer(arg: &[u8]) -> Self {
        CommandError::NotAnInteger(shown(arg))
    }
}

/// A value as it may appear in a message: quoted, escaped, and cut short.
pub fn shown(raw: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = &raw[..raw.len().min(MAX)];
    let more = if raw.len() > MAX { "..." } else { "" };
    format!("'{}{more}'", cut.escape_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_a_stable_code_first() {
        let cases = [
            (CommandError::WrongArity, "ERR wrong number of arguments"),
            (CommandError::Syntax, "ERR syntax error"),
            (
                CommandError::not_an_integer(b"x1"),
                "ERR value is not an integer or out of range: 'x1'",
            ),
            (
                CommandError::OutOfRange("COUNT 0 ...".into()),
                "ERR COUNT 0 ...",
            ),
            (CommandError::WrongType, "WRONGTYPE "),
            (CommandError::NoPermission, "NOPERM "),
            (
                CommandError::StateFile("disk full".into()),
                "ERR disk full: ",
            ),
            (CommandError::BadCounter, "ERR counter key holds"),
            (CommandError::SlotMoving("x".into()), "TRYAGAIN x"),
            (
                CommandError::Replica,
                "ERR SNOWFLAKE.NEXT is refused on a replica",
            ),
            (
                CommandError::ReplicaRandom("UUID7.NEXT"),
                "ERR UUID7.NEXT is refused on a replica",
            ),
            (
                CommandError::NotReady,
                "ERR idgen module is not initialised",
            ),
            (
                CommandError::Busy,
                "ERR idgen was called from inside one of its own commands",
            ),
            (
                CommandError::MissingApi("RedisModule_X"),
                "ERR this Redis lacks RedisModule_X",
            ),
            (
                CommandError::Lease(LeaseError::BadMax(-7)),
                "ERR MAX -7 must be between 1 and 65536",
            ),
            (
                CommandError::Value(ValueError::DigitsOutOfRange(11)),
                "ERR DIGITS must be between 1 and 10, got 11",
            ),
        ];
        for (error, start) in cases {
            let text = error.to_string();
            assert!(text.starts_with(start), "{error:?}: {text}");
            assert!(!text.contains('\n') && !text.contains('\r'), "{text}");
        }
    }

    #[test]
    fn core_errors_convert_without_losing_their_text() {
        let lease = LeaseError::Exhausted(4);
        assert_eq!(
            CommandError::from(lease.clone()).to_string(),
            format!("ERR {lease}")
        );
        let value = ValueError::DigitsOutOfRange(0);
        assert_eq!(
            CommandError::from(value.clone()).to_string(),
            format!("ERR {value}")
        );
    }

    #[test]
    fn an_argument_that_is_not_text_is_shown_escaped() {
        let text = CommandError::not_an_integer("\u{ff11}".as_bytes()).to_string();
        assert_eq!(
            text,
            "ERR value is not an integer or out of range: '\\xef\\xbc\\x91'"
        );
    }
}

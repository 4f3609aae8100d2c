//! Every error a command can answer with, and the one place that turns them into Redis replies.

use idgen_core::dateseq::{KeyError, ValueError};
use idgen_core::lease::LeaseError;
use idgen_core::{GenerateError, SqidError};

use crate::ffi::ctx::Ctx;

/// An error reply. Nothing was issued or written when a command returns one.
#[derive(Debug)]
pub enum CommandError {
    /// Too few or too many arguments.
    WrongArity,
    /// An unknown option or a missing value.
    Syntax,
    /// An argument that should be an integer is not one: the argument, quoted for the message.
    NotAnInteger(String),
    /// An argument outside its documented range.
    OutOfRange(String),
    /// The key holds something other than a string.
    WrongType,
    /// The caller's ACL user may not touch the counter key.
    NoPermission,
    /// The restart reservation ran out because its file cannot be written.
    StateFile(String),
    /// The counter key holds a string that is not a non-negative integer.
    BadCounter,
    /// SNOWFLAKE.NEXT on a replica.
    Replica,
    /// UUID7.NEXT or ULID.NEXT on a replica, without `idgen.random-ids-on-replica`.
    ReplicaRandom(&'static str),
    /// Another primary of the cluster claims this node's worker-id (or none heard yet).
    WorkerClaim(String),
    /// The module did not finish loading.
    NotReady,
    /// Redis lacks an API the module needs.
    MissingApi(&'static str),
    /// The generator refused.
    Generate(GenerateError),
    /// The date sequence refused.
    Value(ValueError),
    /// The prefix cannot name a counter key.
    Key(KeyError),
    /// A worker-ID lease operation was refused.
    Lease(LeaseError),
    /// A Sqid could not be made or read.
    Sqid(SqidError),
}

impl CommandError {
    /// `arg` is not an integer.
    pub fn not_an_integer(arg: &[u8]) -> Self {
        CommandError::NotAnInteger(crate::config::shown(arg))
    }

    /// The Redis error text, code first.
    pub fn text(&self) -> String {
        match self {
            CommandError::WrongArity => "ERR wrong number of arguments".into(),
            CommandError::Syntax => "ERR syntax error".into(),
            CommandError::NotAnInteger(given) => {
                format!("ERR value is not an integer or out of range: {given}")
            }
            CommandError::OutOfRange(what) => format!("ERR {what}"),
            CommandError::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".into()
            }
            CommandError::NoPermission => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            CommandError::StateFile(why) => format!(
                "ERR {why}: IDs are durably reserved only up to the last write, and that is spent; \
                 refusing rather than risk repeating IDs after a restart"
            ),
            CommandError::BadCounter => {
                "ERR counter key holds a value that is not a non-negative integer".into()
            }
            CommandError::Replica => "ERR SNOWFLAKE.NEXT is refused on a replica: it would repeat \
                 its primary's IDs; send it to the primary"
                .into(),
            CommandError::ReplicaRandom(command) => format!(
                "ERR {command} is refused on a replica: its IDs would not be ordered with its \
                 primary's; send it to the primary, or set idgen.random-ids-on-replica yes"
            ),
            CommandError::WorkerClaim(why) => format!("ERR {why}"),
            CommandError::NotReady => "ERR idgen module is not initialised".into(),
            CommandError::MissingApi(name) => format!("ERR this Redis lacks {name}"),
            CommandError::Generate(e) => format!("ERR {e}"),
            CommandError::Value(e) => format!("ERR {e}"),
            CommandError::Key(e) => format!("ERR {e}"),
            CommandError::Lease(e) => format!("ERR {e}"),
            CommandError::Sqid(e) => format!("ERR {e}"),
        }
    }

    /// Sends this error as the reply.
    pub fn reply(&self, ctx: &Ctx) {
        match self {
            CommandError::WrongArity => ctx.reply_wrong_arity(),
            other => ctx.reply_error(&other.text()),
        }
    }
}

impl From<GenerateError> for CommandError {
    fn from(e: GenerateError) -> Self {
        CommandError::Generate(e)
    }
}

impl From<ValueError> for CommandError {
    fn from(e: ValueError) -> Self {
        CommandError::Value(e)
    }
}

impl From<KeyError> for CommandError {
    fn from(e: KeyError) -> Self {
        CommandError::Key(e)
    }
}

impl From<LeaseError> for CommandError {
    fn from(e: LeaseError) -> Self {
        CommandError::Lease(e)
    }
}

impl From<SqidError> for CommandError {
    fn from(e: SqidError) -> Self {
        CommandError::Sqid(e)
    }
}

//! Every error a command can answer with, and the one place that turns them into RESP error
//! replies (code first, as Redis words them).

use crate::store::{OpenError, StoreError};

/// An error reply. Nothing was issued when a command returns one.
#[derive(Debug)]
pub enum CmdError {
    /// Too few or too many arguments for the command (named in lower case).
    WrongArity(String),
    /// An unknown option, or a malformed one (`Some(option)` in HELLO).
    Syntax(Option<String>),
    /// An argument that should be a non-negative integer is not one.
    NotAnInteger,
    /// An argument outside its documented range: what the range is.
    OutOfRange(String),
    /// A request this state does not allow (`MULTI calls can not be nested`, ...).
    Refused(&'static str),
    /// The command is unknown; the request, as Redis quotes it.
    UnknownCommand { name: String, args: Vec<String> },
    /// The subcommand is unknown.
    UnknownSubcommand { command: &'static str, sub: String },
    /// Authentication is required first (what Redis says in that place).
    NoAuth(&'static str),
    /// AUTH with the wrong password.
    WrongPass,
    /// HELLO with a protocol other than 2 or 3.
    NoProto,
    /// EXEC of a transaction in which a request was refused.
    ExecAbort,
    /// A request that breaks the protocol (the connection is closed after the reply).
    Protocol(&'static str),
    /// Every connection slot is taken (the connection is closed after the reply).
    MaxClients,
    /// The ticket store refused.
    Store(StoreError),
    /// The ticket store failed in a way it has no name for (an unreadable file).
    Internal(String),
}

impl CmdError {
    /// What kind of error this is, as the `kind` label of the errors metric.
    pub fn kind(&self) -> &'static str {
        match self {
            CmdError::WrongArity(_) => "wrong_arity",
            CmdError::Syntax(_) => "syntax",
            CmdError::NotAnInteger => "not_an_integer",
            CmdError::OutOfRange(_) => "out_of_range",
            CmdError::Refused(_) => "refused",
            CmdError::UnknownCommand { .. } => "unknown_command",
            CmdError::UnknownSubcommand { .. } => "unknown_subcommand",
            CmdError::NoAuth(_) => "noauth",
            CmdError::WrongPass => "wrongpass",
            CmdError::NoProto => "noproto",
            CmdError::ExecAbort => "execabort",
            CmdError::Protocol(_) => "protocol",
            CmdError::MaxClients => "max_clients",
            CmdError::Store(_) => "store",
            CmdError::Internal(_) => "internal",
        }
    }

    /// The error reply's text, code first.
    pub fn text(&self) -> String {
        match self {
            CmdError::WrongArity(name) => {
                format!("ERR wrong number of arguments for '{name}' command")
            }
            CmdError::Syntax(None) => "ERR syntax error".into(),
            CmdError::Syntax(Some(option)) => {
                format!("ERR syntax error in HELLO option '{option}'")
            }
            CmdError::NotAnInteger => "ERR value is not an integer or out of range".into(),
            CmdError::OutOfRange(what) => format!("ERR {what}"),
            CmdError::Refused(what) => format!("ERR {what}"),
            CmdError::UnknownCommand { name, args } => format!(
                "ERR unknown command '{name}', with args beginning with: {}",
                args.join(" ")
            ),
            CmdError::UnknownSubcommand { command, sub } => {
                format!("ERR unknown subcommand '{sub}'. Try {command} HELP.")
            }
            CmdError::NoAuth(what) => format!("NOAUTH {what}"),
            CmdError::WrongPass => {
                "WRONGPASS invalid username-password pair or user is disabled.".into()
            }
            CmdError::NoProto => "NOPROTO unsupported protocol version".into(),
            CmdError::ExecAbort => {
                "EXECABORT Transaction discarded because of previous errors.".into()
            }
            CmdError::Protocol(why) => format!("ERR Protocol error: {why}"),
            CmdError::MaxClients => "ERR max number of clients reached".into(),
            CmdError::Store(e) => format!("ERR {e}"),
            CmdError::Internal(why) => format!("ERR {why}"),
        }
    }
}

impl From<StoreError> for CmdError {
    fn from(e: StoreError) -> Self {
        CmdError::Store(e)
    }
}

impl From<OpenError> for CmdError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Sequence(store) => CmdError::Store(store),
            other => CmdError::Internal(other.to_string()),
        }
    }
}

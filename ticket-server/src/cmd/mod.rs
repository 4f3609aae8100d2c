//! The commands, one per file, and the one dispatcher that matches names.
//!
//! Each command reads its arguments (`args[0]` is its name), rejects leftovers, and writes its
//! reply; an `Err` is written as an error reply by the dispatcher.

mod auth;
mod client;
mod command;
mod config;
mod echo;
mod error;
mod hello;
mod info;
mod ping;
mod quit;
mod select;
mod server;
mod ticket_current;
mod ticket_next;
mod transaction;

use bytes::Bytes;

use crate::frame::Reply;
use crate::shared::Shared;

/// Per-connection state.
#[derive(Debug, Default)]
pub struct Session {
    /// Replies in RESP3 (after `HELLO 3`).
    pub resp3: bool,
    /// AUTH succeeded, or no password is set.
    pub authenticated: bool,
    /// CLIENT SETNAME.
    pub name: Option<Bytes>,
    /// CLIENT ID.
    pub id: u64,
    /// QUIT was called: close after replying.
    pub quit: bool,
    /// Requests queued after MULTI, until EXEC or DISCARD.
    pub queued: Option<transaction::Queued>,
}

/// Flags of the commands about the connection itself.
#[rustfmt::skip]
const CONNECTION: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"];
/// Flags of the transaction commands.
const TRANSACTION: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];

/// Every command, as COMMAND lists them: name, arity (negative: at least), flags.
#[rustfmt::skip]
pub const COMMANDS: &[(&str, i64, &[&str])] = &[
    ("ticket.next", -1, &["write", "fast"]),
    ("ticket.range", -3, &["write", "fast"]),
    ("ticket.current", -1, &["readonly", "fast"]),
    ("auth", -2, CONNECTION),
    ("hello", -1, CONNECTION),
    ("quit", -1, CONNECTION),
    ("reset", 1, CONNECTION),
    ("ping", -1, &["fast"]),
    ("echo", 2, &["fast"]),
    ("client", -2, &["admin", "noscript", "loading", "stale"]),
    ("select", 2, &["loading", "stale", "fast"]),
    ("info", -1, &["loading", "stale"]),
    ("command", -1, &["loading", "stale"]),
    ("config", -2, &["admin", "noscript", "loading", "stale"]),
    ("role", 1, &["noscript", "loading", "stale", "fast"]),
    ("time", 1, &["loading", "stale", "fast"]),
    ("dbsize", 1, &["readonly", "fast"]),
    ("multi", 1, TRANSACTION),
    ("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"]),
    ("discard", 1, TRANSACTION),
    ("watch", -2, TRANSACTION),
    ("unwatch", 1, TRANSACTION),
];

/// An error reply; the text starts with its code.
pub type CmdResult = Result<(), CmdError>;

pub use error::CmdError;

/// Runs one request: the connection and transaction commands here, the rest through
/// [`run_one`] (queued instead while a transaction is open).
pub async fn execute(
    args: &[Bytes],
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) {
    // Redis skips an empty request (`*0`) without a reply; a reply would put a pipelining
    // client's answers out of step.
    let Some(first) = args.first() else {
        return;
    };
    let mut upper = [0u8; 16];
    let name = uppercase(first, &mut upper);
    let result = match name {
        b"AUTH" => auth::run(args, session, shared, reply),
        b"HELLO" => hello::run(args, session, shared, reply),
        b"QUIT" => quit::run(args, session, reply),
        b"RESET" => server::reset(args, session, shared, reply),
        _ if !session.authenticated => Err(CmdError::NoAuth("Authentication required.")),
        b"MULTI" => transaction::multi(args, session, reply),
        b"DISCARD" => transaction::discard(args, session, reply),
        b"WATCH" | b"UNWATCH" => transaction::watch(args, session, reply),
        b"EXEC" => match transaction::exec(args, session, reply) {
            Ok(requests) => {
                for request in &requests {
                    let mut upper = [0u8; 16];
                    let name = uppercase(&request[0], &mut upper);
                    let result = run_one(request, name, session, shared, reply).await;
                    if let Err(e) = result {
                        reply.error(&e.text());
                    }
                }
                Ok(())
            }
            Err(e) => Err(e),
        },
        _ if session.queued.is_some() => queue(args, name, session, reply),
        _ => run_one(args, name, session, shared, reply).await,
    };
    if let Err(e) = result {
        reply.error(&e.text());
    }
}

/// Queues a request after MULTI; an unknown command is refused now and dooms the transaction.
fn queue(args: &[Bytes], name: &[u8], session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    let Some(queued) = session.queued.as_mut() else {
        return Ok(());
    };
    let known = COMMANDS
        .iter()
        .any(|(n, _, _)| n.as_bytes().eq_ignore_ascii_case(name));
    if !known {
        queued.refused = true;
        return Err(unknown_command(args));
    }
    queued.requests.push(args.to_vec());
    reply.simple("QUEUED");
    Ok(())
}

/// Runs one request that is not about the connection or a transaction; `name` is its command
/// in capitals.
async fn run_one(
    args: &[Bytes],
    name: &[u8],
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) -> CmdResult {
    match name {
        b"TICKET.NEXT" | b"TICKET.RANGE" => ticket_next::run(args, shared, reply).await,
        b"TICKET.CURRENT" => ticket_current::run(args, shared, reply),
        b"PING" => ping::run(args, reply),
        b"ECHO" => echo::run(args, reply),
        b"CLIENT" => client::run(args, session, reply),
        b"SELECT" => select::run(args, reply),
        b"INFO" => info::run(args, shared, reply),
        b"COMMAND" => command::run(args, reply),
        b"CONFIG" => config::run(args, shared, reply),
        b"ROLE" => server::role(args, reply),
        b"TIME" => server::time(args, reply),
        b"DBSIZE" => server::dbsize(args, reply),
        _ => Err(unknown_command(args)),
    }
}

/// `name` in capitals, in `buf` (names longer than any command are left as they are).
fn uppercase<'a>(name: &'a [u8], buf: &'a mut [u8; 16]) -> &'a [u8] {
    if name.len() > buf.len() {
        return name;
    }
    let out = &mut buf[..name.len()];
    out.copy_from_slice(name);
    out.make_ascii_uppercase();
    out
}

/// An unknown command, quoted as Redis does (the first 8 arguments, 64 bytes each).
fn unknown_command(args: &[Bytes]) -> CmdError {
    let name = args
        .first()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let args = args
        .iter()
        .skip(1)
        .take(8)
        .map(|a| format!("'{}'", String::from_utf8_lossy(&a[..a.len().min(64)])))
        .collect();
    CmdError::UnknownCommand { name, args }
}

/// The standard wrong-arity error.
pub fn wrong_arity(args: &[Bytes]) -> CmdError {
    let name = args
        .first()
        .map(|n| String::from_utf8_lossy(n).to_lowercase())
        .unwrap_or_default();
    CmdError::WrongArity(name)
}

/// A non-negative integer argument, or Redis's error for one that is not.
pub fn parse_u64(arg: &[u8]) -> Result<u64, CmdError> {
    let valid = !arg.is_empty() && arg.len() <= 19 && arg.iter().all(u8::is_ascii_digit);
    let n = valid
        .then(|| std::str::from_utf8(arg).ok()?.parse::<u64>().ok())
        .flatten();
    n.filter(|&n| n <= i64::MAX as u64)
        .ok_or(CmdError::NotAnInteger)
}

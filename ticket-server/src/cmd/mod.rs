//! The commands: a request is parsed into a typed [`Command`] through the [`table`], then
//! applied. Parsing and applying are apart so that MULTI can queue parsed commands and EXEC
//! apply them later, as Redis does.
//!
//! The order of checks is Redis's: unknown command, then arity, then authentication; inside a
//! transaction the first two doom it (EXECABORT), while a request that fails to parse is queued
//! and its error comes back in its place in EXEC's reply.

mod auth;
mod client;
mod config;
mod error;
mod hello;
mod info;
mod introspection;
mod ping;
mod select;
mod server;
mod session;
mod table;
mod ticket_current;
mod ticket_next;
mod transaction;

use bytes::Bytes;

pub use error::CmdError;
pub use session::Session;
pub use table::{lookup, Spec, COMMANDS};

use crate::frame::Reply;
use crate::shared::Shared;

/// An error reply; the text starts with its code.
pub type CmdResult = Result<(), CmdError>;

/// A request, parsed: what it asks for, with its arguments checked.
#[derive(Debug)]
pub enum Command {
    /// `TICKET.NEXT` and `TICKET.RANGE`.
    TicketNext(ticket_next::TicketNext),
    TicketCurrent(ticket_current::TicketCurrent),
    Auth(auth::Auth),
    Hello(hello::Hello),
    Quit,
    Reset,
    Ping(Option<Bytes>),
    Echo(Bytes),
    Client(client::Client),
    Select,
    Info(info::Info),
    Introspection(introspection::Introspection),
    /// `CONFIG GET parameter`.
    ConfigGet(Bytes),
    Role,
    Time,
    DbSize,
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
}

/// Runs one request and writes its reply (none for an empty request, as in Redis: a reply
/// would put a pipelining client's answers out of step).
pub async fn execute(
    args: &[Bytes],
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) {
    if args.is_empty() {
        return;
    }
    if let Err(e) = run(args, session, shared, reply).await {
        shared.metrics.error(e.kind());
        reply.error(&e.text());
    }
}

async fn run(
    args: &[Bytes],
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) -> CmdResult {
    let spec = match lookup(&args[0]) {
        Some(spec) if spec.arity_fits(args.len()) => spec,
        found => {
            let error = match found {
                Some(_) => wrong_arity(args),
                None => unknown_command(args),
            };
            if let Some(queued) = session.queued.as_mut() {
                queued.refused = true;
            }
            return Err(error);
        }
    };
    if !session.authenticated && !spec.has("no_auth") {
        return Err(CmdError::NoAuth("Authentication required."));
    }
    let command = (spec.parse)(args);
    if let Some(queued) = session.queued.as_mut().filter(|_| !spec.skips_queue()) {
        queued.push(command, args.iter().map(|a| a.len()).sum())?;
        reply.simple("QUEUED");
        return Ok(());
    }
    match command? {
        Command::Exec => {
            for command in transaction::exec(session, reply)? {
                let result = match command {
                    Ok(command) => apply(command, session, shared, reply).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = result {
                    shared.metrics.error(e.kind());
                    reply.error(&e.text());
                }
            }
            Ok(())
        }
        command => apply(command, session, shared, reply).await,
    }
}

/// Carries out a parsed command.
async fn apply(
    command: Command,
    session: &mut Session,
    shared: &Shared,
    reply: &mut Reply<'_>,
) -> CmdResult {
    match command {
        Command::TicketNext(c) => c.apply(shared, reply).await,
        Command::TicketCurrent(c) => c.apply(shared, reply),
        Command::Auth(c) => c.apply(session, shared, reply),
        Command::Hello(c) => c.apply(session, shared, reply),
        Command::Quit => {
            session.quit = true;
            reply.simple("OK");
            Ok(())
        }
        Command::Reset => server::reset(session, shared, reply),
        Command::Ping(message) => ping::apply(message, reply),
        Command::Echo(message) => {
            reply.bulk(&message);
            Ok(())
        }
        Command::Client(c) => c.apply(session, reply),
        Command::Select => {
            reply.simple("OK");
            Ok(())
        }
        Command::Info(c) => c.apply(shared, reply),
        Command::Introspection(c) => c.apply(reply),
        Command::ConfigGet(parameter) => config::get(&parameter, shared, reply),
        Command::Role => server::role(reply),
        Command::Time => server::time(reply),
        Command::DbSize => server::dbsize(reply),
        Command::Multi => transaction::multi(session, reply),
        Command::Discard => transaction::discard(session, reply),
        Command::Watch => transaction::watch(session, reply),
        Command::Unwatch => transaction::unwatch(reply),
        // `run` applies EXEC itself, and EXEC is never queued.
        Command::Exec => Err(CmdError::Refused("EXEC without MULTI")),
    }
}

/// An unknown command, quoted as Redis does (the first 8 arguments, 64 bytes each).
fn unknown_command(args: &[Bytes]) -> CmdError {
    let name = String::from_utf8_lossy(&args[0]).into_owned();
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

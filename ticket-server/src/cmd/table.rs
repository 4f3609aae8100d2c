//! The command table: every command's name, arity, flags and documentation, and the function
//! that parses its requests. The dispatcher, MULTI's queuing, `COMMAND` and `COMMAND DOCS` all
//! read this one table, so a command cannot be served without being listed or listed without
//! being served.

use bytes::Bytes;

use super::{
    auth, client, config, hello, info, introspection, ping, select, ticket_current, ticket_next,
    CmdError, Command,
};

/// One command.
pub struct Spec {
    /// Lower case, as `COMMAND` lists it.
    pub name: &'static str,
    /// Arguments including the name; negative: at least that many.
    pub arity: i64,
    /// Redis's command flags.
    pub flags: &'static [&'static str],
    /// `COMMAND DOCS` group.
    pub group: &'static str,
    /// `COMMAND DOCS` summary: the syntax, then what it does.
    pub summary: &'static str,
    /// Reads a request whose arity is already checked.
    pub parse: fn(&[Bytes]) -> Result<Command, CmdError>,
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Spec {
    /// Whether `argc` arguments (the name included) fit the arity.
    pub fn arity_fits(&self, argc: usize) -> bool {
        let argc = argc as i64;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Whether the command has `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// Runs at once inside a transaction instead of being queued, as in Redis.
    pub fn skips_queue(&self) -> bool {
        matches!(
            self.name,
            "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
        )
    }
}

/// The command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Flags of the commands about the connection itself.
const CONNECTION: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
/// Flags of the transaction commands.
const TRANSACTION: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];
/// Flags of the commands that describe the server.
const INTROSPECTION: &[&str] = &["loading", "stale"];

/// Every command, the ticket commands first (the dispatcher looks them up in this order).
pub static COMMANDS: &[Spec] = &[
    Spec {
        name: "ticket.next",
        arity: -1,
        flags: &["write", "fast"],
        group: "ticket",
        summary: "TICKET.NEXT [sequence] [COUNT n] [SQIDS]: the next ticket of a sequence \
                  ('default' when omitted), or an array of the next n (1 to 100000), increasing; \
                  as Sqids with SQIDS (COUNT up to 1000).",
        parse: ticket_next::TicketNext::parse_next,
    },
    Spec {
        name: "ticket.range",
        arity: -3,
        flags: &["write", "fast"],
        group: "ticket",
        summary: "TICKET.RANGE [sequence] COUNT n: the next n tickets (1 to 100000000) as \
                  [first, step, n], a reply that does not grow with n.",
        parse: ticket_next::TicketNext::parse_range,
    },
    Spec {
        name: "ticket.current",
        arity: -1,
        flags: &["readonly", "fast"],
        group: "ticket",
        summary: "TICKET.CURRENT [sequence]: the last ticket this server handed out of a \
                  sequence, or nil. Creates nothing.",
        parse: ticket_current::TicketCurrent::parse,
    },
    Spec {
        name: "auth",
        arity: -2,
        flags: CONNECTION,
        group: "connection",
        summary: "AUTH [username] password: authenticates the connection.",
        parse: auth::Auth::parse,
    },
    Spec {
        name: "hello",
        arity: -1,
        flags: CONNECTION,
        group: "connection",
        summary: "HELLO [protover [AUTH username password] [SETNAME name]]: picks RESP2 or \
                  RESP3 and describes the server.",
        parse: hello::Hello::parse,
    },
    Spec {
        name: "quit",
        arity: -1,
        flags: CONNECTION,
        group: "connection",
        summary: "QUIT: closes the connection after the reply.",
        parse: |_| Ok(Command::Quit),
    },
    Spec {
        name: "reset",
        arity: 1,
        flags: CONNECTION,
        group: "connection",
        summary: "RESET: the connection as new (RESP2, no name, no transaction, logged out).",
        parse: |_| Ok(Command::Reset),
    },
    Spec {
        name: "ping",
        arity: -1,
        flags: &["fast"],
        group: "connection",
        summary: "PING [message]: PONG, or the message.",
        parse: ping::parse,
    },
    Spec {
        name: "echo",
        arity: 2,
        flags: &["fast"],
        group: "connection",
        summary: "ECHO message: the message.",
        parse: |args| Ok(Command::Echo(args[1].clone())),
    },
    Spec {
        name: "client",
        arity: -2,
        flags: &["admin", "noscript", "loading", "stale"],
        group: "connection",
        summary: "CLIENT SETNAME|GETNAME|SETINFO|ID|NO-EVICT|NO-TOUCH|INFO|LIST: about this \
                  connection.",
        parse: client::Client::parse,
    },
    Spec {
        name: "select",
        arity: 2,
        flags: &["loading", "stale", "fast"],
        group: "connection",
        summary: "SELECT 0: there is one database.",
        parse: select::parse,
    },
    Spec {
        name: "info",
        arity: -1,
        flags: INTROSPECTION,
        group: "server",
        summary: "INFO [section ...]: server, clients, replication, keyspace, tickets.",
        parse: info::Info::parse,
    },
    Spec {
        name: "command",
        arity: -1,
        flags: INTROSPECTION,
        group: "server",
        summary: "COMMAND [COUNT | INFO name ... | DOCS [name ...]]: this table.",
        parse: introspection::Introspection::parse,
    },
    Spec {
        name: "config",
        arity: -2,
        flags: &["admin", "noscript", "loading", "stale"],
        group: "server",
        summary: "CONFIG GET parameter: save, appendonly, databases, maxclients, timeout, port, \
                  bind, dir.",
        parse: config::parse,
    },
    Spec {
        name: "role",
        arity: 1,
        flags: &["noscript", "loading", "stale", "fast"],
        group: "server",
        summary: "ROLE: a primary with no replicas.",
        parse: |_| Ok(Command::Role),
    },
    Spec {
        name: "time",
        arity: 1,
        flags: &["loading", "stale", "fast"],
        group: "server",
        summary: "TIME: seconds and microseconds.",
        parse: |_| Ok(Command::Time),
    },
    Spec {
        name: "dbsize",
        arity: 1,
        flags: &["readonly", "fast"],
        group: "server",
        summary: "DBSIZE: 0; sequences are not keys.",
        parse: |_| Ok(Command::DbSize),
    },
    Spec {
        name: "multi",
        arity: 1,
        flags: TRANSACTION,
        group: "transactions",
        summary: "MULTI: queues the following requests until EXEC or DISCARD.",
        parse: |_| Ok(Command::Multi),
    },
    Spec {
        name: "exec",
        arity: 1,
        flags: &["noscript", "loading", "stale", "skip_slowlog"],
        group: "transactions",
        summary: "EXEC: runs the queued requests, their replies in one array.",
        parse: |_| Ok(Command::Exec),
    },
    Spec {
        name: "discard",
        arity: 1,
        flags: TRANSACTION,
        group: "transactions",
        summary: "DISCARD: drops the queued requests; nothing is issued.",
        parse: |_| Ok(Command::Discard),
    },
    Spec {
        name: "watch",
        arity: -2,
        flags: TRANSACTION,
        group: "transactions",
        summary: "WATCH key [key ...]: accepted; a ticket server has no keys to change.",
        parse: |_| Ok(Command::Watch),
    },
    Spec {
        name: "unwatch",
        arity: 1,
        flags: TRANSACTION,
        group: "transactions",
        summary: "UNWATCH: accepted.",
        parse: |_| Ok(Command::Unwatch),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_lower_case_and_found_in_any_case() {
        for (i, spec) in COMMANDS.iter().enumerate() {
            assert_eq!(spec.name, spec.name.to_lowercase());
            assert!(COMMANDS[..i].iter().all(|other| other.name != spec.name));
            let upper = spec.name.to_uppercase();
            assert!(std::ptr::eq(lookup(upper.as_bytes()).unwrap(), spec));
        }
        assert!(lookup(b"nosuch").is_none());
    }

    #[test]
    fn arity_is_exact_or_a_minimum() {
        let ping = lookup(b"ping").unwrap();
        assert!(ping.arity_fits(1) && ping.arity_fits(5));
        let echo = lookup(b"echo").unwrap();
        assert!(!echo.arity_fits(1) && echo.arity_fits(2) && !echo.arity_fits(3));
    }
}

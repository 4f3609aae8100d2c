//! `COMMAND`, `COMMAND COUNT`, `COMMAND INFO name ...`, `COMMAND DOCS [name ...]`: the commands
//! of the [`super::table`], in Redis's reply shapes (no keys, no subcommands).

use bytes::Bytes;

use super::{lookup, CmdError, CmdResult, Command, Spec, COMMANDS};
use crate::frame::Reply;

/// A `COMMAND` request, parsed; names not in the table are `None`.
#[derive(Debug)]
pub enum Introspection {
    All,
    Count,
    Info(Vec<Option<&'static Spec>>),
    Docs(Vec<&'static Spec>),
}

impl Introspection {
    pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
        let named = || args.iter().skip(2).map(|name| lookup(name));
        let query = match args.get(1).map(|s| s.to_ascii_uppercase()).as_deref() {
            None => Introspection::All,
            Some(b"COUNT") => Introspection::Count,
            Some(b"INFO") => Introspection::Info(named().collect()),
            Some(b"DOCS") if args.len() == 2 => Introspection::Docs(COMMANDS.iter().collect()),
            // Unknown names are left out of DOCS, as in Redis.
            Some(b"DOCS") => Introspection::Docs(named().flatten().collect()),
            Some(_) => {
                return Err(CmdError::UnknownSubcommand {
                    command: "COMMAND",
                    sub: String::from_utf8_lossy(&args[1]).into_owned(),
                })
            }
        };
        Ok(Command::Introspection(query))
    }

    pub fn apply(self, reply: &mut Reply<'_>) -> CmdResult {
        match self {
            Introspection::All => {
                reply.array(COMMANDS.len());
                for spec in COMMANDS {
                    info(spec, reply);
                }
            }
            Introspection::Count => reply.integer(COMMANDS.len() as i64),
            Introspection::Info(specs) => {
                reply.array(specs.len());
                for spec in specs {
                    match spec {
                        Some(spec) => info(spec, reply),
                        None => reply.null(),
                    }
                }
            }
            Introspection::Docs(specs) => {
                reply.map(specs.len());
                for spec in specs {
                    reply.bulk(spec.name.as_bytes());
                    reply.map(2);
                    reply.bulk(b"summary");
                    reply.bulk(spec.summary.as_bytes());
                    reply.bulk(b"group");
                    reply.bulk(spec.group.as_bytes());
                }
            }
        }
        Ok(())
    }
}

/// `[name, arity, flags, first key, last key, step, ACL categories, tips, key specs, subcommands]`.
fn info(spec: &Spec, reply: &mut Reply<'_>) {
    reply.array(10);
    reply.bulk(spec.name.as_bytes());
    reply.integer(spec.arity);
    reply.array(spec.flags.len());
    for flag in spec.flags {
        reply.simple(flag);
    }
    for _ in 0..3 {
        reply.integer(0);
    }
    for _ in 0..4 {
        reply.array(0);
    }
}

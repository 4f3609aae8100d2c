//! `COMMAND`, `COMMAND COUNT`, `COMMAND INFO name ...`, `COMMAND DOCS [name ...]`: the commands
//! of [`super::COMMANDS`], in Redis's reply shapes (no keys, no subcommands).

use bytes::Bytes;

use super::{CmdError, CmdResult, COMMANDS};
use crate::frame::Reply;

pub fn run(args: &[Bytes], reply: &mut Reply<'_>) -> CmdResult {
    let names = || args.iter().skip(2);
    match args.get(1).map(|s| s.to_ascii_uppercase()).as_deref() {
        None => {
            reply.array(COMMANDS.len());
            for command in COMMANDS {
                info(command, reply);
            }
        }
        Some(b"COUNT") => reply.integer(COMMANDS.len() as i64),
        Some(b"INFO") => {
            reply.array(args.len() - 2);
            for name in names() {
                match find(name) {
                    Some(command) => info(command, reply),
                    None => reply.null(),
                }
            }
        }
        Some(b"DOCS") => {
            let found: Vec<_> = if args.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                names().filter_map(|n| find(n)).collect()
            };
            reply.map(found.len());
            for (name, _, _) in found {
                reply.bulk(name.as_bytes());
                reply.map(1);
                reply.bulk(b"group");
                reply.bulk(if name.starts_with("ticket.") {
                    b"ticket"
                } else {
                    b"server"
                });
            }
        }
        Some(_) => {
            return Err(CmdError::UnknownSubcommand {
                command: "COMMAND",
                sub: String::from_utf8_lossy(&args[1]).into_owned(),
            })
        }
    }
    Ok(())
}

type Entry = (&'static str, i64, &'static [&'static str]);

fn find(name: &[u8]) -> Option<&'static Entry> {
    COMMANDS
        .iter()
        .find(|(n, _, _)| n.as_bytes().eq_ignore_ascii_case(name))
}

/// `[name, arity, flags, first key, last key, step, ACL categories, tips, key specs, subcommands]`.
fn info((name, arity, flags): &Entry, reply: &mut Reply<'_>) {
    reply.array(10);
    reply.bulk(name.as_bytes());
    reply.integer(*arity);
    reply.array(flags.len());
    for flag in *flags {
        reply.simple(flag);
    }
    for _ in 0..3 {
        reply.integer(0);
    }
    for _ in 0..4 {
        reply.array(0);
    }
}

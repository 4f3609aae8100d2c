//! `INFO [section ...]`: Redis's sections as they apply to a ticket server (server, clients,
//! replication: a primary with no replicas, keyspace: none), and `tickets` (offset, increment,
//! issued, and per sequence the next ticket and the durable bound). No section, `default`, `all`
//! or `everything` give all; an unknown section gives nothing, as in Redis.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{CmdError, CmdResult, Command};
use crate::frame::Reply;
use crate::shared::Shared;

/// The sections, in the order INFO lists them.
const SECTIONS: [&str; 5] = ["server", "clients", "replication", "keyspace", "tickets"];

/// `INFO`, parsed: the sections asked for, in lower case (none: all).
#[derive(Debug)]
pub struct Info {
    asked: Vec<String>,
}

impl Info {
    pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
        let asked = args[1..]
            .iter()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .collect();
        Ok(Command::Info(Info { asked }))
    }

    pub fn apply(self, shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
        let all = self.asked.is_empty()
            || self
                .asked
                .iter()
                .any(|a| matches!(a.as_str(), "default" | "all" | "everything"));
        let mut text = String::new();
        for section in SECTIONS {
            if all || self.asked.iter().any(|a| a == section) {
                if !text.is_empty() {
                    text.push_str("\r\n");
                }
                write_section(section, shared, &mut text);
            }
        }
        reply.bulk(text.as_bytes());
        Ok(())
    }
}

fn write_section(section: &str, shared: &Shared, text: &mut String) {
    let c = &shared.config;
    match section {
        "server" => text.push_str(&format!(
            "# Server\r\nredis_version:7.0.0\r\nticket_server_version:{}\r\nredis_mode:standalone\r\n\
             process_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            c.listen.port(),
            shared.started.elapsed().as_secs(),
        )),
        "clients" => text.push_str(&format!(
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n",
            shared.clients.load(Ordering::Relaxed),
            c.max_clients,
        )),
        "replication" => text.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"),
        "keyspace" => text.push_str("# Keyspace\r\n"),
        _ => {
            text.push_str(&format!(
                "# Tickets\r\noffset:{}\r\nincrement:{}\r\nblock:{}\r\ntickets_issued:{}\r\nseal_key_id:{}\r\n",
                c.offset,
                c.increment,
                c.block,
                shared.metrics.issued.get(),
                c.sealer.as_ref().map_or("", |k| k.key_id()),
            ));
            for (name, next, bound) in shared.store.snapshot() {
                text.push_str(&format!(
                    "sequence_{name}:next={next},durable_bound={bound}\r\n"
                ));
            }
        }
    }
}

//! `INFO [section]`: server, clients and tickets (offset, increment, issued, and per sequence
//! the next ticket and the durable bound).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::CmdResult;
use crate::frame::Reply;
use crate::shared::Shared;

pub fn run(_args: &[Bytes], shared: &Shared, reply: &mut Reply<'_>) -> CmdResult {
    let c = &shared.config;
    let mut text = format!(
        "# Server\r\nticket_server_version:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n\
         # Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n\
         # Tickets\r\noffset:{}\r\nincrement:{}\r\nblock:{}\r\ntickets_issued:{}\r\n",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        c.listen.port(),
        shared.started.elapsed().as_secs(),
        shared.clients.load(Ordering::Relaxed),
        c.max_clients,
        c.offset,
        c.increment,
        c.block,
        shared.issued.load(Ordering::Relaxed),
    );
    for (name, next, bound) in shared.store.snapshot() {
        text.push_str(&format!(
            "sequence_{name}:next={next},durable_bound={bound}\r\n"
        ));
    }
    reply.bulk(text.as_bytes());
    Ok(())
}

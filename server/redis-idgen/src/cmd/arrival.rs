//! State that reaches this node from another, witnessed as it arrives: a witness belongs to the
//! state, not to the node that made it.
//!
//! - A DATESEQ counter of the period under way that arrives by `MIGRATE` or `RESTORE`
//!   (`restore`), `COPY` (`copy_to`), and on a replica each value its primary handed out
//!   (`incrby`) or the counters of a full sync (`loaded`): its value becomes this node's witness
//!   of it, reserved in the witness file as this node's own values are. So a counter lost here
//!   later (deleted, flushed, restored older, a restart from an older file) carries on above
//!   what the other node handed out, as far as it reached this one. A moved counter's
//!   reservation is synced before the command that moved it returns (`MIGRATE` then deletes the
//!   source's copy): one fsync per counter moved. A replica's go out as its own values do, in
//!   the background, and a promotion waits for them (`State::set_role`).
//! - A lease namespace that arrives by `MIGRATE`, `RESTORE` or `COPY`: remembered at the
//!   version it arrived with (so a loss here is caught), its earlier grants from this node
//!   forgotten (another node wrote it since), and fenced at its first write, as a namespace the
//!   witness file never saw: this node cannot tell a migrated copy from an older dump. A
//!   replica's namespaces are fenced at its promotion instead (`State::set_role`).
//!
//! Events come from other commands, never from one of this module's (whose own `incrby` finds
//! the state locked and is not heard).
//!
//! Not on Valkey 8.1 and later ([`leaves_clients_on_another_db`]): there a module's keyspace
//! callback runs on the client whose command fired the event, switched to the event's
//! database and left there, so subscribing to `move_to` and `copy_to` would move a client's
//! `MOVE` or `COPY ... DB n` to another database (valkey-io/valkey#4024). Moved state is not
//! witnessed on arrival there; a replica's is.

use crate::leases::pool::{Pool, Seen};
use idgen_core::dateseq::{counter_label, parse_counter};
use redis_module::key::RedisKey;
use redis_module::{Context, KeyType, RedisString, ScanKeyCursor};

use crate::files::journal::Durable;
use crate::state::State;

/// Whether this server leaves a client on another database after a module hears an event of
/// another database for it: Valkey from 8.1, as `INFO server` tells (`server_name`,
/// `valkey_version`).
pub fn leaves_clients_on_another_db(info_server: &str) -> bool {
    let field = |name: &str| {
        info_server
            .lines()
            .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
    };
    let version = field("valkey_version").filter(|_| field("server_name") == Some("valkey"));
    let Some(version) = version else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (8, 1)
}

/// Whether `event` may bring state here: checked before the state is locked.
pub fn may_bring_state(event: &[u8]) -> bool {
    matches!(event, b"restore" | b"copy_to" | b"incrby" | b"loaded")
}

/// Witnesses what `event` brought to `key`.
pub fn heard(ctx: &Context, event: &[u8], key: &RedisString, s: &mut State, now_ms: i64) {
    let moved = matches!(event, b"restore" | b"copy_to");
    // A primary's own writes and its clients' INCRs are not arrivals.
    if !moved && !s.replica() {
        return;
    }
    let opened = RedisKey::open(ctx.ctx, key);
    match opened.key_type() {
        KeyType::String => {
            if let Ok(Some(text)) = opened.read() {
                if let Some(value) = parse_counter(text) {
                    counter(key.as_slice(), value, moved, s, now_ms);
                }
            }
        }
        KeyType::Hash if moved => namespace(opened, key.as_slice(), s),
        _ => {}
    }
}

/// A counter found at `value`: this node's witness of it is raised to it, and reserved.
fn counter(key: &[u8], value: u64, moved: bool, s: &mut State, now_ms: i64) {
    let Some(label) = counter_label(key) else {
        return;
    };
    let digits = s.config().int(|c| &c.dateseq_digits) as u32;
    match s.dateseq_mut().arrived(key, label, value, digits, now_ms) {
        Err(full) => crate::ffi::log(
            "warning",
            &format!(
                "idgen: DATESEQ counter {} arrived at {value} and is not witnessed: {full}",
                crate::error::shown(key)
            ),
        ),
        // Moved here, it is this node's alone now: on disk before the command that moved it
        // ends.
        Ok(Some(file)) if moved => {
            if let Err(why) = file.wait_here() {
                crate::ffi::log(
                    "warning",
                    &format!(
                        "idgen: {why}: DATESEQ counter {} arrived at {value} and is witnessed in \
                         memory only until the witness file can be written",
                        crate::error::shown(key)
                    ),
                );
            }
        }
        Ok(_) => {}
    }
}

/// A hash that may be a lease namespace, arrived from elsewhere. Read through the key, not
/// `HGETALL`: a Cluster node that imports a slot serves no command on it but after `ASKING`.
fn namespace(hash: RedisKey, ns: &[u8], s: &mut State) {
    let Some(pool) = pool_of(hash) else {
        return;
    };
    let seen = pool.seen();
    if seen == Seen::default() {
        return;
    }
    if let Some(file) = s.leases_mut().arrived(ns, seen) {
        if let Err(why) = file.wait_here() {
            crate::ffi::log(
                "warning",
                &format!(
                    "idgen: {why}: namespace {} arrived and is witnessed in memory only until \
                     the lease witness file can be written",
                    crate::error::shown(ns)
                ),
            );
        }
    }
}

/// The lease pool a hash holds, if it is one.
fn pool_of(hash: RedisKey) -> Option<Pool> {
    let cursor = ScanKeyCursor::new(hash);
    let (mut fields, mut text) = (Vec::new(), true);
    while cursor.scan(
        |_, field, value| match (field.try_as_str(), value.try_as_str()) {
            (Ok(f), Ok(v)) => fields.push((f.to_string(), v.to_string())),
            _ => text = false,
        },
    ) {}
    let pairs = fields.iter().map(|(f, v)| (f.as_str(), v.as_str()));
    text.then(|| Pool::from_fields(pairs).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valkey_from_8_1_leaves_clients_on_another_db() {
        let server = |name: &str, version: &str| {
            format!("# Server\r\nredis_version:7.2.4\r\nserver_name:{name}\r\nvalkey_version:{version}\r\n")
        };
        assert!(leaves_clients_on_another_db(&server("valkey", "8.1.1")));
        assert!(leaves_clients_on_another_db(&server("valkey", "9.0.0")));
        assert!(!leaves_clients_on_another_db(&server("valkey", "8.0.1")));
        assert!(!leaves_clients_on_another_db(&server("valkey", "7.2.5")));
        assert!(!leaves_clients_on_another_db(
            "# Server\r\nredis_version:8.0.2\r\n"
        ));
        assert!(!leaves_clients_on_another_db(""));
    }
}

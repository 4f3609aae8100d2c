//! idgen's Functions library (`modules/idgen-client/library/idgen.lua`) on servers without the module, under a
//! user as a managed service gives one: denied `MODULE`, `CONFIG`, `DEBUG` and `SHUTDOWN`.

use crate::{cmd, Options, Server};

/// The library's source, from this checkout.
pub fn source() -> String {
    idgen_client::library::SOURCE.to_string()
}

/// The source with its VERSION replaced by `version`: an older or newer release of it.
pub fn source_as(version: &str) -> String {
    let ours = format!("local VERSION = '{}'", idgen_client::library::version());
    assert!(idgen_client::library::SOURCE.contains(&ours));
    idgen_client::library::SOURCE.replace(&ours, &format!("local VERSION = '{version}'"))
}

/// The managed user's URL on `server` (made by [`managed_user`]).
pub fn managed_url(server: &Server) -> String {
    format!("redis://app:app-secret@127.0.0.1:{}/", server.port)
}

/// A server without the module.
pub fn plain_server() -> Server {
    Server::start_with(Options {
        no_module: true,
        ..Options::default()
    })
}

/// The user a managed service would give: everything but `MODULE`, `CONFIG`, `DEBUG` and
/// `SHUTDOWN`. Created on `server` (as its default user); a connection as it.
pub fn managed_user(server: &Server) -> redis::Connection {
    managed_user_denied(server, &["-module", "-config", "-debug", "-shutdown"])
}

/// A user `app` with everything but what `denied` takes away (`-command`, ...); a connection
/// as it.
pub fn managed_user_denied(server: &Server, denied: &[&str]) -> redis::Connection {
    let mut words = vec![
        "ACL",
        "SETUSER",
        "app",
        "on",
        ">app-secret",
        "~*",
        "&*",
        "+@all",
    ];
    words.extend_from_slice(denied);
    let _: () = cmd(&words)
        .query(&mut server.connection())
        .expect("ACL SETUSER");
    redis::Client::open(managed_url(server))
        .and_then(|c| c.get_connection())
        .expect("connect as the managed user")
}

/// Installs (or replaces) the library through `con`; its name.
pub fn install(con: &mut redis::Connection) -> String {
    cmd(&["FUNCTION", "LOAD", "REPLACE", &source()])
        .query(con)
        .expect("FUNCTION LOAD REPLACE")
}

/// `n` IDs from the state key `key`, retried while the library is ahead of its clock by the
/// drift limit (for a moment after a start, a reload or a failover, and under bursts).
pub fn snowflakes(con: &mut redis::Connection, key: &str, n: usize) -> Vec<u64> {
    let call = cmd(&["FCALL", "snowflake_next", "1", key, "COUNT", &n.to_string()]);
    let texts: Vec<String> = crate::when_caught_up(con, &call);
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

/// Sets the pair the state key `key` puts into its IDs.
pub fn set_node(con: &mut redis::Connection, key: &str, datacenter: u64, worker: u64) {
    let _: () = cmd(&[
        "HSET",
        key,
        "datacenter",
        &datacenter.to_string(),
        "worker",
        &worker.to_string(),
    ])
    .query(con)
    .unwrap();
}

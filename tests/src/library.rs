//! idgen's Functions library (`server/idgen-functions/idgen.lua`) on servers without the module, under a
//! user as a managed service gives one: denied `MODULE`, `CONFIG`, `DEBUG` and `SHUTDOWN`.

use idgen_functions::scripts;
use idgen_functions::{LibraryError, Settings};

use crate::{cmd, Connection, Options, Server};

/// The library's source, from this checkout.
pub fn source() -> String {
    idgen_functions::SOURCE.to_string()
}

/// The source with its VERSION replaced by `version`: an older or newer release of it.
pub fn source_as(version: &str) -> String {
    let ours = format!("local VERSION = '{}'", idgen_functions::version());
    assert!(idgen_functions::SOURCE.contains(&ours));
    idgen_functions::SOURCE.replace(&ours, &format!("local VERSION = '{version}'"))
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
pub fn managed_user(server: &Server) -> Connection {
    managed_user_denied(server, &["-module", "-config", "-debug", "-shutdown"])
}

/// A user `app` with everything but what `denied` takes away (`-command`, ...); a connection
/// as it.
pub fn managed_user_denied(server: &Server, denied: &[&str]) -> Connection {
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
    if let Err(e) = cmd(&words).query::<()>(&mut server.connection()) {
        // Redis 6.0 has no channel rules (`&*`, from 6.2): every channel is allowed there.
        assert!(e.to_string().contains("'&*'"), "ACL SETUSER: {e}");
        words.retain(|w| *w != "&*");
        let _: () = cmd(&words)
            .query(&mut server.connection())
            .expect("ACL SETUSER");
    }
    Connection::to_port(
        redis::Client::open(managed_url(server))
            .and_then(|c| c.get_connection())
            .expect("connect as the managed user"),
        server.port,
    )
}

/// Installs (or replaces) the library through `con`, as functions, or as scripts where the
/// server has no `FUNCTION`; its name.
pub fn install(con: &mut Connection) -> String {
    install_with(con, &Settings::default());
    idgen_functions::NAME.to_string()
}

/// Installs (or replaces) the library with `settings` through `con`, in the server's form
/// (found by the installer itself, on the plain connection).
pub fn install_with(con: &mut Connection, settings: &Settings) {
    match idgen_functions::install_with(con.raw(), settings) {
        Ok(_) => {}
        Err(LibraryError::Redis(e)) if scripts::no_functions(&e) => {
            scripts::install(con.raw(), settings).expect("install the library's scripts");
            con.learn_library().expect("read the library's key");
        }
        Err(e) => panic!("install the library: {e}"),
    }
}

/// Removes the library from the server behind `con`, in its form: `FUNCTION FLUSH`, or the
/// scripts' key and the script cache.
pub fn remove(con: &mut Connection) {
    if con.uses_scripts() {
        let _: () = cmd(&["DEL", scripts::KEY]).query(con).expect("DEL");
        let _: () = cmd(&["SCRIPT", "FLUSH"]).query(con).expect("SCRIPT FLUSH");
    } else {
        let _: () = cmd(&["FUNCTION", "FLUSH"])
            .query(con)
            .expect("FUNCTION FLUSH");
    }
}

/// The major version of the Redis the server behind `con` is (`INFO server`'s
/// redis_version; Valkey reports the Redis it forked from, 7.2.4).
pub fn redis_major(con: &mut dyn redis::ConnectionLike) -> u32 {
    let info: String = cmd(&["INFO", "server"]).query(con).expect("INFO server");
    info.split("redis_version:")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse().ok())
        .expect("INFO server names redis_version")
}

/// Whether the server behind `con` is Redis 7 or later (Valkey reports 7.2): a test of what
/// only those have (ACL selectors such as `%R~`, `COPY`'s siblings) returns early where it is
/// false, saying so.
pub fn at_least_redis_7(con: &mut Connection, test: &str) -> bool {
    let major = redis_major(con);
    if major < 7 {
        eprintln!("{test}: needs Redis 7 (this server is {major}.x): not run here");
    }
    major >= 7
}

/// Whether the server behind `con` has `FUNCTION` (else the library runs as scripts). A test
/// of what only functions do (`FUNCTION LOAD`, `LIST`, `DELETE`, a library's versions) returns
/// early where it is false, saying so.
pub fn has_functions(con: &mut Connection, test: &str) -> bool {
    let has = !con.uses_scripts();
    if !has {
        eprintln!(
            "{test}: this server has no FUNCTION (the library runs as scripts): not run here"
        );
    }
    has
}

/// `n` IDs from the state key `key`, retried while the library is ahead of its clock by the
/// drift limit (for a moment after a start, a reload or a failover, and under bursts).
pub fn snowflakes(con: &mut dyn redis::ConnectionLike, key: &str, n: usize) -> Vec<u64> {
    let call = cmd(&["FCALL", "snowflake_next", "1", key, "COUNT", &n.to_string()]);
    let texts: Vec<String> = crate::when_caught_up(con, &call);
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

/// Sets the pair the state key `key` puts into its IDs.
pub fn set_node(con: &mut dyn redis::ConnectionLike, key: &str, datacenter: u64, worker: u64) {
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

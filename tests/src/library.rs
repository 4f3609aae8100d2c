//! idgen's Functions library (`functions/idgen.lua`) on servers without the module, under a
//! user as a managed service gives one: denied `MODULE`, `CONFIG`, `DEBUG` and `SHUTDOWN`.

use crate::{cmd, workspace_root, Options, Server};

/// The library's source, from this checkout.
pub fn source() -> String {
    let path = workspace_root().join("functions/idgen.lua");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
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
    let _: () = cmd(&[
        "ACL",
        "SETUSER",
        "app",
        "on",
        ">app-secret",
        "~*",
        "&*",
        "+@all",
        "-module",
        "-config",
        "-debug",
        "-shutdown",
    ])
    .query(&mut server.connection())
    .expect("ACL SETUSER");
    let url = format!("redis://app:app-secret@127.0.0.1:{}/", server.port);
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connect as the managed user")
}

/// Installs (or replaces) the library through `con`; its name.
pub fn install(con: &mut redis::Connection) -> String {
    cmd(&["FUNCTION", "LOAD", "REPLACE", &source()])
        .query(con)
        .expect("FUNCTION LOAD REPLACE")
}

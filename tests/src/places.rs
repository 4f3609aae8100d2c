//! The places state can be when it is lost, for the fault matrices (`tests/fault_matrix.rs`,
//! `tests/fault_matrix_state_key.rs`): the node that made it, the same process after a reload
//! of the library, a restart from its AOF, a promoted replica, the node it was migrated to.

use std::path::Path;

use crate::backend::Backend;
use crate::losses::run;
use crate::{Options, Server};

/// Where the state is when it is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Issuer,
    /// The issuing process after `FUNCTION LOAD REPLACE` (the library only; as scripts,
    /// `SCRIPT FLUSH`).
    Reloaded,
    /// kill -9 of the issuer and a restart from its AOF (`appendfsync always`).
    Restarted,
    PromotedReplica,
    /// The node the keys were migrated to (`MIGRATE`, as a reshard moves a slot's keys).
    MigratedTo,
}

/// Every place, in the order the matrices walk them.
pub const PLACES: [Place; 5] = [
    Place::Issuer,
    Place::Reloaded,
    Place::Restarted,
    Place::PromotedReplica,
    Place::MigratedTo,
];

/// The lease horizon of every server here (`idgen.workerid-horizon-ms`, or the library's
/// install setting): short, so that a lease matrix waits past its fences in a second.
pub const HORIZON_MS: u64 = 1_000;

/// A server of `backend` (the module, or a plain server with the library installed) with an
/// AOF written at every command, in `dir` when given so that it can start again there.
pub fn start(backend: Backend, dir: Option<&Path>) -> Server {
    let server = Server::start_with(options(backend, dir));
    backend.install(&server, HORIZON_MS);
    server
}

fn options(backend: Backend, dir: Option<&Path>) -> Options {
    let mut options = Options {
        no_module: backend == Backend::Library,
        dir: dir.map(Path::to_path_buf),
        ..Options::default()
    }
    .server(&["--appendonly", "yes", "--appendfsync", "always"]);
    if backend == Backend::Module {
        options.module_args = vec!["workerid-horizon-ms".into(), HORIZON_MS.to_string()];
    }
    options
}

/// The second node a place needs (a replica to promote, a node to migrate to), or none.
pub fn second(backend: Backend, place: Place, first: &Server) -> Option<Server> {
    let b = matches!(place, Place::PromotedReplica | Place::MigratedTo)
        .then(|| start(backend, None))?;
    if place == Place::PromotedReplica {
        b.replicate(first);
    }
    Some(b)
}

/// Whether `place` is one `backend` cannot serve on this server: the module on a server that
/// does not witness state arriving by MIGRATE (Valkey 8.1 and later: docs/module.md), at the
/// node it was migrated to (`b`). Said on stderr when so.
pub fn unserved(backend: Backend, place: Place, b: Option<&Server>) -> bool {
    let unserved = place == Place::MigratedTo
        && backend == Backend::Module
        && b.is_some_and(|b| b.info_field("arrivals_witnessed") == "0");
    if unserved {
        eprintln!("{backend:?} / {place:?}: this server does not witness moved state");
    }
    unserved
}

/// Moves what `a` (started by [`start`] in `dir`) holds to `place`: the server that holds the
/// state there. `keys` are migrated for [`Place::MigratedTo`].
pub fn move_to(
    place: Place,
    backend: Backend,
    mut a: Server,
    b: Option<Server>,
    dir: &Path,
    keys: &[String],
) -> Server {
    match place {
        Place::Issuer => a,
        Place::Reloaded => {
            // The scripts' Lua state goes with the script cache (installing the same text again
            // keeps it: the library's identity is its text).
            let mut con = a.connection();
            if con.uses_scripts() {
                run(&mut con, &["SCRIPT", "FLUSH"]);
            } else {
                backend.install(&a, HORIZON_MS);
            }
            a
        }
        Place::Restarted => {
            let port = a.port;
            a.kill9();
            drop(a);
            Server::start_with(Options {
                port: Some(port),
                ..options(backend, Some(dir))
            })
        }
        Place::PromotedReplica => {
            let b = b.expect("a replica");
            b.wait_caught_up(&a);
            run(&mut b.connection(), &["REPLICAOF", "NO", "ONE"]);
            b
        }
        Place::MigratedTo => {
            let b = b.expect("a node to migrate to");
            let port = b.port.to_string();
            let mut con = a.connection();
            for key in keys {
                run(&mut con, &["MIGRATE", "127.0.0.1", &port, key, "0", "5000"]);
            }
            b
        }
    }
}

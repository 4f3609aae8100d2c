//! The peer path of the comparison, run for real: a Lua generator of our own (replying with the
//! ID's parts) and this project's module loaded as if it were someone else's, both from a peers
//! file, through the same measurement as every row.

use std::time::Duration;

use idgen_benches::compare::approach::{measure, Approach, Kind, Target};
use idgen_benches::compare::{peers, Budget};

/// The peer described by `file_text`, started, and the row that measures it (the server is
/// stopped when dropped).
fn started(file_text: &str) -> (idgen_tests::Server, Approach) {
    let peer = peers::parse(file_text).unwrap().remove(0);
    let (server, command) = peers::start(&peer).unwrap();
    let approach = Approach {
        kind: Kind::Network,
        name: peer.name.clone(),
        target: Target::Resp {
            url: server.url(),
            command,
            reply: peer.reply.clone(),
        },
        bits: 64,
        cap: "-",
        node_death: String::new(),
        coordination: "-",
    };
    (server, approach)
}

/// Starts the peer described by `file_text` and takes 600 IDs through it, at 1 and 16
/// connections; returns the IDs of both runs.
fn run_peer(file_text: &str) -> Vec<u64> {
    let (_server, approach) = started(file_text);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let budget = Budget {
        duration: Duration::from_secs(20),
        max_requests: 600,
    };
    let mut all = Vec::new();
    for connections in [1, 16] {
        let (m, ids, repeats) = measure(&runtime, &approach, connections, 1, budget).unwrap();
        assert_eq!((m.errors, repeats), (0, 0));
        assert!(ids.len() >= 600, "{} IDs", ids.len());
        all.extend(ids);
    }
    all
}

#[test]
fn a_lua_peer_replying_with_parts_is_measured_and_its_ids_joined() {
    let dir = idgen_tests::data_dir("peer-lua");
    // Our own script: datacenter 1, worker 2, a counter; the parts joined as 41/5/5/12 bits.
    let script = dir.join("parts.lua");
    std::fs::write(
        &script,
        "local n = redis.call('INCR', KEYS[1]) % 4096\nreturn {7, 1, 2, n}\n",
    )
    .unwrap();
    let ids = run_peer(&format!(
        "[peer.lua]\nscript = {:?}\nargs = [\"1\", \"peer-counter\"]\nreply = \"parts 41 5 5 12\"\n",
        script.display()
    ));
    for id in &ids {
        assert_eq!(id >> 12, (7 << 10) | (1 << 5) | 2, "{id:#x}");
    }
}

#[test]
fn a_module_peer_is_loaded_with_its_arguments() {
    // This project's module, named by path as a user would name a module they built.
    let module = idgen_tests::module_path();
    let ids = run_peer(&format!(
        "[peer.module]\nmodule = {:?}\nload = [\"worker-id\", \"3\"]\ncommand = [\"SNOWFLAKE.NEXT\"]\nreply = \"id\"\n",
        module.display()
    ));
    for id in &ids {
        assert_eq!(
            (id >> 12) & 31,
            3,
            "worker-id from the load arguments: {id:#x}"
        );
    }
}

#[test]
fn a_reply_of_another_shape_is_an_error_not_zeros() {
    let dir = idgen_tests::data_dir("peer-shape");
    let script = dir.join("string.lua");
    std::fs::write(&script, "return 'not-a-number'\n").unwrap();
    let (_server, approach) = started(&format!(
        "[peer.bad]\nscript = {:?}\nargs = [\"0\"]\n",
        script.display()
    ));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let budget = Budget {
        duration: Duration::from_secs(5),
        max_requests: 10,
    };
    let (m, ids, _) = measure(&runtime, &approach, 1, 1, budget).unwrap();
    assert!(
        ids.is_empty() && m.errors > 0,
        "{} IDs, {} errors",
        ids.len(),
        m.errors
    );
}

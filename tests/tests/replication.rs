//! A replica of a primary with the module: DATESEQ keys arrive as explicit writes, and
//! SNOWFLAKE.NEXT is refused while the server is a replica.

use idgen_tests::{cmd, demoter, error_of, Options, Server};

#[test]
fn replica_holds_the_primarys_dateseq_keys_and_refuses_snowflake() {
    let primary = Server::start(&["worker-id", "1"]);
    let replica = Server::start(&["worker-id", "2"]);
    let mut p = primary.connection();
    let mut r = replica.connection();
    replica.replicate(&primary);

    let mut last = std::collections::HashMap::new();
    for i in 0..300 {
        let prefix = ["order", "invoice", "{tenant7}:ticket"][i % 3];
        let v: i64 = cmd(&["DATESEQ.NEXT", prefix]).query(&mut p).unwrap();
        last.insert(prefix, v);
    }
    let acked: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut p).unwrap();
    assert_eq!(acked, 1);

    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut p).unwrap();
    assert_eq!(keys.len(), 3, "{keys:?}");
    for key in &keys {
        let on_primary: (String, i64) = (
            cmd(&["GET", key]).query(&mut p).unwrap(),
            cmd(&["PEXPIRETIME", key]).query(&mut p).unwrap(),
        );
        let on_replica: (String, i64) = (
            cmd(&["GET", key]).query(&mut r).unwrap(),
            cmd(&["PEXPIRETIME", key]).query(&mut r).unwrap(),
        );
        assert_eq!(on_primary, on_replica, "{key}");
        assert_eq!(on_primary.0, "100");
        assert!(on_primary.1 > 0, "{key} has no expiry");
    }
    for (prefix, value) in &last {
        let current: i64 = cmd(&["DATESEQ.CURRENT", prefix]).query(&mut r).unwrap();
        assert_eq!(
            current, *value,
            "DATESEQ.CURRENT reads the replicated counter"
        );
    }

    let err = error_of(&mut r, &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(err.starts_with("ERR") && err.contains("replica"), "{err}");
    let err = error_of(&mut r, &cmd(&["DATESEQ.NEXT", "order"]));
    assert!(err.starts_with("READONLY"), "{err}");

    // Promoted, it issues IDs under its own worker-id.
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut r).unwrap();
    assert_eq!((id >> 12) & 31, 2);
    let next: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut r).unwrap();
    assert_eq!(
        next,
        last["order"] + 10_000 + 1,
        "the promoted replica carries on the counter after the default failover gap"
    );
}

/// A node demoted from inside one of the module's own commands: another module (the test's
/// demoter) runs REPLICAOF from the keyspace event that DATESEQ.NEXT's write fires, while
/// DATESEQ.NEXT holds the module's state. The role change must still reach the module: the next
/// SNOWFLAKE.NEXT is refused, not issued beside the new primary's IDs.
#[test]
fn a_node_demoted_from_inside_a_command_refuses_snowflake_on_the_next_call() {
    let primary = Server::start(&["worker-id", "3"]);
    let port = primary.port.to_string();
    let demoter = demoter().display().to_string();
    let node = Server::start_with(Options::module(&["worker-id", "3"]).server(&[
        "--loadmodule",
        &demoter,
        "127.0.0.1",
        &port,
    ]));
    let mut n = node.connection();
    let _: u64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut n).unwrap();
    let _: i64 = cmd(&["DATESEQ.NEXT", "demote"]).query(&mut n).unwrap();
    let role: Vec<redis::Value> = cmd(&["ROLE"]).query(&mut n).unwrap();
    assert_eq!(
        role.first(),
        Some(&redis::Value::BulkString(b"slave".to_vec())),
        "the demoter ran REPLICAOF"
    );
    let refused = error_of(&mut n, &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(refused.contains("replica"), "{refused}");
    assert!(
        node.log()
            .contains("the change to replica came from inside one of idgen's commands"),
        "{}",
        node.log()
    );
}

/// A command of the module re-entered from inside another: the demoter calls SNOWFLAKE.NEXT
/// from the keyspace event that DATESEQ.NEXT's write fires, while DATESEQ.NEXT holds the state.
/// The inner call is refused with an error (the state's lock is only tried), not run on state
/// that the outer call is changing, and not a hang; the outer call completes.
#[test]
fn a_command_re_entered_from_inside_another_is_refused_and_the_outer_call_completes() {
    let demoter = demoter().display().to_string();
    let node = Server::start_with(Options::module(&["worker-id", "3"]).server(&[
        "--loadmodule",
        &demoter,
        "127.0.0.1",
        "1",
    ]));
    let mut n = node.connection();
    let value: i64 = cmd(&["DATESEQ.NEXT", "reenter"]).query(&mut n).unwrap();
    assert!(value > 0, "{value}");
    let log = node.log();
    let line = log
        .lines()
        .find(|l| l.contains("SNOWFLAKE.NEXT from inside DATESEQ.NEXT"))
        .unwrap_or_else(|| panic!("the demoter did not call:\n{log}"));
    assert!(
        line.contains("called from inside one of its own commands"),
        "{line}"
    );
    let _: u64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut n).unwrap();
}

/// A primary with a replica and no `min-replicas-to-write` says so: INFO and a warning in its
/// log (a split brain would hand out DATESEQ values past what the failover gap covers);
/// setting it makes the primary bounded, and a replica that goes is seen going.
#[test]
fn a_primary_with_replicas_and_no_min_replicas_says_so() {
    let primary = Server::start(&["worker-id", "1"]);
    let replica = Server::start(&["worker-id", "2"]);
    let guard = |server: &Server| server.info_field("replication_guard");
    let said = || primary.log().contains("min-replicas-to-write 0: cut off");
    // No reading before the first replica (and no warning).
    assert_eq!(guard(&primary), "unknown");
    replica.replicate(&primary);
    assert!(
        idgen_tests::wait_for(std::time::Duration::from_secs(5), || guard(&primary)
            == "unbounded"),
        "{}",
        guard(&primary)
    );
    assert!(said(), "no warning in the log");
    let _: () = cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"])
        .query(&mut primary.connection())
        .unwrap();
    assert_eq!(guard(&primary), "bounded");
    // The replica gone: read again (without the setting there is nothing to bound).
    let _: () = cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"])
        .query(&mut primary.connection())
        .unwrap();
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut replica.connection())
        .unwrap();
    assert!(
        idgen_tests::wait_for(std::time::Duration::from_secs(5), || guard(&primary)
            == "no-replicas"),
        "{}",
        guard(&primary)
    );
}

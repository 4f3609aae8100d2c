//! One identity per node: a replica configured with its primary's worker-id (one templated
//! configuration for both) is told by its primary at once, says so, and refuses SNOWFLAKE.NEXT
//! once promoted; a replica of its own pair issues as usual. Two servers on one state or
//! witness file are refused however the path reaches it (`restart.rs`); two Cluster primaries
//! with one pair refuse (`cluster.rs`).

use std::time::Duration;

use idgen_tests::{cmd, error_of, wait_for, Options, Server};

fn promote(server: &Server) {
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut server.connection())
        .unwrap();
}

#[test]
fn a_replica_with_its_primarys_worker_id_says_so_and_refuses_once_promoted() {
    // The primary keeps an AOF: its claim to the replica is in it, and replaying it at the
    // next start is not a conflict with itself.
    let dir = idgen_tests::data_dir("identity-primary");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::module(&["worker-id", "5", "datacenter-id", "2"])
    }
    .server(&["--appendonly", "yes"]);
    let mut primary = Server::start_with(options.clone());
    let twin = Server::start(&["worker-id", "5", "datacenter-id", "2"]);
    let own = Server::start(&["worker-id", "6", "datacenter-id", "2"]);
    twin.replicate(&primary);
    own.replicate(&primary);
    let told = wait_for(Duration::from_secs(10), || {
        twin.info_field("worker_id_conflict")
            .contains("primary issues IDs as datacenter 2 worker 5 too")
    });
    assert!(told, "the replica with its primary's pair was not told");
    assert!(twin.log().contains("worker-id conflict"), "not logged");
    assert_eq!(own.info_field("worker_id_conflict"), "");
    assert_eq!(primary.info_field("worker_id_conflict"), "");

    // A client cannot send the claim: a replica refuses it as a write, a primary as not its own.
    let err = error_of(&mut twin.connection(), &cmd(&["IDGEN.CLAIM", "2", "6"]));
    assert!(err.starts_with("READONLY"), "{err}");
    let err = error_of(&mut primary.connection(), &cmd(&["IDGEN.CLAIM", "2", "5"]));
    assert!(err.contains("sent by a primary to its replicas"), "{err}");

    promote(&twin);
    promote(&own);
    let err = error_of(&mut twin.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(
        err.starts_with("ERR worker-id conflict") && err.contains("idgen.worker-id"),
        "{err}"
    );
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"])
        .query(&mut own.connection())
        .unwrap();
    assert_eq!((id >> 12) & 31, 6);

    // The primary's AOF holds its claim: replayed at a restart, it is ignored.
    primary.shutdown();
    let restarted = Server::start_with(Options {
        port: Some(primary.port),
        ..options
    });
    let id: i64 =
        idgen_tests::when_caught_up(&mut restarted.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
    assert_eq!((id >> 12) & 31, 5);
    assert_eq!(restarted.info_field("worker_id_conflict"), "");
}

fn told_of_conflict(replica: &Server, pair: &str) -> bool {
    wait_for(Duration::from_secs(10), || {
        replica
            .info_field("worker_id_conflict")
            .contains(&format!("primary issues IDs as {pair} too"))
    })
}

/// The claim travels with every link, not only the first full sync: a replica that restarts
/// and continues its primary's stream (a partial resynchronization, no full sync) is told
/// again, its verdict having gone with its memory.
#[test]
fn a_restarted_twin_that_resumes_its_link_is_told_again() {
    let primary = Server::start(&["worker-id", "5", "datacenter-id", "2"]);
    let options = Options {
        dir: Some(idgen_tests::data_dir("identity-twin").to_path_buf()),
        ..Options::module(&["worker-id", "5", "datacenter-id", "2"])
    }
    .server(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    let mut twin = Server::start_with(options.clone());
    assert!(told_of_conflict(&twin, "datacenter 2 worker 5"));
    let _: redis::RedisResult<()> = cmd(&["SHUTDOWN", "SAVE"]).query(&mut twin.connection());
    assert!(wait_for(Duration::from_secs(10), || !twin.is_alive()));
    let twin = Server::start_with(Options {
        port: Some(twin.port),
        ..options
    });
    assert!(
        told_of_conflict(&twin, "datacenter 2 worker 5"),
        "not told after its restart"
    );
    assert!(
        twin.log()
            // "Master" on Redis, "Primary" on Valkey.
            .contains("accepted a Partial Resynchronization"),
        "the test meant a partial resynchronization:\n{}",
        twin.log()
    );
}

/// A chain: the middle replica has a pair of its own, the one below shares it. While the
/// middle is a replica nothing is wrong; once it is promoted, the one below is told.
#[test]
fn a_replica_below_a_promoted_replica_with_its_pair_is_told() {
    let primary = Server::start(&["worker-id", "5", "datacenter-id", "2"]);
    let middle = Server::start(&["worker-id", "6", "datacenter-id", "2"]);
    let below = Server::start(&["worker-id", "6", "datacenter-id", "2"]);
    middle.replicate(&primary);
    below.replicate(&middle);
    // The top primary's claim reaches the one below through the middle: not its pair.
    assert!(wait_for(Duration::from_secs(10), || {
        let sent = primary.replication_offset();
        sent > 0 && below.replication_offset() == sent
    }));
    assert_eq!(below.info_field("worker_id_conflict"), "");
    promote(&middle);
    assert!(
        told_of_conflict(&below, "datacenter 2 worker 6"),
        "not told after the middle's promotion"
    );
}

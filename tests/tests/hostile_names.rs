//! What the module writes, it reads back: lease namespaces and DATESEQ prefixes of any bytes
//! (empty, spaces, newlines, `%`, NUL, invalid UTF-8, 1 MiB) go through both witness files and
//! the AOF, and after a clean stop and after kill -9 the server starts again with every lease
//! and counter where it was. No client input can keep the server from starting.

use idgen_tests::lease::coordinator_past_its_first_fence;
use idgen_tests::redis::{self, Value};
use idgen_tests::{error_text, Options, Server};

/// Names a client may send, each as bytes.
fn hostile_names() -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = [
        &b""[..],
        b" ",
        b"a b",
        b"\n",
        b"line\r\nbreak",
        b"%",
        b"%25",
        b"%G",
        b"\0",
        b"nul\0inside",
        b"\xff\xfe",
        "\u{1F600}".as_bytes(),
        b"{tag}",
        b"{}",
        b"}",
        b"fence 5",
        b"every 1 2",
        b"crashed 1 2 3",
    ]
    .iter()
    .map(|n| n.to_vec())
    .collect();
    names.push(vec![b'x'; 1 << 20]);
    names.push((0..=255u8).collect());
    names
}

/// `[worker_id, token]` of every live lease in `ns`.
fn holders(con: &mut dyn redis::ConnectionLike, ns: &[u8]) -> Vec<(i64, i64)> {
    let leases: Vec<Vec<i64>> = redis::cmd("WORKERID.LIST").arg(ns).query(con).unwrap();
    leases.iter().map(|l| (l[0], l[1])).collect()
}

/// DATESEQ.CURRENT of `prefix`, or None.
fn current(con: &mut dyn redis::ConnectionLike, prefix: &[u8]) -> Option<i64> {
    redis::cmd("DATESEQ.CURRENT")
        .arg(prefix)
        .query(con)
        .unwrap()
}

/// What a name left behind: its lease holders, and the last DATESEQ value (None where the
/// prefix was refused).
struct Left {
    name: Vec<u8>,
    holders: Vec<(i64, i64)>,
    last: Option<i64>,
}

/// Leases `name` and takes DATESEQ values of it (refused only where no counter key can be
/// named from it, exactly): what it left.
fn use_name(con: &mut dyn redis::ConnectionLike, name: Vec<u8>) -> Left {
    let grant: Vec<i64> = redis::cmd("WORKERID.ACQUIRE")
        .arg(&name)
        .arg("TTL")
        .arg(25_000)
        .query(con)
        .unwrap_or_else(|e| panic!("ACQUIRE {:?}: {e}", name.escape_ascii()));
    let mut last = None;
    for _ in 0..3 {
        match redis::cmd("DATESEQ.NEXT").arg(&name).query::<i64>(con) {
            Ok(v) => last = Some(v),
            Err(e) => {
                let text = error_text(&e);
                assert!(
                    text == "ERR prefix must not be empty"
                        || text.starts_with("ERR prefix has '}' without a '{...}' hash tag"),
                    "{:?}: {text}",
                    name.escape_ascii()
                );
                break;
            }
        }
    }
    let holders = holders(con, &name);
    assert_eq!(holders, [(grant[0], grant[1])]);
    Left {
        name,
        holders,
        last,
    }
}

/// Every lease and counter in `left` where it was after `how`; each counter carries on above.
fn all_where_they_were(con: &mut dyn redis::ConnectionLike, left: &mut [Left], how: &str) {
    for l in left {
        let shown = l.name.escape_ascii().to_string();
        let shown = &shown[..shown.len().min(40)];
        assert_eq!(holders(con, &l.name), l.holders, "{shown} after {how}");
        let Some(last) = l.last else { continue };
        assert!(
            current(con, &l.name) >= Some(last),
            "{shown}'s counter went back after {how}"
        );
        let next: i64 = redis::cmd("DATESEQ.NEXT").arg(&l.name).query(con).unwrap();
        assert!(next > last, "{shown} repeated {next} after {how}");
        l.last = Some(next);
    }
}

#[test]
fn hostile_names_survive_a_clean_stop_and_kill_9_after_each_batch() {
    let dir = idgen_tests::data_dir("hostile-names");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    }
    .server(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut server = coordinator_past_its_first_fence(options.clone());
    let mut left = Vec::new();
    let names = hostile_names();
    let batches: Vec<&[Vec<u8>]> = names.chunks(5).collect();
    for (i, batch) in batches.iter().enumerate() {
        let mut con = server.connection();
        left.extend(batch.iter().map(|name| use_name(&mut con, name.clone())));
        drop(con);
        let how = if i % 2 == 0 {
            "a clean stop"
        } else {
            "kill -9"
        };
        if i % 2 == 0 {
            server.shutdown();
        } else {
            server.kill9();
        }
        server = Server::try_start(Options {
            port: Some(server.port),
            ..options.clone()
        })
        .unwrap_or_else(|log| panic!("the server did not start again after {how}:\n{log}"));
        let mut con = server.connection();
        all_where_they_were(&mut con, &mut left, how);
        let _: Value = redis::cmd("PING").query(&mut con).unwrap();
    }
    eprintln!(
        "{} hostile names in {} batches, a restart after each",
        left.len(),
        batches.len()
    );
}

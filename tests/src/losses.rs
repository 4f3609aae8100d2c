//! The ways a DATESEQ counter can be lost while its server runs, for the witness matrices
//! (`tests/witness_matrix.rs` on the node that issued, `tests/witness_matrix_where.rs` wherever
//! the counter went since).

use crate::cmd;
use redis::Value;

/// What a case must come to after its loss.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    /// Issuing again repeats no value.
    NoRepeat,
    /// The next call is refused with an error containing this text; once the state is repaired
    /// (the key deleted), issuing again repeats nothing.
    Refused(&'static str),
}

/// A way to lose a DATESEQ counter `key`, given a copy of it taken earlier (`older`, its DUMP;
/// also `backup:<key>` holds it, and the RDB file was saved then).
pub struct Way {
    pub name: &'static str,
    pub lose: fn(&mut dyn redis::ConnectionLike, &str, &[u8]),
    pub outcome: Outcome,
}

/// Adds `after`, the values issued after a loss in `case`, to `seen`, asserting that each is
/// above every value before and that none repeats.
pub fn assert_carried_on(case: &str, seen: &mut Vec<u64>, after: Vec<u64>) {
    let highest = *seen.iter().max().expect("values before the loss");
    assert!(
        after.iter().all(|v| *v > highest),
        "{case}: {after:?} after {seen:?}"
    );
    seen.extend(after);
    let distinct: std::collections::HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(distinct.len(), seen.len(), "{case}: a value repeated");
}

/// Runs `words`, which must succeed.
pub fn run(con: &mut dyn redis::ConnectionLike, words: &[&str]) {
    let _: Value = cmd(words)
        .query(con)
        .unwrap_or_else(|e| panic!("{words:?}: {e}"));
}

/// Puts a copy of `from` over `to`: `COPY from to REPLACE`, or on a server without COPY (Redis
/// 6.0) the same by DUMP and RESTORE.
pub fn copy_over(con: &mut dyn redis::ConnectionLike, from: &str, to: &str) {
    match cmd(&["COPY", from, to, "REPLACE"]).query::<Value>(con) {
        Ok(_) => {}
        Err(e) if e.to_string().contains("unknown command") => {
            let dump: Vec<u8> = cmd(&["DUMP", from]).query(con).expect("DUMP");
            restore_older(con, to, &dump);
        }
        Err(e) => panic!("COPY {from} {to}: {e}"),
    }
}

/// Puts `older` (a DUMP of `key`) back in its place, replacing what is there.
pub fn restore_older(con: &mut dyn redis::ConnectionLike, key: &str, older: &[u8]) {
    let _: () = redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(older)
        .arg("REPLACE")
        .query(con)
        .unwrap();
}

/// Every way, and what must come of it.
pub fn dateseq_ways() -> Vec<Way> {
    use Outcome::*;
    vec![
        Way {
            name: "DEL",
            lose: |con, key, _| run(con, &["DEL", key]),
            outcome: NoRepeat,
        },
        Way {
            name: "UNLINK",
            lose: |con, key, _| run(con, &["UNLINK", key]),
            outcome: NoRepeat,
        },
        Way {
            name: "GETDEL",
            lose: |con, key, _| run(con, &["GETDEL", key]),
            outcome: NoRepeat,
        },
        Way {
            name: "SET lower",
            lose: |con, key, _| run(con, &["SET", key, "1", "KEEPTTL"]),
            outcome: NoRepeat,
        },
        Way {
            name: "INCRBY negative",
            lose: |con, key, _| run(con, &["INCRBY", key, "-2"]),
            outcome: NoRepeat,
        },
        Way {
            name: "DECR",
            lose: |con, key, _| run(con, &["DECR", key]),
            outcome: NoRepeat,
        },
        Way {
            name: "SET 0",
            lose: |con, key, _| run(con, &["SET", key, "0"]),
            outcome: NoRepeat,
        },
        Way {
            name: "FLUSHALL",
            lose: |con, _, _| run(con, &["FLUSHALL"]),
            outcome: NoRepeat,
        },
        Way {
            name: "FLUSHALL ASYNC",
            lose: |con, _, _| run(con, &["FLUSHALL", "ASYNC"]),
            outcome: NoRepeat,
        },
        Way {
            name: "FLUSHDB",
            lose: |con, _, _| run(con, &["FLUSHDB"]),
            outcome: NoRepeat,
        },
        Way {
            name: "RENAME away",
            lose: |con, key, _| run(con, &["RENAME", key, &format!("moved:{key}")]),
            outcome: NoRepeat,
        },
        Way {
            name: "RENAME an older copy in",
            lose: |con, key, _| run(con, &["RENAME", &format!("backup:{key}"), key]),
            outcome: NoRepeat,
        },
        Way {
            name: "COPY an older copy over",
            lose: |con, key, _| copy_over(con, &format!("backup:{key}"), key),
            outcome: NoRepeat,
        },
        Way {
            name: "RESTORE an older DUMP",
            lose: |con, key, older| restore_older(con, key, older),
            outcome: NoRepeat,
        },
        Way {
            name: "DEBUG RELOAD of an older RDB",
            lose: |con, _, _| run(con, &["DEBUG", "RELOAD", "NOSAVE"]),
            outcome: NoRepeat,
        },
        Way {
            name: "expired early (PEXPIRE 1)",
            lose: |con, key, _| {
                run(con, &["PEXPIRE", key, "1"]);
                std::thread::sleep(std::time::Duration::from_millis(5));
            },
            outcome: NoRepeat,
        },
        Way {
            name: "EXPIRE 0",
            lose: |con, key, _| run(con, &["EXPIRE", key, "0"]),
            outcome: NoRepeat,
        },
        Way {
            name: "MOVE to another database",
            lose: |con, key, _| {
                let n: i64 = cmd(&["MOVE", key, "1"]).query(con).unwrap();
                let e: i64 = cmd(&["EXISTS", key]).query(con).unwrap();
                let info: String = cmd(&["CLIENT", "INFO"]).query(con).unwrap();
                eprintln!("MOVE {key} -> {n}, exists {e}: {info}");
            },
            outcome: NoRepeat,
        },
        Way {
            name: "SWAPDB away",
            lose: |con, _, _| {
                run(con, &["SWAPDB", "0", "2"]);
                run(con, &["SELECT", "2"]);
                run(con, &["FLUSHDB"]);
                run(con, &["SELECT", "0"]);
            },
            outcome: NoRepeat,
        },
        Way {
            name: "garbage (SET abc)",
            lose: |con, key, _| run(con, &["SET", key, "abc"]),
            outcome: Refused("counter key holds a value that is not a non-negative integer"),
        },
        Way {
            name: "garbage (APPEND)",
            lose: |con, key, _| run(con, &["APPEND", key, "x"]),
            outcome: Refused("counter key holds a value that is not a non-negative integer"),
        },
        Way {
            name: "another type (a list)",
            lose: |con, key, _| {
                run(con, &["DEL", key]);
                run(con, &["RPUSH", key, "1"]);
            },
            outcome: Refused("WRONGTYPE"),
        },
    ]
}

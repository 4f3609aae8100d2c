//! The fault matrix of lease namespaces, on both backends (`tests/fault_matrix.rs` has the date
//! sequences'): a namespace with a live holder, lost or changed every way (deleted, expired, an
//! expiry put on it, renamed, an older copy put back, flushed, an evicting policy set, a record
//! edited by hand, another type) at every place (the coordinator that granted, after a reload
//! of the library, a restart from its AOF, a promoted replica, the node it migrated to). The
//! property: no two holders of one worker ID make IDs at the same time. The old holder either
//! keeps its lease (then the worker ID is not granted again) or is told its lease is gone, and
//! a later holder of its worker ID starts above every UNTIL the old one was acknowledged.
//! Each case holds it, is refused naming the cause, or is a row docs/library.md states.

use std::time::Duration;

use idgen_tests::backend::Backend;
use idgen_tests::losses::{copy_over, restore_older, run};
use idgen_tests::places::{move_to, second, start, unserved, Place, HORIZON_MS, PLACES};
use idgen_tests::redis::{self, Value};
use idgen_tests::{both, error_text, now_ms, workspace_root};

const TTL: &str = "800";

/// A way to lose or change a namespace `ns`, given its DUMP from before its holder's renewal
/// (`backup:<ns>` holds that copy too); `refused` is the error text the next call gets (then
/// the namespace is deleted, or the policy put back).
struct Way {
    name: &'static str,
    global: bool,
    lose: fn(&mut dyn redis::ConnectionLike, &str, &[u8]),
    refused: Option<&'static str>,
}

fn ways() -> Vec<Way> {
    vec![
        Way {
            name: "DEL",
            global: false,
            lose: |c, ns, _| run(c, &["DEL", ns]),
            refused: None,
        },
        Way {
            name: "UNLINK",
            global: false,
            lose: |c, ns, _| run(c, &["UNLINK", ns]),
            refused: None,
        },
        Way {
            name: "expired (PEXPIRE 1)",
            global: false,
            lose: |c, ns, _| {
                run(c, &["PEXPIRE", ns, "1"]);
                std::thread::sleep(Duration::from_millis(5));
            },
            refused: None,
        },
        Way {
            name: "a TTL put on it",
            global: false,
            lose: |c, ns, _| run(c, &["PEXPIRE", ns, "60000"]),
            refused: None,
        },
        Way {
            name: "RENAME away",
            global: false,
            lose: |c, ns, _| run(c, &["RENAME", ns, &format!("moved:{ns}")]),
            refused: None,
        },
        Way {
            name: "RENAME an older copy in",
            global: false,
            lose: |c, ns, _| run(c, &["RENAME", &format!("backup:{ns}"), ns]),
            refused: None,
        },
        Way {
            name: "COPY an older copy over",
            global: false,
            lose: |c, ns, _| copy_over(c, &format!("backup:{ns}"), ns),
            refused: None,
        },
        Way {
            name: "RESTORE an older DUMP",
            global: false,
            lose: restore_older,
            refused: None,
        },
        Way {
            name: "a record edited by hand",
            global: false,
            lose: |c, ns, _| run(c, &["HSET", ns, "0", "1e5 0 0 0"]),
            refused: Some("did not write"),
        },
        Way {
            name: "another type (a list)",
            global: false,
            lose: |c, ns, _| {
                run(c, &["DEL", ns]);
                run(c, &["RPUSH", ns, "1"]);
            },
            refused: Some("WRONGTYPE"),
        },
        Way {
            name: "FLUSHALL",
            global: true,
            lose: |c, _, _| run(c, &["FLUSHALL"]),
            refused: None,
        },
        Way {
            name: "FLUSHDB",
            global: true,
            lose: |c, _, _| run(c, &["FLUSHDB"]),
            refused: None,
        },
        Way {
            name: "maxmemory-policy allkeys-lru set under it",
            global: true,
            lose: |c, _, _| run(c, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
            refused: Some("maxmemory-policy is allkeys-lru"),
        },
    ]
}

/// The rows of docs/library.md: a namespace lost across a reload of the library, or on a
/// node it migrated to before that node's first lease call on it.
const ROW_RELOAD: &str = "a namespace deleted *and* recreated across a reload";
const ROW_MIGRATED: &str = "a namespace deleted on the node it migrated to";

/// The row `way` at `place` is on `backend`, if it is one rather than a guarantee.
fn documented(backend: Backend, way: &Way, place: Place) -> Option<&'static str> {
    if backend == Backend::Module {
        return None;
    }
    // Gone, and made again from nothing at its next grant. (A refused namespace is deleted to
    // repair it: a DEL too.)
    let gone = !matches!(
        way.name,
        "a TTL put on it"
            | "maxmemory-policy allkeys-lru set under it"
            | "RENAME an older copy in"
            | "COPY an older copy over"
            | "RESTORE an older DUMP"
    );
    // A reload is the same process with no memory: a namespace gone or put back older looks
    // as it did, and only its tokens (which follow the clock) tell the holders apart.
    let reload = !matches!(
        way.name,
        "a TTL put on it" | "maxmemory-policy allkeys-lru set under it"
    );
    match place {
        Place::Reloaded if reload => Some(ROW_RELOAD),
        // The node never saw it arrive (a function runs only when called): gone before its
        // first call there, it is new to that node.
        Place::MigratedTo if gone => Some(ROW_MIGRATED),
        _ => None,
    }
}

fn call(
    backend: Backend,
    con: &mut dyn redis::ConnectionLike,
    words: &[&str],
) -> redis::RedisResult<Vec<i64>> {
    backend.cmd(words).query(con)
}

/// One run of `cases` at `place`: the number of cases that held, and of documented rows.
fn run_place(backend: Backend, place: Place, cases: &[&Way]) -> (usize, usize) {
    let dir = idgen_tests::data_dir("fault-matrix-leases");
    let a = start(backend, Some(&dir));
    let b = second(backend, place, &a);
    if unserved(backend, place, b.as_ref()) {
        return (0, 0);
    }
    backend.wait_past_lease_fence(&a, HORIZON_MS);
    let names: Vec<String> = (0..cases.len()).map(|i| format!("{{ns{i}}}pool")).collect();
    let mut con = a.connection();
    let mut holders = Vec::new();
    let mut olders = Vec::new();
    for ns in &names {
        let g = call(
            backend,
            &mut con,
            &["WORKERID.ACQUIRE", ns, "TTL", TTL, "MAX", "1"],
        )
        .unwrap();
        olders.push(
            redis::cmd("DUMP")
                .arg(ns)
                .query::<Vec<u8>>(&mut con)
                .unwrap(),
        );
        copy_over(&mut con, ns, &format!("backup:{ns}"));
        let until = (now_ms() + 500).to_string();
        let (w, t) = (g[0].to_string(), g[1].to_string());
        let r = call(
            backend,
            &mut con,
            &["WORKERID.RENEW", ns, &w, &t, "TTL", TTL, "UNTIL", &until],
        )
        .unwrap();
        // The holder's worker ID and token, and the latest UNTIL it was acknowledged.
        holders.push((g[0], g[1], r[1]));
    }
    drop(con);
    let keys: Vec<String> = names
        .iter()
        .flat_map(|ns| [format!("backup:{ns}"), ns.clone()])
        .collect();
    let holder = move_to(place, backend, a, b, &dir, &keys);
    let mut con = holder.connection();
    let page = std::fs::read_to_string(workspace_root().join("docs/library.md")).unwrap();
    let mut live = vec![false; cases.len()];
    for (i, way) in cases.iter().enumerate() {
        let ns = &names[i];
        (way.lose)(&mut con, ns, &olders[i]);
        if let Some(says) = way.refused {
            let err = call(
                backend,
                &mut con,
                &["WORKERID.ACQUIRE", ns, "TTL", TTL, "MAX", "1"],
            )
            .unwrap_err();
            assert!(
                error_text(&err).contains(says),
                "{backend:?} / {place:?} / {}: {err}",
                way.name
            );
            run(
                &mut con,
                &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
            );
            if !way.global {
                run(&mut con, &["DEL", ns]);
            }
        }
        // The old holder renews: it keeps its lease, or is told it is gone.
        let (w, t, _) = holders[i];
        let until = (now_ms() + 500).to_string();
        let renewed = call(
            backend,
            &mut con,
            &[
                "WORKERID.RENEW",
                ns,
                &w.to_string(),
                &t.to_string(),
                "TTL",
                TTL,
                "UNTIL",
                &until,
            ],
        );
        if let Ok(r) = renewed {
            holders[i].2 = holders[i].2.max(r[1]);
            live[i] = true;
        }
    }
    // Past every lease's expiry, unless renewed just now.
    std::thread::sleep(Duration::from_millis(900));
    let mut documented_rows = 0;
    for (i, way) in cases.iter().enumerate() {
        let case = format!("{backend:?} / {place:?} / {}", way.name);
        let ns = &names[i];
        let (w, t, told) = holders[i];
        if live[i] {
            // Still its holder's: renewed again, it is not granted to another.
            let (w, t) = (w.to_string(), t.to_string());
            let _ = call(
                backend,
                &mut con,
                &["WORKERID.RENEW", ns, &w, &t, "TTL", TTL],
            );
        }
        let grant = call(
            backend,
            &mut con,
            &["WORKERID.ACQUIRE", ns, "TTL", TTL, "MAX", "1"],
        );
        let held = match &grant {
            Ok(g) => g[0] != w || (g[3] >= told && g[1] > t),
            Err(e) => error_text(e).contains("are leased"),
        };
        if let Some(row) = documented(backend, way, place) {
            documented_rows += 1;
            assert!(
                page.contains(row),
                "{case}: docs/library.md has no row '{row}'"
            );
            continue;
        }
        assert!(
            held,
            "{case}: the old holder (worker {w}, token {t}) was told UNTIL {told}, then {grant:?}"
        );
        if backend == Backend::Library {
            let ttl: i64 = redis::cmd("PTTL").arg(ns).query(&mut con).unwrap();
            assert!(
                ttl == -1 || ttl == -2,
                "{case}: the namespace kept an expiry ({ttl})"
            );
        }
    }
    let _: Value = redis::cmd("PING").query(&mut con).unwrap();
    eprintln!(
        "{backend:?} / {place:?}: {} cases, {documented_rows} documented rows",
        cases.len()
    );
    (cases.len(), documented_rows)
}

fn namespaces_lost_every_way_at_every_place_grant_no_worker_id_twice(backend: Backend) {
    let ways = ways();
    let mut cases = 0;
    for place in PLACES {
        if backend == Backend::Module && place == Place::Reloaded {
            continue;
        }
        let local: Vec<&Way> = ways.iter().filter(|w| !w.global).collect();
        cases += run_place(backend, place, &local).0;
        for way in ways.iter().filter(|w| w.global) {
            cases += run_place(backend, place, &[way]).0;
        }
    }
    eprintln!("{backend:?}: {cases} lease cases");
    // Four places for the library; three at least for the module (a server that does not
    // witness moved state, Valkey 8.1 and later, has no migrated place).
    assert!(cases >= 3 * 13, "{cases} cases");
}

both!(namespaces_lost_every_way_at_every_place_grant_no_worker_id_twice);

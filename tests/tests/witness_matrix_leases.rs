//! Lease namespaces against every way their state can be lost: a record edited by hand is
//! refused as foreign, and a namespace rolled back across a restart hands out no worker ID
//! twice.
//! (The matrix of DATESEQ counters is `witness_matrix.rs`: the three outcomes and the inventory
//! are described there.)

use idgen_tests::comebacks::{aof_written, comebacks, copy_dir, Loses};
use idgen_tests::file_losses::End;
use idgen_tests::losses::run;
use idgen_tests::redis::{self};
use idgen_tests::{cmd, now_ms, Options, Server};

/// The words of a lease command on namespace `ns`, given the grant `[worker_id, token, ...]`.
type LeaseCall = fn(&str, &[i64; 4]) -> Vec<String>;

/// A hand edit of a live holder's record `"<token> <expires> <until> <floor>"`, as a new value
/// (`None`: the field removed).
type Edit = fn(u64, i64, i64, i64) -> Option<String>;

#[test]
fn a_lease_record_edited_by_hand_is_refused_as_foreign_naming_its_field() {
    let server = Server::start_with(Options::module(&["workerid-horizon-ms", "2000"]));
    server.wait_past_lease_fence();
    let mut con = server.connection();
    let edits: &[(&str, Edit)] = &[
        ("made to look expired", |t, _, u, f| {
            Some(format!("{t} 1 {u} {f}"))
        }),
        ("released", |t, _, u, f| Some(format!("{t} 0 {u} {f}"))),
        ("until lowered", |t, e, _, f| {
            Some(format!("{t} {e} {f} {f}"))
        }),
        ("expiry lowered", |t, e, u, f| {
            Some(format!("{t} {} {u} {f}", e - 500))
        }),
        ("another token", |t, e, u, f| {
            Some(format!("{} {e} {u} {f}", t - 1))
        }),
        ("removed (HDEL)", |_, _, _, _| None),
    ];
    let commands: [(&str, LeaseCall); 3] = [
        ("ACQUIRE", |ns, _| {
            ["WORKERID.ACQUIRE", ns, "TTL", "2000", "MAX", "2"]
                .map(String::from)
                .to_vec()
        }),
        ("RENEW", |ns, g| {
            let (w, t) = (g[0].to_string(), g[1].to_string());
            ["WORKERID.RENEW", ns, &w, &t, "TTL", "2000"]
                .map(String::from)
                .to_vec()
        }),
        ("LIST", |ns, _| {
            ["WORKERID.LIST", ns].map(String::from).to_vec()
        }),
    ];
    let mut cases = 0;
    for (edit_name, edit) in edits {
        for (command_name, command) in &commands {
            cases += 1;
            let case = format!("{edit_name} / {command_name}");
            let ns = format!("fleet{cases}");
            let grant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "2000", "MAX", "2"])
                .query(&mut con)
                .unwrap();
            let grant: [i64; 4] = grant.try_into().unwrap();
            let (w, t) = (grant[0].to_string(), grant[1].to_string());
            idgen_tests::lease::renew(&mut con, &ns, &grant).unwrap();
            let record: String = cmd(&["HGET", &ns, &w]).query(&mut con).unwrap();
            let parts: Vec<i64> = record.split(' ').map(|p| p.parse().unwrap()).collect();
            match edit(parts[0] as u64, parts[1], parts[2], parts[3]) {
                Some(value) => run(&mut con, &["HSET", &ns, &w, &value]),
                None => run(&mut con, &["HDEL", &ns, &w]),
            }
            let words = command(&ns, &grant);
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let err = idgen_tests::error_of(&mut con, &cmd(&words));
            assert!(
                err.contains(&format!("field \"{w}\"")) && err.contains("changed by hand"),
                "{case}: {err}"
            );
            // Put back, the namespace serves again, and the holder renews as before.
            run(&mut con, &["HSET", &ns, &w, &record]);
            let _: Vec<i64> = cmd(&["WORKERID.RENEW", &ns, &w, &t, "TTL", "2000"])
                .query(&mut con)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
        }
    }
    eprintln!("{cases} lease cases: a live holder's record edited by hand, every command");
    assert_eq!(cases, 18);
}

/// What lease holders were told: their grants, and the highest UNTIL of each worker ID.
#[derive(Default)]
struct Told {
    grants: Vec<(String, [i64; 4])>,
    until: std::collections::HashMap<(String, i64), i64>,
}

impl Told {
    fn tell(&mut self, ns: &str, grant: [i64; 4], until: i64) {
        let high = self
            .until
            .entry((ns.to_string(), grant[0]))
            .or_insert(until);
        *high = (*high).max(until);
        self.grants.push((ns.to_string(), grant));
    }

    /// The first grant in `ns`.
    fn holder(&self, ns: &str) -> [i64; 4] {
        self.grants.iter().find(|(n, _)| n == ns).unwrap().1
    }

    fn until(&self, ns: &str, worker_id: i64) -> i64 {
        self.until
            .get(&(ns.to_string(), worker_id))
            .copied()
            .unwrap_or(0)
    }
}

/// `WORKERID.ACQUIRE ns TTL 10000 MAX 4`: `[worker_id, token, expires_at_ms, start_above_ms]`;
/// a lease that outlives a restart.
fn acquire(con: &mut dyn redis::ConnectionLike, ns: &str) -> [i64; 4] {
    let v: Vec<i64> = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "10000", "MAX", "4"])
        .query(con)
        .unwrap();
    v.try_into().unwrap()
}

/// Every way a coordinator's data comes back at a restart, after a crash or a clean stop, for
/// a namespace written after the copies were taken and one that was not: with the lease
/// witness file, no grant starts below an UNTIL its worker ID's holder was told of and no token
/// repeats. A namespace that holds everything its holders were told grants usable leases at
/// once and its holders renew; one that lost any of it is reset (its leases void, grants a
/// horizon above the restart).
#[test]
fn lease_namespaces_rolled_back_across_a_restart_hand_out_no_worker_id_twice() {
    const HORIZON_MS: i64 = 30_000;
    let mut cases = 0;
    for comeback in comebacks() {
        for end in [End::Kill9, End::Clean] {
            let dir = idgen_tests::data_dir("matrix-lease-restart");
            let options = Options {
                dir: Some(dir.to_path_buf()),
                ..Options::default().server(comeback.persistence)
            };
            let mut server = idgen_tests::lease::coordinator_past_its_first_fence(options.clone());
            let mut con = server.connection();
            let mut told = Told::default();
            for ns in ["changed", "kept"] {
                let grant = acquire(&mut con, ns);
                told.tell(ns, grant, grant[3]);
            }
            run(&mut con, &["SAVE"]);
            std::fs::copy(dir.join("dump.rdb"), dir.join("older.rdb")).unwrap();
            if dir.join("appendonlydir").exists() {
                aof_written(&mut con);
                copy_dir(&dir.join("appendonlydir"), &dir.join("older-aof"));
            }
            let held = told.holder("changed");
            let renewed =
                idgen_tests::lease::renew_for(&mut con, "changed", &held, 10_000).unwrap();
            told.tell("changed", held, renewed[1]);
            let second = acquire(&mut con, "changed");
            told.tell("changed", second, second[3]);
            drop(con);
            match end {
                End::Kill9 => server.kill9(),
                End::Clean => server.shutdown(),
            }
            (comeback.put_back)(&dir);
            let restarted_at = now_ms();
            let server = Server::start_with(options);
            let mut con = server.connection();
            for ns in ["changed", "kept"] {
                cases += 1;
                let case = format!("{} / {end:?} / namespace {ns}", comeback.name);
                let lost = match comeback.loses {
                    Loses::Nothing => false,
                    Loses::SinceTheCopy => ns == "changed",
                    Loses::Everything => true,
                };
                let holder = told.holder(ns);
                let renewal = idgen_tests::lease::renew_for(&mut con, ns, &holder, 10_000);
                match (&renewal, lost) {
                    (Ok(_), false) => {}
                    (Err(e), true) => {
                        assert!(idgen_tests::error_text(e).contains("void"), "{case}: {e:?}")
                    }
                    _ => panic!("{case}: a holder's RENEW after the restart gave {renewal:?}"),
                }
                if let Ok(r) = &renewal {
                    told.tell(ns, holder, r[1]);
                }
                let top = told.grants.iter().map(|(_, g)| g[1]).max().unwrap();
                let mut granted = Vec::new();
                while let Ok(v) = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "2000", "MAX", "4"])
                    .query::<Vec<i64>>(&mut con)
                {
                    granted.push(<[i64; 4]>::try_from(v).unwrap());
                }
                assert!(!granted.is_empty(), "{case}: nothing granted");
                for grant in &granted {
                    assert!(grant[1] > top, "{case}: token {} repeats", grant[1]);
                    let above = told.until(ns, grant[0]);
                    assert!(
                        grant[3] >= above,
                        "{case}: worker ID {} granted above {}, below the {above} its holder was \
                         told",
                        grant[0],
                        grant[3]
                    );
                    if lost {
                        assert!(grant[3] >= restarted_at + HORIZON_MS, "{case}: {grant:?}");
                    }
                }
                if !lost {
                    // A worker ID never leased: usable at once, no fence.
                    let fresh = granted.iter().map(|g| g[3]).min().unwrap();
                    assert!(
                        fresh < restarted_at + 1_000,
                        "{case}: the first usable lease starts above {fresh}, {} ms after the \
                         restart",
                        fresh - restarted_at
                    );
                }
            }
        }
    }
    eprintln!("{cases} lease cases: a coordinator's data rolled back across a restart");
    assert!(cases >= 16);
}

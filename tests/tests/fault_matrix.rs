//! One fault matrix, both backends: a date sequence's state (its counter, its key, the
//! library's witness key) × every way it is lost or changed (deleted, lowered, expired,
//! renamed, copied or restored older, flushed, an evicting policy set under it, edited by hand,
//! another type) × every place it can be when that happens (the process that issued it, the
//! same process after a reload of the library, a restart from its AOF, a promoted replica, the
//! node it was migrated to: what a Cluster reshard does). Generated; each case passes (nothing
//! issued after the loss repeats anything before), is refused with an error that names the
//! cause, or is a row docs/library.md states (checked here: the row's words are in the page).
//!
//! The module is run through the same matrix (its witness file and witnesses on arrival), and
//! the library in both its forms: with a witness key (the second key) and without.

use std::time::Duration;

use idgen_core::dateseq::{counter_key, Calendar, Period};
use idgen_tests::backend::Backend;
use idgen_tests::losses::{assert_carried_on, copy_over, restore_older, run};
use idgen_tests::places::{move_to, second, start, unserved, Place, PLACES};
use idgen_tests::redis::{self, Value};
use idgen_tests::{both, cmd, error_of, now_ms, workspace_root};

/// Which key a way acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The sequence's key (the module's counter key, the library's hash).
    Sequence,
    /// The library's witness key.
    Witness,
}

/// A sequence of one case: its name, and on the library whether it has a witness key.
struct Spot {
    backend: Backend,
    name: String,
    witnessed: bool,
}

impl Spot {
    fn label() -> u32 {
        Calendar::new("UTC")
            .unwrap()
            .period_of(now_ms(), Period::Day)
            .date
    }

    fn witness(&self) -> String {
        format!("{}:w", self.name)
    }

    /// The key `target` names, and the counter's field in it (the library's).
    fn place(&self, target: Target) -> (String, Option<String>) {
        match (self.backend, target) {
            (Backend::Module, _) => {
                let mut key = Vec::new();
                counter_key(self.name.as_bytes(), Self::label(), &mut key).unwrap();
                (String::from_utf8(key).unwrap(), None)
            }
            (Backend::Library, Target::Sequence) => {
                (self.name.clone(), Some(format!("day:{}", Self::label())))
            }
            (Backend::Library, Target::Witness) => {
                (self.witness(), Some(format!("day:{}", Self::label())))
            }
        }
    }

    /// Every key of the sequence, for MIGRATE and for the older copies.
    fn keys(&self) -> Vec<String> {
        let mut keys = vec![self.place(Target::Sequence).0];
        if self.witnessed {
            keys.push(self.witness());
        }
        keys
    }

    fn call(&self) -> redis::Cmd {
        match (self.backend, self.witnessed) {
            (Backend::Module, _) => cmd(&["DATESEQ.NEXT", &self.name]),
            (Backend::Library, false) => cmd(&["FCALL", "dateseq_next", "1", &self.name]),
            (Backend::Library, true) => {
                cmd(&["FCALL", "dateseq_next", "2", &self.name, &self.witness()])
            }
        }
    }

    fn next(&self, con: &mut dyn redis::ConnectionLike, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| match self.call().query::<Value>(con).unwrap() {
                Value::Int(i) => i as u64,
                other => panic!("{other:?}"),
            })
            .collect()
    }
}

/// What a case must come to.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    NoRepeat,
    /// Refused with this text (the module's, the library's), then repaired and carried on.
    Refused(&'static str, &'static str),
    /// A row of docs/library.md: the library cannot keep this, and says so there.
    Documented(&'static str),
}

/// A way to lose or change a sequence's state: its name, whether it takes every key at once,
/// and what it does to one key (`key`, `field` the library's counter in it, `older` its DUMP
/// from after the first value; `backup:<key>` holds that copy too).
struct Way {
    name: &'static str,
    global: bool,
    lose: fn(&mut dyn redis::ConnectionLike, &str, Option<&str>, &[u8]),
}

fn lower(con: &mut dyn redis::ConnectionLike, key: &str, field: Option<&str>, value: &str) {
    match field {
        None => run(con, &["SET", key, value]),
        Some(field) => run(con, &["HSET", key, field, value]),
    }
}

fn ways() -> Vec<Way> {
    vec![
        Way {
            name: "DEL",
            global: false,
            lose: |con, key, _, _| run(con, &["DEL", key]),
        },
        Way {
            name: "UNLINK",
            global: false,
            lose: |con, key, _, _| run(con, &["UNLINK", key]),
        },
        Way {
            name: "counter lowered to 1",
            global: false,
            lose: |con, key, field, _| lower(con, key, field, "1"),
        },
        Way {
            name: "counter set to 0",
            global: false,
            lose: |con, key, field, _| lower(con, key, field, "0"),
        },
        Way {
            name: "counter removed (HDEL)",
            global: false,
            lose: |con, key, field, _| match field {
                None => run(con, &["DEL", key]),
                Some(field) => run(con, &["HDEL", key, field]),
            },
        },
        Way {
            name: "expired (PEXPIRE 1)",
            global: false,
            lose: |con, key, _, _| {
                run(con, &["PEXPIRE", key, "1"]);
                std::thread::sleep(Duration::from_millis(5));
            },
        },
        Way {
            name: "a TTL put on it (PEXPIRE 60000)",
            global: false,
            lose: |con, key, _, _| run(con, &["PEXPIRE", key, "60000"]),
        },
        Way {
            name: "RENAME away",
            global: false,
            lose: |con, key, _, _| run(con, &["RENAME", key, &format!("moved:{key}")]),
        },
        Way {
            name: "RENAME an older copy in",
            global: false,
            lose: |con, key, _, _| run(con, &["RENAME", &format!("backup:{key}"), key]),
        },
        Way {
            name: "COPY an older copy over",
            global: false,
            lose: |con, key, _, _| copy_over(con, &format!("backup:{key}"), key),
        },
        Way {
            name: "RESTORE an older DUMP",
            global: false,
            lose: |con, key, _, older| restore_older(con, key, older),
        },
        Way {
            name: "garbage (1e5) by hand",
            global: false,
            lose: |con, key, field, _| lower(con, key, field, "1e5"),
        },
        Way {
            name: "another type (a list)",
            global: false,
            lose: |con, key, _, _| {
                run(con, &["DEL", key]);
                run(con, &["RPUSH", key, "1"]);
            },
        },
        Way {
            name: "FLUSHALL",
            global: true,
            lose: |con, _, _, _| run(con, &["FLUSHALL"]),
        },
        Way {
            name: "FLUSHDB",
            global: true,
            lose: |con, _, _, _| run(con, &["FLUSHDB"]),
        },
        Way {
            name: "maxmemory-policy allkeys-lru set under it",
            global: true,
            lose: |con, _, _, _| {
                run(con, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
                // The library reads the policy at most a second after it last did (INFO memory
                // costs more than an ID): a call after that refuses.
                std::thread::sleep(Duration::from_millis(1100));
            },
        },
    ]
}

/// The rows of docs/library.md the library's cases name.
const ROW_NO_MEMORY: &str = "a sequence key lost where no process remembers it";
const ROW_BOTH_LOST: &str = "both keys lost where no process remembers them";

/// What `way` on `target` of a sequence (with a witness key or not) at `place` must come to.
fn expected(backend: Backend, witnessed: bool, target: Target, way: &Way, place: Place) -> Outcome {
    match way.name {
        "garbage (1e5) by hand" => {
            return Outcome::Refused(
                "counter key holds a value that is not a non-negative integer",
                "holds '1e5', not a count",
            )
        }
        "another type (a list)" => return Outcome::Refused("WRONGTYPE", "WRONGTYPE"),
        "maxmemory-policy allkeys-lru set under it" => {
            return Outcome::Refused("maxmemory-policy", "maxmemory-policy is allkeys-lru")
        }
        _ => {}
    }
    if backend == Backend::Module || place == Place::Issuer || target == Target::Witness {
        // The module's witnesses; this process's memory; the sequence's own key intact.
        return Outcome::NoRepeat;
    }
    if witnessed {
        return if way.global {
            Outcome::Documented(ROW_BOTH_LOST)
        } else {
            Outcome::NoRepeat
        };
    }
    // No witness key, and no memory of the sequence here. An older copy of the key, which
    // another process wrote last, is carried on past the gap (it lags by less than the gap);
    // a counter lowered further, or gone, is the row.
    let key_left = matches!(
        way.name,
        "RENAME an older copy in" | "COPY an older copy over" | "RESTORE an older DUMP"
    );
    if key_left && place != Place::Reloaded {
        Outcome::NoRepeat
    } else {
        Outcome::Documented(ROW_NO_MEMORY)
    }
}

/// One run of a place: `cases` (a way, a target, whether the sequence has a witness key)
/// issued on a first node, moved to `place`, lost there, issued again. Returns how many cases
/// ran and how many were documented rows.
fn run_place(backend: Backend, place: Place, cases: &[(&Way, Target, bool)]) -> (usize, usize) {
    let dir = idgen_tests::data_dir("fault-matrix");
    let a = start(backend, Some(&dir));
    let b = second(backend, place, &a);
    if unserved(backend, place, b.as_ref()) {
        return (0, 0);
    }
    let spots: Vec<Spot> = cases
        .iter()
        .enumerate()
        .map(|(i, (_, _, witnessed))| Spot {
            backend,
            name: format!("{{m{i}}}seq"),
            witnessed: *witnessed,
        })
        .collect();
    let mut con = a.connection();
    let mut seen: Vec<Vec<u64>> = Vec::new();
    let mut olders: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    for spot in &spots {
        let mut values = spot.next(&mut con, 1);
        let mut older = Vec::new();
        for key in spot.keys() {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut con).unwrap();
            copy_over(&mut con, &key, &format!("backup:{key}"));
            older.push((key, dump));
        }
        values.extend(spot.next(&mut con, 2));
        seen.push(values);
        olders.push(older);
    }
    drop(con);
    let keys: Vec<String> = spots
        .iter()
        .flat_map(|spot| spot.keys())
        .flat_map(|key| [format!("backup:{key}"), key])
        .collect();
    let holder = move_to(place, backend, a, b, &dir, &keys);
    let mut con = holder.connection();
    let mut documented = 0;
    for (((way, target, witnessed), spot), (values, older)) in
        cases.iter().zip(&spots).zip(seen.iter_mut().zip(&olders))
    {
        let case = format!(
            "{backend:?} / {place:?} / {} / {target:?}{}",
            way.name,
            if *witnessed { " (witness key)" } else { "" }
        );
        let (key, field) = spot.place(*target);
        let dump = &older.iter().find(|(k, _)| *k == key).expect("a DUMP").1;
        (way.lose)(&mut con, &key, field.as_deref(), dump);
        let outcome = expected(backend, *witnessed, *target, way, place);
        if let Outcome::Refused(module, library) = outcome {
            let says = if backend == Backend::Module {
                module
            } else {
                library
            };
            let err = error_of(&mut con, &spot.call());
            assert!(err.contains(says), "{case}: {err}");
            // Repaired: the policy put back, the foreign value deleted.
            run(
                &mut con,
                &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
            );
            if way.name != "maxmemory-policy allkeys-lru set under it" {
                run(&mut con, &["DEL", &key]);
            }
        }
        let after = spot.next(&mut con, 3);
        // A refusal repaired by deleting the key is then a DEL.
        let outcome = match outcome {
            Outcome::Refused(..) if way.name != "maxmemory-policy allkeys-lru set under it" => {
                let del = &ways()[0];
                expected(backend, *witnessed, *target, del, place)
            }
            Outcome::Refused(..) => Outcome::NoRepeat,
            other => other,
        };
        match outcome {
            Outcome::Documented(row) => {
                documented += 1;
                let page =
                    std::fs::read_to_string(workspace_root().join("docs/library.md")).unwrap();
                assert!(
                    page.contains(row),
                    "{case}: docs/library.md has no row '{row}'"
                );
            }
            _ => assert_carried_on(&case, values, after),
        }
        if backend == Backend::Library {
            // Keys it owns, it owns: no expiry left on either after a call (the module's
            // counters expire by design, idgen.dateseq-ttl past their period).
            for key in spot.keys() {
                let ttl: i64 = cmd(&["PTTL", &key]).query(&mut con).unwrap();
                assert_eq!(ttl, -1, "{case}: {key} kept an expiry");
            }
        }
    }
    eprintln!(
        "{backend:?} / {place:?}: {} cases, {documented} documented rows",
        cases.len()
    );
    (cases.len(), documented)
}

/// Every case of this backend at `place`: the ways that act on one key together in one run,
/// each way that takes every key in a run of its own.
fn every_case_at(backend: Backend, place: Place) -> usize {
    if backend == Backend::Module && place == Place::Reloaded {
        return 0;
    }
    let ways = ways();
    let forms: &[bool] = match backend {
        Backend::Module => &[false],
        Backend::Library => &[false, true],
    };
    let mut local = Vec::new();
    let mut global = Vec::new();
    for way in &ways {
        for &witnessed in forms {
            let targets: &[Target] = if witnessed {
                &[Target::Sequence, Target::Witness]
            } else {
                &[Target::Sequence]
            };
            for &target in targets {
                if way.global && target == Target::Witness {
                    continue;
                }
                let case = (way, target, witnessed);
                if way.global {
                    global.push(vec![case]);
                } else {
                    local.push(case);
                }
            }
        }
    }
    let mut ran = run_place(backend, place, &local).0;
    for cases in global {
        ran += run_place(backend, place, &cases).0;
    }
    ran
}

fn every_place(backend: Backend) {
    let mut cases = 0;
    for place in PLACES {
        cases += every_case_at(backend, place);
    }
    eprintln!("{backend:?}: {cases} cases of the fault matrix");
    let least = match backend {
        Backend::Module => 4 * 12,
        Backend::Library => 5 * 40,
    };
    assert!(cases >= least, "{cases} cases");
}

fn date_sequences_lost_every_way_at_every_place(backend: Backend) {
    every_place(backend);
}

both!(date_sequences_lost_every_way_at_every_place);

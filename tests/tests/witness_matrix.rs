//! Every source of IDs against every way its state can be lost, generated: each case issues
//! IDs, loses the state one way, issues again, and asserts one of three outcomes: no value
//! repeated; a refusal that names the state; or the README's Guarantees row that states the
//! assumption this loss breaks (named in the case).
//!
//! The inventory and the witness of each state item are in ARCHITECTURE.md ("State and its
//! witnesses").

use std::collections::HashSet;

use idgen_core::dateseq::{counter_key, Calendar, Period};
use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, now_ms, Options, Server};

/// What a case must come to after its loss.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    /// Issuing again repeats no value.
    NoRepeat,
    /// The next call is refused with an error containing this text; once the state is repaired
    /// (the key deleted), issuing again repeats nothing.
    Refused(&'static str),
}

/// A way to lose a DATESEQ counter `key`, given a copy of it taken earlier (`older`, its DUMP;
/// also `backup:<key>` holds it, and the RDB file was saved then).
struct Way {
    name: &'static str,
    lose: fn(&mut redis::Connection, &str, &[u8]),
    outcome: Outcome,
}

fn run(con: &mut redis::Connection, words: &[&str]) {
    let _: Value = cmd(words)
        .query(con)
        .unwrap_or_else(|e| panic!("{words:?}: {e}"));
}

fn dateseq_ways() -> Vec<Way> {
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
            lose: |con, key, _| run(con, &["COPY", &format!("backup:{key}"), key, "REPLACE"]),
            outcome: NoRepeat,
        },
        Way {
            name: "RESTORE an older DUMP",
            lose: |con, key, older| {
                let _: () = redis::cmd("RESTORE")
                    .arg(key)
                    .arg(0)
                    .arg(older)
                    .arg("REPLACE")
                    .query(con)
                    .unwrap();
            },
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
            lose: |con, key, _| run(con, &["MOVE", key, "1"]),
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

/// The forms a case issues in: one value a call, `COUNT 3` (a range), `STRING`.
const FORMS: [&[&str]; 3] = [&[], &["COUNT", "3"], &["STRING"]];

/// The values a DATESEQ.NEXT reply stands for.
fn values(reply: Value, counted: bool) -> Vec<u64> {
    let number = |v: &Value| -> u64 {
        match v {
            Value::Int(i) => *i as u64,
            Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
            other => panic!("{other:?}"),
        }
    };
    match reply {
        Value::Array(items) if counted => (number(&items[0])..=number(&items[1])).collect(),
        one => vec![number(&one)],
    }
}

fn next(con: &mut redis::Connection, prefix: &str, period: &str, form: &[&str]) -> Vec<u64> {
    let mut words = vec!["DATESEQ.NEXT", prefix, "PERIOD", period];
    words.extend(form);
    let reply: Value = cmd(&words).query(con).unwrap();
    values(reply, form.contains(&"COUNT"))
}

fn counter_name(prefix: &str, period: Period) -> String {
    let date = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), period)
        .date;
    let mut out = Vec::new();
    counter_key(prefix.as_bytes(), date, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn dateseq_counters_lost_every_way_while_running_repeat_nothing() {
    let server = Server::start_with(Options::default().server(&[
        "--enable-debug-command",
        "yes",
        "--databases",
        "4",
    ]));
    let mut con = server.connection();
    let periods = [
        ("day", Period::Day),
        ("month", Period::Month),
        ("year", Period::Year),
    ];
    let mut cases = 0;
    for way in dateseq_ways() {
        for (period_word, period) in periods {
            for form in FORMS {
                cases += 1;
                let case = format!("{} / PERIOD {period_word} / {form:?}", way.name);
                let prefix = format!("w{cases}");
                let key = counter_name(&prefix, period);
                let mut seen: Vec<u64> = next(&mut con, &prefix, period_word, form);
                let older: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut con).unwrap();
                run(
                    &mut con,
                    &["COPY", &key, &format!("backup:{key}"), "REPLACE"],
                );
                run(&mut con, &["SAVE"]);
                for _ in 0..2 {
                    seen.extend(next(&mut con, &prefix, period_word, form));
                }
                let before = server.info_field("dateseq_witness_lowered");
                (way.lose)(&mut con, &key, &older);
                if let Outcome::Refused(says) = way.outcome {
                    let mut words = vec!["DATESEQ.NEXT", &prefix, "PERIOD", period_word];
                    words.extend(form);
                    let err = idgen_tests::error_of(&mut con, &cmd(&words));
                    assert!(err.contains(says), "{case}: {err}");
                    run(&mut con, &["DEL", &key]);
                }
                let highest = *seen.iter().max().unwrap();
                let mut after = Vec::new();
                for _ in 0..3 {
                    after.extend(next(&mut con, &prefix, period_word, form));
                }
                assert!(
                    after.iter().all(|v| *v > highest),
                    "{case}: {after:?} after {seen:?}"
                );
                seen.extend(after);
                let distinct: HashSet<u64> = seen.iter().copied().collect();
                assert_eq!(distinct.len(), seen.len(), "{case}: a value repeated");
                let lowered: u64 = server
                    .info_field("dateseq_witness_lowered")
                    .parse()
                    .unwrap();
                assert!(
                    lowered > before.parse::<u64>().unwrap(),
                    "{case}: the witness did not count the loss"
                );
            }
        }
    }
    assert!(
        server.log().contains("was found at"),
        "the log says a counter was found below its witness"
    );
    eprintln!("{cases} DATESEQ cases: a counter lost while running, every way, every period");
    assert!(cases >= 150);
}

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
    let commands: [(&str, fn(&str, &[i64; 4]) -> Vec<String>); 3] = [
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
            let until = (now_ms() + 1_500).to_string();
            let (w, t) = (grant[0].to_string(), grant[1].to_string());
            let _: Vec<i64> = cmd(&[
                "WORKERID.RENEW",
                &ns,
                &w,
                &t,
                "TTL",
                "2000",
                "UNTIL",
                &until,
            ])
            .query(&mut con)
            .unwrap();
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

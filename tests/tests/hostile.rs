//! The hostile suite: cases generated from tables of bad values, thrown at the module's
//! commands, at lease namespaces (foreign, expiring, evicted, flushed, restored), at the
//! ticket server's options and at the state files of both. Every case checks that nothing
//! crashes, that each refusal is an error that quotes what was given, and that no ID repeats.
//! Each test counts its cases; together they run well over 300.

use std::collections::HashSet;
use std::path::Path;

use idgen_tests::ticket::{run_cli, serve_once};
use idgen_tests::{cmd, data_dir, error_text, now_ms, quotes, Options, Server};

/// Numbers and not-quite-numbers, for every numeric argument. "3" is valid nearly everywhere,
/// so the successful calls are checked for repeats too.
const VALUES: &[&str] = &[
    "3",
    "0",
    "-1",
    "-7",
    "abc",
    "",
    "1e3",
    "0x10",
    "+5",
    " 5",
    "1.5",
    "99999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "\u{ff11}",
];

/// Every ID the successful calls gave, to find a repeat.
#[derive(Default)]
struct Issued {
    snowflakes: HashSet<i64>,
    texts: HashSet<String>,
    /// DATESEQ values as ranges `[first, last]`.
    ranges: Vec<(i64, i64)>,
}

impl Issued {
    fn add(&mut self, command: &str, reply: redis::Value) {
        use redis::Value;
        let ints = |v: &Value| -> Vec<i64> {
            match v {
                Value::Int(n) => vec![*n],
                Value::Array(items) => items
                    .iter()
                    .filter_map(|i| match i {
                        Value::Int(n) => Some(*n),
                        _ => None,
                    })
                    .collect(),
                _ => vec![],
            }
        };
        match command {
            "SNOWFLAKE.NEXT" => {
                for id in ints(&reply) {
                    assert!(self.snowflakes.insert(id), "SNOWFLAKE.NEXT repeated {id}");
                }
            }
            "DATESEQ.NEXT" if !matches!(reply, Value::Int(_)) && ints(&reply).is_empty() => {
                // Sqids: distinct strings.
                let texts: Vec<String> = redis::from_redis_value(reply).unwrap();
                for t in texts {
                    assert!(self.texts.insert(t.clone()), "DATESEQ.NEXT repeated {t}");
                }
            }
            "DATESEQ.NEXT" => {
                let got = ints(&reply);
                let range = (got[0], *got.last().unwrap());
                for (a, b) in &self.ranges {
                    assert!(
                        range.1 < *a || range.0 > *b,
                        "DATESEQ {range:?} meets {a}..{b}"
                    );
                }
                self.ranges.push(range);
            }
            "UUID7.NEXT" | "ULID.NEXT" => {
                let texts: Vec<String> = redis::from_redis_value(match &reply {
                    Value::Array(_) => reply.clone(),
                    _ => Value::Array(vec![reply.clone()]),
                })
                .unwrap();
                for t in texts {
                    assert!(self.texts.insert(t.clone()), "{command} repeated {t}");
                }
            }
            _ => {}
        }
    }
}

#[test]
fn module_arguments_are_refused_with_what_was_given_and_nothing_repeats() {
    let server = Server::start(&["workerid-horizon-ms", "60000"]);
    let mut con = server.connection();
    let templates: &[&[&str]] = &[
        &["SNOWFLAKE.NEXT", "COUNT", "{}"],
        &["SNOWFLAKE.NEXT", "COUNT", "{}", "SQIDS"],
        &["SNOWFLAKE.NEXT", "COUNT", "{}", "STRING"],
        &["SNOWFLAKE.DECODE", "{}"],
        &["SNOWFLAKE.FROMTIME", "{}"],
        &["UUID7.FROMTIME", "{}", "MAX"],
        &["ULID.FROMTIME", "{}"],
        &["DATESEQ.NEXT", "hostile", "DIGITS", "{}"],
        &["DATESEQ.NEXT", "hostile", "COUNT", "{}"],
        &[
            "DATESEQ.NEXT",
            "hostile",
            "DIGITS",
            "9",
            "COUNT",
            "{}",
            "SQIDS",
        ],
        &["DATESEQ.CURRENT", "hostile", "DIGITS", "{}"],
        &["DATESEQ.NEXT", "hostile", "PERIOD", "{}"],
        &["UUID7.NEXT", "COUNT", "{}"],
        &["ULID.NEXT", "COUNT", "{}"],
        &["IDGEN.ENCODE", "{}"],
        &["IDGEN.ENCODE", "1", "{}"],
        &["WORKERID.ACQUIRE", "{ns}", "TTL", "{}"],
        &["WORKERID.ACQUIRE", "{ns}", "TTL", "1000", "MAX", "{}"],
        &["WORKERID.RENEW", "{ns}", "{}", "{token}", "TTL", "1000"],
        &["WORKERID.RENEW", "{ns}", "0", "{}", "TTL", "1000"],
        &["WORKERID.RENEW", "{ns}", "0", "{token}", "TTL", "{}"],
        &[
            "WORKERID.RENEW",
            "{ns}",
            "0",
            "{token}",
            "TTL",
            "1000",
            "UNTIL",
            "{}",
        ],
        &["WORKERID.RELEASE", "{ns}", "0", "{}"],
        &["WORKERID.RELEASE", "{ns}", "0", "{token}", "UNTIL", "{}"],
    ];
    let mut issued = Issued::default();
    let (mut cases, mut refused) = (0, 0);
    for (t, template) in templates.iter().enumerate() {
        for (v, value) in VALUES.iter().enumerate() {
            // Lease commands act on a lease of their own: worker 0 of a fresh namespace.
            let ns = format!("hostile-{t}-{v}");
            let grant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "1000", "MAX", "4"])
                .query(&mut con)
                .unwrap();
            let token = grant[1].to_string();
            let words: Vec<&str> = template
                .iter()
                .map(|w| match *w {
                    "{}" => *value,
                    "{ns}" => ns.as_str(),
                    "{token}" => token.as_str(),
                    w => w,
                })
                .collect();
            cases += 1;
            match cmd(&words).query::<redis::Value>(&mut con) {
                // The IDs of a time are the same for the same time: not issued, not counted.
                Ok(_) if words[0].ends_with(".FROMTIME") => {}
                Ok(reply) => issued.add(words[0], reply),
                Err(e) => {
                    refused += 1;
                    let err = error_text(&e);
                    assert!(
                        err.starts_with("ERR ") && quotes(&err, value),
                        "{words:?}: the refusal does not quote {value:?}: {err}"
                    );
                }
            }
        }
    }
    // Decoders: strings their specifications call invalid.
    let decoders: &[(&str, &[&str])] = &[
        (
            "UUID7.DECODE",
            &[
                "",
                "x",
                "01a209df488971b1a99e19803b3ccc77",
                "{01a209df-4889-71b1-a99e-19803b3ccc77}",
                "urn:uuid:01a209df-4889-71b1-a99e-19803b3ccc77",
                "01a209df-4889-41b1-a99e-19803b3ccc77",
                "01a209df-4889-71b1-c99e-19803b3ccc77",
                "01a209df-4889-71b1-a99e-19803b3ccc7g",
                "01a209df-4889-71b1-a99e-19803b3ccc777",
            ],
        ),
        (
            "ULID.DECODE",
            &[
                "",
                "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
                "ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
                "01M84XYJ4K2RFPQ8AGH8TH5EXU",
                "01M84XYJ4K2RFPQ8AGH8TH5EX",
                "01M84XYJ4K2RFPQ8AGH8TH5EXXX",
                "01M84XYJ4K2RFPQ8AGH8TH5EX!",
            ],
        ),
        (
            "IDGEN.DECODE",
            &["", "!!", "0", "8gs2LwgtVfA5x", "\u{e9}\u{e9}"],
        ),
    ];
    for (command, inputs) in decoders {
        for input in *inputs {
            cases += 1;
            refused += 1;
            let err = error_text(
                &cmd(&[command, input])
                    .query::<redis::Value>(&mut con)
                    .unwrap_err(),
            );
            assert!(
                err.starts_with("ERR ") && quotes(&err, input),
                "{command} {input:?}: {err}"
            );
        }
    }
    // Below zero where only zero and above mean anything: refused, not taken as the least.
    let grant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "negative", "TTL", "1000"])
        .query(&mut con)
        .unwrap();
    let (worker, token) = (grant[0].to_string(), grant[1].to_string());
    for words in [
        &[
            "WORKERID.RENEW",
            "negative",
            &worker,
            &token,
            "TTL",
            "1000",
            "UNTIL",
            "-1",
        ][..],
        &[
            "WORKERID.RELEASE",
            "negative",
            &worker,
            &token,
            "UNTIL",
            "-1",
        ],
    ] {
        cases += 1;
        refused += 1;
        let err = error_text(&cmd(words).query::<redis::Value>(&mut con).unwrap_err());
        assert!(
            err.starts_with("ERR UNTIL -1 must be between 0 and"),
            "{words:?}: {err}"
        );
    }
    let _: String = cmd(&["PING"]).query(&mut con).unwrap();
    eprintln!(
        "{cases} cases of module arguments, {refused} refused, {} Snowflake IDs and {} DATESEQ \
         ranges issued, none twice",
        issued.snowflakes.len(),
        issued.ranges.len()
    );
    assert!(cases >= 300 && issued.snowflakes.len() >= 3 && issued.ranges.len() >= 2);
}

/// Hash contents idgen never writes, each with the field the refusal must name.
const FOREIGN: &[(&[(&str, &str)], &str)] = &[
    (&[("x", "1")], "\"x\""),
    (&[("max", "0"), ("token", "9")], "\"max\""),
    (&[("max", "-7")], "\"max\""),
    (&[("max", "65537")], "\"max\""),
    (&[("max", "4"), ("token", "-1")], "\"token\""),
    (&[("max", "4"), ("token", "nine")], "\"token\""),
    (&[("max", "4"), ("token", "5"), ("2", "6 1 1 1")], "\"2\""),
    (&[("max", "4"), ("token", "9"), ("4", "1 1 1 1")], "\"4\""),
    (&[("max", "4"), ("token", "9"), ("2", "1 -5 1 1")], "\"2\""),
    (&[("max", "4"), ("token", "9"), ("2", "1 5 1 2")], "\"2\""),
    (&[("max", "4"), ("token", "9"), ("2", "1 2 3")], "\"2\""),
    (&[("max", "4"), ("token", "9"), ("+2", "1 1 1 1")], "\"+2\""),
    (&[("max", "4"), ("token", "9"), ("02", "1 1 1 1")], "\"02\""),
    (&[("token", "9"), ("2", "1 1 1 1")], "\"max\""),
    (&[("max", "4"), ("void_below", "x")], "\"void_below\""),
    (&[("max", "4"), ("grant_above", "-1")], "\"grant_above\""),
];

#[test]
fn foreign_namespaces_are_refused_and_never_overwritten() {
    let server = Server::start(&["workerid-horizon-ms", "60000"]);
    let mut con = server.connection();
    let mut cases = 0;
    for (n, (fields, names)) in FOREIGN.iter().enumerate() {
        let ns = format!("foreign-{n}");
        let mut hset = vec!["HSET", ns.as_str()];
        for (f, v) in *fields {
            hset.extend([*f, *v]);
        }
        let _: i64 = cmd(&hset).query(&mut con).unwrap();
        let before: Vec<String> = cmd(&["HGETALL", &ns]).query(&mut con).unwrap();
        for words in [
            vec!["WORKERID.ACQUIRE", &ns, "TTL", "1000", "MAX", "4"],
            vec!["WORKERID.RENEW", &ns, "0", "9", "TTL", "1000"],
            vec!["WORKERID.RELEASE", &ns, "0", "9"],
            vec!["WORKERID.LIST", &ns],
        ] {
            cases += 1;
            let err = error_text(&cmd(&words).query::<redis::Value>(&mut con).unwrap_err());
            assert!(
                err.starts_with("ERR the namespace holds data idgen did not write")
                    && err.contains(names),
                "{words:?} on {fields:?}: {err}"
            );
            let after: Vec<String> = cmd(&["HGETALL", &ns]).query(&mut con).unwrap();
            assert_eq!(before, after, "{words:?} changed {fields:?}");
        }
    }
    eprintln!("{cases} cases of foreign namespaces, all refused, none changed");
    assert!(cases >= 60);
}

#[test]
fn namespaces_lost_every_way_never_let_two_holders_share_a_worker_id() {
    const HORIZON_MS: i64 = 2_000;
    let server = Server::start(&["workerid-horizon-ms", &HORIZON_MS.to_string()]);
    server.wait_past_lease_fence();
    let mut con = server.connection();
    let losses: &[&str] = &[
        "DEL", "UNLINK", "FLUSHALL", "FLUSHDB", "PEXPIRE", "RESTORE", "RENAME",
    ];
    let mut cases = 0;
    for (l, loss) in losses.iter().enumerate() {
        for max in [1, 2, 5] {
            for renewed in [false, true] {
                cases += 1;
                let ns = format!("lost-{l}-{max}-{renewed}");
                let max_s = max.to_string();
                let acquire = || cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "2000", "MAX", &max_s]);
                let first: Vec<i64> = acquire().query(&mut con).unwrap();
                let dump: Vec<u8> = cmd(&["DUMP", &ns]).query(&mut con).unwrap();
                let mut held = vec![first];
                while held.len() < max {
                    held.push(acquire().query(&mut con).unwrap());
                }
                if renewed {
                    for h in &held {
                        idgen_tests::lease::renew(&mut con, &ns, h).unwrap();
                    }
                }
                let lost_at = now_ms();
                let _: redis::Value = match *loss {
                    "PEXPIRE" => {
                        let _: i64 = cmd(&["PEXPIRE", &ns, "1"]).query(&mut con).unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        cmd(&["EXISTS", &ns]).query(&mut con).unwrap()
                    }
                    "RESTORE" => redis::cmd("RESTORE")
                        .arg(&ns)
                        .arg(0)
                        .arg(&dump)
                        .arg("REPLACE")
                        .query(&mut con)
                        .unwrap(),
                    "RENAME" => cmd(&["RENAME", &ns, &format!("{ns}-moved")])
                        .query(&mut con)
                        .unwrap(),
                    "FLUSHALL" | "FLUSHDB" => cmd(&[loss]).query(&mut con).unwrap(),
                    other => cmd(&[other, &ns]).query(&mut con).unwrap(),
                };
                // Every old holder's next RENEW fails: it stops issuing. (A restored copy that
                // nothing changed since is no loss: its one holder carries on.)
                let unchanged = *loss == "RESTORE" && held.len() == 1 && !renewed;
                for h in &held {
                    let (w, t) = (h[0].to_string(), h[1].to_string());
                    let renew = cmd(&["WORKERID.RENEW", &ns, &w, &t, "TTL", "2000"])
                        .query::<redis::Value>(&mut con);
                    match renew {
                        Ok(_) if unchanged => {}
                        Err(e) if !unchanged => {
                            assert!(error_text(&e).contains("is void"), "{loss}: {e:?}")
                        }
                        other => panic!("{loss}, MAX {max}, renewed {renewed}: {other:?}"),
                    }
                }
                if unchanged {
                    continue;
                }
                // A new grant (if any ID is free) takes a new token and starts above the old
                // holders' horizon.
                let newest = held.iter().map(|h| h[1]).max().unwrap();
                match acquire().query::<Vec<i64>>(&mut con) {
                    Ok(g) => {
                        assert!(g[1] > newest, "{loss}: token {} repeats", g[1]);
                        assert!(
                            g[3] >= lost_at + HORIZON_MS,
                            "{loss}: starts above {}",
                            g[3]
                        );
                    }
                    Err(e) => assert!(error_text(&e).contains("are leased"), "{loss}: {e:?}"),
                }
                let ttl: i64 = cmd(&["PTTL", &ns]).query(&mut con).unwrap();
                assert_eq!(ttl, -1, "{loss}: an expiry kept");
            }
        }
    }
    eprintln!("{cases} cases of lost namespaces: every old lease void, no token repeated");
    assert!(cases >= 40);
}

#[test]
fn state_files_idgen_never_wrote_are_refused_naming_the_file_and_field() {
    let bad = [
        "-1",
        "x",
        "",
        "18446744073709551616",
        "9223372036854775808",
        "1.5",
    ];
    let mut cases = 0;
    for (file, header, fields) in [
        ("STORE", "ticket-store v1", ["offset", "increment", "floor"]),
        (
            "default.seq",
            "ticket-sequence v1",
            ["offset", "increment", "bound"],
        ),
    ] {
        for field in fields {
            for value in bad {
                let dir = data_dir("hostile-state");
                let line = |f: &str, v: &str| format!("{f}={}", if f == field { value } else { v });
                let text = format!(
                    "{header} {} {} {}\n",
                    line("offset", "1"),
                    line("increment", "2"),
                    line(fields[2], "7")
                );
                if file == "default.seq" {
                    // A sound marker, so the sequence file is what is read wrong.
                    let marker = "ticket-store v1 offset=1 increment=2 floor=0\n";
                    std::fs::write(dir.join("STORE"), marker).unwrap();
                }
                std::fs::write(dir.join(file), &text).unwrap();
                for command in ["highest", "serve"] {
                    cases += 1;
                    let (ok, err) = ticket_on(command, &dir);
                    assert!(
                        !ok && err.contains(&dir.join(file).display().to_string())
                            && err.contains(&format!("{field}={value}")),
                        "{command} on {text:?}: {err}"
                    );
                }
            }
        }
    }
    // The module's state file.
    let dir = data_dir("hostile-module-state");
    let file = dir.join("idgen-snowflake.state");
    for text in [
        "-1 layout=twitter epoch=1288834974657",
        "x layout=twitter epoch=1288834974657",
        "1.5",
        "9223372036854775807 layout=twitter epoch=1288834974657",
        "1795000000000 layout=twitter epoch=-1",
        "1795000000000 layout=twitter epoch=x",
        "1795000000000 layout=time:80 epoch=1288834974657",
        "1795000000000 epoch=1288834974657",
    ] {
        cases += 1;
        std::fs::write(&file, format!("{text}\n")).unwrap();
        let log = Server::try_start(Options {
            dir: Some(dir.to_path_buf()),
            ..Options::default()
        })
        .err()
        .unwrap_or_else(|| panic!("{text:?} was accepted"));
        assert!(
            log.contains(&file.display().to_string()) && log.contains("module not loaded"),
            "{text:?}: {log}"
        );
    }
    eprintln!("{cases} cases of state files, all refused");
    assert!(cases >= 60);
}

/// `ticket-server highest` or `serve` on `dir`: (success, stderr).
fn ticket_on(command: &str, dir: &Path) -> (bool, String) {
    match command {
        "highest" => {
            let (ok, _, err) = run_cli(&["highest", "--data-dir", &dir.display().to_string()]);
            (ok, err)
        }
        _ => serve_once("1", "2", dir, &[]),
    }
}

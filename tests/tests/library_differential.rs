//! The module and the Functions library given the same inputs, generated from each command's
//! grammar (every integer argument through the values that sit on or past its edges, every
//! option missing its value, given twice, unknown, or in another case, every arity): the same
//! error, word for word, or both a success of the same shape; worker IDs granted alike; Snowflake
//! IDs that decode to the same fields; date sequences under the same period label.
//!
//! What differs by design is stated where it is skipped: the library's fences and gaps (its
//! values and times differ, never its grammar).

use idgen_core::layout::{Layout, TWITTER_EPOCH_MS};
use idgen_tests::backend::Backend;
use idgen_tests::{cmd, error_text, now_ms, Options, Server};
use redis::Value;

/// Integers on and past every edge the commands have, and text that is not one.
const INTEGERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "7",
    "99",
    "100",
    "1000",
    "30000",
    "30001",
    "65536",
    "65537",
    "100000",
    "100001",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "007",
    "-0",
    "+5",
    "1.5",
    "1e3",
    " 5",
    "",
    "abc",
    "0x10",
];

/// One reply, reduced to what both must agree on: the error text, or the shape of a success.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Error(String),
    Ok(String),
}

fn shape(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(_) | Value::BulkString(_) => "value".into(),
        Value::Okay | Value::SimpleString(_) => "status".into(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(shape).collect();
            format!("[{}]", inner.join(","))
        }
        other => format!("{other:?}"),
    }
}

fn outcome(con: &mut dyn redis::ConnectionLike, call: &redis::Cmd) -> (Outcome, Option<Value>) {
    match call.query::<Value>(con) {
        Ok(v) => (Outcome::Ok(shape(&v)), Some(v)),
        Err(e) => (Outcome::Error(error_text(&e)), None),
    }
}

/// A module server and a library server side by side, each with a connection.
struct Pair {
    _servers: [Server; 2],
    cons: [idgen_tests::Connection; 2],
    mismatches: Vec<String>,
    compared: usize,
    /// Text each side may show differently (its own token): module's, library's, and what
    /// both become before they are compared.
    aliases: Vec<[String; 3]>,
}

impl Pair {
    fn start(module_args: &[&str]) -> Pair {
        let servers = Backend::BOTH.map(|b| {
            b.start(
                30_000,
                Options {
                    module_args: module_args.iter().map(|s| s.to_string()).collect(),
                    ..Options::default()
                },
            )
        });
        let cons = [servers[0].connection(), servers[1].connection()];
        Pair {
            _servers: servers,
            cons,
            mismatches: Vec::new(),
            compared: 0,
            aliases: Vec::new(),
        }
    }

    /// Runs the module's `words` on the module and the library's `call` on the library;
    /// records a mismatch. Both replies.
    fn compare(&mut self, words: &[String], library: redis::Cmd) -> [Option<Value>; 2] {
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let (mut a, va) = outcome(&mut self.cons[0], &cmd(&refs));
        let (mut b, vb) = outcome(&mut self.cons[1], &library);
        self.compared += 1;
        for [module, library, both] in &self.aliases {
            for (side, text) in [(&mut a, module), (&mut b, library)] {
                if let Outcome::Error(e) = side {
                    *e = e.replace(text.as_str(), both);
                }
            }
        }
        // Arity errors name the command (each server spells it its own way), or the function.
        for side in [&mut a, &mut b] {
            if let Outcome::Error(text) = side {
                if text.starts_with("ERR wrong number of arguments for ") {
                    *text = "ERR wrong number of arguments for ...".into();
                }
                // Each server's clock at its call: the two calls may fall in different ms.
                let clock = "past the coordinator's clock ";
                if let Some(at) = text.find(clock) {
                    text.truncate(at + clock.len());
                }
            }
        }
        // By design: a new process's first use of a date sequence skips the failover gap,
        // which fewer than 5 digits cannot hold (docs/library.md).
        let gap = "(a server process skips 10000 values on its first use of a key";
        if matches!((&a, &b), (Outcome::Ok(_), Outcome::Error(e)) if e.contains(gap)) {
            return [va, vb];
        }
        // Both fence a new process's first IDs at the clock plus the drift limit, and say so,
        // each in its words.
        let fenced = |o: &Outcome, says: &str| matches!(o, Outcome::Error(e) if e.contains(says));
        if fenced(&a, "IDs start above") && fenced(&b, "the fence this process set") {
            return [va, vb];
        }
        if a != b {
            self.mismatches
                .push(format!("{words:?}\n  module:  {a:?}\n  library: {b:?}"));
        }
        [va, vb]
    }

    /// A lease command, the same on both.
    fn lease(&mut self, words: &[String]) -> [Option<Value>; 2] {
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let library = Backend::Library.cmd(&refs);
        self.compare(words, library)
    }

    fn finish(self, what: &str, at_least: usize) {
        assert!(
            self.mismatches.is_empty(),
            "{} of {} {what} inputs differ:\n{}",
            self.mismatches.len(),
            self.compared,
            self.mismatches.join("\n")
        );
        assert!(
            self.compared >= at_least,
            "only {} inputs compared",
            self.compared
        );
    }
}

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Every input of the lease commands a grammar makes: each integer slot through
/// [`INTEGERS`], each option's structure broken each way, each arity.
fn lease_inputs(ns: &str, worker: &str, token: &str) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for v in INTEGERS {
        all.push(words(&["WORKERID.ACQUIRE", ns, "TTL", v]));
        all.push(words(&["WORKERID.ACQUIRE", ns, "TTL", "1000", "MAX", v]));
        all.push(words(&["WORKERID.ACQUIRE", ns, "MAX", v, "TTL", "1000"]));
        all.push(words(&["WORKERID.RENEW", ns, v, token, "TTL", "1000"]));
        all.push(words(&["WORKERID.RENEW", ns, worker, v, "TTL", "1000"]));
        all.push(words(&["WORKERID.RENEW", ns, worker, token, "TTL", v]));
        all.push(words(&[
            "WORKERID.RENEW",
            ns,
            worker,
            token,
            "TTL",
            "1000",
            "UNTIL",
            v,
        ]));
        all.push(words(&["WORKERID.RELEASE", ns, v, token]));
        all.push(words(&["WORKERID.RELEASE", ns, worker, v]));
        all.push(words(&["WORKERID.RELEASE", ns, worker, token, "UNTIL", v]));
    }
    let structure: &[&[&str]] = &[
        &["WORKERID.ACQUIRE", ns],
        &["WORKERID.ACQUIRE", ns, "TTL"],
        &["WORKERID.ACQUIRE", ns, "MAX", "8"],
        &["WORKERID.ACQUIRE", ns, "ttl", "1000", "max", "8"],
        &["WORKERID.ACQUIRE", ns, "TTL", "1000", "TTL", "1000"],
        &["WORKERID.ACQUIRE", ns, "TTL", "1000", "MAX"],
        &["WORKERID.ACQUIRE", ns, "TTL", "1000", "BOGUS", "1"],
        &["WORKERID.ACQUIRE", ns, "TTL", "1000", "MAX", "8", "X"],
        &["WORKERID.ACQUIRE", ns, "TTL", "1000", "MAX", "8", "X", "Y"],
        &["WORKERID.RENEW", ns, worker, token],
        &["WORKERID.RENEW", ns, worker, token, "TTL"],
        &["WORKERID.RENEW", ns, worker, token, "UNTIL", "5"],
        &[
            "WORKERID.RENEW",
            ns,
            worker,
            token,
            "TTL",
            "1000",
            "TTL",
            "1000",
        ],
        &["WORKERID.RENEW", ns, worker, token, "TTL", "1000", "UNTIL"],
        &[
            "WORKERID.RENEW",
            ns,
            worker,
            token,
            "TTL",
            "1000",
            "NOPE",
            "1",
        ],
        &["WORKERID.RELEASE", ns, worker],
        &["WORKERID.RELEASE", ns, worker, token, "UNTIL"],
        &["WORKERID.RELEASE", ns, worker, token, "NOPE", "1"],
        &[
            "WORKERID.RELEASE",
            ns,
            worker,
            token,
            "UNTIL",
            "1",
            "UNTIL",
            "2",
        ],
        &["WORKERID.LIST", ns, "extra"],
    ];
    all.extend(structure.iter().map(|w| words(w)));
    all
}

#[test]
fn lease_commands_answer_alike_on_every_generated_input() {
    let mut pair = Pair::start(&[]);
    // Each input on a namespace of its own holding a lease, the same on both; the held
    // lease's token stands in as {token} (each server's own).
    let inputs = lease_inputs("fleet", "0", "{token}");
    for (n, input) in inputs.iter().enumerate() {
        let ns = format!("ns{n}");
        let grant = pair.lease(&words(&[
            "WORKERID.ACQUIRE",
            &ns,
            "TTL",
            "30000",
            "MAX",
            "8",
        ]));
        let tokens: Vec<i64> = grant
            .iter()
            .map(|g| redis::from_redis_value::<Vec<i64>>(g.clone().expect("a grant")).unwrap()[1])
            .collect();
        let side = |token: i64| -> Vec<String> {
            input
                .iter()
                .map(|w| {
                    w.replace("fleet", &ns)
                        .replace("{token}", &token.to_string())
                })
                .collect()
        };
        let (module, library) = (side(tokens[0]), side(tokens[1]));
        let refs: Vec<&str> = library.iter().map(String::as_str).collect();
        pair.aliases = vec![[
            tokens[0].to_string(),
            tokens[1].to_string(),
            "{token}".into(),
        ]];
        pair.compare(&module, Backend::Library.cmd(&refs));
        pair.aliases.clear();
    }
    // A namespace that does not exist, a key of another type, and foreign data.
    for con in pair.cons.iter_mut() {
        let _: () = cmd(&["SET", "plain", "1"]).query(con).unwrap();
        let _: () = cmd(&["HSET", "junk", "7", "not a lease"])
            .query(con)
            .unwrap();
        let _: () = cmd(&["HSET", "nomax", "0", "1 2 3 3", "token", "1"])
            .query(con)
            .unwrap();
    }
    for ns in ["never", "plain", "junk", "nomax"] {
        for input in [
            words(&["WORKERID.ACQUIRE", ns, "TTL", "1000"]),
            words(&["WORKERID.RENEW", ns, "0", "1", "TTL", "1000"]),
            words(&["WORKERID.RELEASE", ns, "0", "1"]),
            words(&["WORKERID.LIST", ns]),
        ] {
            pair.lease(&input);
        }
    }
    pair.finish("lease", 600);
}

#[test]
fn a_lease_protocol_walk_grants_the_same_ids_on_both() {
    let mut pair = Pair::start(&[]);
    let mut tokens: [Vec<i64>; 2] = [Vec::new(), Vec::new()];
    // Fill a pool of 4, release two out of order, take them back, let one lapse.
    for _ in 0..5 {
        let replies = pair.lease(&words(&[
            "WORKERID.ACQUIRE",
            "walk",
            "TTL",
            "1000",
            "MAX",
            "4",
        ]));
        for (side, reply) in replies.iter().enumerate() {
            if let Some(v) = reply {
                let g: Vec<i64> = redis::from_redis_value(v.clone()).unwrap();
                assert_eq!(g[0] as usize, tokens[side].len(), "lowest free ID first");
                tokens[side].push(g[1]);
            }
        }
    }
    for worker in [2usize, 0] {
        let release = |side: usize| {
            words(&[
                "WORKERID.RELEASE",
                "walk",
                &worker.to_string(),
                &tokens[side][worker].to_string(),
            ])
        };
        let (module, library) = (release(0), release(1));
        let refs: Vec<&str> = library.iter().map(String::as_str).collect();
        pair.compare(&module, Backend::Library.cmd(&refs));
    }
    let again = pair.lease(&words(&[
        "WORKERID.ACQUIRE",
        "walk",
        "TTL",
        "1000",
        "MAX",
        "4",
    ]));
    let ids: Vec<i64> = again
        .iter()
        .map(|v| redis::from_redis_value::<Vec<i64>>(v.clone().unwrap()).unwrap()[0])
        .collect();
    assert_eq!(ids, [0, 0], "the lowest released ID comes back first");
    let lists = pair.lease(&words(&["WORKERID.LIST", "walk"]));
    let live: Vec<Vec<i64>> = lists
        .iter()
        .map(|v| {
            let rows: Vec<Vec<i64>> = redis::from_redis_value(v.clone().unwrap()).unwrap();
            rows.iter().map(|r| r[0]).collect()
        })
        .collect();
    assert_eq!(live[0], live[1]);
    assert_eq!(live[0], [0, 1, 3]);
    pair.finish("protocol", 8);
}

#[test]
fn snowflake_ids_decode_to_the_same_fields_and_bad_counts_are_refused_alike() {
    let mut pair = Pair::start(&["datacenter-id", "17", "worker-id", "29"]);
    let _: () = cmd(&["HSET", "sf", "datacenter", "17", "worker", "29"])
        .query(&mut pair.cons[1])
        .unwrap();
    let layout = Layout::twitter();
    for count in INTEGERS {
        let module = words(&["SNOWFLAKE.NEXT", "COUNT", count]);
        let library = cmd(&["FCALL", "snowflake_next", "1", "sf", "COUNT", count]);
        let replies = pair.compare(&module, library);
        if let [Some(a), Some(b)] = replies {
            let a: Vec<u64> = redis::from_redis_value(a).unwrap();
            let b: Vec<u64> = redis::from_redis_value(b).unwrap();
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                let (dx, dy) = (layout.decode(*x), layout.decode(*y));
                assert_eq!((dx.datacenter, dx.worker), (17, 29), "{dx:?}");
                assert_eq!((dy.datacenter, dy.worker), (17, 29), "{dy:?}");
                let (tx, ty) = (dx.ticks as i64, dy.ticks as i64);
                assert!((tx - ty).abs() < 5_000, "{dx:?} {dy:?}");
                assert!(ty + TWITTER_EPOCH_MS > now_ms() - 60_000, "{dy:?}");
            }
        }
    }
    for extra in [
        &["COUNT"][..],
        &["COUNT", "1", "COUNT", "1"],
        &["BOGUS"],
        &["count", "2"],
        &["SQIDS"],
        &["sqids", "COUNT", "3"],
        &["COUNT", "1000", "SQIDS"],
        &["COUNT", "1001", "SQIDS"],
        &["SQIDS", "SQIDS"],
        &["SQIDS", "x"],
    ] {
        let mut module = words(&["SNOWFLAKE.NEXT"]);
        module.extend(words(extra));
        let mut library = cmd(&["FCALL", "snowflake_next", "1", "sf"]);
        library.arg(extra);
        pair.compare(&module, library);
    }
    pair.finish("snowflake", 30);
}

#[test]
fn date_sequences_share_their_grammar_and_their_period_labels() {
    let mut pair = Pair::start(&[]);
    let mut inputs: Vec<Vec<String>> = Vec::new();
    for v in INTEGERS {
        inputs.push(words(&["DIGITS", v]));
        inputs.push(words(&["COUNT", v]));
        inputs.push(words(&["DIGITS", "10", "COUNT", v]));
    }
    for period in ["day", "MONTH", "Year", "week", "", "days"] {
        inputs.push(words(&["PERIOD", period]));
        inputs.push(words(&["PERIOD", period, "STRING"]));
        inputs.push(words(&["PERIOD", period, "SQIDS"]));
    }
    for sqids in [
        &["SQIDS"][..],
        &["STRING", "SQIDS"],
        &["SQIDS", "STRING"],
        &["sqids", "COUNT", "3"],
        &["COUNT", "1000", "SQIDS"],
        &["COUNT", "1001", "SQIDS"],
        &["DIGITS", "10", "SQIDS"],
        &["SQIDS", "SQIDS"],
    ] {
        inputs.push(words(sqids));
    }
    for structure in [
        &["DIGITS"][..],
        &["COUNT"],
        &["PERIOD"],
        &["STRING", "STRING"],
        &["digits", "8", "DIGITS", "8"],
        &["BOGUS"],
        &["string"],
    ] {
        inputs.push(words(structure));
    }
    for (n, options) in inputs.iter().enumerate() {
        // A key of its own each, so that one input's values do not spend another's.
        let key = format!("seq{n}");
        let mut module = words(&["DATESEQ.NEXT", &key]);
        module.extend(options.iter().cloned());
        let mut library = cmd(&["FCALL", "dateseq_next", "1", &key]);
        library.arg(options);
        let replies = pair.compare(&module, library);
        let sqids = options.iter().any(|w| w.eq_ignore_ascii_case("SQIDS"));
        if let ([Some(a), Some(b)], false) = (replies, sqids) {
            // The library's first value of a key is above its gap: the labels agree.
            let digits: u32 = options
                .iter()
                .position(|w| w.eq_ignore_ascii_case("DIGITS"))
                .map_or(6, |i| options[i + 1].parse().unwrap());
            let label = |v: &Value| {
                let first = match v {
                    Value::Array(items) => items[0].clone(),
                    v => v.clone(),
                };
                let text: String = redis::from_redis_value(first).unwrap();
                text[..text.len() - digits as usize].to_string()
            };
            assert_eq!(label(&a), label(&b), "{options:?}");
        }
    }
    // The current value, read-only, takes no COUNT.
    for options in [
        &["COUNT", "1"][..],
        &["DIGITS", "0"],
        &["PERIOD", "week"],
        &["SQIDS"],
        &["SQIDS", "STRING"],
    ] {
        let mut module = words(&["DATESEQ.CURRENT", "seq0"]);
        module.extend(words(options));
        let mut library = cmd(&["FCALL_RO", "dateseq_current", "1", "seq0"]);
        library.arg(options);
        pair.compare(&module, library);
    }
    pair.finish("date sequence", 90);
}

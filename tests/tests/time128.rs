//! UUID7.NEXT and ULID.NEXT on a real redis-server: a million of each from many connections,
//! all distinct and increasing per connection; read by the `uuid` and `ulid` crates and by
//! Python's uuid module; through clock steps; refused on replicas; never propagated.

use std::collections::HashSet;

use idgen_tests::clock::ClockShift;
use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, data_dir, error_of, now_ms, Options, Server};

/// Reads an ID's text back into its number, checking it is canonical.
type Parse = fn(&str) -> u128;

/// The two commands, and how to read their text back into a number with the reference crates.
const FORMS: [(&str, Parse); 2] = [
    ("UUID7.NEXT", |s| {
        let u = uuid::Uuid::parse_str(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(u.get_version_num(), 7, "{s}");
        assert_eq!(u.get_variant(), uuid::Variant::RFC4122, "{s}");
        assert_eq!(u.hyphenated().to_string(), s, "{s}: not canonical");
        u.as_u128()
    }),
    ("ULID.NEXT", |s| {
        let u = ulid::Ulid::from_string(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(s.len(), 26, "{s}");
        assert_eq!(u.to_string(), s, "{s}: not canonical");
        u.0
    }),
];

/// Sends `n` calls of `command` in one pipeline and returns the replies' texts.
fn pipelined(con: &mut dyn redis::ConnectionLike, command: &str, n: usize) -> Vec<String> {
    let mut pipe = redis::pipe();
    for _ in 0..n {
        pipe.cmd(command);
    }
    pipe.query(con).unwrap()
}

#[test]
fn a_million_of_each_are_distinct_and_increase_on_every_connection() {
    let server = Server::start(&[]);
    for (command, parse) in FORMS {
        let before = now_ms() as u128;
        let mut all: Vec<u128> = Vec::with_capacity(1_000_000);
        let mut con = server.connection();
        for _ in 0..5 {
            let batch: Vec<String> = cmd(&[command, "COUNT", "100000"]).query(&mut con).unwrap();
            let ids: Vec<u128> = batch.iter().map(|s| parse(s)).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{command}: a batch");
            assert!(all.last().is_none_or(|&last| ids[0] > last), "{command}");
            all.extend(ids);
        }
        // The rest one at a time, pipelined, from eight connections at once.
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let mut con = server.connection();
                std::thread::spawn(move || {
                    let mut mine: Vec<u128> = Vec::new();
                    for _ in 0..25 {
                        mine.extend(pipelined(&mut con, command, 2_500).iter().map(|s| parse(s)));
                    }
                    mine
                })
            })
            .collect();
        let batches_end = *all.last().unwrap();
        for thread in threads {
            let mine = thread.join().unwrap();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "{command}: one connection's IDs go backwards"
            );
            assert!(
                mine[0] > batches_end,
                "{command}: a later call gave a smaller ID"
            );
            all.extend(mine);
        }
        let after = now_ms() as u128;
        assert_eq!(all.len(), 1_000_000);
        let distinct: HashSet<u128> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "{command}: repeated IDs");
        for &id in [all[0], all[999_999]].iter() {
            let ms = id >> 80;
            assert!(
                (before..=after + 1_000).contains(&ms),
                "{command}: time {ms}"
            );
        }
    }
    let info: String = cmd(&["INFO", "idgen"])
        .query(&mut server.connection())
        .unwrap();
    assert!(info.contains("uuid7_issued:1000000"), "{info}");
    assert!(info.contains("ulid_issued:1000000"), "{info}");
}

#[test]
fn pythons_uuid_module_reads_version_7() {
    let server = Server::start(&[]);
    let before = now_ms();
    let uuids: Vec<String> = cmd(&["UUID7.NEXT", "COUNT", "2000"])
        .query(&mut server.connection())
        .unwrap();
    let after = now_ms();
    let report = idgen_tests::run_python("uuid7_check.py", &[], &uuids.join("\n"));
    assert!(report.contains(r#""count": 2000"#), "{report}");
    assert!(report.contains(r#""versions": [7]"#), "{report}");
    assert!(
        report.contains(r#""variants": ["specified in RFC 4122"]"#),
        "{report}"
    );
    assert!(report.contains(r#""increasing": true"#), "{report}");
    let times: Vec<i64> = report
        .split(r#""time_ms": ["#)
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap()
        .split(", ")
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        times.iter().all(|t| (before..=after).contains(t)),
        "{report}"
    );
}

#[test]
fn clock_steps_back_never_make_a_smaller_id() {
    let dir = data_dir("time128-clock");
    let clock = ClockShift::new(&dir);
    let server = Server::start_with(clock.options(Options::default()));
    let mut con = server.connection();
    for (command, parse) in FORMS {
        let mut last = 0u128;
        for shift in [0, -600, -300, 200, -700, 0] {
            clock.set_ms(shift);
            for text in pipelined(&mut con, command, 3_000) {
                let id = parse(&text);
                assert!(
                    id > last,
                    "{command}: {id:x} after {last:x} (clock {shift:+} ms)"
                );
                last = id;
            }
        }
        // More than the drift limit (1 s) back: refused until the clock catches up, not served
        // ahead of it and not repeated.
        clock.set_ms(-5_000);
        let err = error_of(&mut con, &cmd(&[command]));
        assert!(
            err.contains("behind the last issued ID"),
            "{command}: {err}"
        );
        clock.set_ms(0);
        let next: String = cmd(&[command]).query(&mut con).unwrap();
        assert!(parse(&next) > last);
    }
    let info: String = cmd(&["INFO", "idgen"]).query(&mut con).unwrap();
    for name in ["uuid7", "ulid"] {
        let field = format!("{name}_clock_backwards_events:");
        let events: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix(&format!("idgen_{field}")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(events > 0, "{info}");
    }
}

#[test]
fn replicas_refuse_unless_told_and_nothing_is_propagated() {
    let primary = Server::start_with(Options::module(&[]).server(&["--appendonly", "yes"]));
    let replica = Server::start(&[]);
    replica.replicate(&primary);
    let mut p = primary.connection();
    let aof_size = || -> u64 {
        std::fs::read_dir(primary.dir.join("appendonlydir"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum()
    };
    // The primary sends the replica its worker-id claim once it is online (`IDGEN.CLAIM`, to
    // the AOF too): measured once that has gone out.
    loop {
        let before = primary.replication_offset();
        std::thread::sleep(std::time::Duration::from_millis(200));
        if primary.replication_offset() == before {
            break;
        }
    }
    let (offset_before, aof_before) = (primary.replication_offset(), aof_size());
    for (command, _) in FORMS {
        let _: Vec<String> = cmd(&[command, "COUNT", "1000"]).query(&mut p).unwrap();
        let _ = pipelined(&mut p, command, 1_000);
    }
    assert_eq!(
        primary.replication_offset(),
        offset_before,
        "the replication stream grew"
    );
    assert_eq!(aof_size(), aof_before, "the AOF grew");

    let mut r = replica.connection();
    for (command, parse) in FORMS {
        let err = error_of(&mut r, &cmd(&[command]));
        assert!(err.starts_with("ERR") && err.contains("replica"), "{err}");
        let _: () = cmd(&["CONFIG", "SET", "idgen.random-ids-on-replica", "yes"])
            .query(&mut r)
            .unwrap();
        let text: String = cmd(&[command]).query(&mut r).unwrap();
        parse(&text);
        let _: () = cmd(&["CONFIG", "SET", "idgen.random-ids-on-replica", "no"])
            .query(&mut r)
            .unwrap();
    }
}

#[test]
fn bad_input_gets_errors_and_decode_gives_the_parts() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let cases: &[(&[&str], &str)] = &[
        (&["UUID7.NEXT", "COUNT", "0"], "between 1 and 100000"),
        (&["ULID.NEXT", "COUNT", "100001"], "between 1 and 100000"),
        (&["UUID7.NEXT", "COUNT"], "syntax"),
        (&["UUID7.NEXT", "STRING"], "syntax"),
        (&["ULID.NEXT", "COUNT", "x"], "not an integer"),
        (&["ULID.NEXT", "COUNT", "1", "COUNT"], "wrong number"),
        (&["UUID7.NEXT", "COUNT", "1", "SEALED", "x"], "wrong number"),
        (&["UUID7.NEXT", "COUNT", "1", "COUNT"], "more than once"),
        (&["ULID.NEXT", "SEALED"], "not an option"),
        (&["UUID7.DECODE"], "wrong number"),
        (&["UUID7.DECODE", "not-a-uuid"], "not a UUID"),
        (
            &["UUID7.DECODE", "550e8400-e29b-41d4-a716-446655440000"],
            "version 4",
        ),
        (&["ULID.DECODE", "01ARZ3NDEKTSV4RRFFQ69G5FA"], "not a ULID"),
        (&["ULID.DECODE", "01ARZ3NDEKTSV4RRFFQ69G5FAU"], "not a ULID"),
        (&["ULID.DECODE", "\u{e9}"], "not a ULID"),
    ];
    for (words, says) in cases {
        let err = error_of(&mut con, &cmd(words));
        assert!(
            err.starts_with("ERR") && err.contains(says),
            "{words:?}: {err}"
        );
    }
    for (command, decode, parse) in [
        ("UUID7.NEXT", "UUID7.DECODE", FORMS[0].1),
        ("ULID.NEXT", "ULID.DECODE", FORMS[1].1),
    ] {
        let before = now_ms();
        let text: String = cmd(&[command]).query(&mut con).unwrap();
        let id = parse(&text);
        let fields: Vec<Value> = cmd(&[decode, &text]).query(&mut con).unwrap();
        let Value::Int(time_ms) = fields[1] else {
            panic!("{fields:?}")
        };
        assert_eq!(time_ms as u128, id >> 80);
        assert!(time_ms >= before, "{time_ms} < {before}");
        let Value::BulkString(random) = &fields[5] else {
            panic!("{fields:?}")
        };
        let random = u128::from_str_radix(std::str::from_utf8(random).unwrap(), 16).unwrap();
        let expected = if command == "ULID.NEXT" {
            id & ((1 << 80) - 1)
        } else {
            (((id >> 64) & 0xfff) << 62) | (id & ((1 << 62) - 1))
        };
        assert_eq!(random, expected, "{command}");
    }
    // The edges of the 48-bit time: each decodes to a time, past 9999 in ISO 8601's expanded
    // year (as JavaScript writes it).
    for (decode, id, time) in [
        (
            "UUID7.DECODE",
            "ffffffff-ffff-7fff-bfff-ffffffffffff",
            "+010889-08-02T05:31:50.655Z",
        ),
        (
            "ULID.DECODE",
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
            "+010889-08-02T05:31:50.655Z",
        ),
        (
            "UUID7.DECODE",
            "00000000-0000-7000-8000-000000000000",
            "1970-01-01T00:00:00.000Z",
        ),
        (
            "ULID.DECODE",
            "00000000000000000000000000",
            "1970-01-01T00:00:00.000Z",
        ),
    ] {
        let fields: Vec<Value> = cmd(&[decode, id]).query(&mut con).unwrap();
        assert_eq!(
            fields[3],
            Value::BulkString(time.as_bytes().to_vec()),
            "{decode} {id}: {fields:?}"
        );
    }
    let _: String = cmd(&["PING"]).query(&mut con).unwrap();
}

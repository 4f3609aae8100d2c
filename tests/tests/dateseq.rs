//! DATESEQ.NEXT and DATESEQ.CURRENT against a real redis-server with the module.

use std::collections::HashSet;
use std::time::Duration;

use idgen_core::dateseq::{counter_key, Calendar};
use idgen_tests::redis::Value;
use idgen_tests::{cmd, data_dir, error_of, free_port, now_ms, Options, Server};

/// Today's yyyyMMdd in `zone`; the tests retry a call that straddles midnight.
fn today(zone: &str) -> i64 {
    Calendar::new(zone).unwrap().day_of(now_ms()).date as i64
}

fn key(prefix: &str, zone: &str) -> String {
    let mut out = Vec::new();
    counter_key(prefix.as_bytes(), today(zone) as u32, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn values_are_date_times_ten_to_the_digits_plus_the_counter() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let date = today("UTC");
    let none: Option<i64> = cmd(&["DATESEQ.CURRENT", "order"]).query(&mut con).unwrap();
    assert_eq!(none, None, "nothing issued yet");
    let first: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    let second: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    assert_eq!(
        (first, second),
        (date * 1_000_000 + 1, date * 1_000_000 + 2)
    );
    let current: i64 = cmd(&["DATESEQ.CURRENT", "order"]).query(&mut con).unwrap();
    assert_eq!(current, second);
    let wide: i64 = cmd(&["DATESEQ.NEXT", "order", "DIGITS", "10"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        wide,
        date * 10_000_000_000 + 3,
        "DIGITS changes the scale, not the counter"
    );
    let other: i64 = cmd(&["DATESEQ.NEXT", "invoice"]).query(&mut con).unwrap();
    assert_eq!(
        other,
        date * 1_000_000 + 1,
        "each prefix has its own counter"
    );
    assert_eq!(server.info_field("dateseq_issued"), "4");
}

#[test]
fn the_counter_is_a_plain_string_key_that_expires_after_its_day() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for _ in 0..3 {
        let _: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    }
    let key = key("order", "UTC");
    assert_eq!(key, format!("{{order}}:{}", today("UTC")));
    let value: String = cmd(&["GET", &key]).query(&mut con).unwrap();
    assert_eq!(value, "3");
    let day = Calendar::new("UTC").unwrap().day_of(now_ms());
    let expires: i64 = cmd(&["PEXPIRETIME", &key]).query(&mut con).unwrap();
    assert_eq!(
        expires,
        day.end_ms + 2 * 86_400_000,
        "default TTL: two days after the day ends"
    );
    // INCR-compatible: a client doing the scheme by hand sees the same counter.
    let by_hand: i64 = cmd(&["INCR", &key]).query(&mut con).unwrap();
    assert_eq!(by_hand, 4);
    let expires_after: i64 = cmd(&["PEXPIRETIME", &key]).query(&mut con).unwrap();
    assert_eq!(expires_after, expires, "writes keep the TTL");

    let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-ttl", "3600"])
        .query(&mut con)
        .unwrap();
    let _: i64 = cmd(&["DATESEQ.NEXT", "fresh"]).query(&mut con).unwrap();
    let fresh: i64 = cmd(&["PEXPIRETIME", &self::key("fresh", "UTC")])
        .query(&mut con)
        .unwrap();
    assert_eq!(fresh, day.end_ms + 3_600_000);
    let err = error_of(
        &mut con,
        &cmd(&["CONFIG", "SET", "idgen.dateseq-ttl", "60"]),
    );
    assert!(
        err.contains("between"),
        "a TTL shorter than an hour is refused: {err}"
    );
}

#[test]
fn every_new_counter_expires_at_the_exact_ms_its_replicas_are_told() {
    // Replicas and the AOF get PEXPIREAT end + TTL. An expiry set relative to the server's
    // clock lands a ms later whenever that clock turns a ms during the call: across thousands
    // of new keys some calls do (1 in 3,000 here).
    let server = Server::start(&[]);
    let mut con = server.connection();
    let prefixes: Vec<String> = (0..30_000).map(|i| format!("exact{i}")).collect();
    let mut issue = idgen_tests::redis::pipe();
    for prefix in &prefixes {
        issue.cmd("DATESEQ.NEXT").arg(prefix);
    }
    let _: Vec<i64> = issue.query(&mut con).unwrap();
    let end = Calendar::new("UTC").unwrap().day_of(now_ms()).end_ms;
    let mut expiries = idgen_tests::redis::pipe();
    for prefix in &prefixes {
        expiries.cmd("PEXPIRETIME").arg(key(prefix, "UTC"));
    }
    let expiries: Vec<i64> = expiries.query(&mut con).unwrap();
    let off: Vec<_> = expiries
        .iter()
        .filter(|&&at| at != end + 2 * 86_400_000)
        .collect();
    assert!(
        off.is_empty(),
        "{} keys expire off the day's end + TTL: {off:?}",
        off.len()
    );
}

#[test]
fn the_date_follows_the_configured_time_zone() {
    // +14:00 and -12:00 are 26 hours apart: their dates always differ.
    let server = Server::start(&["dateseq-timezone", "+14:00"]);
    let mut con = server.connection();
    let east: i64 = cmd(&["DATESEQ.NEXT", "tz"]).query(&mut con).unwrap();
    let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "-12:00"])
        .query(&mut con)
        .unwrap();
    let west: i64 = cmd(&["DATESEQ.NEXT", "tz"]).query(&mut con).unwrap();
    assert_eq!(east / 1_000_000, today("+14:00"));
    assert_eq!(west / 1_000_000, today("-12:00"));
    assert_ne!(east / 1_000_000, west / 1_000_000);
    assert_eq!(
        (east % 1_000_000, west % 1_000_000),
        (1, 1),
        "one counter per date"
    );
    let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "Asia/Shanghai"])
        .query(&mut con)
        .unwrap();
    assert_eq!(server.info_field("dateseq_timezone"), "Asia/Shanghai");
    let err = error_of(
        &mut con,
        &cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "Mars/Olympus"]),
    );
    assert!(err.contains("unknown time zone"), "{err}");
    assert_eq!(server.info_field("dateseq_timezone"), "Asia/Shanghai");
}

#[test]
fn a_spent_sequence_is_an_error_and_never_wraps() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let date = today("UTC");
    let mut last = 0;
    for _ in 0..99 {
        last = cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "2"])
            .query(&mut con)
            .unwrap();
    }
    assert_eq!(last, date * 100 + 99);
    for _ in 0..3 {
        let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "2"]));
        assert!(err.contains("spent") && err.contains("2 digits"), "{err}");
    }
    let current: i64 = cmd(&["DATESEQ.CURRENT", "tiny", "DIGITS", "2"])
        .query(&mut con)
        .unwrap();
    assert_eq!(current, last, "a refused call does not move the counter");
    let more: i64 = cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "3"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        more,
        date * 1000 + 100,
        "more digits carry on from the same counter"
    );
    assert_eq!(server.info_field("dateseq_refused"), "3");
}

#[test]
fn counter_keys_share_their_prefix_cluster_slot() {
    // The bus port is named: port + 10000 may be a client socket's (the ephemeral range).
    let bus_port = free_port().to_string();
    let server = Server::start_with(Options::default().server(&[
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus_port,
    ]));
    let mut con = server.connection();
    let _: () = cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"])
        .query(&mut con)
        .unwrap();
    assert!(idgen_tests::wait_for(Duration::from_secs(10), || {
        let info: String = cmd(&["CLUSTER", "INFO"])
            .query(&mut server.connection())
            .unwrap();
        info.contains("cluster_state:ok")
    }));
    for prefix in ["order", "order:{eu}", "{user1000}.following", "a{b", "日本"] {
        let _: i64 = cmd(&["DATESEQ.NEXT", prefix]).query(&mut con).unwrap();
        let key = key(prefix, "UTC");
        let exists: i64 = cmd(&["EXISTS", &key]).query(&mut con).unwrap();
        assert_eq!(exists, 1, "{key}");
        let mut slot = |k: &str| {
            cmd(&["CLUSTER", "KEYSLOT", k])
                .query::<i64>(&mut con)
                .unwrap()
        };
        assert_eq!(slot(&key), slot(prefix), "{prefix} -> {key}");
    }
}

#[test]
fn the_aof_holds_explicit_writes_and_a_restart_carries_on() {
    let dir = data_dir("aof");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default().server(&["--appendonly", "yes", "--appendfsync", "always"])
    };
    let mut issued = Vec::new();
    {
        let mut server = Server::start_with(options.clone());
        let mut con = server.connection();
        for _ in 0..5 {
            issued.push(
                cmd(&["DATESEQ.NEXT", "order"])
                    .query::<i64>(&mut con)
                    .unwrap(),
            );
        }
        // Stopped cleanly: after a crash the DATESEQ witness file would skip up to a block
        // (witness_matrix.rs and dateseq_witness_file.rs cover that).
        server.shutdown();
    }
    let aof: String = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    assert!(aof.contains("INCR\r\n"), "{aof}");
    assert!(aof.contains("PEXPIREAT\r\n"), "{aof}");
    assert!(
        !aof.to_uppercase().contains("DATESEQ"),
        "the command itself must not be replayed:\n{aof}"
    );
    {
        let server = Server::start_with(options);
        let mut con = server.connection();
        let current: i64 = cmd(&["DATESEQ.CURRENT", "order"]).query(&mut con).unwrap();
        assert_eq!(current, issued[4]);
        let next: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
        assert_eq!(next, issued[4] + 1);
    }
}

#[test]
fn kill_9_under_load_never_reissues_an_acknowledged_value() {
    let dir = data_dir("kill");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default().server(&["--appendonly", "yes", "--appendfsync", "always"])
    };
    let mut acknowledged = HashSet::new();
    for round in 0..5 {
        let mut server = Server::start_with(options.clone());
        let url = server.url();
        let worker = std::thread::spawn(move || {
            let mut got = Vec::new();
            let Ok(mut con) =
                idgen_tests::redis::Client::open(url).and_then(|c| c.get_connection())
            else {
                return got;
            };
            while let Ok(v) = cmd(&["DATESEQ.NEXT", "crash", "DIGITS", "10"]).query::<i64>(&mut con)
            {
                got.push(v);
            }
            got
        });
        std::thread::sleep(Duration::from_millis(150 + 50 * round));
        server.kill9();
        for value in worker.join().unwrap() {
            assert!(
                acknowledged.insert(value),
                "round {round}: {value} handed out twice"
            );
        }
    }
    assert!(
        acknowledged.len() > 20,
        "only {} values issued",
        acknowledged.len()
    );
}

#[test]
fn bad_counters_and_prefixes_get_clear_errors() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let list_key = key("listy", "UTC");
    let _: i64 = cmd(&["RPUSH", &list_key, "x"]).query(&mut con).unwrap();
    let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", "listy"]));
    assert!(err.starts_with("WRONGTYPE"), "{err}");
    let text_key = key("texty", "UTC");
    let _: () = cmd(&["SET", &text_key, "abc"]).query(&mut con).unwrap();
    for command in ["DATESEQ.NEXT", "DATESEQ.CURRENT"] {
        let err = error_of(&mut con, &cmd(&[command, "texty"]));
        assert!(err.contains("not a non-negative integer"), "{err}");
    }
    let value: String = cmd(&["GET", &text_key]).query(&mut con).unwrap();
    assert_eq!(value, "abc", "a refused call leaves the key alone");
    let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", "a}b"]));
    assert!(err.contains("hash tag"), "{err}");
    let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", ""]));
    assert!(err.contains("must not be empty"), "{err}");
    let pong: String = cmd(&["PING"]).query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn count_takes_a_range_written_as_one_incrby_and_never_wraps() {
    let dir = data_dir("count");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default().server(&["--appendonly", "yes", "--appendfsync", "always"])
    };
    let date = today("UTC");
    let range: Vec<i64>;
    {
        let mut server = Server::start_with(options.clone());
        let mut con = server.connection();
        let first: i64 = cmd(&["DATESEQ.NEXT", "batch"]).query(&mut con).unwrap();
        range = cmd(&["DATESEQ.NEXT", "batch", "COUNT", "1000"])
            .query(&mut con)
            .unwrap();
        assert_eq!(
            range,
            vec![first + 1, first + 1000],
            "the next 1000 values, as [first, last]"
        );
        let created: Vec<i64> = cmd(&["DATESEQ.NEXT", "fresh", "COUNT", "7"])
            .query(&mut con)
            .unwrap();
        assert_eq!(
            created,
            vec![date * 1_000_000 + 1, date * 1_000_000 + 7],
            "a new key"
        );
        let current: i64 = cmd(&["DATESEQ.CURRENT", "batch"]).query(&mut con).unwrap();
        assert_eq!(current, range[1]);
        assert_eq!(server.info_field("dateseq_issued"), "1008");
        // DIGITS 1 holds 9 values a day: 9 fit, the tenth is refused and nothing is written.
        let nine: Vec<i64> = cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "1", "COUNT", "9"])
            .query(&mut con)
            .unwrap();
        assert_eq!(nine, vec![date * 10 + 1, date * 10 + 9]);
        let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "1"]));
        assert!(err.contains("is spent"), "{err}");
        let err = error_of(
            &mut con,
            &cmd(&["DATESEQ.NEXT", "other", "DIGITS", "1", "COUNT", "10"]),
        );
        // Not spent: the batch does not fit in what is left.
        assert!(
            err.contains("COUNT 10 does not fit: 9 values are left"),
            "{err}"
        );
        let untouched: Option<String> =
            cmd(&["GET", &key("other", "UTC")]).query(&mut con).unwrap();
        assert_eq!(untouched, None, "a refused batch wrote its key");
        // Stopped cleanly, so the witness file skips nothing.
        server.shutdown();
    }
    let aof: String = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| String::from_utf8_lossy(&std::fs::read(e.unwrap().path()).unwrap()).into_owned())
        .collect();
    assert!(
        aof.contains("INCRBY\r\n$16\r\n{batch}:") && aof.contains("\r\n$4\r\n1000\r\n"),
        "{aof}"
    );
    let server = Server::start_with(options);
    let next: i64 = cmd(&["DATESEQ.NEXT", "batch"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(next, range[1] + 1, "the AOF replayed the batch");
}

#[test]
fn acl_key_patterns_apply_to_the_counter_key_itself() {
    let server = Server::start(&[]);
    let mut admin = server.connection();
    let users: &[(&str, &[&str])] = &[
        ("prefix-only", &["~order"]),
        ("counter-too", &["~order", "~{order}:*"]),
        ("read-only", &["~order", "%R~{order}:*"]),
    ];
    for (user, patterns) in users {
        let mut words = vec!["ACL", "SETUSER", user, "on", "nopass", "+@all"];
        words.extend_from_slice(patterns);
        let _: () = cmd(&words).query(&mut admin).unwrap();
    }
    let _: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut admin).unwrap();
    let as_user = |user: &str, words: &[&str]| {
        let mut con = server.connection();
        let _: () = cmd(&["AUTH", user, "x"]).query(&mut con).unwrap();
        cmd(words)
            .query::<Value>(&mut con)
            .map_err(|e| idgen_tests::error_text(&e))
    };
    let err = as_user("prefix-only", &["DATESEQ.NEXT", "order"]).unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    let err = as_user("prefix-only", &["DATESEQ.CURRENT", "order"]).unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    assert!(as_user("counter-too", &["DATESEQ.NEXT", "order"]).is_ok());
    assert!(as_user("read-only", &["DATESEQ.CURRENT", "order"]).is_ok());
    let err = as_user("read-only", &["DATESEQ.NEXT", "order"]).unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    let value: String = cmd(&["GET", &key("order", "UTC")])
        .query(&mut admin)
        .unwrap();
    assert_eq!(value, "2", "refused calls wrote the counter");
    // Nothing of the check is kept between calls: a connection allowed a moment ago is refused
    // as soon as its user loses the pattern, and allowed again after AUTH as another user.
    let mut con = server.connection();
    let _: () = cmd(&["AUTH", "counter-too", "x"]).query(&mut con).unwrap();
    let _: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    let _: () = cmd(&["ACL", "SETUSER", "counter-too", "resetkeys", "~order"])
        .query(&mut admin)
        .unwrap();
    let err = cmd(&["DATESEQ.NEXT", "order"])
        .query::<Value>(&mut con)
        .map_err(|e| idgen_tests::error_text(&e))
        .unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    let _: () = cmd(&["AUTH", "default", "x"]).query(&mut con).unwrap();
    let _: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
}

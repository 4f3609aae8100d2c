//! DATESEQ.NEXT and DATESEQ.CURRENT on a real redis-server: against the module, and where a
//! test is not about the module's own keys, expiry or time zones, against the Functions
//! library too (`FCALL dateseq_next`, `FCALL_RO dateseq_current` on a server without the
//! module). The library keeps a key's counters as fields of one hash and skips
//! [`LIBRARY_FIRST_USE_GAP`] values on a server process's first use of a key.

use std::collections::HashSet;
use std::time::Duration;

use idgen_core::dateseq::{counter_key, Calendar};
use idgen_tests::backend::{Backend, LIBRARY_FIRST_USE_GAP};
use idgen_tests::redis::Value;
use idgen_tests::{cmd, data_dir, error_of, free_port, now_ms, Options, Server};

idgen_tests::both!(
    values_are_date_times_ten_to_the_digits_plus_the_counter,
    a_spent_sequence_is_an_error_and_never_wraps,
    count_takes_a_range_written_in_one_write_and_never_wraps,
    the_aof_holds_plain_writes_and_a_restart_carries_on,
    kill_9_under_load_never_reissues_an_acknowledged_value,
    bad_counters_get_clear_errors_and_stay_as_they_were,
    acl_key_patterns_apply_to_the_counter_itself,
);

/// Today's yyyyMMdd in `zone`; the tests retry a call that straddles midnight.
fn today(zone: &str) -> i64 {
    Calendar::new(zone).unwrap().day_of(now_ms()).date as i64
}

fn key(prefix: &str, zone: &str) -> String {
    let mut out = Vec::new();
    counter_key(prefix.as_bytes(), today(zone) as u32, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn start(b: Backend, options: Options) -> Server {
    b.start(60_000, options)
}

/// A server writing every command to its AOF before it answers, in `dir`.
fn durable(dir: &std::path::Path) -> Options {
    Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default().server(&["--appendonly", "yes", "--appendfsync", "always"])
    }
}

/// The values a restarted server skips on its next use of a key after a clean stop: none for
/// the module (its witness file saw the stop), the first-use gap for the library (it cannot
/// tell a restart from a failover).
fn restart_gap(b: Backend) -> i64 {
    match b {
        Backend::Module => 0,
        Backend::Library => LIBRARY_FIRST_USE_GAP as i64,
    }
}

/// The AOF files of `dir`, as text: Redis 7's `appendonlydir`, or Redis 6's one file.
fn aof_text(dir: &std::path::Path) -> String {
    let read = |path: std::path::PathBuf| {
        String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
    };
    match std::fs::read_dir(dir.join("appendonlydir")) {
        Ok(files) => files.map(|e| read(e.unwrap().path())).collect(),
        Err(_) => read(dir.join("appendonly.aof")),
    }
}

/// The AOF replays plain writes, never the call itself (which would take new values).
fn assert_no_call_replayed(aof: &str) {
    for call in ["DATESEQ.NEXT\r\n", "\r\nFCALL\r\n"] {
        assert!(
            !aof.to_uppercase().contains(call),
            "the call itself must not be replayed:\n{aof}"
        );
    }
}

fn values_are_date_times_ten_to_the_digits_plus_the_counter(b: Backend) {
    let server = start(b, Options::default());
    let mut con = server.connection();
    let date = today("UTC");
    let base = b.first_count() as i64;
    let none: Option<i64> = b
        .cmd(&["DATESEQ.CURRENT", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(none, None, "nothing issued yet");
    let first: i64 = b.cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    let second: i64 = b.cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    assert_eq!(
        (first, second),
        (date * 1_000_000 + base, date * 1_000_000 + base + 1)
    );
    let current: i64 = b
        .cmd(&["DATESEQ.CURRENT", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(current, second);
    let wide: i64 = b
        .cmd(&["DATESEQ.NEXT", "order", "DIGITS", "10"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        wide,
        date * 10_000_000_000 + base + 2,
        "DIGITS changes the scale, not the counter"
    );
    let other: i64 = b.cmd(&["DATESEQ.NEXT", "invoice"]).query(&mut con).unwrap();
    assert_eq!(
        other,
        date * 1_000_000 + base,
        "each prefix has its own counter"
    );
    if b == Backend::Module {
        assert_eq!(server.info_field("dateseq_issued"), "4");
    }
}

fn a_spent_sequence_is_an_error_and_never_wraps(b: Backend) {
    // Five digits: room for the library's first-use gap.
    let server = start(b, Options::default());
    let mut con = server.connection();
    let date = today("UTC");
    let base = b.first_count() as i64;
    let next = |extra: &[&str]| {
        let mut words = vec!["DATESEQ.NEXT", "tiny", "DIGITS", "5"];
        words.extend_from_slice(extra);
        b.cmd(&words)
    };
    let first: i64 = next(&[]).query(&mut con).unwrap();
    assert_eq!(first, date * 100_000 + base);
    let range: Vec<i64> = next(&["COUNT", &(99_998 - base).to_string()])
        .query(&mut con)
        .unwrap();
    assert_eq!(range, vec![first + 1, date * 100_000 + 99_998]);
    let last: i64 = next(&[]).query(&mut con).unwrap();
    assert_eq!(last, date * 100_000 + 99_999);
    for _ in 0..3 {
        let err = error_of(&mut con, &next(&[]));
        assert_eq!(
            err,
            format!("ERR the sequence for {date} is spent: it no longer fits in 5 digits")
        );
    }
    let current: i64 = b
        .cmd(&["DATESEQ.CURRENT", "tiny", "DIGITS", "5"])
        .query(&mut con)
        .unwrap();
    assert_eq!(current, last, "a refused call does not move the counter");
    let more: i64 = b
        .cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "6"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        more,
        date * 1_000_000 + 100_000,
        "more digits carry on from the same counter"
    );
    if b == Backend::Module {
        assert_eq!(server.info_field("dateseq_refused"), "3");
    }
}

fn count_takes_a_range_written_in_one_write_and_never_wraps(b: Backend) {
    let dir = data_dir("count");
    let date = today("UTC");
    let base = b.first_count() as i64;
    let range: Vec<i64>;
    {
        let mut server = start(b, durable(&dir));
        let mut con = server.connection();
        let first: i64 = b.cmd(&["DATESEQ.NEXT", "batch"]).query(&mut con).unwrap();
        range = b
            .cmd(&["DATESEQ.NEXT", "batch", "COUNT", "1000"])
            .query(&mut con)
            .unwrap();
        assert_eq!(
            range,
            vec![first + 1, first + 1000],
            "the next 1000 values, as [first, last]"
        );
        let created: Vec<i64> = b
            .cmd(&["DATESEQ.NEXT", "fresh", "COUNT", "7"])
            .query(&mut con)
            .unwrap();
        assert_eq!(
            created,
            vec![date * 1_000_000 + base, date * 1_000_000 + base + 6],
            "a new key"
        );
        let current: i64 = b
            .cmd(&["DATESEQ.CURRENT", "batch"])
            .query(&mut con)
            .unwrap();
        assert_eq!(current, range[1]);
        if b == Backend::Module {
            assert_eq!(server.info_field("dateseq_issued"), "1008");
        }
        // What DIGITS 5 holds fits; one more is refused as spent, and nothing is written.
        let all = (100_000 - base).to_string();
        let filled: Vec<i64> = b
            .cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "5", "COUNT", &all])
            .query(&mut con)
            .unwrap();
        assert_eq!(filled, vec![date * 100_000 + base, date * 100_000 + 99_999]);
        let err = error_of(&mut con, &b.cmd(&["DATESEQ.NEXT", "tiny", "DIGITS", "5"]));
        assert!(err.contains("is spent"), "{err}");
        // Not spent: the batch does not fit in what is left.
        let _: i64 = b
            .cmd(&["DATESEQ.NEXT", "other", "DIGITS", "5"])
            .query(&mut con)
            .unwrap();
        let err = error_of(
            &mut con,
            &b.cmd(&["DATESEQ.NEXT", "other", "DIGITS", "5", "COUNT", &all]),
        );
        assert_eq!(
            err,
            format!(
                "ERR COUNT {all} does not fit: {} values are left for {date} in 5 DIGITS",
                99_999 - base
            )
        );
        assert_eq!(
            b.counter(&mut con, "other", date as u32),
            Some(base.to_string()),
            "a refused batch wrote its counter"
        );
        // Stopped cleanly, so the module's witness file skips nothing.
        server.shutdown();
    }
    let aof = aof_text(&dir);
    assert_no_call_replayed(&aof);
    let written = match b {
        Backend::Module => {
            aof.contains("INCRBY\r\n$16\r\n{batch}:") && aof.contains("\r\n$4\r\n1000\r\n")
        }
        Backend::Library => aof.contains(&format!(
            "HSET\r\n$5\r\nbatch\r\n$12\r\nday:{date}\r\n${}\r\n{}\r\n",
            (range[1] % 1_000_000).to_string().len(),
            range[1] % 1_000_000
        )),
    };
    assert!(written, "the batch is one write:\n{aof}");
    let server = start(b, durable(&dir));
    let next: i64 = b
        .cmd(&["DATESEQ.NEXT", "batch"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(
        next,
        range[1] + 1 + restart_gap(b),
        "the AOF replayed the batch"
    );
}

fn the_aof_holds_plain_writes_and_a_restart_carries_on(b: Backend) {
    let dir = data_dir("aof");
    let mut issued = Vec::new();
    {
        let mut server = start(b, durable(&dir));
        let mut con = server.connection();
        for _ in 0..5 {
            issued.push(
                b.cmd(&["DATESEQ.NEXT", "order"])
                    .query::<i64>(&mut con)
                    .unwrap(),
            );
        }
        // Stopped cleanly: after a crash the module's DATESEQ witness file would skip up to a
        // block (witness_matrix.rs and dateseq_witness_file.rs cover that).
        server.shutdown();
    }
    let aof = aof_text(&dir);
    let written = match b {
        Backend::Module => aof.contains("INCR\r\n") && aof.contains("PEXPIREAT\r\n"),
        Backend::Library => aof.contains("HSET\r\n$5\r\norder\r\n"),
    };
    assert!(written, "{aof}");
    assert_no_call_replayed(&aof);
    let server = start(b, durable(&dir));
    let mut con = server.connection();
    let current: i64 = b
        .cmd(&["DATESEQ.CURRENT", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(current, issued[4]);
    let next: i64 = b.cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    assert_eq!(next, issued[4] + 1 + restart_gap(b));
}

fn kill_9_under_load_never_reissues_an_acknowledged_value(b: Backend) {
    // Sized by count, not by time: each round kills the server once its client has been
    // acknowledged SEEN values (more each round), however slow the machine.
    const ROUNDS: usize = 5;
    const SEEN: usize = 50;
    let dir = data_dir("kill");
    let mut acknowledged = HashSet::new();
    for round in 0..ROUNDS {
        let mut server = start(b, durable(&dir));
        let url = server.url();
        let seen = SEEN * (round + 1);
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let mut seen_tx = Some(seen_tx);
        let worker = std::thread::spawn(move || {
            let mut got = Vec::new();
            let Ok(mut con) = idgen_tests::redis::Client::open(url)
                .and_then(|c| c.get_connection())
                .map(idgen_tests::Connection::new)
            else {
                return got;
            };
            let call = b.cmd(&["DATESEQ.NEXT", "crash", "DIGITS", "10"]);
            while let Ok(v) = call.query::<i64>(&mut con) {
                got.push(v);
                if got.len() >= seen {
                    if let Some(tx) = seen_tx.take() {
                        let _ = tx.send(());
                    }
                }
            }
            got
        });
        seen_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("round {round}: {seen} values not given in 30 s"));
        server.kill9();
        let got = worker.join().unwrap();
        assert!(got.len() >= seen, "round {round}: {} values", got.len());
        for value in got {
            assert!(
                acknowledged.insert(value),
                "round {round}: {value} handed out twice"
            );
        }
    }
}

fn bad_counters_get_clear_errors_and_stay_as_they_were(b: Backend) {
    let server = start(b, Options::default());
    let mut con = server.connection();
    let date = today("UTC") as u32;
    let (list_key, _) = b.counter_place("listy", date);
    let _: i64 = cmd(&["RPUSH", &list_key, "x"]).query(&mut con).unwrap();
    let err = error_of(&mut con, &b.cmd(&["DATESEQ.NEXT", "listy"]));
    assert!(err.starts_with("WRONGTYPE"), "{err}");
    b.set_counter(&mut con, "texty", date, "abc");
    for command in ["DATESEQ.NEXT", "DATESEQ.CURRENT"] {
        let err = error_of(&mut con, &b.cmd(&[command, "texty"]));
        let clear = match b {
            Backend::Module => err.contains("not a non-negative integer"),
            Backend::Library => err.contains("holds 'abc', not a count"),
        };
        assert!(clear, "{command}: {err}");
    }
    assert_eq!(
        b.counter(&mut con, "texty", date).as_deref(),
        Some("abc"),
        "a refused call leaves the counter alone"
    );
    if b == Backend::Module {
        let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", "a}b"]));
        assert!(err.contains("hash tag"), "{err}");
        let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", ""]));
        assert!(err.contains("must not be empty"), "{err}");
    }
    let pong: String = cmd(&["PING"]).query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

fn acl_key_patterns_apply_to_the_counter_itself(b: Backend) {
    let server = start(b, Options::default());
    let mut admin = server.connection();
    if !idgen_tests::library::at_least_redis_7(&mut admin, "ACL %R~ key selectors") {
        return;
    }
    // The module's counter is the key `{order}:yyyyMMdd`, the library's the key `order`.
    let (elsewhere, counter, read_only): (&[&str], &[&str], &[&str]) = match b {
        Backend::Module => (
            &["~order"],
            &["~order", "~{order}:*"],
            &["~order", "%R~{order}:*"],
        ),
        Backend::Library => (&["~other"], &["~order"], &["%R~order"]),
    };
    let users = [
        ("elsewhere", elsewhere),
        ("counter-too", counter),
        ("read-only", read_only),
    ];
    for (user, patterns) in users {
        let mut words = vec!["ACL", "SETUSER", user, "on", "nopass", "+@all"];
        words.extend_from_slice(patterns);
        let _: () = cmd(&words).query(&mut admin).unwrap();
    }
    let _: i64 = b.cmd(&["DATESEQ.NEXT", "order"]).query(&mut admin).unwrap();
    let as_user = |user: &str, words: &[&str]| {
        let mut con = server.connection();
        let _: () = cmd(&["AUTH", user, "x"]).query(&mut con).unwrap();
        b.cmd(words)
            .query::<Value>(&mut con)
            .map_err(|e| idgen_tests::error_text(&e))
    };
    let err = as_user("elsewhere", &["DATESEQ.NEXT", "order"]).unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    let err = as_user("elsewhere", &["DATESEQ.CURRENT", "order"]).unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    assert!(as_user("counter-too", &["DATESEQ.NEXT", "order"]).is_ok());
    assert!(as_user("read-only", &["DATESEQ.CURRENT", "order"]).is_ok());
    let err = as_user("read-only", &["DATESEQ.NEXT", "order"]).unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    let date = today("UTC") as u32;
    assert_eq!(
        b.counter(&mut admin, "order", date),
        Some((b.first_count() + 1).to_string()),
        "refused calls wrote the counter"
    );
    // Nothing of the check is kept between calls: a connection allowed a moment ago is refused
    // as soon as its user loses the pattern, and allowed again after AUTH as another user.
    let mut con = server.connection();
    let _: () = cmd(&["AUTH", "counter-too", "x"]).query(&mut con).unwrap();
    let _: i64 = b.cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    let mut reset = vec!["ACL", "SETUSER", "counter-too", "resetkeys"];
    reset.extend_from_slice(elsewhere);
    let _: () = cmd(&reset).query(&mut admin).unwrap();
    let err = b
        .cmd(&["DATESEQ.NEXT", "order"])
        .query::<Value>(&mut con)
        .map_err(|e| idgen_tests::error_text(&e))
        .unwrap_err();
    assert!(err.starts_with("NOPERM"), "{err}");
    let _: () = cmd(&["AUTH", "default", "x"]).query(&mut con).unwrap();
    let _: i64 = b.cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
}

// The module's own keys, expiry and time zones (the library's are in library.rs).

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
    // -12:00 and +14:00 are 26 hours apart: their dates always differ.
    let server = Server::start(&["dateseq-timezone", "-12:00"]);
    let mut con = server.connection();
    let west: i64 = cmd(&["DATESEQ.NEXT", "tz"]).query(&mut con).unwrap();
    let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "+14:00"])
        .query(&mut con)
        .unwrap();
    let east: i64 = cmd(&["DATESEQ.NEXT", "tz"]).query(&mut con).unwrap();
    assert_eq!(east / 1_000_000, today("+14:00"));
    assert_eq!(west / 1_000_000, today("-12:00"));
    assert_ne!(east / 1_000_000, west / 1_000_000);
    assert_eq!(
        (east % 1_000_000, west % 1_000_000),
        (1, 1),
        "one counter per date"
    );
    // Back west would take the date back to a day that has ended in +14:00: refused
    // (tests/tests/live_settings.rs has the rest).
    let err = error_of(
        &mut con,
        &cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "-12:00"]),
    );
    assert!(err.contains("would take DATESEQ dates back"), "{err}");
    // The same offset under an IANA name: always the same date.
    let _: () = cmd(&[
        "CONFIG",
        "SET",
        "idgen.dateseq-timezone",
        "Pacific/Kiritimati",
    ])
    .query(&mut con)
    .unwrap();
    assert_eq!(server.info_field("dateseq_timezone"), "Pacific/Kiritimati");
    let err = error_of(
        &mut con,
        &cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "Mars/Olympus"]),
    );
    assert!(err.contains("unknown time zone"), "{err}");
    assert_eq!(server.info_field("dateseq_timezone"), "Pacific/Kiritimati");
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

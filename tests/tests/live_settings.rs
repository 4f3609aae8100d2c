//! Every setting changed under live state (`CONFIG SET` on a running server): a change that
//! would let state already written expire, shrink or repeat is applied to that state or
//! refused, naming the setting. Generated: every `idgen.*` setting CONFIG SET accepts (and the
//! Redis settings the module follows) is walked, each value on a server holding Snowflake IDs,
//! a DATESEQ counter and a lease, and then checked: IDs only rise, the counter goes on above
//! what it gave and its key lives through its day in the zone now in force, and a namespace
//! lost after the change is granted again above every UNTIL its holder was told.

use idgen_core::dateseq::Calendar;
use idgen_tests::backend::Backend;
use idgen_tests::clock::ClockShift;
use idgen_tests::redis;
use idgen_tests::{cmd, data_dir, error_text, now_ms, try_when_caught_up, Options, Server};

/// Values tried for each setting a running server may change. A setting CONFIG SET takes that
/// is not here fails the test: each new one is walked too.
const VALUES: &[(&str, &[&str])] = &[
    ("max-drift-ms", &["0", "100", "60000"]),
    ("sequence-random-start", &["yes", "no"]),
    ("random-ids-on-replica", &["yes"]),
    (
        "dateseq-timezone",
        &["+14:00", "-12:00", "+09:00", "America/New_York", "UTC"],
    ),
    ("dateseq-ttl", &["3600", "864000"]),
    ("dateseq-digits", &["1", "10"]),
    ("dateseq-failover-gap", &["0", "1000000000"]),
    ("dateseq-witness-max", &["1"]),
    ("workerid-horizon-ms", &["1000", "100", "86400000"]),
    ("workerid-ack-replicas", &["0", "5"]),
    ("accept-eviction", &["yes"]),
    (
        "sqids-alphabet",
        &["ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba9876543210"],
    ),
    ("sqids-min-length", &["20"]),
    ("seal-key-file", &["SEAL_KEY"]),
];

/// Redis's own settings that govern the module's state.
const SERVER_VALUES: &[(&str, &[&str])] = &[
    ("maxmemory-policy", &["allkeys-lru", "volatile-lru"]),
    ("min-replicas-to-write", &["1"]),
];

/// A server whose start fences no lease grant any more (its first start fences them for a
/// horizon, which would hide a fence the change should have raised), at the default horizon,
/// its counter keys outliving their day by an hour.
fn past_its_lease_fence() -> Server {
    // The shortest TTL a counter key outlives its day by: a zone further west must lengthen it.
    let server = Server::start(&["workerid-horizon-ms", "100", "dateseq-ttl", "3600"]);
    server.wait_past_lease_fence();
    let _: () = cmd(&["CONFIG", "SET", "idgen.workerid-horizon-ms", "30000"])
        .query(&mut server.connection())
        .unwrap();
    server
}

/// What the server held before the change.
struct Live {
    snowflake: i64,
    dateseq: i64,
    /// The UNTIL the lease's holder was told.
    told_until: i64,
}

fn live_state(con: &mut idgen_tests::Connection) -> Live {
    let snowflake: i64 = try_when_caught_up(con, &cmd(&["SNOWFLAKE.NEXT"])).unwrap();
    let mut dateseq = 0;
    for _ in 0..3 {
        dateseq = cmd(&["DATESEQ.NEXT", "p"]).query(con).unwrap();
    }
    Live {
        snowflake,
        dateseq,
        told_until: hold_lease(Backend::Module, con),
    }
}

/// A lease of namespace `ns` held on `backend` for 30 s, renewed with an UNTIL 29 s from now:
/// the UNTIL its holder was told.
fn hold_lease(backend: Backend, con: &mut idgen_tests::Connection) -> i64 {
    let grant: Vec<i64> = backend
        .cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "30000", "MAX", "1"])
        .query(con)
        .unwrap();
    let until = (now_ms() + 29_000).to_string();
    let (w, t) = (grant[0].to_string(), grant[1].to_string());
    let renewed: Vec<i64> = backend
        .cmd(&[
            "WORKERID.RENEW",
            "ns",
            &w,
            &t,
            "TTL",
            "30000",
            "UNTIL",
            &until,
        ])
        .query(con)
        .unwrap();
    renewed[1]
}

/// A value's date (its first 8 digits) and count (the rest).
fn date_and_count(value: i64) -> (u32, u64) {
    let text = value.to_string();
    (text[..8].parse().unwrap(), text[8..].parse().unwrap())
}

/// The checks after a change, `case` naming it.
fn still_safe(con: &mut idgen_tests::Connection, live: &Live, case: &str) {
    match try_when_caught_up::<i64>(con, &cmd(&["SNOWFLAKE.NEXT"])) {
        Ok(id) => assert!(
            id > live.snowflake,
            "{case}: SNOWFLAKE.NEXT {id} after {}",
            live.snowflake
        ),
        Err(e) => panic!("{case}: SNOWFLAKE.NEXT refused: {e}"),
    }
    match cmd(&["DATESEQ.NEXT", "p"]).query::<i64>(con) {
        Ok(value) => {
            // Another zone may have moved the date on: a later date, never an earlier one; and
            // other DIGITS write the count in another width (never the same value).
            assert!(
                date_and_count(value) > date_and_count(live.dateseq),
                "{case}: DATESEQ.NEXT {value} after {}",
                live.dateseq
            );
            let zone: Vec<String> = cmd(&["CONFIG", "GET", "idgen.dateseq-timezone"])
                .query(con)
                .unwrap();
            let day = Calendar::new(&zone[1]).unwrap().day_of(now_ms());
            let key = format!("{{p}}:{}", day.date);
            let expires: i64 = cmd(&["PEXPIRETIME", &key]).query(con).unwrap();
            assert!(
                expires >= day.end_ms,
                "{case}: {key} expires at {expires}, before its day ends in {} at {}",
                zone[1],
                day.end_ms
            );
        }
        // Refused (evicting policy, a counter past the new DIGITS, too few replicas): nothing
        // given twice.
        Err(e) => {
            let text = error_text(&e);
            assert!(
                text.contains("maxmemory-policy")
                    || text.contains("DIGITS")
                    || text.contains("spent")
                    || text.starts_with("NOREPLICAS"),
                "{case}: DATESEQ.NEXT: {text}"
            );
        }
    }
    // The namespace lost: its next grant must start above what its holder was told.
    if cmd(&["DEL", "ns"]).query::<i64>(con).is_err() {
        return; // Writes refused (too few replicas): nothing was lost.
    }
    match cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "100", "MAX", "1"]).query::<Vec<i64>>(con) {
        Ok(grant) => assert!(
            grant[3] >= live.told_until,
            "{case}: granted above {}, below the UNTIL {} its holder was told",
            grant[3],
            live.told_until
        ),
        Err(e) => {
            let text = error_text(&e);
            assert!(
                text.starts_with("NOREPLICAS") || text.contains("maxmemory-policy"),
                "{case}: WORKERID.ACQUIRE: {text}"
            );
        }
    }
}

#[test]
fn every_setting_changed_under_live_state_repeats_nothing_and_expires_nothing_early() {
    let dir = data_dir("live-settings");
    let seal_key = dir.join("seal.key");
    std::fs::write(&seal_key, format!("{}\n", "ab".repeat(32))).unwrap();
    let seal_key = seal_key.display().to_string();

    // Every setting CONFIG SET takes on a running server is in VALUES.
    let server = Server::start(&[]);
    let mut con = server.connection();
    let all: Vec<String> = cmd(&["CONFIG", "GET", "idgen.*"]).query(&mut con).unwrap();
    for pair in all.chunks(2) {
        let name = pair[0].trim_start_matches("idgen.");
        let settable = cmd(&["CONFIG", "SET", &pair[0], &pair[1]])
            .query::<()>(&mut con)
            .is_ok();
        assert_eq!(
            settable,
            VALUES.iter().any(|(n, _)| *n == name),
            "{name}: CONFIG SET {} it, and VALUES {} it",
            if settable { "takes" } else { "refuses" },
            if settable { "lacks" } else { "has" }
        );
    }
    drop(con);

    let mut cases = 0;
    for (name, values, prefix) in VALUES
        .iter()
        .map(|(n, v)| (*n, *v, "idgen."))
        .chain(SERVER_VALUES.iter().map(|(n, v)| (*n, *v, "")))
    {
        for value in values {
            let value = if *value == "SEAL_KEY" {
                seal_key.as_str()
            } else {
                value
            };
            let server = past_its_lease_fence();
            let mut con = server.connection();
            let live = live_state(&mut con);
            let case = format!("CONFIG SET {prefix}{name} {value}");
            match cmd(&["CONFIG", "SET", &format!("{prefix}{name}"), value]).query::<()>(&mut con) {
                Ok(()) => {}
                Err(e) => {
                    // A refusal names the setting and what it would do.
                    let text = error_text(&e);
                    assert!(
                        text.contains(name) && text.contains("would"),
                        "{case}: {text}"
                    );
                }
            }
            still_safe(&mut con, &live, &case);
            cases += 1;
        }
    }
    eprintln!("{cases} settings' values walked under live state");
}

/// Sets the server's clock to `at` (Unix ms), from now on.
fn move_to(clock: &ClockShift, at: i64) {
    clock.set_ms(at - now_ms());
}

/// 2026-11-28T14:00:00Z: 23:00 on the 28th in +09:00, 02:00 on the 28th in -12:00.
const NOV_28_14H: i64 = 1_795_874_400_000;
const HOUR: i64 = 3_600_000;

/// The example: a counter made in +09:00 with a TTL of an hour, the zone moved to
/// -12:00 (the same date there), the clock past the key's old expiry but within its day in the
/// new zone: the counter goes on above what it gave, and its key is given the new day's life.
/// And a change that would take the date back is refused, saying when it may be made.
#[test]
fn a_time_zone_moved_under_a_live_counter_repeats_nothing() {
    let dir = data_dir("live-zone");
    let clock = ClockShift::new(&dir);
    move_to(&clock, NOV_28_14H);
    let server = Server::start_with(clock.options(Options::module(&[
        "dateseq-timezone",
        "+09:00",
        "dateseq-ttl",
        "3600",
    ])));
    let mut con = server.connection();
    let mut last = 0i64;
    for _ in 0..6 {
        last = cmd(&["DATESEQ.NEXT", "d"]).query(&mut con).unwrap();
    }
    assert_eq!(last, 20261128000006);
    let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "-12:00"])
        .query(&mut con)
        .unwrap();
    // The 28th ends at 2026-11-29T12:00Z in -12:00; the key lives an hour past it.
    let new_expiry = NOV_28_14H + 22 * HOUR + HOUR;
    let expires_at = |con: &mut idgen_tests::Connection| -> i64 {
        cmd(&["PEXPIRETIME", "{d}:20261128"]).query(con).unwrap()
    };
    // 14:30Z: the key made in +09:00 (expiring at 16:00Z) is still there: its next write gives
    // it the day's life in -12:00 (fixed instants: the real hour decides nothing here).
    move_to(&clock, NOV_28_14H + HOUR / 2);
    assert_eq!(expires_at(&mut con), NOV_28_14H + 2 * HOUR);
    let next: i64 = cmd(&["DATESEQ.NEXT", "d"]).query(&mut con).unwrap();
    assert_eq!(next, 20261128000007);
    assert_eq!(
        expires_at(&mut con),
        new_expiry,
        "the key kept its +09:00 life"
    );
    // Lost anyway (an expiry set by hand): 16:30Z, past its old life, in -12:00 04:30 on the
    // 28th: the counter goes on above its witness, and the key is made with the new life.
    let _: i64 = cmd(&[
        "PEXPIREAT",
        "{d}:20261128",
        &(NOV_28_14H + 2 * HOUR).to_string(),
    ])
    .query(&mut con)
    .unwrap();
    move_to(&clock, NOV_28_14H + 2 * HOUR + HOUR / 2);
    let next: i64 = cmd(&["DATESEQ.NEXT", "d"]).query(&mut con).unwrap();
    assert_eq!(next, 20261128000008, "the counter started its day again");
    assert_eq!(expires_at(&mut con), new_expiry);

    // Back to +09:00 at 16:30Z would take the date from the 28th back... forward: the 29th
    // there. From there, -12:00 again would take it back to the 28th: refused.
    let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "+09:00"])
        .query(&mut con)
        .unwrap();
    let first: i64 = cmd(&["DATESEQ.NEXT", "d"]).query(&mut con).unwrap();
    assert_eq!(first, 20261129000001);
    let err = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", "-12:00"])
        .query::<()>(&mut con)
        .map(|_| String::new())
        .unwrap_or_else(|e| error_text(&e));
    assert!(
        err.contains("would take DATESEQ dates back from 20261129")
            && err.contains("2026-11-29T12:00:00Z"),
        "{err}"
    );
    let zone: Vec<String> = cmd(&["CONFIG", "GET", "idgen.dateseq-timezone"])
        .query(&mut con)
        .unwrap();
    assert_eq!(zone[1], "+09:00", "a refused zone was kept");
}

/// The library's settings are fixed at install, so its "setting changed" is a reinstall: one
/// with a shorter horizon keeps its fences above every UNTIL holders were told under the longer
/// one (the installer writes it into the source), as the module keeps its old horizon for
/// fences. A namespace lost after the reinstall is granted again above what its holder holds.
#[test]
fn the_library_reinstalled_with_a_shorter_horizon_fences_above_what_holders_were_told() {
    let library = Backend::Library;
    let server = library.start(100, Options::default());
    library.wait_past_lease_fence(&server, 100);
    library.install(&server, 30_000);
    let mut con = server.connection();
    let told_until = hold_lease(library, &mut con);
    library.install(&server, 1_000);
    // Seen by the reinstalled library, then lost.
    let _: redis::Value = library
        .cmd(&["WORKERID.LIST", "ns"])
        .query(&mut con)
        .unwrap();
    let _: i64 = cmd(&["DEL", "ns"]).query(&mut con).unwrap();
    let regrant: Vec<i64> = library
        .cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "100", "MAX", "1"])
        .query(&mut con)
        .unwrap();
    assert!(
        regrant[3] >= told_until,
        "granted above {}, below the UNTIL {told_until} its holder was told",
        regrant[3]
    );
}

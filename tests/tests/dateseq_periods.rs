//! DATESEQ.NEXT and DATESEQ.CURRENT with `PERIOD day|month|year` on a real redis-server: each
//! period's counter starts again at its first ms in the configured zone (here east of UTC,
//! under a clock moved to just before a month's and a year's end), its key expires a TTL after
//! the period ends, and COUNT, DIGITS, STRING, SQIDS and the failover gap work with each.

use idgen_tests::clock::ClockShift;
use idgen_tests::redis::Connection;
use idgen_tests::{cmd, data_dir, error_of, now_ms, Options, Server};

/// 2026-11-30T16:00:00Z: midnight of 2026-12-01 in Shanghai, UTC+8.
const SHANGHAI_DECEMBER: i64 = 1_796_054_400_000;
/// 2026-12-31T16:00:00Z: midnight of 2027-01-01 in Shanghai.
const SHANGHAI_NEW_YEAR: i64 = 1_798_732_800_000;

fn next(con: &mut Connection, period: &str) -> i64 {
    cmd(&["DATESEQ.NEXT", "inv", "PERIOD", period])
        .query(con)
        .unwrap_or_else(|e| panic!("PERIOD {period}: {e}"))
}

/// Sets the server's clock to `at` (Unix ms), from now on.
fn move_to(clock: &ClockShift, at: i64) {
    clock.set_ms(at - now_ms());
}

#[test]
fn each_period_restarts_at_its_first_ms_in_a_zone_east_of_utc() {
    let dir = data_dir("periods");
    let clock = ClockShift::new(&dir);
    // 20 s before the month ends: time enough for the server to start on a busy machine.
    let start = SHANGHAI_DECEMBER - 20_000;
    move_to(&clock, start);
    let server = Server::start_with(clock.options(Options::module(&[
        "dateseq-timezone",
        "Asia/Shanghai",
        "dateseq-ttl",
        "3600",
    ])));
    let mut con = server.connection();
    // The last seconds of November in Shanghai (still 2026-11-30 in UTC).
    assert_eq!(next(&mut con, "day"), 20261130000001);
    assert_eq!(next(&mut con, "month"), 202611000001);
    assert_eq!(next(&mut con, "month"), 202611000002);
    assert_eq!(next(&mut con, "year"), 2026000001);
    let ttl: i64 = cmd(&["PTTL", "{inv}:202611"]).query(&mut con).unwrap();
    let to_end = SHANGHAI_DECEMBER + 3_600_000 - start;
    assert!(
        (to_end - 20_000..=to_end).contains(&ttl),
        "the month's key lives a TTL past the month: {ttl} ms, want about {to_end}"
    );

    move_to(&clock, SHANGHAI_DECEMBER + 1_000);
    assert_eq!(next(&mut con, "day"), 20261201000001);
    assert_eq!(
        next(&mut con, "month"),
        202612000001,
        "December starts at 1"
    );
    assert_eq!(next(&mut con, "year"), 2026000002, "the year carries on");
    let november: i64 = cmd(&["DATESEQ.CURRENT", "inv", "PERIOD", "month"])
        .query(&mut con)
        .unwrap();
    assert_eq!(november, 202612000001);

    move_to(&clock, SHANGHAI_NEW_YEAR - 1_000);
    assert_eq!(next(&mut con, "year"), 2026000003);
    move_to(&clock, SHANGHAI_NEW_YEAR + 1_000);
    assert_eq!(
        next(&mut con, "year"),
        2027000001,
        "2027 starts at 1 in Shanghai"
    );
    assert_eq!(next(&mut con, "month"), 202701000001);
    assert_eq!(next(&mut con, "day"), 20270101000001);
    let keys: Vec<String> = cmd(&["KEYS", "{inv}:*"]).query(&mut con).unwrap();
    for key in ["{inv}:2026", "{inv}:2027", "{inv}:202612", "{inv}:20270101"] {
        assert!(keys.iter().any(|k| k == key), "{key} missing from {keys:?}");
    }
}

#[test]
fn count_digits_string_and_sqids_work_with_every_period() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let label = |period: &str| -> i64 {
        let first = next(&mut server.connection(), period);
        first / 1_000_000
    };
    for period in ["day", "month", "year"] {
        let l = label(period);
        let range: Vec<i64> = cmd(&["DATESEQ.NEXT", "inv", "PERIOD", period, "COUNT", "5"])
            .query(&mut con)
            .unwrap();
        assert_eq!(
            range,
            vec![l * 1_000_000 + 2, l * 1_000_000 + 6],
            "{period}"
        );
        let short: i64 = cmd(&["DATESEQ.NEXT", "short", "DIGITS", "2", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        assert_eq!(short, l * 100 + 1, "{period}");
        let text: String = cmd(&["DATESEQ.NEXT", "inv", "STRING", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        assert_eq!(text, (l * 1_000_000 + 7).to_string(), "{period}");
        let sqid: String = cmd(&["DATESEQ.NEXT", "inv", "SQIDS", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        let back: Vec<i64> = cmd(&["IDGEN.DECODE", &sqid]).query(&mut con).unwrap();
        assert_eq!(back, vec![l * 1_000_000 + 8], "{period}");
        let current: i64 = cmd(&["DATESEQ.CURRENT", "inv", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        assert_eq!(current, l * 1_000_000 + 8, "{period}");
    }
}

#[test]
fn a_promoted_replica_skips_the_failover_gap_in_every_periods_counter() {
    let primary = Server::start(&["worker-id", "1", "dateseq-failover-gap", "500"]);
    let replica = Server::start(&["worker-id", "2", "dateseq-failover-gap", "500"]);
    replica.replicate(&primary);
    let (mut p, mut r) = (primary.connection(), replica.connection());
    let last: Vec<i64> = ["day", "month", "year"]
        .iter()
        .map(|period| next(&mut p, period))
        .collect();
    let acked: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut p).unwrap();
    assert_eq!(acked, 1);
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    for (period, last) in ["day", "month", "year"].iter().zip(last) {
        assert_eq!(next(&mut r, period), last + 500 + 1, "{period}");
        assert_eq!(next(&mut r, period), last + 500 + 2, "{period}: once");
    }
}

#[test]
fn a_period_that_is_not_one_is_refused_with_what_was_given() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for command in ["DATESEQ.NEXT", "DATESEQ.CURRENT"] {
        let err = error_of(&mut con, &cmd(&[command, "inv", "PERIOD", "week"]));
        assert_eq!(
            err, "ERR PERIOD 'week' must be day, month or year",
            "{command}"
        );
        let err = error_of(&mut con, &cmd(&[command, "inv", "PERIOD"]));
        assert!(err.contains("'PERIOD' needs a value"), "{command}: {err}");
        let err = error_of(
            &mut con,
            &cmd(&[command, "inv", "PERIOD", "day", "PERIOD", "year"]),
        );
        assert!(err.contains("more than once"), "{command}: {err}");
    }
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut con).unwrap();
    assert!(keys.is_empty(), "a refusal wrote {keys:?}");
}

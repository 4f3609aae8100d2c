//! DATESEQ.NEXT and DATESEQ.CURRENT with `PERIOD day|month|year` on a real redis-server, against
//! the module and the Functions library: each period's counter starts again at its first ms in
//! the zone (the module's east of UTC, the library's UTC, under a clock moved to just before a
//! month's and a year's end), the module's key expires a TTL after the period ends, and COUNT,
//! DIGITS, STRING, SQIDS (the module) and the failover gap work with each. A library installed
//! for a time zone labels as the module in that zone does, across its daylight-saving changes.

use idgen_tests::backend::{Backend, LIBRARY_FIRST_USE_GAP};
use idgen_tests::clock::ClockShift;
use idgen_tests::Connection;
use idgen_tests::{cmd, data_dir, error_of, now_ms, Options, Server};

idgen_tests::both!(
    each_period_restarts_at_its_first_ms,
    count_digits_and_string_work_with_every_period,
    a_promoted_replica_skips_the_failover_gap_in_every_periods_counter,
    a_period_that_is_not_one_is_refused_with_what_was_given,
);

/// 2026-11-30T16:00:00Z: midnight of 2026-12-01 in Shanghai, UTC+8.
const SHANGHAI_DECEMBER: i64 = 1_796_054_400_000;
/// 2026-12-31T16:00:00Z: midnight of 2027-01-01 in Shanghai.
const SHANGHAI_NEW_YEAR: i64 = 1_798_732_800_000;
/// Shanghai's offset from UTC; the library's periods are UTC's.
const EIGHT_HOURS: i64 = 8 * 3_600_000;

fn next(b: Backend, con: &mut Connection, period: &str) -> i64 {
    b.cmd(&["DATESEQ.NEXT", "inv", "PERIOD", period])
        .query(con)
        .unwrap_or_else(|e| panic!("PERIOD {period}: {e}"))
}

/// Sets the server's clock to `at` (Unix ms), from now on.
fn move_to(clock: &ClockShift, at: i64) {
    clock.set_ms(at - now_ms());
}

/// The module in Shanghai's time zone, the library in UTC (it has no other): the same labels
/// either side of each backend's midnight.
fn each_period_restarts_at_its_first_ms(b: Backend) {
    let dir = data_dir("periods");
    let clock = ClockShift::new(&dir);
    let shift = match b {
        Backend::Module => 0,
        Backend::Library => EIGHT_HOURS,
    };
    let (december, new_year) = (SHANGHAI_DECEMBER + shift, SHANGHAI_NEW_YEAR + shift);
    // 20 s before the month ends: time enough for the server to start on a busy machine.
    let start = december - 20_000;
    move_to(&clock, start);
    let server = b.start(
        60_000,
        clock.options(Options::module(&[
            "dateseq-timezone",
            "Asia/Shanghai",
            "dateseq-ttl",
            "3600",
        ])),
    );
    let mut con = server.connection();
    // The last seconds of November (in Shanghai, still 2026-11-30 in UTC).
    assert_eq!(
        next(b, &mut con, "day"),
        20261130000000 + b.first_count() as i64
    );
    assert_eq!(next(b, &mut con, "month"), 202611000001);
    assert_eq!(next(b, &mut con, "month"), 202611000002);
    assert_eq!(next(b, &mut con, "year"), 2026000001);
    if b == Backend::Module {
        let ttl: i64 = cmd(&["PTTL", "{inv}:202611"]).query(&mut con).unwrap();
        let to_end = december + 3_600_000 - start;
        assert!(
            (to_end - 20_000..=to_end).contains(&ttl),
            "the month's key lives a TTL past the month: {ttl} ms, want about {to_end}"
        );
    }

    move_to(&clock, december + 1_000);
    assert_eq!(next(b, &mut con, "day"), 20261201000001);
    assert_eq!(
        next(b, &mut con, "month"),
        202612000001,
        "December starts at 1"
    );
    assert_eq!(next(b, &mut con, "year"), 2026000002, "the year carries on");
    let november: i64 = b
        .cmd(&["DATESEQ.CURRENT", "inv", "PERIOD", "month"])
        .query(&mut con)
        .unwrap();
    assert_eq!(november, 202612000001);

    move_to(&clock, new_year - 1_000);
    assert_eq!(next(b, &mut con, "year"), 2026000003);
    move_to(&clock, new_year + 1_000);
    assert_eq!(next(b, &mut con, "year"), 2027000001, "2027 starts at 1");
    assert_eq!(next(b, &mut con, "month"), 202701000001);
    assert_eq!(next(b, &mut con, "day"), 20270101000001);
    let (keys, wanted): (Vec<String>, [&str; 4]) = match b {
        Backend::Module => (
            cmd(&["KEYS", "{inv}:*"]).query(&mut con).unwrap(),
            ["{inv}:2026", "{inv}:2027", "{inv}:202612", "{inv}:20270101"],
        ),
        Backend::Library => (
            cmd(&["HKEYS", "inv"]).query(&mut con).unwrap(),
            ["year:2026", "year:2027", "month:202612", "day:20270101"],
        ),
    };
    for key in wanted {
        assert!(keys.iter().any(|k| k == key), "{key} missing from {keys:?}");
    }
}

/// SQIDS too where the module serves (the library has no Sqids).
fn count_digits_and_string_work_with_every_period(b: Backend) {
    let server = b.start(60_000, Options::default());
    let mut con = server.connection();
    for period in ["day", "month", "year"] {
        let first = next(b, &mut con, period);
        let label = first / 1_000_000;
        let range: Vec<i64> = b
            .cmd(&["DATESEQ.NEXT", "inv", "PERIOD", period, "COUNT", "5"])
            .query(&mut con)
            .unwrap();
        assert_eq!(range, vec![first + 1, first + 5], "{period}");
        let short: i64 = b
            .cmd(&["DATESEQ.NEXT", "short", "DIGITS", "5", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        assert_eq!(short / 100_000, label, "{period}");
        let text: String = b
            .cmd(&["DATESEQ.NEXT", "inv", "STRING", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        assert_eq!(text, (first + 6).to_string(), "{period}");
        let mut last = first + 6;
        if b == Backend::Module {
            let sqid: String = cmd(&["DATESEQ.NEXT", "inv", "SQIDS", "PERIOD", period])
                .query(&mut con)
                .unwrap();
            let back: Vec<i64> = cmd(&["IDGEN.DECODE", &sqid]).query(&mut con).unwrap();
            last += 1;
            assert_eq!(back, vec![last], "{period}");
        }
        let current: i64 = b
            .cmd(&["DATESEQ.CURRENT", "inv", "PERIOD", period])
            .query(&mut con)
            .unwrap();
        assert_eq!(current, last, "{period}");
    }
}

/// The module skips its configured gap; the library its first-use gap.
fn a_promoted_replica_skips_the_failover_gap_in_every_periods_counter(b: Backend) {
    let gap = match b {
        Backend::Module => 500,
        Backend::Library => LIBRARY_FIRST_USE_GAP as i64,
    };
    let node = |worker: &str| {
        let gap = gap.to_string();
        b.start(
            60_000,
            Options::module(&["worker-id", worker, "dateseq-failover-gap", &gap]),
        )
    };
    let (primary, replica) = (node("1"), node("2"));
    replica.replicate(&primary);
    let (mut p, mut r) = (primary.connection(), replica.connection());
    let last: Vec<i64> = ["day", "month", "year"]
        .iter()
        .map(|period| next(b, &mut p, period))
        .collect();
    let acked: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut p).unwrap();
    assert_eq!(acked, 1);
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    for (period, last) in ["day", "month", "year"].iter().zip(last) {
        assert_eq!(next(b, &mut r, period), last + gap + 1, "{period}");
        assert_eq!(next(b, &mut r, period), last + gap + 2, "{period}: once");
    }
}

fn a_period_that_is_not_one_is_refused_with_what_was_given(b: Backend) {
    let server = b.start(60_000, Options::default());
    let mut con = server.connection();
    for command in ["DATESEQ.NEXT", "DATESEQ.CURRENT"] {
        let err = error_of(&mut con, &b.cmd(&[command, "inv", "PERIOD", "week"]));
        assert_eq!(
            err, "ERR PERIOD 'week' must be day, month or year",
            "{command}"
        );
        let err = error_of(&mut con, &b.cmd(&[command, "inv", "PERIOD"]));
        assert!(err.contains("'PERIOD' needs a value"), "{command}: {err}");
        let err = error_of(
            &mut con,
            &b.cmd(&[command, "inv", "PERIOD", "day", "PERIOD", "year"]),
        );
        assert!(err.contains("more than once"), "{command}: {err}");
    }
    let mut keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut con).unwrap();
    // The library's text, where it is installed as scripts.
    keys.retain(|k| k != idgen_functions::scripts::KEY);
    assert!(keys.is_empty(), "a refusal wrote {keys:?}");
}

/// The module with `idgen.dateseq-timezone America/New_York` and the library installed for
/// that zone (its offsets written in by the installer), on one moved clock: the same label at
/// each instant either side of the zone's midnights around its 2026 daylight-saving changes
/// (days of 23 and 25 hours) and of a month's end. In UTC the library would label several of
/// them a day apart.
#[test]
fn a_library_installed_for_a_zone_labels_as_the_module_in_that_zone() {
    const ZONE: &str = "America/New_York";
    let dir = data_dir("zone");
    let clock = ClockShift::new(&dir);
    let module = Server::start_with(clock.options(Options::module(&["dateseq-timezone", ZONE])));
    let library = Server::start_with(Options {
        no_module: true,
        env: clock.env(),
        ..Options::default()
    });
    let settings = idgen_functions::Settings {
        time_zone: ZONE.to_string(),
        ..Default::default()
    };
    idgen_tests::library::install_with(&mut library.connection(), &settings);
    let (mut m, mut l) = (module.connection(), library.connection());
    // (UTC instant, the period, its label in New York).
    let hour = 3_600_000;
    let instants: &[(i64, &str, i64)] = &[
        // 2026-03-08: clocks go forward at 07:00Z; the day starts at 05:00Z (EST), the next
        // at 04:00Z (EDT).
        (1_772_945_999_000, "day", 20260307),
        (1_772_946_001_000, "day", 20260308),
        (1_772_946_000_000 + 23 * hour - 1_000, "day", 20260308),
        (1_772_946_000_000 + 23 * hour + 1_000, "day", 20260309),
        // April starts at 04:00Z (EDT).
        (1_775_015_999_000, "month", 202603),
        (1_775_016_001_000, "month", 202604),
        // 2026-11-01: clocks go back at 06:00Z; the day starts at 04:00Z (EDT), the next at
        // 05:00Z (EST).
        (1_793_505_599_000, "day", 20261031),
        (1_793_505_601_000, "day", 20261101),
        (1_793_505_600_000 + 25 * hour - 1_000, "day", 20261101),
        (1_793_505_600_000 + 25 * hour + 1_000, "day", 20261102),
    ];
    for &(at, period, label) in instants {
        move_to(&clock, at);
        let from_module = next(Backend::Module, &mut m, period);
        let from_library = next(Backend::Library, &mut l, period);
        assert_eq!(
            (from_module / 1_000_000, from_library / 1_000_000),
            (label, label),
            "at {at} ({period}): module {from_module}, library {from_library}"
        );
    }
}

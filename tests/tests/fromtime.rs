//! SNOWFLAKE.FROMTIME, UUID7.FROMTIME and ULID.FROMTIME on a real redis-server: the IDs of a
//! point in time decode back to it, bound the IDs NEXT makes around it, and stop at the edges
//! of what each layout holds with an error that gives the range.

use idgen_tests::{cmd, decode, error_of, now_ms, Server};

/// Every profile, with its epoch and the last ms its time field reaches.
const PROFILES: [&str; 4] = ["twitter", "instagram", "sonyflake", "js53"];

fn fromtime(
    con: &mut dyn idgen_tests::redis::ConnectionLike,
    command: &str,
    t: &str,
    max: bool,
) -> i64 {
    let mut c = cmd(&[command, t]);
    if max {
        c.arg("MAX");
    }
    c.query(con)
        .unwrap_or_else(|e| panic!("{command} {t}: {e}"))
}

#[test]
fn a_snowflake_of_a_time_decodes_to_its_tick_at_both_edges_of_every_layout() {
    for profile in PROFILES {
        let server = Server::start(&["layout", profile]);
        let mut con = server.connection();
        let epoch = decode(&mut con, 0).epoch_ms;
        let tick_ms: i64 = if profile == "sonyflake" { 10 } else { 1 };
        // The first tick, a tick now, and the layout's last tick (found from the error's range).
        let err = error_of(
            &mut con,
            &cmd(&["SNOWFLAKE.FROMTIME", &(epoch - 1).to_string()]),
        );
        assert!(
            err.starts_with("ERR time ") && err.contains(&format!("({epoch})")),
            "{profile}: {err}"
        );
        let last_ms: i64 = err
            .rsplit('(')
            .next()
            .and_then(|s| s.trim_end_matches(')').parse().ok())
            .unwrap_or_else(|| panic!("{profile}: no last ms in {err}"));
        for t in [epoch, now_ms(), last_ms] {
            let low = fromtime(&mut con, "SNOWFLAKE.FROMTIME", &t.to_string(), false);
            let high = fromtime(&mut con, "SNOWFLAKE.FROMTIME", &t.to_string(), true);
            assert!(low >= 0 && high >= low, "{profile} {t}: {low} {high}");
            let tick_start = t - (t - epoch) % tick_ms;
            assert_eq!(decode(&mut con, low).time_ms, tick_start, "{profile} {t}");
            assert_eq!(decode(&mut con, high).time_ms, tick_start, "{profile} {t}");
            let d = decode(&mut con, high);
            assert!(d.sequence > 0, "{profile}: MAX fills the sequence");
        }
        let last = fromtime(&mut con, "SNOWFLAKE.FROMTIME", &last_ms.to_string(), true);
        let bits = if profile == "js53" { 53 } else { 63 };
        assert_eq!(last, ((1u64 << bits) - 1) as i64, "{profile}: the last ID");
        let err = error_of(
            &mut con,
            &cmd(&["SNOWFLAKE.FROMTIME", &(last_ms + 1).to_string()]),
        );
        assert!(
            err.contains("is outside what these IDs hold"),
            "{profile}: {err}"
        );
    }
}

#[test]
fn fromtime_bounds_the_ids_next_makes_and_reads_iso_8601() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let before = now_ms();
    let low = fromtime(&mut con, "SNOWFLAKE.FROMTIME", &before.to_string(), false);
    let ids: Vec<i64> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "1000"])
        .query(&mut con)
        .unwrap();
    let after = now_ms() + 1_000; // the generator may borrow up to max-drift-ms ahead
    let high = fromtime(&mut con, "SNOWFLAKE.FROMTIME", &after.to_string(), true);
    assert!(ids.iter().all(|&id| low <= id && id <= high));
    // One instant, three spellings.
    let iso: Vec<i64> = [
        "1795305600000",
        "2026-11-22",
        "2026-11-22T00:00:00Z",
        "2026-11-22T08:00:00+08:00",
    ]
    .iter()
    .map(|t| fromtime(&mut con, "SNOWFLAKE.FROMTIME", t, false))
    .collect();
    assert!(iso.windows(2).all(|w| w[0] == w[1]), "{iso:?}");
    assert_eq!(decode(&mut con, iso[0]).time, "2026-11-22T00:00:00.000Z");
}

#[test]
fn a_uuid_or_ulid_of_a_time_sorts_around_next_and_decodes_to_it() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for (form, next) in [("UUID7", "UUID7.NEXT"), ("ULID", "ULID.NEXT")] {
        let at = |con: &mut dyn idgen_tests::redis::ConnectionLike, t: i64, max: bool| {
            let mut c = cmd(&[&format!("{form}.FROMTIME"), &t.to_string()]);
            if max {
                c.arg("MAX");
            }
            c.query::<String>(con).unwrap()
        };
        let low = at(&mut con, now_ms(), false);
        let id: String = cmd(&[next]).query(&mut con).unwrap();
        let high = at(&mut con, now_ms() + 1_000, true);
        // Both forms' text sorts as their numbers do (lower-case hex, Crockford base32).
        assert!(low <= id && id <= high, "{form}: {low} {id} {high}");
        for t in [0, 1_795_305_600_000, (1i64 << 48) - 1] {
            for max in [false, true] {
                let text = at(&mut con, t, max);
                let decoded: Vec<idgen_tests::redis::Value> =
                    cmd(&[&format!("{form}.DECODE"), &text])
                        .query(&mut con)
                        .unwrap();
                let time_ms = match &decoded[1] {
                    idgen_tests::redis::Value::Int(ms) => *ms,
                    other => panic!("{form} {text}: {other:?}"),
                };
                assert_eq!(time_ms, t, "{form} {text}");
            }
        }
        let err = error_of(
            &mut con,
            &cmd(&[&format!("{form}.FROMTIME"), &(1i64 << 48).to_string()]),
        );
        assert!(err.contains("(281474976710655)"), "{form}: {err}");
    }
}

#[test]
fn bad_times_and_options_are_refused_with_what_was_given() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for command in ["SNOWFLAKE.FROMTIME", "UUID7.FROMTIME", "ULID.FROMTIME"] {
        let err = error_of(&mut con, &cmd(&[command, "yesterday"]));
        assert!(
            err.starts_with("ERR 'yesterday' is not a time: give Unix milliseconds, or ISO-8601"),
            "{command}: {err}"
        );
        let err = error_of(&mut con, &cmd(&[command, "2026-02-30"]));
        assert!(
            err.contains("'2026-02-30' is not a time"),
            "{command}: {err}"
        );
        let err = error_of(&mut con, &cmd(&[command, "0", "MIN"]));
        assert!(err.contains("'MIN' is not an option"), "{command}: {err}");
        let err = error_of(&mut con, &cmd(&[command, "0", "MAX", "MAX"]));
        assert!(err.contains("more than once"), "{command}: {err}");
        let err = error_of(&mut con, &cmd(&[command]));
        assert!(
            err.contains("wrong number of arguments"),
            "{command}: {err}"
        );
        let err = error_of(&mut con, &cmd(&[command, "\u{ff}\u{fe}"]));
        assert!(err.contains("is not a time"), "{command}: {err}");
    }
    let _: String = cmd(&["PING"]).query(&mut con).unwrap();
}

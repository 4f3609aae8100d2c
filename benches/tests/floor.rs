//! DATESEQ.NEXT's API floor (benches/floor/dateseq_floor.c), the instruction table's yardstick,
//! run for real beside the module: it must do the work DATESEQ.NEXT does for a counter that
//! exists, the exact ACL check on the counter key included, or the floor it shows is too low.
//! The decoders' floor (benches/floor/decode_floor.c, benches/forms.sh's plain form for them)
//! must reply with the very maps the decoders reply with.

use std::path::PathBuf;
use std::sync::OnceLock;

use idgen_benches::compare::instructions::FLOOR_SOURCE;

/// The decoders' floor module.
const DECODE_FLOOR_SOURCE: &str = "benches/floor/decode_floor.c";
use idgen_tests::redis::Value;
use idgen_tests::{cmd, error_text, Options, Server};

/// A server with the module (DIGITS 10, as the table counts) and the floor module beside it,
/// built once per test process: the tests run at once, and two builds to one path would race.
fn server() -> Server {
    static FLOOR: OnceLock<PathBuf> = OnceLock::new();
    let floor = FLOOR.get_or_init(|| idgen_tests::compiled(FLOOR_SOURCE));
    let floor = floor.display().to_string();
    Server::start_with(Options::module(&["dateseq-digits", "10"]).server(&["--loadmodule", &floor]))
}

#[test]
fn the_floor_moves_a_dated_counter_on_as_dateseq_next_does() {
    let server = server();
    let mut con = server.connection();
    let ours: i64 = cmd(&["DATESEQ.NEXT", "floored"]).query(&mut con).unwrap();
    let first: i64 = cmd(&["FLOOR.DATESEQ", "floored"]).query(&mut con).unwrap();
    let second: i64 = cmd(&["FLOOR.DATESEQ-UNCHECKED", "floored"])
        .query(&mut con)
        .unwrap();
    // The same key, "{floored}:yyyyMMdd" (both in UTC), and the same value's form.
    assert_eq!(first, ours + 1, "{ours} then {first}");
    assert_eq!(second, ours + 2);
    let date = ours / 10_000_000_000;
    let key = format!("{{floored}}:{date}");
    let count: String = cmd(&["GET", &key]).query(&mut con).unwrap();
    assert_eq!(count, "3");
    let ttl: i64 = cmd(&["PTTL", &key]).query(&mut con).unwrap();
    assert!(ttl > 0, "the counter has no TTL: {ttl}");
    // A count that gains a digit is rewritten whole.
    let _: () = cmd(&["SET", &key, "9"]).query(&mut con).unwrap();
    let tenth: i64 = cmd(&["FLOOR.DATESEQ", "floored"]).query(&mut con).unwrap();
    assert_eq!(tenth, date * 10_000_000_000 + 10);
    let count: String = cmd(&["GET", &key]).query(&mut con).unwrap();
    assert_eq!(count, "10");
    // What is not a count of at most 18 digits is refused and left as it was.
    for text in ["x1", "1234567890123456789", ""] {
        let _: () = cmd(&["SET", &key, text]).query(&mut con).unwrap();
        let err = cmd(&["FLOOR.DATESEQ", "floored"])
            .query::<Value>(&mut con)
            .map_err(|e| error_text(&e))
            .unwrap_err();
        assert!(err.contains("does not hold a count"), "{text:?}: {err}");
        let kept: String = cmd(&["GET", &key]).query(&mut con).unwrap();
        assert_eq!(kept, text);
    }
}

#[test]
fn the_floor_refuses_whom_dateseq_next_refuses() {
    let server = server();
    let mut admin = server.connection();
    let _: () = cmd(&[
        "ACL",
        "SETUSER",
        "prefix-only",
        "on",
        "nopass",
        "+@all",
        "~floored",
    ])
    .query(&mut admin)
    .unwrap();
    let mut con = server.connection();
    let _: () = cmd(&["AUTH", "prefix-only", "x"]).query(&mut con).unwrap();
    let refusal = |words: &[&str], con: &mut dyn idgen_tests::redis::ConnectionLike| {
        cmd(words)
            .query::<Value>(con)
            .map_err(|e| error_text(&e))
            .err()
            .unwrap_or_default()
    };
    for command in ["DATESEQ.NEXT", "FLOOR.DATESEQ"] {
        let err = refusal(&[command, "floored"], &mut con);
        assert!(err.starts_with("NOPERM"), "{command}: {err:?}");
    }
    // What the check costs is the difference between these two rows of the table.
    let err = refusal(&["FLOOR.DATESEQ-UNCHECKED", "floored"], &mut con);
    assert_eq!(err, "", "the unchecked floor checked");
}

#[test]
fn the_decoders_floor_replies_with_the_decoders_maps() {
    let floor = idgen_tests::compiled(DECODE_FLOOR_SOURCE);
    let server = Server::start_with(
        Options::module(&[]).server(&["--loadmodule", &floor.display().to_string()]),
    );
    let mut con = server.connection();
    let mut ids: Vec<(&str, String)> = Vec::new();
    for _ in 0..20 {
        let snowflake: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
        ids.push(("SNOWFLAKE.DECODE", snowflake.to_string()));
        ids.push((
            "UUID7.DECODE",
            cmd(&["UUID7.NEXT"]).query(&mut con).unwrap(),
        ));
        ids.push(("ULID.DECODE", cmd(&["ULID.NEXT"]).query(&mut con).unwrap()));
    }
    // Edges: the first and last millisecond, every random bit set, upper and lower case.
    ids.push(("SNOWFLAKE.DECODE", "0".into()));
    ids.push(("SNOWFLAKE.DECODE", i64::MAX.to_string()));
    ids.push((
        "UUID7.DECODE",
        "00000000-0000-7000-8000-000000000000".into(),
    ));
    ids.push((
        "UUID7.DECODE",
        "019AC8E6-1C2A-7FFF-BFFF-FFFFFFFFFFFF".into(),
    ));
    ids.push(("ULID.DECODE", "00000000000000000000000000".into()));
    ids.push(("ULID.DECODE", "01kb4ecr3ezzzzzzzzzzzzzzzz".into()));
    for (decoder, id) in &ids {
        let ours: Value = cmd(&[decoder, id]).query(&mut con).unwrap();
        let floor: Value = cmd(&[&format!("FLOOR.{decoder}"), id])
            .query(&mut con)
            .unwrap();
        assert_eq!(floor, ours, "{decoder} {id}");
    }
}

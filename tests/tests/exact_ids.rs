//! IDs reach callers that cannot hold a 64-bit integer (Lua scripts, JavaScript) exactly: as
//! strings from scripts always, and from any client that asks with STRING.

use std::collections::HashSet;

use idgen_tests::redis::Value;
use idgen_tests::{cmd, Server};

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

#[test]
fn scripts_get_exact_snowflake_ids_as_strings() {
    let server = Server::start(&["worker-id", "9"]);
    let mut con = server.connection();
    let script = "local t = {} for i = 1, 300 do t[i] = redis.call('SNOWFLAKE.NEXT') end return t";
    let ids: Vec<Value> = cmd(&["EVAL", script, "0"]).query(&mut con).unwrap();
    let ids: Vec<i64> = ids.iter().map(|v| text(v).parse().unwrap()).collect();
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        300,
        "a script saw repeated IDs"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    for id in [ids[0], ids[299]] {
        assert_eq!(
            idgen_tests::decode(&mut con, id).worker,
            9,
            "{id} is not an ID this server made"
        );
    }
    // A batch too, and arithmetic still works on the strings inside Lua.
    let batch: Vec<Value> = cmd(&[
        "EVAL",
        "return redis.call('SNOWFLAKE.NEXT', 'COUNT', 3)",
        "0",
    ])
    .query(&mut con)
    .unwrap();
    assert!(batch
        .iter()
        .all(|v| text(v).parse::<i64>().unwrap() > ids[299]));
    let sum: i64 = cmd(&[
        "EVAL",
        "return redis.call('DATESEQ.NEXT', KEYS[1]) + 0",
        "1",
        "p",
    ])
    .query(&mut con)
    .unwrap();
    assert!(sum > 20_000_000_000_000);
}

/// The module asks Redis whether a call comes from a script once per connection, and remembers
/// the connections that call outside one (by client ID, in 256 slots). Every slot taken, the
/// scripts those connections run still get strings, before and after SCRIPT FLUSH makes a new
/// Lua client, and through FCALL.
#[test]
fn connections_remembered_as_plain_callers_still_get_strings_from_their_scripts() {
    let server = Server::start(&[]);
    let mut cons: Vec<_> = (0..300).map(|_| server.connection()).collect();
    let _: () = cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=ids\nredis.register_function('next', function() return redis.call('SNOWFLAKE.NEXT') end)",
    ])
    .query(&mut cons[0])
    .map(|_: String| ())
    .unwrap();
    let plain = |con: &mut dyn idgen_tests::redis::ConnectionLike| {
        let v: Value = cmd(&["SNOWFLAKE.NEXT"]).query(con).unwrap();
        assert!(matches!(v, Value::Int(_)), "a plain call got {v:?}");
        let v: Value = cmd(&["DATESEQ.NEXT", "d", "DIGITS", "10"])
            .query(con)
            .unwrap();
        assert!(matches!(v, Value::Int(_)), "a plain call got {v:?}");
    };
    let scripted = |con: &mut dyn idgen_tests::redis::ConnectionLike| {
        for words in [
            &["EVAL", "return redis.call('SNOWFLAKE.NEXT')", "0"][..],
            &[
                "EVAL",
                "return redis.call('DATESEQ.NEXT', KEYS[1], 'DIGITS', 10)",
                "1",
                "d",
            ],
            &["FCALL", "next", "0"],
        ] {
            let v: Value = cmd(words).query(con).unwrap();
            assert!(
                matches!(v, Value::BulkString(_)),
                "{words:?} got {v:?}: a script was taken for a plain caller"
            );
        }
    };
    for con in &mut cons {
        plain(con);
    }
    for con in cons.iter_mut().step_by(23) {
        scripted(con);
        plain(con);
    }
    let _: () = cmd(&["SCRIPT", "FLUSH"]).query(&mut cons[1]).unwrap();
    for con in cons.iter_mut().step_by(31) {
        scripted(con);
        plain(con);
    }
}

#[test]
fn scripts_get_exact_wide_date_sequences() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let mut seen = HashSet::new();
    for _ in 0..50 {
        let v: Value = cmd(&[
            "EVAL",
            "return redis.call('DATESEQ.NEXT', KEYS[1], 'DIGITS', 10)",
            "1",
            "w",
        ])
        .query(&mut con)
        .unwrap();
        let v: i64 = text(&v).parse().unwrap();
        assert!(v > 1 << 53, "{v} is not above 2^53: nothing was at stake");
        assert!(
            seen.insert(v),
            "{v} repeated: the script saw a rounded value"
        );
    }
    let current: Value = cmd(&[
        "EVAL",
        "return redis.call('DATESEQ.CURRENT', KEYS[1], 'DIGITS', 10)",
        "1",
        "w",
    ])
    .query(&mut con)
    .unwrap();
    assert_eq!(
        text(&current).parse::<i64>().unwrap(),
        *seen.iter().max().unwrap()
    );
}

#[test]
fn string_asks_for_strings_from_any_client_in_resp2_and_resp3() {
    let server = Server::start(&[]);
    for mut con in [server.connection(), server.connection_resp3()] {
        let one: Value = cmd(&["SNOWFLAKE.NEXT", "STRING"]).query(&mut con).unwrap();
        let one: i64 = text(&one).parse().unwrap();
        let many: Vec<Value> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "3", "STRING"])
            .query(&mut con)
            .unwrap();
        let many: Vec<i64> = many.iter().map(|v| text(v).parse().unwrap()).collect();
        assert!(one < many[0] && many[0] < many[1] && many[1] < many[2]);
        let plain: Value = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
        assert!(
            matches!(plain, Value::Int(id) if id > many[2]),
            "without STRING: {plain:?}"
        );
        let range: Vec<Value> = cmd(&["DATESEQ.NEXT", "s", "COUNT", "5", "STRING"])
            .query(&mut con)
            .unwrap();
        let range: Vec<i64> = range.iter().map(|v| text(v).parse().unwrap()).collect();
        assert_eq!(range[1] - range[0], 4);
        let current: Value = cmd(&["DATESEQ.CURRENT", "s", "STRING"])
            .query(&mut con)
            .unwrap();
        assert_eq!(text(&current).parse::<i64>().unwrap(), range[1]);
    }
}

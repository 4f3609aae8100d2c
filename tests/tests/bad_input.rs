//! Every malformed call gets an error reply, and the server stays up and unchanged.

use idgen_tests::{cmd, error_of, Server};

#[test]
fn malformed_calls_get_errors_and_the_server_carries_on() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let huge = "9".repeat(100);
    let cases: &[(&[&str], &str)] = &[
        (&["SNOWFLAKE.NEXT", "COUNT"], "ERR syntax error"),
        (
            &["SNOWFLAKE.NEXT", "STRING", "STRING", "x"],
            "ERR syntax error",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "1", "COUNT", "2"],
            "ERR syntax error: 'COUNT' is given more than once",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "1", "STRING", "SEALED", "x"],
            "ERR wrong number of arguments",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "0"],
            "ERR COUNT 0 must be between 1 and 100000",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "100001"],
            "ERR COUNT 100001 must be between 1 and 100000",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "-5"],
            "ERR COUNT -5 must be between",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "ten"],
            "ERR value is not an integer",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "+3"],
            "ERR value is not an integer",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", &huge],
            "ERR value is not an integer",
        ),
        (&["SNOWFLAKE.NEXT", "LIMIT", "3"], "ERR syntax error"),
        (&["SNOWFLAKE.DECODE"], "ERR wrong number of arguments"),
        (
            &["SNOWFLAKE.DECODE", "1", "2"],
            "ERR wrong number of arguments",
        ),
        (&["SNOWFLAKE.DECODE", "abc"], "ERR value is not an integer"),
        (
            &["SNOWFLAKE.DECODE", "-1"],
            "ERR id -1 must be between 0 and 9223372036854775807",
        ),
        (&["SNOWFLAKE.DECODE", "1.5"], "ERR value is not an integer"),
        (&["DATESEQ.NEXT"], "ERR wrong number of arguments"),
        (&["DATESEQ.NEXT", "p", "DIGITS"], "ERR syntax error"),
        (
            &["DATESEQ.NEXT", "p", "COUNT", "0"],
            "ERR COUNT 0 must be between 1 and 1000000000",
        ),
        (
            &["DATESEQ.NEXT", "p", "COUNT", &huge],
            "ERR value is not an integer",
        ),
        (&["DATESEQ.CURRENT", "p", "COUNT", "2"], "ERR syntax error"),
        (
            &[
                "DATESEQ.NEXT",
                "p",
                "DIGITS",
                "3",
                "COUNT",
                "1",
                "STRING",
                "PERIOD",
                "day",
                "SEALED",
                "x",
            ],
            "ERR wrong number of arguments",
        ),
        (
            &["DATESEQ.NEXT", "p", "DIGITS", "0"],
            "ERR DIGITS must be between 1 and 10",
        ),
        (
            &["DATESEQ.NEXT", "p", "DIGITS", "11"],
            "ERR DIGITS must be between 1 and 10",
        ),
        (
            &["DATESEQ.NEXT", "p", "DIGITS", "x"],
            "ERR value is not an integer",
        ),
        (&["DATESEQ.NEXT", "p", "WIDTH", "3"], "ERR syntax error"),
        (&["DATESEQ.CURRENT"], "ERR wrong number of arguments"),
        (
            &["DATESEQ.CURRENT", "p", "DIGITS", &huge],
            "ERR value is not an integer",
        ),
        (
            &["CONFIG", "SET", "idgen.max-drift-ms", "-1"],
            "ERR CONFIG SET failed",
        ),
        (
            &["CONFIG", "SET", "idgen.dateseq-digits", "11"],
            "ERR CONFIG SET failed",
        ),
        (
            &["CONFIG", "SET", "idgen.sequence-random-start", "maybe"],
            "ERR CONFIG SET failed",
        ),
        (
            &["CONFIG", "SET", "idgen.dateseq-timezone", ""],
            "ERR CONFIG SET failed",
        ),
    ];
    for (words, want) in cases {
        let err = error_of(&mut con, &cmd(words));
        assert!(
            err.starts_with(want),
            "{words:?}: got '{err}', want '{want}...'"
        );
    }
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut con).unwrap();
    assert!(keys.is_empty(), "refused calls wrote {keys:?}");
    assert_eq!(server.info_field("ids_issued"), "0");
    let pong: String = cmd(&["PING"]).query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    assert!(id > 0);
}

#[test]
fn options_given_twice_unknown_or_without_a_value_are_named() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for (words, says) in [
        (
            &["DATESEQ.NEXT", "p", "COUNT", "1", "count", "2"][..],
            "ERR syntax error: 'count' is given more than once",
        ),
        (
            &["SNOWFLAKE.NEXT", "STRING", "STRING"][..],
            "ERR syntax error: 'STRING' is given more than once",
        ),
        (
            &["WORKERID.ACQUIRE", "ns", "TTL", "1000", "TTL", "2000"][..],
            "ERR syntax error: 'TTL' is given more than once",
        ),
        (
            &["SNOWFLAKE.NEXT", "BOGUS"][..],
            "ERR syntax error: 'BOGUS' is not an option of this command",
        ),
        (
            &["DATESEQ.NEXT", "p", "DIGITS"][..],
            "ERR syntax error: 'DIGITS' needs a value",
        ),
    ] {
        assert_eq!(error_of(&mut con, &cmd(words)), says, "{words:?}");
    }
    let value: i64 = cmd(&["DATESEQ.NEXT", "p"]).query(&mut con).unwrap();
    assert_eq!(
        value % 1_000_000,
        1,
        "nothing was issued by the refused calls"
    );
}

#[test]
fn a_wrong_arity_inside_multi_aborts_exec_as_for_redis_commands() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for words in [
        &["DATESEQ.NEXT"][..],
        &["SNOWFLAKE.DECODE"][..],
        &["SNOWFLAKE.DECODE", "1", "2"][..],
        &["WORKERID.RENEW", "ns", "0", "1", "TTL"][..],
        &["WORKERID.LIST"][..],
        &["IDGEN.ENCODE"][..],
    ] {
        let _: () = cmd(&["MULTI"]).query(&mut con).unwrap();
        let _: () = cmd(&["DATESEQ.NEXT", "in-multi"]).query(&mut con).unwrap();
        let err = error_of(&mut con, &cmd(words));
        assert!(
            err.starts_with("ERR wrong number of arguments"),
            "{words:?}: {err}"
        );
        let err = error_of(&mut con, &cmd(&["EXEC"]));
        assert!(err.starts_with("EXECABORT"), "{words:?}: {err}");
    }
    let current: Option<i64> = cmd(&["DATESEQ.CURRENT", "in-multi"])
        .query(&mut con)
        .unwrap();
    assert_eq!(current, None, "no aborted transaction ran");
}

#[test]
fn a_count_that_does_not_fit_is_told_from_a_spent_sequence() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let err = error_of(
        &mut con,
        &cmd(&["DATESEQ.NEXT", "d", "DIGITS", "1", "COUNT", "20"]),
    );
    assert!(
        err.starts_with("ERR COUNT 20 does not fit: 9 values are left"),
        "{err}"
    );
    let _: Vec<i64> = cmd(&["DATESEQ.NEXT", "d", "DIGITS", "1", "COUNT", "9"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", "d", "DIGITS", "1"]));
    assert!(err.contains("is spent"), "{err}");
}

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
            "ERR wrong number of arguments",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "0"],
            "ERR COUNT must be between 1 and 100000",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "100001"],
            "ERR COUNT must be between 1 and 100000",
        ),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "-5"],
            "ERR COUNT must be between",
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
        (&["SNOWFLAKE.DECODE", "-1"], "ERR id must not be negative"),
        (&["SNOWFLAKE.DECODE", "1.5"], "ERR value is not an integer"),
        (&["DATESEQ.NEXT"], "ERR wrong number of arguments"),
        (&["DATESEQ.NEXT", "p", "DIGITS"], "ERR syntax error"),
        (
            &["DATESEQ.NEXT", "p", "COUNT", "0"],
            "ERR COUNT must be between 1 and 1000000000",
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

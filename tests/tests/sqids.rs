//! Sqids from the module (SQIDS on SNOWFLAKE.NEXT and DATESEQ.*, IDGEN.ENCODE/DECODE) and the
//! ticket server (TICKET.NEXT ... SQIDS), read back by the module, by idgen-core and by
//! sqids-python (an implementation we did not write, from the venv `make test` builds).

use std::process::Command;

use idgen_core::sqid::DEFAULT_ALPHABET;
use idgen_core::SqidCodec;
use idgen_tests::ticket::TicketServer;
use idgen_tests::{cmd, data_dir, error_of, when_caught_up, Options, Server};

/// A shuffled alphabet, as an operator would set one.
const SECRET: &str = "k3G7QAe51FCsPW92uEOyq4Bg6Sp8YzVTmnU0liwDdHXLajZrfxNhobJIRcMvKt";

/// What sqids-python makes of `sqids` under `alphabet` and `min_length`.
fn python_decode(alphabet: &str, min_length: u8, sqids: &[String]) -> Vec<Vec<u64>> {
    let text = idgen_tests::run_python(
        "sqids_decode.py",
        &[alphabet, &min_length.to_string()],
        &sqids.join("\n"),
    );
    let numbers: Vec<Vec<u64>> = text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split("], [")
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_matches(|c| c == '[' || c == ']')
                .split(", ")
                .filter(|n| !n.is_empty())
                .map(|n| n.parse().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(numbers.len(), sqids.len(), "{text}");
    numbers
}

/// Each Sqid read back as one number, three ways: by the server, by idgen-core and by
/// sqids-python; all three must agree.
fn read_back(con: &mut dyn redis::ConnectionLike, sqids: &[String], codec: &SqidCodec) -> Vec<u64> {
    let (alphabet, min_length) = (codec_alphabet(con), codec.min_length());
    let python = python_decode(&alphabet, min_length, sqids);
    sqids
        .iter()
        .zip(python)
        .map(|(sqid, from_python)| {
            let from_server: Vec<u64> = cmd(&["IDGEN.DECODE", sqid]).query(con).unwrap();
            let from_core = codec.decode(sqid).unwrap();
            assert_eq!(from_server, from_core, "{sqid}");
            assert_eq!(from_python, from_core, "{sqid}: sqids-python disagrees");
            assert_eq!(from_core.len(), 1, "{sqid}");
            from_core[0]
        })
        .collect()
}

fn codec_alphabet(con: &mut dyn redis::ConnectionLike) -> String {
    let pair: Vec<String> = cmd(&["CONFIG", "GET", "idgen.sqids-alphabet"])
        .query(con)
        .unwrap();
    pair[1].clone()
}

#[test]
fn every_layouts_ids_round_trip_as_sqids() {
    for layout in ["twitter", "instagram", "sonyflake", "js53"] {
        let server = Server::start(&["worker-id", "5", "layout", layout]);
        let mut con = server.connection();
        let sqids: Vec<String> = when_caught_up(
            &mut con,
            &cmd(&["SNOWFLAKE.NEXT", "COUNT", "1000", "SQIDS"]),
        );
        assert_eq!(sqids.len(), 1000);
        assert!(sqids
            .iter()
            .all(|s| s.bytes().all(|b| b.is_ascii_alphanumeric())));
        let ids = read_back(&mut con, &sqids[..50], &SqidCodec::default());
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{layout}: not increasing"
        );
        for &id in &ids {
            assert_eq!(
                idgen_tests::decode(&mut con, id as i64).worker,
                5,
                "{layout}: worker of {id}"
            );
        }
        // The whole batch decodes on the server, distinct and increasing.
        let all: Vec<i64> = sqids
            .iter()
            .map(|s| {
                cmd(&["IDGEN.DECODE", s])
                    .query::<Vec<i64>>(&mut con)
                    .unwrap()[0]
            })
            .collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{layout}");
        let one: String = cmd(&["SNOWFLAKE.NEXT", "SQIDS"]).query(&mut con).unwrap();
        let next = SqidCodec::default().decode(&one).unwrap()[0] as i64;
        assert!(next > all[999], "{layout}: a later call gave a smaller ID");
        if layout == "js53" {
            assert!(all.iter().all(|&id| id < 1 << 53), "js53 above 2^53");
        }
    }
}

#[test]
fn date_sequence_values_round_trip_as_sqids() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let one: String = cmd(&["DATESEQ.NEXT", "order", "SQIDS"])
        .query(&mut con)
        .unwrap();
    let batch: Vec<String> = cmd(&["DATESEQ.NEXT", "order", "COUNT", "5", "SQIDS"])
        .query(&mut con)
        .unwrap();
    assert_eq!(batch.len(), 5, "with SQIDS, COUNT gives every value");
    let current: String = cmd(&["DATESEQ.CURRENT", "order", "SQIDS"])
        .query(&mut con)
        .unwrap();
    let mut sqids = vec![one];
    sqids.extend(batch);
    sqids.push(current);
    let values = read_back(&mut con, &sqids, &SqidCodec::default());
    let plain: i64 = cmd(&["DATESEQ.CURRENT", "order"]).query(&mut con).unwrap();
    let last = plain as u64;
    assert_eq!(
        values,
        [last - 5, last - 4, last - 3, last - 2, last - 1, last, last]
    );
    assert_eq!(last % 1_000_000, 6, "six values of today's counter");
    // Ten digits of sequence: above 2^53, still exact.
    let wide: String = cmd(&["DATESEQ.NEXT", "order", "DIGITS", "10", "SQIDS"])
        .query(&mut con)
        .unwrap();
    let plain: i64 = cmd(&["DATESEQ.CURRENT", "order", "DIGITS", "10"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        read_back(&mut con, &[wide], &SqidCodec::default()),
        [plain as u64]
    );
}

#[test]
fn the_configured_alphabet_and_min_length_are_used() {
    let server = Server::start_with(Options::module(&[
        "sqids-alphabet",
        SECRET,
        "sqids-min-length",
        "12",
    ]));
    let mut con = server.connection();
    let secret = SqidCodec::new(SECRET, 12).unwrap();
    let sqids: Vec<String> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "20", "SQIDS"])
        .query(&mut con)
        .unwrap();
    assert!(sqids.iter().all(|s| s.len() >= 12));
    let ids = read_back(&mut con, &sqids, &secret);
    // Read with the default alphabet, the same strings are other numbers or none.
    let default = SqidCodec::default();
    for (sqid, id) in sqids.iter().zip(&ids) {
        assert_ne!(default.decode(sqid).ok(), Some(vec![*id]), "{sqid}");
    }
    let encoded: String = cmd(&["IDGEN.ENCODE", "7", "42"]).query(&mut con).unwrap();
    assert_eq!(encoded, secret.encode(&[7, 42]).unwrap());
    assert_ne!(
        encoded,
        SqidCodec::new(DEFAULT_ALPHABET, 12)
            .unwrap()
            .encode(&[7, 42])
            .unwrap()
    );

    // Changed at run time, the new alphabet applies at once; the old strings no longer read.
    let _: () = cmd(&["CONFIG", "SET", "idgen.sqids-alphabet", DEFAULT_ALPHABET])
        .query(&mut con)
        .unwrap();
    let now: String = cmd(&["IDGEN.ENCODE", "7", "42"]).query(&mut con).unwrap();
    let padded = SqidCodec::new(DEFAULT_ALPHABET, 12).unwrap();
    assert_eq!(
        now,
        padded.encode(&[7, 42]).unwrap(),
        "the new alphabet, the old length"
    );
    let _: () = cmd(&["CONFIG", "SET", "idgen.sqids-min-length", "0"])
        .query(&mut con)
        .unwrap();
    let now: String = cmd(&["IDGEN.ENCODE", "7", "42"]).query(&mut con).unwrap();
    assert_eq!(now, default.encode(&[7, 42]).unwrap());
    let err = error_of(&mut con, &cmd(&["IDGEN.DECODE", &encoded]));
    assert!(err.starts_with("ERR"), "{err}");
    let info: String = cmd(&["INFO", "idgen"]).query(&mut con).unwrap();
    assert!(info.contains("sqids_alphabet:default"), "{info}");
    assert!(!info.contains(SECRET), "INFO shows the secret alphabet");

    // A bad alphabet is refused whichever way it comes, and the old one stays.
    for bad in ["ab", "abca", "ab c"] {
        let err = error_of(
            &mut con,
            &cmd(&["CONFIG", "SET", "idgen.sqids-alphabet", bad]),
        );
        assert!(err.contains("sqids alphabet"), "{bad}: {err}");
    }
    assert_eq!(codec_alphabet(&mut con), DEFAULT_ALPHABET);
    let log = Server::try_start(Options::module(&["sqids-alphabet", "aab"]))
        .err()
        .expect("a repeated letter must refuse the load");
    assert!(log.contains("repeats 'a'"), "{log}");
}

#[test]
fn bad_sqids_and_numbers_get_errors_and_the_server_carries_on() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let long = "a".repeat(100_000);
    let cases: &[(&[&str], &str)] = &[
        (&["IDGEN.DECODE", "bad!"], "not a Sqid"),
        (&["IDGEN.DECODE", ""], "not a Sqid"),
        (&["IDGEN.DECODE", "\u{e9}t\u{e9}"], "not a Sqid"),
        (&["IDGEN.DECODE", &long], "at most"),
        (
            &["IDGEN.DECODE", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"],
            "not a Sqid",
        ),
        (&["IDGEN.DECODE"], "wrong number"),
        (&["IDGEN.DECODE", "a", "b"], "wrong number"),
        (&["IDGEN.ENCODE"], "wrong number"),
        (
            &["IDGEN.ENCODE", "-1"],
            "IDGEN.ENCODE number -1 must be between 0 and 9223372036854775807",
        ),
        (&["IDGEN.ENCODE", "x"], "not an integer"),
        (&["IDGEN.ENCODE", "99999999999999999999"], "not an integer"),
        (&["SNOWFLAKE.NEXT", "STRING", "SQIDS"], "cannot be combined"),
        (
            &["SNOWFLAKE.NEXT", "COUNT", "1001", "SQIDS"],
            "1000 with SQIDS",
        ),
        (
            &["DATESEQ.NEXT", "o", "COUNT", "1001", "SQIDS"],
            "1000 with SQIDS",
        ),
    ];
    for (words, says) in cases {
        let err = error_of(&mut con, &cmd(words));
        assert!(
            err.starts_with("ERR") && err.contains(says),
            "{words:?}: {err}"
        );
    }
    let many: Vec<String> = (0..17).map(|n| n.to_string()).collect();
    let mut words = vec!["IDGEN.ENCODE"];
    words.extend(many.iter().map(String::as_str));
    let err = error_of(&mut con, &cmd(&words));
    assert!(err.contains("1 to 16"), "{err}");
    // A variant of a valid Sqid (another first letter) decodes in sqids-python, not here.
    let good: String = cmd(&["IDGEN.ENCODE", "42"]).query(&mut con).unwrap();
    let variant = format!(
        "{}{}",
        if good.starts_with('a') { 'b' } else { 'a' },
        &good[1..]
    );
    let err = error_of(&mut con, &cmd(&["IDGEN.DECODE", &variant]));
    assert!(err.contains("not a Sqid"), "{variant}: {err}");
    // A Sqid of this alphabet, of a number no ID reaches: named as such.
    let codec = SqidCodec::new(DEFAULT_ALPHABET, 0).unwrap();
    for past in [i64::MAX as u64 + 1, u64::MAX] {
        let sqid = codec.encode(&[past]).unwrap();
        let err = error_of(&mut con, &cmd(&["IDGEN.DECODE", &sqid]));
        let says = format!("is the Sqid of {past}, above the largest ID {}", i64::MAX);
        assert!(err.contains(&says), "{sqid}: {err}");
    }
    // Nothing was issued by a refused call, and the server still answers.
    let issued: i64 = server.info_field("ids_issued").parse().unwrap();
    assert_eq!(issued, 0);
    let back: Vec<i64> = cmd(&["IDGEN.DECODE", &good]).query(&mut con).unwrap();
    assert_eq!(back, [42]);
}

#[test]
fn scripts_and_resp3_get_sqids_as_strings() {
    let server = Server::start(&[]);
    let mut con = server.connection_resp3();
    let from_script: String = cmd(&["EVAL", "return redis.call('SNOWFLAKE.NEXT', 'SQIDS')", "0"])
        .query(&mut con)
        .unwrap();
    assert!(SqidCodec::default().decode(&from_script).is_ok());
    let direct: redis::Value = cmd(&["SNOWFLAKE.NEXT", "SQIDS"]).query(&mut con).unwrap();
    assert!(matches!(direct, redis::Value::BulkString(_)), "{direct:?}");
}

#[test]
fn ticket_servers_reply_with_sqids_of_their_alphabet() {
    let dir = data_dir("ticket-sqids");
    let server = TicketServer::start(
        1,
        2,
        &dir,
        &["--sqids-alphabet", SECRET, "--sqids-min-length", "6"],
    );
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let secret = SqidCodec::new(SECRET, 6).unwrap();
    let one: String = cmd(&["TICKET.NEXT", "SQIDS"]).query(&mut con).unwrap();
    let batch: Vec<String> = cmd(&["TICKET.NEXT", "orders", "COUNT", "4", "SQIDS"])
        .query(&mut con)
        .unwrap();
    // A sequence named sqids is named before the option.
    let named: String = cmd(&["TICKET.NEXT", "sqids", "SQIDS"])
        .query(&mut con)
        .unwrap();
    let mut sqids = vec![one];
    sqids.extend(batch);
    sqids.push(named);
    assert!(sqids.iter().all(|s| s.len() >= 6));
    let tickets: Vec<u64> = sqids.iter().map(|s| secret.decode(s).unwrap()[0]).collect();
    assert_eq!(tickets, [1, 1, 3, 5, 7, 1]);
    let python = python_decode(SECRET, 6, &sqids);
    assert_eq!(python.concat(), tickets, "sqids-python disagrees");

    let err = error_of(&mut con, &cmd(&["TICKET.NEXT", "COUNT", "1001", "SQIDS"]));
    assert!(err.contains("1000 with SQIDS"), "{err}");
    let config: Vec<String> = cmd(&["CONFIG", "GET", "sqids-min-length"])
        .query(&mut con)
        .unwrap();
    assert_eq!(config, ["sqids-min-length", "6"]);
    let plain: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(
        plain, 3,
        "the default sequence carries on after the refused call"
    );
    drop(server);

    let refused = Command::new(idgen_tests::ticket::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--init", "--data-dir"])
        .arg(dir.as_os_str())
        .args(["--sqids-alphabet", "aab"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "a bad alphabet must refuse the start"
    );
    assert!(err.contains("repeats 'a'"), "{err}");
}

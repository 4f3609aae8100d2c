//! Sealed IDs on a real redis-server: IDGEN.SEAL and IDGEN.UNSEAL map a million random IDs and
//! the domain's edges one-to-one within 0..2^63; SEALED on SNOWFLAKE.NEXT, DATESEQ.NEXT and
//! UUID7.NEXT gives values that unseal to what was issued; the key stays out of CONFIG GET and
//! INFO, and a bad key file stops the module from loading.

use std::collections::HashSet;

use idgen_tests::redis;
use idgen_tests::Connection;
use idgen_tests::{cmd, data_dir, decode, error_of, now_ms, Options, Server};

const KEY: &str = "2b7e151628aed2a6abf7158809cf4f3cef4359d8d580aa4f7f036d6f04fc6a94";

/// A server sealing under `key`, written to a file of its own.
fn sealing(name: &str, key: &str) -> Server {
    let dir = data_dir(name);
    let file = dir.join("seal.key");
    std::fs::write(&file, format!("{key}\n")).unwrap();
    Server::start(&[
        "worker-id",
        "5",
        "seal-key-file",
        &file.display().to_string(),
    ])
}

fn query<T: redis::FromRedisValue>(con: &mut Connection, words: &[&str]) -> T {
    cmd(words)
        .query(con)
        .unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

#[test]
fn a_million_random_ids_and_the_edges_seal_one_to_one_and_back() {
    let server = sealing("seal-million", KEY);
    let mut con = server.connection();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut sealed_all = HashSet::new();
    for _ in 0..100 {
        let ids: Vec<u64> = (0..10_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x >> 1
            })
            .collect();
        let mut seal = redis::pipe();
        for id in &ids {
            seal.cmd("IDGEN.SEAL").arg(*id);
        }
        let sealed: Vec<u64> = seal.query(&mut con).unwrap();
        let mut unseal = redis::pipe();
        for s in &sealed {
            assert!(*s <= i64::MAX as u64);
            unseal.cmd("IDGEN.UNSEAL").arg(*s);
        }
        let back: Vec<u64> = unseal.query(&mut con).unwrap();
        assert_eq!(back, ids);
        sealed_all.extend(sealed);
    }
    assert_eq!(sealed_all.len(), 1_000_000, "two IDs sealed alike");
    for edge in ["0", "9223372036854775807"] {
        let sealed: i64 = query(&mut con, &["IDGEN.SEAL", edge]);
        assert!(sealed >= 0);
        let back: i64 = query(&mut con, &["IDGEN.UNSEAL", &sealed.to_string()]);
        assert_eq!(back.to_string(), edge);
    }
    for bad in ["-1", "9223372036854775808", "x"] {
        let err = error_of(&mut con, &cmd(&["IDGEN.SEAL", bad]));
        assert!(err.contains(bad), "{bad}: {err}");
    }
}

#[test]
fn sealed_options_unseal_to_what_was_issued() {
    let server = sealing("seal-options", KEY);
    let mut con = server.connection();
    let unseal =
        |con: &mut Connection, v: i64| -> i64 { query(con, &["IDGEN.UNSEAL", &v.to_string()]) };

    let before = now_ms();
    let one: i64 = query(&mut con, &["SNOWFLAKE.NEXT", "SEALED"]);
    let id = unseal(&mut con, one);
    let d = decode(&mut con, id);
    assert_eq!(d.worker, 5);
    assert!(d.time_ms >= before - 1 && d.time_ms <= now_ms() + 1_000);
    let many: Vec<i64> = query(&mut con, &["SNOWFLAKE.NEXT", "COUNT", "500", "SEALED"]);
    let ids: Vec<i64> = many.iter().map(|&v| unseal(&mut con, v)).collect();
    assert!(ids[0] > id && ids.windows(2).all(|w| w[0] < w[1]));
    let up = many.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(
        (150..350).contains(&up),
        "sealed IDs keep no order: {up} of 499 went up"
    );
    // SQIDS on top of SEALED: the Sqid of the sealed ID.
    let sqids: Vec<String> = query(
        &mut con,
        &["SNOWFLAKE.NEXT", "COUNT", "3", "SQIDS", "SEALED"],
    );
    for sqid in sqids {
        let inner: Vec<i64> = query(&mut con, &["IDGEN.DECODE", &sqid]);
        assert!(unseal(&mut con, inner[0]) > ids[499]);
    }

    let day: i64 = query(&mut con, &["DATESEQ.NEXT", "inv"]);
    let sealed: i64 = query(&mut con, &["DATESEQ.NEXT", "inv", "SEALED"]);
    assert_eq!(unseal(&mut con, sealed), day + 1);
    let range: Vec<i64> = query(&mut con, &["DATESEQ.NEXT", "inv", "COUNT", "4", "SEALED"]);
    let values: Vec<i64> = range.iter().map(|&v| unseal(&mut con, v)).collect();
    assert_eq!(
        values,
        vec![day + 2, day + 3, day + 4, day + 5],
        "every value, not a range"
    );
    let year: i64 = query(
        &mut con,
        &["DATESEQ.NEXT", "inv", "PERIOD", "year", "SEALED"],
    );
    assert_eq!(unseal(&mut con, year) % 1_000_000, 1);

    let facade: String = query(&mut con, &["UUID7.NEXT", "SEALED"]);
    let u = uuid::Uuid::parse_str(&facade).unwrap();
    assert_eq!(u.get_version_num(), 4, "{facade} shows no time");
    let v7: String = query(&mut con, &["UUID7.UNSEAL", &facade]);
    let v7 = uuid::Uuid::parse_str(&v7).unwrap();
    assert_eq!(v7.get_version_num(), 7);
    let (secs, _) = v7.get_timestamp().unwrap().to_unix();
    assert!((secs as i64 * 1000 - before).abs() < 60_000);
    let plain: String = query(&mut con, &["UUID7.NEXT"]);
    let err = error_of(&mut con, &cmd(&["UUID7.UNSEAL", &plain]));
    assert!(err.contains("not a sealed UUID"), "{err}");

    // A script's numbers are doubles: sealed IDs reach it as strings.
    let from_script: redis::Value =
        cmd(&["EVAL", "return redis.call('SNOWFLAKE.NEXT', 'SEALED')", "0"])
            .query(&mut con)
            .unwrap();
    assert!(
        matches!(from_script, redis::Value::BulkString(_)),
        "{from_script:?}"
    );
}

#[test]
fn the_key_is_never_shown_and_a_new_key_seals_otherwise() {
    let server = sealing("seal-key", KEY);
    let mut con = server.connection();
    let config: Vec<String> = query(&mut con, &["CONFIG", "GET", "idgen.seal-key-file"]);
    assert!(config[1].ends_with("seal.key") && !config[1].contains(KEY));
    let info: String = query(&mut con, &["INFO", "idgen"]);
    let key_id = info
        .lines()
        .find_map(|l| l.strip_prefix("idgen_seal_key_id:"))
        .expect("idgen_seal_key_id in INFO")
        .trim()
        .to_string();
    assert_eq!(key_id.len(), 8);
    assert!(!KEY.contains(&key_id) && !info.contains(&KEY[..16]));

    let old: i64 = query(&mut con, &["IDGEN.SEAL", "42"]);
    let other_dir = data_dir("seal-key-other");
    let other = other_dir.join("new.key");
    std::fs::write(&other, KEY.replace('2', "7")).unwrap();
    let _: () = query(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "idgen.seal-key-file",
            &other.display().to_string(),
        ],
    );
    let new: i64 = query(&mut con, &["IDGEN.SEAL", "42"]);
    assert_ne!(new, old, "a new key seals otherwise");
    let stale: i64 = query(&mut con, &["IDGEN.UNSEAL", &old.to_string()]);
    assert_ne!(stale, 42, "what the old key sealed needs the old key");

    let bad = other_dir.join("bad.key");
    std::fs::write(&bad, "not a key").unwrap();
    let err = error_of(
        &mut con,
        &cmd(&[
            "CONFIG",
            "SET",
            "idgen.seal-key-file",
            &bad.display().to_string(),
        ]),
    );
    assert!(
        err.contains("64 hex digits") && !err.contains("not a key"),
        "{err}"
    );
    let _: () = query(&mut con, &["CONFIG", "SET", "idgen.seal-key-file", ""]);
    for words in [
        &["IDGEN.SEAL", "1"][..],
        &["SNOWFLAKE.NEXT", "SEALED"],
        &["DATESEQ.NEXT", "inv", "SEALED"],
        &["UUID7.NEXT", "SEALED"],
    ] {
        let err = error_of(&mut con, &cmd(words));
        assert!(err.starts_with("ERR no sealing key"), "{words:?}: {err}");
    }
    let days: Vec<String> = query(&mut con, &["KEYS", "*"]);
    assert!(days.is_empty(), "a refused SEALED call wrote {days:?}");
}

#[test]
fn a_key_file_that_holds_no_key_stops_the_module_from_loading() {
    let dir = data_dir("seal-bad");
    let file = dir.join("seal.key");
    std::fs::write(&file, "0123").unwrap();
    let log = Server::try_start(Options::module(&[
        "seal-key-file",
        &file.display().to_string(),
    ]))
    .err()
    .expect("the module loaded with a 2-byte key");
    assert!(log.contains("64 hex digits"), "{log}");
    assert!(log.contains("seal.key"), "the log names the file: {log}");
}

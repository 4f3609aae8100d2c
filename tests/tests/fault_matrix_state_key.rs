//! The fault matrix of the Functions library's Snowflake state key (`tests/fault_matrix.rs`
//! has the date sequences'): the key lost or changed every way (deleted, expired, an expiry
//! put on it, its reservation lowered or removed, its mark changed, restored older, its epoch
//! or issued epoch changed, a field edited by hand) at every place (the process that issued,
//! after a reload of the library, a restart, a promoted replica, the node it migrated to).
//! Each case carries on with no ID repeated or gone back, or is refused naming the field; and
//! no call leaves an expiry on the key. (The module's state file has its own matrix:
//! `witness_matrix_snowflake.rs`.)

use std::time::Duration;

use idgen_tests::backend::Backend;
use idgen_tests::library::snowflakes;
use idgen_tests::losses::{assert_carried_on, restore_older, run};
use idgen_tests::places::{move_to, second, start, Place, PLACES};
use idgen_tests::redis;
use idgen_tests::{cmd, error_of};

/// A way to lose or change a Snowflake state key `key` (whose pair is `pair`), with an older
/// DUMP of it; and what must come of it: `None` carries on with no ID repeated, `Some(text)` is
/// refused naming it and then repaired (`repair`).
struct StateWay {
    name: &'static str,
    lose: fn(&mut dyn redis::ConnectionLike, &str, &[u8]),
    refused: Option<&'static str>,
    /// Refused only where another process takes the key over: the library's own fields
    /// (reserved, issued_epoch) are read there; the process that wrote them issues from what
    /// it holds and writes them back.
    at_takeover: bool,
    repair: fn(&mut dyn redis::ConnectionLike, &str),
}

fn set_pair(con: &mut dyn redis::ConnectionLike, key: &str) {
    run(con, &["HSET", key, "datacenter", "9", "worker", "21"]);
}

fn state_ways() -> Vec<StateWay> {
    let none: fn(&mut dyn redis::ConnectionLike, &str) = |_, _| {};
    vec![
        StateWay {
            name: "DEL, the pair set again",
            lose: |con, key, _| {
                run(con, &["DEL", key]);
                set_pair(con, key);
            },
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "DEL",
            lose: |con, key, _| run(con, &["DEL", key]),
            refused: Some("worker of"),
            at_takeover: false,
            repair: set_pair,
        },
        StateWay {
            name: "expired, the pair set again",
            lose: |con, key, _| {
                run(con, &["PEXPIRE", key, "1"]);
                std::thread::sleep(Duration::from_millis(5));
                set_pair(con, key);
            },
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "a TTL put on it",
            lose: |con, key, _| run(con, &["PEXPIRE", key, "60000"]),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "reserved lowered to 0",
            lose: |con, key, _| run(con, &["HSET", key, "reserved", "0"]),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "reserved removed",
            lose: |con, key, _| run(con, &["HDEL", key, "reserved"]),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "owner changed",
            lose: |con, key, _| run(con, &["HSET", key, "owner", "someone:0"]),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "owner removed",
            lose: |con, key, _| run(con, &["HDEL", key, "owner"]),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "max_drift_ms raised",
            lose: |con, key, _| run(con, &["HSET", key, "max_drift_ms", "5000"]),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "RESTORE an older DUMP",
            lose: |con, key, older| restore_older(con, key, older),
            refused: None,
            at_takeover: false,
            repair: none,
        },
        StateWay {
            name: "issued_epoch removed",
            lose: |con, key, _| run(con, &["HDEL", key, "issued_epoch"]),
            refused: Some("issued_epoch of"),
            at_takeover: true,
            repair: |con, key| run(con, &["HSET", key, "issued_epoch", "1288834974657"]),
        },
        StateWay {
            name: "epoch changed",
            lose: |con, key, _| run(con, &["HSET", key, "epoch", "0"]),
            refused: Some("but its IDs were issued under 1288834974657"),
            at_takeover: false,
            repair: |con, key| run(con, &["HDEL", key, "epoch"]),
        },
        StateWay {
            name: "datacenter edited to 1e1",
            lose: |con, key, _| run(con, &["HSET", key, "datacenter", "1e1"]),
            refused: Some("datacenter of"),
            at_takeover: false,
            repair: set_pair,
        },
    ]
}

/// The Snowflake state key (the library's only state for its IDs) lost or changed every way,
/// at every place: each case its own server (one pair per server), the IDs of one pair never
/// repeat and never go back.
#[test]
fn snowflake_state_keys_lost_every_way_at_every_place_repeat_nothing() {
    let mut cases = 0;
    for place in PLACES {
        for way in state_ways() {
            let case = format!("{place:?} / {}", way.name);
            let dir = idgen_tests::data_dir("fault-matrix-snowflake");
            let a = start(Backend::Library, Some(&dir));
            let b = second(Backend::Library, place, &a);
            let key = "{sf}state";
            let mut con = a.connection();
            set_pair(&mut con, key);
            let mut ids = snowflakes(&mut con, key, 2_000);
            let older: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).unwrap();
            ids.extend(snowflakes(&mut con, key, 2_000));
            drop(con);
            let holder = move_to(place, Backend::Library, a, b, &dir, &[key.to_string()]);
            let mut con = holder.connection();
            (way.lose)(&mut con, key, &older);
            let refused = way
                .refused
                .filter(|_| !(way.at_takeover && place == Place::Issuer));
            if let Some(says) = refused {
                let err = error_of(&mut con, &cmd(&["FCALL", "snowflake_next", "1", key]));
                assert!(err.contains(says), "{case}: {err}");
                (way.repair)(&mut con, key);
            }
            assert_carried_on(&case, &mut ids, snowflakes(&mut con, key, 2_000));
            let ttl: i64 = cmd(&["PTTL", key]).query(&mut con).unwrap();
            assert_eq!(ttl, -1, "{case}: the state key kept an expiry after a call");
            cases += 1;
        }
    }
    eprintln!("{cases} Snowflake state-key cases");
    assert!(cases >= 5 * 13);
}

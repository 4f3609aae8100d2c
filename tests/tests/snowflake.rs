//! SNOWFLAKE.NEXT and SNOWFLAKE.DECODE against a real redis-server with the module.

use std::collections::HashSet;

use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, error_of, now_ms, when_caught_up, Options, Server};

#[test]
fn a_million_ids_are_unique_and_increasing() {
    let server = Server::start(&["worker-id", "3", "datacenter-id", "1"]);
    // Batches that borrow ticks ahead: not in the first drift limit after a load.
    server.wait_past_resume();
    let mut con = server.connection();
    let mut all: Vec<i64> = Vec::with_capacity(1_000_000);
    for _ in 0..8 {
        let batch: Vec<i64> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "100000"])
            .query(&mut con)
            .unwrap();
        assert_eq!(batch.len(), 100_000);
        all.extend(batch);
    }
    // The rest one at a time, pipelined, from four connections at once.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let mut con = server.connection();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for _ in 0..50 {
                    let mut pipe = redis::pipe();
                    for _ in 0..1000 {
                        pipe.cmd("SNOWFLAKE.NEXT");
                    }
                    let ids: Vec<i64> = pipe.query(&mut con).unwrap();
                    mine.extend(ids);
                }
                mine
            })
        })
        .collect();
    let batches_end = all.len();
    for h in handles {
        let ids = h.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "one connection's IDs go backwards"
        );
        assert!(
            ids[0] > all[batches_end - 1],
            "later calls gave smaller IDs"
        );
        all.extend(ids);
    }
    assert_eq!(all.len(), 1_000_000);
    assert!(
        all[..batches_end].windows(2).all(|w| w[0] < w[1]),
        "COUNT batches not increasing"
    );
    assert!(all.iter().all(|&id| id > 0));
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "duplicate IDs");
    assert_eq!(server.info_field("ids_issued"), "1000000");
}

#[test]
fn decode_gives_back_the_fields_of_next_in_resp2_and_resp3() {
    let server = Server::start(&["worker-id", "3", "datacenter-id", "1"]);
    // IDs keep to the clock once it passed where they started at load.
    server.wait_past_resume();
    let before = now_ms();
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"])
        .query(&mut server.connection())
        .unwrap();
    let after = now_ms();

    let flat: Vec<Value> = cmd(&["SNOWFLAKE.DECODE", &id.to_string()])
        .query(&mut server.connection())
        .unwrap();
    let resp2 = pairs(
        flat.chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect(),
    );
    let map = cmd(&["SNOWFLAKE.DECODE", &id.to_string()])
        .query::<Value>(&mut server.connection_resp3())
        .unwrap();
    let Value::Map(map) = map else {
        panic!("RESP3 reply is not a map: {map:?}")
    };
    let resp3 = pairs(map);
    assert_eq!(resp2, resp3);

    let field = |name: &str| {
        resp2
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    let time_ms: i64 = field("time_ms").parse().unwrap();
    assert!(
        (before..=after).contains(&time_ms),
        "{time_ms} not in {before}..={after}"
    );
    assert_eq!(field("datacenter"), "1");
    assert_eq!(field("worker"), "3");
    assert_eq!(field("sequence"), "0");
    assert!(
        field("time").starts_with("20") && field("time").ends_with('Z'),
        "{}",
        field("time")
    );
    assert_eq!(
        time_ms,
        ((id >> 22) + 1_288_834_974_657),
        "Twitter layout and epoch"
    );
}

fn pairs(raw: Vec<(Value, Value)>) -> Vec<(String, String)> {
    let text = |v: Value| match v {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        Value::SimpleString(s) => s,
        Value::Int(i) => i.to_string(),
        other => panic!("unexpected {other:?}"),
    };
    raw.into_iter().map(|(k, v)| (text(k), text(v))).collect()
}

#[test]
fn every_profile_layout_loads_and_decodes() {
    for (layout, worker) in [
        ("sonyflake", "65535"),
        ("instagram", "8191"),
        ("time:40,worker:10,sequence:13", "1023"),
    ] {
        let server = Server::start(&["layout", layout, "worker-id", worker]);
        let mut con = server.connection();
        let ids: Vec<i64> = when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT", "COUNT", "5000"]));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{layout}");
        let decoded = idgen_tests::decode(&mut con, ids[4999]);
        assert_eq!(
            decoded.worker,
            worker.parse::<i64>().unwrap(),
            "{layout}: {decoded:?}"
        );
        let got: String = cmd(&["CONFIG", "GET", "idgen.layout"])
            .query::<Vec<String>>(&mut con)
            .unwrap()[1]
            .clone();
        assert_eq!(got, layout);
    }
}

#[test]
fn bad_load_configurations_refuse_to_load_and_say_why() {
    let cases = [
        (vec!["layout", "time:37,worker:20,sequence:16"], "73 bits"),
        (vec!["worker-id", "32"], "worker-id 32 does not fit"),
        (
            vec!["layout", "instagram", "datacenter-id", "1"],
            "datacenter-id 1 does not fit",
        ),
        (vec!["epoch", "99999999999999"], "lies in the future"),
        (
            vec!["worker-idd", "3"],
            "unknown load argument 'worker-idd'",
        ),
        (
            vec!["dateseq-timezone", "Mars/Olympus"],
            "unknown time zone",
        ),
        (vec!["worker-id"], "pairs"),
    ];
    for (args, why) in cases {
        let log = match Server::try_start(Options::module(&args)) {
            Ok(_) => panic!("{args:?} loaded"),
            Err(log) => log,
        };
        assert!(
            log.contains(why),
            "{args:?}: log does not say '{why}':\n{log}"
        );
    }
}

#[test]
fn config_file_settings_are_used() {
    let options = Options {
        config_lines: vec!["idgen.worker-id 7".into(), "idgen.layout sonyflake".into()],
        ..Options::default()
    };
    let server = Server::start_with(options);
    let mut con = server.connection();
    let got: Vec<String> = cmd(&["CONFIG", "GET", "idgen.worker-id"])
        .query(&mut con)
        .unwrap();
    assert_eq!(got, vec!["idgen.worker-id", "7"]);
    assert_eq!(server.info_field("worker_id"), "7");
    assert_eq!(
        server.info_field("layout"),
        "time:39,sequence:8,worker:16,tick-ms:10"
    );
}

#[test]
fn settings_that_could_repeat_ids_cannot_change_live() {
    let server = Server::start(&["worker-id", "3"]);
    let mut con = server.connection();
    for (name, value) in [
        ("worker-id", "4"),
        ("datacenter-id", "1"),
        ("epoch", "0"),
        ("layout", "sonyflake"),
    ] {
        let err = error_of(
            &mut con,
            &cmd(&["CONFIG", "SET", &format!("idgen.{name}"), value]),
        );
        assert!(err.contains("immutable"), "{name}: {err}");
    }
    let got: Vec<String> = cmd(&["CONFIG", "GET", "idgen.worker-id"])
        .query(&mut con)
        .unwrap();
    assert_eq!(got[1], "3");
}

#[test]
fn live_settings_apply_at_once() {
    let server = Server::start(&[]);
    // With no drift allowed, IDs must already keep to the clock.
    server.wait_past_resume();
    let mut con = server.connection();
    let _: () = cmd(&["CONFIG", "SET", "idgen.max-drift-ms", "0"])
        .query(&mut con)
        .unwrap();
    assert_eq!(server.info_field("max_drift_ms"), "0");
    // With no drift allowed, a batch larger than one millisecond's 4096 IDs is refused at once.
    let err = error_of(&mut con, &cmd(&["SNOWFLAKE.NEXT", "COUNT", "5000"]));
    assert!(
        err.starts_with("ERR clock is") && err.contains("limit 0 ms"),
        "{err}"
    );
    assert_eq!(server.info_field("ids_refused"), "1");

    let _: () = cmd(&["CONFIG", "SET", "idgen.sequence-random-start", "yes"])
        .query(&mut con)
        .unwrap();
    assert_eq!(server.info_field("sequence_random_start"), "1");
    // The first ID of each millisecond shows the start: 0 without the feature, else random
    // below 256 (several IDs in one ms would count the others' +1 steps as random).
    let mut firsts = std::collections::BTreeMap::new();
    for _ in 0..200 {
        let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
        firsts.entry(id >> 22).or_insert(id & 0xfff);
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
    let random = firsts.values().filter(|&&seq| seq != 0).count();
    assert!(
        firsts.len() >= 20 && random * 2 > firsts.len(),
        "random start: {random} of {} milliseconds started above 0",
        firsts.len()
    );
}

#[test]
fn count_beyond_the_clock_borrows_then_refuses_without_waiting() {
    // 64 IDs per ms (6 sequence bits): any server makes them far faster than the clock allows,
    // however busy the machine (at 4,096 a busy server once kept pace with the clock).
    const PER_MS: usize = 64;
    let layout = "time:41,datacenter:5,worker:11,sequence:6,tick-ms:1";
    let server = Server::start(&["max-drift-ms", "50", "layout", layout]);
    let mut con = server.connection();
    // 40 calls of 25 ms of capacity each, sent at once.
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for _ in 0..40 {
        pipe.cmd("SNOWFLAKE.NEXT").arg("COUNT").arg(25 * PER_MS);
    }
    let started = std::time::Instant::now();
    let replies: Vec<Value> = pipe.query(&mut con).unwrap();
    let elapsed_ms = started.elapsed().as_millis() as usize;
    let (mut ids, mut refused) = (0, 0);
    for reply in replies {
        match reply {
            Value::Array(batch) => ids += batch.len(),
            Value::ServerError(e) => {
                // Right after the start, IDs resume at the drift limit: that refusal says so.
                let text = e.details().unwrap_or_default();
                assert!(
                    text.contains("limit 50 ms") || text.contains("past the 50 ms drift limit"),
                    "{e:?}"
                );
                refused += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        refused > 0,
        "{ids} IDs in {elapsed_ms} ms and nothing refused"
    );
    let limit = (elapsed_ms + 50 + 2) * PER_MS;
    assert!(
        ids <= limit,
        "{ids} IDs in {elapsed_ms} ms exceeds the layout's capacity {limit}"
    );
    assert!(
        server
            .info_field("drift_borrowed_max_ms")
            .parse::<u64>()
            .unwrap()
            <= 50
    );
    assert_eq!(server.info_field("ids_refused"), refused.to_string());
}

#[test]
fn info_section_reports_the_generator() {
    let server = Server::start(&["worker-id", "5", "datacenter-id", "2"]);
    let _: Vec<i64> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "10"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(
        server.info_field("layout"),
        "time:41,datacenter:5,worker:5,sequence:12,tick-ms:1"
    );
    assert_eq!(server.info_field("worker_id"), "5");
    assert_eq!(server.info_field("datacenter_id"), "2");
    assert_eq!(server.info_field("ids_issued"), "10");
    assert_eq!(server.info_field("clock_backwards_events"), "0");
    let last: i64 = server.info_field("last_tick_ms").parse().unwrap();
    assert!((now_ms() - last).abs() < 10_000);
}

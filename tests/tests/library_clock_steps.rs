//! The Functions library under a stepped wall clock (the project's LD_PRELOAD shim on a stock
//! redis-server, so `TIME` steps): Snowflake IDs, date sequences and lease tokens repeat
//! nothing when the clock steps back and forth, across midnight, and across a kill -9 restart
//! with the clock behind.

use std::collections::HashSet;

use idgen_tests::backend::Backend;
use idgen_tests::clock::ClockShift;
use idgen_tests::{cmd, data_dir, now_ms, Options, Server};
use redis::Value;

/// A stock server following `clock`, writing every command to its AOF in `dir`, with the
/// library installed; on `port` when restarting.
fn server(clock: &ClockShift, dir: &std::path::Path, port: Option<u16>) -> Server {
    let server = Server::start_with(
        Options {
            no_module: true,
            dir: Some(dir.to_path_buf()),
            env: clock.env(),
            port,
            ..Options::default()
        }
        .server(&["--appendonly", "yes", "--appendfsync", "always"]),
    );
    Backend::Library.install(&server, 2_000);
    server
}

/// `n` calls of `snowflake_next` in one pipeline: the IDs, and how many were refused.
fn snowflakes(con: &mut dyn redis::ConnectionLike, n: usize) -> (Vec<u64>, usize) {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for _ in 0..n {
        pipe.cmd("FCALL").arg("snowflake_next").arg(1).arg("sf");
    }
    let replies: Vec<Value> = pipe.query(con).unwrap();
    let mut ids = Vec::new();
    let mut refused = 0;
    for reply in replies {
        match reply {
            Value::BulkString(text) => ids.push(String::from_utf8(text).unwrap().parse().unwrap()),
            Value::ServerError(e) => {
                let text = e.details().unwrap_or_default().to_string();
                assert!(text.contains("behind the last issued ID"), "{text}");
                refused += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    (ids, refused)
}

#[test]
fn snowflake_ids_repeat_nothing_across_steps_and_a_restart_with_the_clock_behind() {
    let dir = data_dir("library-clock");
    let clock = ClockShift::new(&dir);
    let mut server = server(&clock, &dir, None);
    let mut con = server.connection();
    let _: () = cmd(&["HSET", "sf", "datacenter", "1", "worker", "2"])
        .query(&mut con)
        .unwrap();
    let mut all: Vec<u64> = Vec::new();
    let mut refused = 0;
    for offset in [0, -5_000, -5_000, 3_000, -20_000, 0] {
        clock.set_ms(offset);
        let (ids, no) = snowflakes(&mut con, 3_000);
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "not increasing at {offset}"
        );
        all.extend(ids);
        refused += no;
    }
    assert!(
        refused > 0,
        "a step back of 5 s past the 1 s drift limit was not refused"
    );

    // kill -9, and the clock 10 s behind at the restart: above what was issued.
    server.kill9();
    clock.set_ms(-10_000);
    let server = self::server(&clock, &dir, Some(server.port));
    let mut con = server.connection();
    // Behind its reservation by more than the drift limit: refused, not repeated.
    let (after, refused) = snowflakes(&mut con, 3_000);
    assert!(
        refused > 0,
        "{} IDs issued 10 s behind the reservation",
        after.len()
    );
    // Once the clock is back and has passed the last IDs (made 3 s ahead, after the step
    // forward), IDs flow again.
    clock.set_ms(0);
    let mut later = Vec::new();
    let flowed = idgen_tests::wait_for(std::time::Duration::from_secs(10), || {
        later.extend(snowflakes(&mut con, 100).0);
        !later.is_empty()
    });
    assert!(flowed, "refused 10 s after the clock was back");
    let before: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(before.len(), all.len(), "an ID repeated before the restart");
    let last = *all.iter().max().unwrap();
    for id in after.iter().chain(&later) {
        assert!(*id > last, "{id} after the restart is not above {last}");
    }
}

#[test]
fn date_sequences_and_lease_tokens_repeat_nothing_when_the_clock_steps_back_across_midnight() {
    let dir = data_dir("library-midnight");
    let clock = ClockShift::new(&dir);
    let server = server(&clock, &dir, None);
    let mut con = server.connection();
    // 400 ms before the next UTC midnight, then 600 ms after it, then back before it.
    let day = 86_400_000;
    let midnight = (now_ms() / day + 1) * day;
    let mut values: Vec<u64> = Vec::new();
    let mut tokens: Vec<i64> = Vec::new();
    for at in [
        midnight - 400,
        midnight + 600,
        midnight - 300,
        midnight + 700,
    ] {
        clock.set_ms(at - now_ms());
        for _ in 0..50 {
            let v: u64 = cmd(&["FCALL", "dateseq_next", "1", "orders"])
                .query(&mut con)
                .unwrap();
            values.push(v);
        }
        let grant: Vec<i64> = cmd(&["FCALL", "workerid_acquire", "1", "fleet", "TTL", "100"])
            .query(&mut con)
            .unwrap();
        tokens.push(grant[1]);
    }
    let distinct: HashSet<u64> = values.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        values.len(),
        "a date-sequence value repeated"
    );
    let labels: HashSet<u64> = values.iter().map(|v| v / 1_000_000).collect();
    assert_eq!(labels.len(), 2, "two days: {labels:?}");
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens went back with the clock: {tokens:?}"
    );
}

//! SNOWFLAKE.NEXT while the server's wall clock jumps (an LD_PRELOAD shim moves it) and while
//! its state file cannot be written: no refusal without a real reason, and the reason told.

use std::time::Duration;

use idgen_tests::clock::ClockShift;
use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, data_dir, wait_for, Options, Server};

/// Sends `n` SNOWFLAKE.NEXT in one pipeline; the IDs, and the errors' texts.
fn pipelined(con: &mut dyn redis::ConnectionLike, n: usize) -> (Vec<i64>, Vec<String>) {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for _ in 0..n {
        pipe.cmd("SNOWFLAKE.NEXT");
    }
    let replies: Vec<Value> = pipe.query(con).unwrap();
    let (mut ids, mut errors) = (Vec::new(), Vec::new());
    for reply in replies {
        match reply {
            Value::Int(id) => ids.push(id),
            Value::ServerError(e) => errors.push(format!("{e:?}")),
            other => panic!("unexpected {other:?}"),
        }
    }
    (ids, errors)
}

fn time_ms(con: &mut dyn redis::ConnectionLike, id: i64) -> i64 {
    idgen_tests::decode(con, id).time_ms
}

#[test]
fn a_forward_clock_step_is_never_refused() {
    let dir = data_dir("forward");
    let clock = ClockShift::new(&dir);
    let server = Server::start_with(clock.options(Options::module(&["worker-id", "1"])));
    let mut con = server.connection();
    let mut last = 0;
    for step in 1..=5 {
        let (ids, errors) = pipelined(&mut con, 200);
        assert!(errors.is_empty(), "before step {step}: {errors:?}");
        // An NTP step or a resumed VM: far past the reservation (500 ms ahead at most).
        clock.set_ms(step * 3_000);
        let (after, errors) = pipelined(&mut con, 5_000);
        assert!(
            errors.is_empty(),
            "step {step}: refused after a forward step: {:?}",
            &errors[..1]
        );
        let all: Vec<i64> = ids.into_iter().chain(after).collect();
        assert!(
            all[0] > last && all.windows(2).all(|w| w[0] < w[1]),
            "step {step}: not increasing"
        );
        last = *all.last().unwrap();
    }
    // Once the reservation has caught up (within milliseconds), IDs carry the new time again.
    let follows = idgen_tests::wait_for(Duration::from_secs(5), || {
        let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
        let shifted_now = idgen_tests::now_ms() + 15_000;
        (time_ms(&mut con, id) - shifted_now).abs() < 1_000
    });
    assert!(follows, "IDs did not follow the clock");
}

#[test]
fn bursts_ahead_of_the_clock_are_refused_only_at_the_drift_limit() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for _ in 0..30 {
        pipe.cmd("SNOWFLAKE.NEXT").arg("COUNT").arg(100_000);
    }
    let replies: Vec<Value> = pipe.query(&mut con).unwrap();
    for reply in replies {
        if let Value::ServerError(e) = reply {
            let text = e.details().unwrap_or_default().to_string();
            // Right after the start, IDs resume at the drift limit: that refusal says so.
            assert!(
                text.starts_with("clock is") || text.starts_with("IDs start above"),
                "refused for another reason than the drift limit: {text}"
            );
        }
    }
}

#[test]
fn a_state_file_that_cannot_be_written_is_the_reason_given() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    let _: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    // The reservation is written to a temporary file, then renamed: a directory in the way
    // makes every write fail, as a full or read-only disk would.
    let blocker = server.dir.join("idgen-snowflake.state.tmp");
    std::fs::create_dir(&blocker).unwrap();
    let mut err = String::new();
    assert!(
        wait_for(Duration::from_secs(5), || {
            err = match cmd(&["SNOWFLAKE.NEXT"]).query::<i64>(&mut con) {
                Ok(_) => return false,
                Err(e) => idgen_tests::error_text(&e),
            };
            true
        }),
        "never refused while the state file could not be written"
    );
    assert!(
        err.contains("cannot write") && err.contains("Is a directory"),
        "the refusal does not say why: {err}"
    );
    assert!(server
        .info_field("state_file_error")
        .contains("Is a directory"));
    std::fs::remove_dir(&blocker).unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || cmd(&["SNOWFLAKE.NEXT"])
            .query::<i64>(&mut con)
            .is_ok()),
        "did not recover once the state file was writable"
    );
    assert_eq!(server.info_field("state_file_error"), "");
}

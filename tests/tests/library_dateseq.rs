//! idgen's Functions library's date sequences on a server without the module: the module's
//! options, errors and calendar, and a key restored older, deleted, flushed or migrated while
//! the library is loaded repeats nothing. (The suites shared with the module are in
//! `dateseq.rs` and `dateseq_periods.rs`.)

use idgen_core::dateseq::{Calendar, Period};
use idgen_tests::library::{install, plain_server, set_node};
use idgen_tests::{cmd, error_of, now_ms};

use idgen_tests::backend::LIBRARY_FIRST_USE_GAP as GAP;

#[test]
fn date_sequence_options_and_errors_follow_the_module() {
    let server = plain_server();
    let mut con = server.connection();
    install(&mut con);
    let now = now_ms();
    let utc = Calendar::new("UTC").unwrap();
    let (day, year) = (
        utc.period_of(now, Period::Day).date as u64,
        utc.period_of(now, Period::Year).date as u64,
    );
    let range: Vec<u64> = cmd(&["FCALL", "dateseq_next", "1", "invoice", "COUNT", "5"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        range,
        [day * 1_000_000 + GAP + 1, day * 1_000_000 + GAP + 5]
    );
    // DIGITS 10: above 2^53, so text, exact.
    let text: String = cmd(&["FCALL", "dateseq_next", "1", "invoice", "DIGITS", "10"])
        .query(&mut con)
        .unwrap();
    assert_eq!(text, format!("{day}{:010}", GAP + 6));
    let string: String = cmd(&["FCALL", "dateseq_next", "1", "invoice", "STRING"])
        .query(&mut con)
        .unwrap();
    assert_eq!(string, format!("{day}{:06}", GAP + 7));
    let yearly: u64 = cmd(&[
        "FCALL",
        "dateseq_next",
        "1",
        "invoice",
        "PERIOD",
        "year",
        "DIGITS",
        "5",
    ])
    .query(&mut con)
    .unwrap();
    // A new period of a key this process wrote: nothing of it can have been lost, no gap.
    assert_eq!(yearly, year * 100_000 + 1);
    // A new period keeps the two before it (a clock stepped back finds them) and drops older
    // ones; a clock stepped back into a kept one carries on above it.
    let _: () = cmd(&[
        "HSET",
        "kept",
        "day:20200101",
        "5",
        "day:20200102",
        "6",
        "day:20200103",
        "7",
    ])
    .query(&mut con)
    .unwrap();
    let _: u64 = cmd(&["FCALL", "dateseq_next", "1", "kept"])
        .query(&mut con)
        .unwrap();
    let mut fields: Vec<String> = cmd(&["HKEYS", "kept"]).query(&mut con).unwrap();
    fields.sort();
    assert_eq!(
        fields,
        [
            "day:20200102",
            "day:20200103",
            &format!("day:{day}"),
            "owner",
            "rate"
        ]
    );
    let none: Option<u64> = cmd(&["FCALL_RO", "dateseq_current", "1", "never"])
        .query(&mut con)
        .unwrap();
    assert_eq!(none, None);

    let cases: &[(&[&str], &str)] = &[
        (
            &["COUNT", "0"],
            "ERR COUNT 0 must be between 1 and 1000000000",
        ),
        (
            &["DIGITS", "11"],
            "ERR DIGITS must be between 1 and 10, got 11",
        ),
        (
            &["DIGITS", "x"],
            "ERR value is not an integer or out of range: 'x'",
        ),
        (
            &["PERIOD", "week"],
            "ERR PERIOD 'week' must be day, month or year",
        ),
        (
            &["FOO"],
            "ERR syntax error: 'FOO' is not an option of this command",
        ),
        (
            &["COUNT", "1", "COUNT", "2"],
            "ERR syntax error: 'COUNT' is given more than once",
        ),
        (&["COUNT"], "ERR syntax error: 'COUNT' needs a value"),
        // The gap of a new process does not fit in 4 digits.
        (&["DIGITS", "4"], "is spent"),
    ];
    for (options, expected) in cases {
        let mut call = cmd(&["FCALL", "dateseq_next", "1", "spent"]);
        call.arg(*options);
        let err = error_of(&mut con, &call);
        assert!(
            err.starts_with(expected) || err.contains(expected),
            "{options:?}: {err}"
        );
    }
    let before: Vec<String> = cmd(&["HKEYS", "spent"]).query(&mut con).unwrap();
    assert!(before.is_empty(), "a refused call wrote: {before:?}");
    let err = error_of(
        &mut con,
        &cmd(&["FCALL", "snowflake_next", "1", "x", "COUNT", "100001"]),
    );
    assert_eq!(err, "ERR COUNT 100001 must be between 1 and 100000");
}

/// Every way a date sequence's key can go back or move, while the library is loaded: restored
/// from an older DUMP, deleted, flushed, migrated to another server; and a counter that holds
/// what the library never writes. None repeats a value; the foreign one is refused naming it.
#[test]
fn a_date_sequence_restored_older_deleted_flushed_or_migrated_repeats_nothing() {
    let server = plain_server();
    let other = plain_server();
    let mut con = server.connection();
    install(&mut con);
    install(&mut other.connection());
    let next = |con: &mut dyn redis::ConnectionLike| -> u64 {
        cmd(&["FCALL", "dateseq_next", "1", "orders"])
            .query(con)
            .unwrap()
    };
    let mut all: Vec<u64> = (0..5).map(|_| next(&mut con)).collect();
    let old: Vec<u8> = cmd(&["DUMP", "orders"]).query(&mut con).unwrap();
    all.extend((0..5).map(|_| next(&mut con)));
    let steps: [&[&str]; 3] = [
        &["RESTORE", "orders", "0", "<dump>", "REPLACE"],
        &["DEL", "orders"],
        &["FLUSHALL"],
    ];
    for step in steps {
        let mut call = redis::cmd(step[0]);
        for word in &step[1..] {
            match *word {
                "<dump>" => call.arg(&old),
                w => call.arg(w),
            };
        }
        let _: redis::Value = call.query(&mut con).unwrap();
        let after = next(&mut con);
        assert!(
            after > *all.iter().max().unwrap(),
            "after {step:?}: {after} is not above {all:?}"
        );
        all.push(after);
        let current: u64 = cmd(&["FCALL_RO", "dateseq_current", "1", "orders"])
            .query(&mut con)
            .unwrap();
        assert_eq!(current, after, "dateseq_current after {step:?}");
    }
    // Moved to another server: that process did not write it, and skips the gap.
    let _: () = cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &other.port.to_string(),
        "orders",
        "0",
        "5000",
    ])
    .query(&mut con)
    .unwrap();
    let moved = next(&mut other.connection());
    assert!(moved > *all.iter().max().unwrap() + GAP - 1, "{moved}");

    // Data the library never writes, in a counter or a Snowflake reservation: refused.
    let label = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), Period::Day)
        .date;
    let _: () = cmd(&["HSET", "foreign", &format!("day:{label}"), "1e5"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["FCALL", "dateseq_next", "1", "foreign"]));
    assert!(err.contains("holds '1e5', not a count"), "{err}");
    set_node(&mut con, "sf", 1, 1);
    let _: () = cmd(&["HSET", "sf", "reserved", "1e20"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["FCALL", "snowflake_next", "1", "sf"]));
    assert!(err.contains("reserved of 'sf' holds '1e20'"), "{err}");
}

/// The values a restart skips follow the sequence's own rate, as its key records it: a
/// sequence issued in COUNT batches at tens of thousands of values a second skips its peak
/// rate times the 3 s the docs assume (plus 1,000), not the 10,000 floor.
#[test]
fn the_gap_after_a_restart_follows_the_sequences_rate() {
    let dir = idgen_tests::data_dir("library-rate");
    let options = idgen_tests::Options {
        no_module: true,
        dir: Some(dir.to_path_buf()),
        ..idgen_tests::Options::default()
    }
    .server(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut server = idgen_tests::Server::start_with(options.clone());
    let mut con = server.connection();
    install(&mut con);
    let mut last = 0u64;
    let started = std::time::Instant::now();
    for _ in 0..200 {
        let range: Vec<u64> = cmd(&["FCALL", "dateseq_next", "1", "busy", "COUNT", "100"])
            .query(&mut con)
            .unwrap();
        last = range[1];
    }
    let rate: String = cmd(&["HGET", "busy", "rate"]).query(&mut con).unwrap();
    let counts: Vec<u64> = rate.split(' ').map(|w| w.parse().unwrap()).collect();
    if started.elapsed() < std::time::Duration::from_millis(900) {
        // All 20,000 within this second and the one before: the key's bounds hold them all.
        assert!(
            counts[1] + counts[2] >= 20_000,
            "rate {rate} below the values given"
        );
    }
    // Plus the 1,000 a process may give past its last reading of its role (ROLE_CHUNK).
    let gap = (counts[1].max(counts[2]) * 3 + 1_000).max(GAP);
    assert!(gap > GAP, "20,000 values in well under a second: {rate}");
    drop(con);
    server.kill9();
    let server = idgen_tests::Server::start_with(idgen_tests::Options {
        port: Some(server.port),
        ..options
    });
    let after: u64 = cmd(&["FCALL", "dateseq_next", "1", "busy"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(after, last + gap + 1, "rate {rate}");

    // A rate the library never wrote is refused, naming it.
    let mut con = server.connection();
    let _: () = cmd(&["HSET", "busy", "rate", "fast"])
        .query(&mut con)
        .unwrap();
    let _: () = cmd(&["HSET", "busy", "owner", "another"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["FCALL", "dateseq_next", "1", "busy"]));
    assert!(err.contains("rate of 'busy' holds 'fast'"), "{err}");
    // Taken from the witness key when that went further (and another process wrote it last,
    // so that its rate is read): named as the witness's.
    let _: () = cmd(&["HDEL", "busy", "rate"]).query(&mut con).unwrap();
    let field = format!("day:{}", (after / 1_000_000));
    let ahead = (after % 1_000_000 + 5).to_string();
    let _: () = cmd(&[
        "HSET", "busy:w", &field, &ahead, "rate", "x", "owner", "another",
    ])
    .query(&mut con)
    .unwrap();
    let call = cmd(&["FCALL", "dateseq_next", "2", "busy", "busy:w"]);
    let err = error_of(&mut con, &call);
    assert!(err.contains("rate of 'busy:w' holds 'x'"), "{err}");
}

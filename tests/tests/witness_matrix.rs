//! Every source of IDs against every way its state can be lost, generated: each case issues
//! IDs, loses the state one way, issues again, and asserts one of three outcomes: no value
//! repeated; a refusal that names the state; or docs/guarantees.md's row that states the
//! assumption this loss breaks (named in the case).
//!
//! The inventory and the witness of each state item are in ARCHITECTURE.md ("State and its
//! witnesses").

use std::collections::HashSet;

use idgen_core::dateseq::{counter_key, Calendar, Period};
use idgen_tests::comebacks::{aof_written, comebacks, copy_dir};
use idgen_tests::file_losses::End;
use idgen_tests::losses::{assert_carried_on, dateseq_ways, run, Outcome};
use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, now_ms, Options, Server};

/// The forms a case issues in: one value a call, `COUNT 3` (a range), `STRING`.
const FORMS: [&[&str]; 3] = [&[], &["COUNT", "3"], &["STRING"]];

/// The values a DATESEQ.NEXT reply stands for.
fn values(reply: Value, counted: bool) -> Vec<u64> {
    let number = |v: &Value| -> u64 {
        match v {
            Value::Int(i) => *i as u64,
            Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
            other => panic!("{other:?}"),
        }
    };
    match reply {
        Value::Array(items) if counted => (number(&items[0])..=number(&items[1])).collect(),
        one => vec![number(&one)],
    }
}

fn next(
    con: &mut dyn redis::ConnectionLike,
    prefix: &str,
    period: &str,
    form: &[&str],
) -> Vec<u64> {
    let mut words = vec!["DATESEQ.NEXT", prefix, "PERIOD", period];
    words.extend(form);
    let reply: Value = cmd(&words).query(con).unwrap();
    values(reply, form.contains(&"COUNT"))
}

fn counter_name(prefix: &str, period: Period) -> String {
    let date = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), period)
        .date;
    let mut out = Vec::new();
    counter_key(prefix.as_bytes(), date, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn dateseq_counters_lost_every_way_while_running_repeat_nothing() {
    let server = Server::start_with(Options::default().server(&[
        "--enable-debug-command",
        "yes",
        "--databases",
        "4",
    ]));
    let mut con = server.connection();
    let periods = [
        ("day", Period::Day),
        ("month", Period::Month),
        ("year", Period::Year),
    ];
    let mut cases = 0;
    for way in dateseq_ways() {
        for (period_word, period) in periods {
            for form in FORMS {
                cases += 1;
                let case = format!("{} / PERIOD {period_word} / {form:?}", way.name);
                let prefix = format!("w{cases}");
                let key = counter_name(&prefix, period);
                let mut seen: Vec<u64> = next(&mut con, &prefix, period_word, form);
                let older: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut con).unwrap();
                run(
                    &mut con,
                    &["COPY", &key, &format!("backup:{key}"), "REPLACE"],
                );
                run(&mut con, &["SAVE"]);
                for _ in 0..2 {
                    seen.extend(next(&mut con, &prefix, period_word, form));
                }
                let before = server.info_field("dateseq_witness_lowered");
                (way.lose)(&mut con, &key, &older);
                if let Outcome::Refused(says) = way.outcome {
                    let mut words = vec!["DATESEQ.NEXT", &prefix, "PERIOD", period_word];
                    words.extend(form);
                    let err = idgen_tests::error_of(&mut con, &cmd(&words));
                    assert!(err.contains(says), "{case}: {err}");
                    run(&mut con, &["DEL", &key]);
                }
                let mut after = Vec::new();
                for _ in 0..3 {
                    after.extend(next(&mut con, &prefix, period_word, form));
                }
                assert_carried_on(&case, &mut seen, after);
                let lowered: u64 = server
                    .info_field("dateseq_witness_lowered")
                    .parse()
                    .unwrap();
                assert!(
                    lowered > before.parse::<u64>().unwrap(),
                    "{case}: the witness did not count the loss"
                );
            }
        }
    }
    assert!(
        server.log().contains("was found at"),
        "the log says a counter was found below its witness"
    );
    eprintln!("{cases} DATESEQ cases: a counter lost while running, every way, every period");
    assert!(cases >= 150);
}

/// Every way a DATESEQ server's data comes back older at a restart, after a crash or a clean
/// stop, in every period and form: the witness file carries each counter on above every value
/// handed out. After a clean stop nothing is skipped either; after a crash, at most a block.
#[test]
fn dateseq_counters_rolled_back_across_a_restart_repeat_nothing() {
    let periods = [
        ("day", Period::Day),
        ("month", Period::Month),
        ("year", Period::Year),
    ];
    let mut cases = 0;
    for comeback in comebacks() {
        for end in [End::Kill9, End::Clean] {
            let dir = idgen_tests::data_dir("matrix-dateseq-restart");
            let options = Options {
                dir: Some(dir.to_path_buf()),
                ..Options::default().server(comeback.persistence)
            };
            let mut server = Server::start_with(options.clone());
            let mut con = server.connection();
            let mut seen = std::collections::HashMap::new();
            let counters: Vec<(String, &str, &[&str])> = periods
                .iter()
                .flat_map(|(word, _)| FORMS.iter().map(move |form| (*word, *form)))
                .enumerate()
                .map(|(i, (word, form))| (format!("r{i}"), word, form))
                .collect();
            for (prefix, period, form) in &counters {
                seen.insert(prefix.clone(), next(&mut con, prefix, period, form));
            }
            run(&mut con, &["SAVE"]);
            std::fs::copy(dir.join("dump.rdb"), dir.join("older.rdb")).unwrap();
            if dir.join("appendonlydir").exists() {
                aof_written(&mut con);
                copy_dir(&dir.join("appendonlydir"), &dir.join("older-aof"));
            }
            for (prefix, period, form) in &counters {
                for _ in 0..20 {
                    let more = next(&mut con, prefix, period, form);
                    seen.get_mut(prefix).unwrap().extend(more);
                }
            }
            drop(con);
            match end {
                End::Kill9 => server.kill9(),
                End::Clean => server.shutdown(),
            }
            (comeback.put_back)(&dir);
            let server = Server::start_with(options);
            let mut con = server.connection();
            for (prefix, period, form) in &counters {
                cases += 1;
                let case = format!("{} / {end:?} / PERIOD {period} / {form:?}", comeback.name);
                let seen = seen.get_mut(prefix).unwrap();
                let highest = *seen.iter().max().unwrap();
                let after = next(&mut con, prefix, period, form);
                assert!(after[0] > highest, "{case}: {after:?} after {highest}");
                let gap = after[0] - highest - 1;
                match end {
                    End::Clean => assert_eq!(gap, 0, "{case}: a clean stop skips nothing"),
                    End::Kill9 => assert!(gap <= 4096, "{case}: a crash skipped {gap}"),
                }
                seen.extend(after);
                // Lowered again after the restart: the seeded witness holds too.
                let key = counter_name(prefix, periods.iter().find(|p| p.0 == *period).unwrap().1);
                run(&mut con, &["DEL", &key]);
                let again = next(&mut con, prefix, period, form);
                assert!(again[0] > *seen.iter().max().unwrap(), "{case}: {again:?}");
                seen.extend(again);
                let distinct: HashSet<u64> = seen.iter().copied().collect();
                assert_eq!(distinct.len(), seen.len(), "{case}: a value repeated");
            }
        }
    }
    eprintln!("{cases} DATESEQ cases: data rolled back across a restart, every way, every end");
    assert!(cases >= 72);
}

/// Without the witness file (`idgen.dateseq-witness-file ""`), DATESEQ's witness lives in
/// memory only: a restart from an older RDB loses it with the counters (the Guarantees row
/// "DATESEQ.NEXT values of one prefix and day", without a witness file). The documented
/// recovery, `INCRBY` above the highest value the database holds, carries the day on without a
/// repeat. This is also the break check of the witness file: turned off, values repeat.
#[test]
fn dateseq_from_an_older_rdb_without_the_witness_file_is_the_guarantees_row_and_raising_the_counter_recovers(
) {
    let dir = idgen_tests::data_dir("matrix-dateseq-restore");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        config_lines: vec!["idgen.dateseq-witness-file \"\"".into()],
        ..Options::default()
    };
    let mut server = Server::start_with(options.clone());
    let mut con = server.connection();
    let next = |con: &mut dyn redis::ConnectionLike| -> u64 {
        cmd(&["DATESEQ.NEXT", "invoice"]).query(con).unwrap()
    };
    next(&mut con);
    run(&mut con, &["SAVE"]);
    let handed: Vec<u64> = (0..5).map(|_| next(&mut con)).collect();
    server.kill9();
    let server = Server::start_with(options);
    let mut con = server.connection();
    let key = counter_name("invoice", Period::Day);
    let held: u64 = cmd(&["GET", &key]).query(&mut con).unwrap();
    let highest_seq = handed.iter().max().unwrap() % 1_000_000;
    assert!(
        held < highest_seq,
        "the older RDB holds {held}: the hazard was not set up"
    );
    let repeated = next(&mut con);
    assert!(
        handed.contains(&repeated),
        "without the witness file the older RDB repeats a value: {repeated} after {handed:?}"
    );
    run(
        &mut con,
        &["INCRBY", &key, &(highest_seq - held).to_string()],
    );
    let after = next(&mut con);
    assert!(after > *handed.iter().max().unwrap());
}

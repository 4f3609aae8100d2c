//! The DATESEQ witness file (`idgen.dateseq-witness-file`): what it holds, how values wait for
//! it, and what the module does when it is foreign, shared, or on a disk that fills up. The
//! restarts it makes safe are crossed with every way of losing data in `witness_matrix.rs`.

use std::collections::HashSet;
use std::time::Duration;

use idgen_tests::redis::{self, Value};
use idgen_tests::tmpfs::Tmpfs;
use idgen_tests::{cmd, wait_for, Options, Server};

const FILE: &str = "idgen-dateseq.witness";

fn next(con: &mut dyn redis::ConnectionLike, prefix: &str) -> u64 {
    cmd(&["DATESEQ.NEXT", prefix]).query(con).unwrap()
}

fn in_dir(dir: &std::path::Path) -> Options {
    Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    }
}

#[test]
fn values_wait_for_their_block_and_many_new_counters_share_each_write() {
    let dir = idgen_tests::data_dir("witness-file-blocks");
    let server = Server::start_with(in_dir(&dir));
    let mut con = server.connection();
    // 2,000 new counters in one pipeline: each first value waits for a block, and the writes
    // are grouped.
    let mut pipe = redis::pipe();
    for i in 0..2_000 {
        pipe.cmd("DATESEQ.NEXT").arg(format!("customer-{i}"));
    }
    let firsts: Vec<u64> = pipe.query(&mut con).unwrap();
    assert!(
        firsts.iter().all(|v| v % 1_000_000 == 1),
        "each starts at 1"
    );
    // Each first value asked its block without waiting for it: the writes follow.
    let lines_at_least = |n: u64| {
        wait_for(Duration::from_secs(10), || {
            let lines: u64 = server
                .info_field("dateseq_witness_file_lines")
                .parse()
                .unwrap();
            lines >= n
        })
    };
    assert!(lines_at_least(2_000), "a block for each counter");
    let lines: u64 = server
        .info_field("dateseq_witness_file_lines")
        .parse()
        .unwrap();
    let writes: u64 = server
        .info_field("dateseq_witness_file_writes")
        .parse()
        .unwrap();
    assert!(lines >= 2_000, "a block for each counter: {lines} lines");
    assert!(
        writes < lines / 4,
        "{writes} writes for {lines} lines: not grouped"
    );
    let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
    assert!(
        text.contains("{customer-1999}:"),
        "the file names each counter"
    );
    // A counter in steady use asks each block ahead: a few waits for a thousand values.
    let waits_before: u64 = server
        .info_field("dateseq_witness_file_waits")
        .parse()
        .unwrap();
    let mut seen = HashSet::new();
    for _ in 0..1_000 {
        assert!(seen.insert(next(&mut con, "steady")));
    }
    let waits: u64 = server
        .info_field("dateseq_witness_file_waits")
        .parse()
        .unwrap();
    assert!(waits - waits_before < 50, "{} waits", waits - waits_before);
    // Inside MULTI and a script (no client to block), the call waits for the write itself.
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("DATESEQ.NEXT")
        .arg("in-multi")
        .cmd("DATESEQ.NEXT")
        .arg("in-multi")
        .arg("COUNT")
        .arg(500);
    let (one, range): (u64, Vec<u64>) = pipe.query(&mut con).unwrap();
    assert_eq!((one % 1_000_000, range[1] - range[0]), (1, 499));
    let from_lua: u64 = redis::cmd("EVAL")
        .arg("return redis.call('DATESEQ.NEXT', 'in-lua', 'COUNT', 300)[2]")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(from_lua % 1_000_000, 300);
    let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
    for prefix in ["in-multi", "in-lua"] {
        let reserved: u64 = text
            .lines()
            .filter(|l| l.contains(&format!("{{{prefix}}}")))
            .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
            .max()
            .unwrap();
        assert!(
            reserved >= 300,
            "{prefix}: replied above its reservation {reserved}"
        );
    }
}

#[test]
fn a_foreign_or_shared_witness_file_refuses_the_module_naming_it() {
    idgen_tests::witness_file::refuses_foreign_or_shared(
        "witness-file-foreign",
        "dateseq-witness-file",
        FILE,
        "1795737600000 5 {a}:20261126",
        "1795737600000 9",
    );
}

#[test]
fn a_full_disk_refuses_values_it_cannot_reserve_then_resumes_without_a_repeat() {
    if idgen_tests::needs::root_missing(
        "a_full_disk_refuses_values_it_cannot_reserve_then_resumes_without_a_repeat",
    ) {
        return;
    }
    let disk = Tmpfs::mount("witness-file-full", "1m");
    let mut server = Server::start_with(in_dir(&disk));
    let mut con = server.connection();
    let before = next(&mut con, "invoice");
    let filler = disk.fill();
    // The counter's first block still has room: values below it need no write.
    let within = next(&mut con, "invoice");
    assert!(within > before);
    // Values past what new counters take unnamed need a block, which cannot be written once
    // the file's last page is full.
    let err = (0..500)
        .map(|i| {
            cmd(&["DATESEQ.NEXT", &format!("new-customer-{i}"), "COUNT", "20"])
                .query::<Vec<u64>>(&mut con)
        })
        .find_map(Result::err)
        .expect("a new counter was served with no room to reserve it");
    let err = idgen_tests::error_text(&err);
    assert!(
        err.contains("cannot write the DATESEQ witness file"),
        "{err}"
    );
    // A new counter's first value needs no write (the file's first line covers it), though its
    // own line cannot be written: after a crash, the first line lifts it.
    let unnamed_prefix = "a-new-counter-whose-line-is-longer-than-any-written-before";
    let unnamed = next(&mut con, unnamed_prefix);
    assert!(server
        .info_field("dateseq_witness_file_error")
        .contains("No space left"));
    // A burst past the block is refused too, never handed out unreserved.
    let refused = (0..100).any(|_| {
        let reply: redis::RedisResult<u64> = cmd(&["DATESEQ.NEXT", "invoice"]).query(&mut con);
        reply.is_err()
    });
    assert!(
        refused,
        "values went on past a block that could not be written"
    );
    std::fs::remove_file(filler).unwrap();
    let mut resumed = 0;
    assert!(wait_for(Duration::from_secs(5), || {
        resumed = cmd(&["DATESEQ.NEXT", "new-customer"])
            .query(&mut con)
            .unwrap_or(0);
        resumed > 0
    }));
    // The new counter's first value needed no write; its line goes out after the reply, and
    // the error clears with that write.
    assert!(
        wait_for(Duration::from_secs(5), || server
            .info_field("dateseq_witness_file_error")
            .is_empty()),
        "{}",
        server.info_field("dateseq_witness_file_error")
    );
    let mut after: u64 = cmd(&["DATESEQ.NEXT", "invoice"]).query(&mut con).unwrap();
    assert!(after > within);
    // Stopped cleanly: the counter whose block was never written is still lifted at the next
    // start (the run is kept as a crash would be), and a write cut short by the full disk left
    // no torn line. The counters carry on above everything handed out, whatever the data says.
    server.shutdown();
    std::fs::remove_file(disk.join("dump.rdb")).ok();
    let server = Server::start_with(in_dir(&disk));
    let mut con = server.connection();
    let restarted = next(&mut con, "invoice");
    assert!(restarted > after, "{restarted} after {after}");
    let lifted = next(&mut con, unnamed_prefix);
    assert!(lifted > unnamed, "{lifted} after {unnamed}: a repeat");
    after = next(&mut con, "new-customer-x");
    assert!(after > resumed);
    let _: Value = cmd(&["PING"]).query(&mut con).unwrap();
}

/// A crash is remembered until the periods it overlapped are over, clean stops included: a
/// counter whose first values went out unnamed in the file (its line not yet written when the
/// server died, as here) is lifted above them at every later start, not only the next.
#[test]
fn a_crash_is_remembered_across_clean_restarts() {
    let dir = idgen_tests::data_dir("witness-file-crash");
    let mut server = Server::start_with(in_dir(&dir));
    let first = next(&mut server.connection(), "quiet");
    server.kill9();
    // The crash came before the counter's own line was written: take it out.
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("{quiet}"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
    // A start that never names the counter, stopped cleanly.
    let mut server = Server::start_with(in_dir(&dir));
    server.shutdown();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("crashed "), "the crash is forgotten:\n{text}");
    let server = Server::start_with(in_dir(&dir));
    let after = next(&mut server.connection(), "quiet");
    assert!(after > first, "{after} after {first}: a repeat");
}

/// After a crash (kill -9, the data lost), at every DIGITS: a counter that issued nothing is
/// never spent by the skip, and starts where the witness file says its first values may have
/// gone (at 1 for DIGITS 1 and 2, whose values wait for a line of their own; above the file's
/// first line, 16 values, for DIGITS 3 and up), and DATESEQ.CURRENT shows no value for it; a
/// counter that issued values carries on above them, skipping at most a sixteenth of what its
/// DIGITS hold (or one value).
#[test]
fn a_crash_never_spends_a_counter_and_skips_within_its_digits() {
    let dir = idgen_tests::data_dir("witness-file-crash-digits");
    let mut server = Server::start_with(in_dir(&dir));
    let mut con = server.connection();
    let next_at = |con: &mut dyn redis::ConnectionLike, prefix: &str, digits: u32| -> u64 {
        cmd(&["DATESEQ.NEXT", prefix, "DIGITS", &digits.to_string()])
            .query(con)
            .unwrap_or_else(|e| panic!("{prefix} DIGITS {digits}: {e}"))
    };
    let all_digits = 1..=idgen_core::dateseq::MAX_DIGITS;
    let given: Vec<u64> = all_digits
        .clone()
        .map(|d| {
            (0..3)
                .map(|_| next_at(&mut con, &format!("used{d}"), d))
                .last()
                .unwrap()
        })
        .collect();
    server.kill9();
    for lost in ["dump.rdb", "appendonlydir"] {
        let _ = std::fs::remove_file(dir.join(lost));
        let _ = std::fs::remove_dir_all(dir.join(lost));
    }
    let server = Server::start_with(in_dir(&dir));
    let mut con = server.connection();
    for (d, given) in all_digits.zip(given) {
        let scale = 10u64.pow(d);
        let most = scale - 1;
        let fresh = format!("fresh{d}");
        let current: Option<u64> = cmd(&["DATESEQ.CURRENT", &fresh, "DIGITS", &d.to_string()])
            .query(&mut con)
            .unwrap();
        assert_eq!(current, None, "DIGITS {d}: a crash's floor shown as given");
        let first = next_at(&mut con, &fresh, d) % scale;
        let expected = if d <= 2 { 1 } else { 17 };
        assert_eq!(first, expected, "DIGITS {d}: a counter that issued nothing");
        let after = next_at(&mut con, &format!("used{d}"), d);
        assert!(after > given, "DIGITS {d}: {after} after {given}: a repeat");
        let skipped = after - given - 1;
        assert!(
            skipped <= (most / 16).max(1),
            "DIGITS {d}: {skipped} values skipped of {most}"
        );
    }
}

//! Snowflake IDs across restarts: the durable reservation makes a node that crashed while
//! running ahead of its clock come back above every ID it issued.

use std::time::Duration;

use idgen_tests::burst::{burst, BURST_LAYOUT};
use idgen_tests::{cmd, data_dir, error_of, now_ms, wait_for, Options, Server};

/// Module arguments for a server that bursts: `args` and [`BURST_LAYOUT`].
fn bursting(args: &[&str]) -> Options {
    Options::module(&[args, &["layout", BURST_LAYOUT]].concat())
}

/// What a kill -9 in the middle of a burst left behind.
struct Crash {
    /// Start of the last ID's tick before the crash.
    last_tick: i64,
    /// How far that was ahead of the clock, in ms.
    ahead: i64,
    /// Time of the first ID after the restart.
    first: i64,
}

/// Bursts on `server`, kills it with SIGKILL mid-burst, and restarts it at once with `options`,
/// before the clock can catch up with the IDs issued ahead of it.
fn crash_in_a_burst(mut server: Server, options: Options) -> Crash {
    let (_stream, last_tick) = burst(&server);
    let ahead = last_tick - now_ms();
    server.kill9();
    let restarted = Server::start_with(options);
    let first = first_time_after_restart(&restarted);
    Crash {
        last_tick,
        ahead,
        first,
    }
}

/// The time of the first ID a restarted server hands out (retrying while it refuses).
fn first_time_after_restart(server: &Server) -> i64 {
    let mut con = server.connection();
    let mut id = None;
    assert!(wait_for(Duration::from_secs(5), || {
        id = cmd(&["SNOWFLAKE.NEXT"]).query::<i64>(&mut con).ok();
        id.is_some()
    }));
    idgen_tests::decode(&mut con, id.unwrap()).time_ms
}

#[test]
fn kill_9_while_ahead_of_the_clock_then_restart_never_repeats() {
    let dir = data_dir("restart");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..bursting(&["worker-id", "3"])
    };
    let mut furthest = 0;
    for round in 0..4 {
        // Let the clock pass the last run's reservation, so that this round's burst issues IDs.
        if let Ok(text) = std::fs::read_to_string(dir.join("idgen-snowflake.state")) {
            let until = text.split_whitespace().next().unwrap();
            let wait = until.parse::<i64>().unwrap() - now_ms();
            std::thread::sleep(Duration::from_millis(wait.max(0) as u64));
        }
        let server = Server::start_with(options.clone());
        // The restarted node may refuse for a moment (if it would run too far ahead), never
        // repeat.
        let Crash {
            last_tick,
            ahead,
            first,
        } = crash_in_a_burst(server, options.clone());
        furthest = furthest.max(ahead);
        eprintln!("round {round}: {ahead} ms ahead at the crash");
        assert!(first > last_tick, "round {round}: restarted at {first} ms, IDs were issued up to {last_tick} ms ({ahead} ms ahead)");
    }
    assert!(
        furthest > 100,
        "the bursts never ran ahead of the clock: the hazard was not set up"
    );
}

#[test]
fn without_a_state_file_a_restart_starts_above_the_furthest_a_burst_could_reach() {
    // The same crash with the reservation switched off: the load time plus idgen.max-drift-ms
    // is the witness left, and it is above every ID a run on this clock could have issued.
    let dir = data_dir("nostate");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        config_lines: vec!["idgen.state-file \"\"".into()],
        ..bursting(&[])
    };
    let server = Server::start_with(options.clone());
    assert!(server.log().contains("IDs may repeat after a restart"));
    let Crash {
        last_tick,
        ahead,
        first,
    } = crash_in_a_burst(server, options);
    assert!(
        ahead > 100,
        "the burst ran only {ahead} ms ahead: the hazard was not set up"
    );
    assert!(
        first > last_tick,
        "ran {ahead} ms ahead, yet restarted at {first} <= {last_tick}"
    );
}

/// A way the state file is lost between a crash and the restart, given the file as it was
/// before the burst (an older copy).
type Loss = fn(&std::path::Path, &str);

#[test]
fn a_state_file_lost_emptied_or_put_back_older_after_a_burst_repeats_nothing() {
    let losses: &[(&str, &str, Loss)] = &[
        ("deleted", "missing", |file, _| {
            std::fs::remove_file(file).unwrap()
        }),
        ("emptied", "empty", |file, _| {
            std::fs::write(file, "").unwrap()
        }),
        ("put back from an older copy", "reserved", |file, older| {
            std::fs::write(file, older).unwrap()
        }),
        ("renamed away", "missing", |file, _| {
            std::fs::rename(file, file.with_extension("old")).unwrap()
        }),
    ];
    for (i, (loss, found, lose)) in losses.iter().enumerate() {
        let dir = data_dir(&format!("lost-state-{i}"));
        let file = dir.join("idgen-snowflake.state");
        let options = Options {
            dir: Some(dir.to_path_buf()),
            ..bursting(&["worker-id", "5"])
        };
        let mut server = Server::start_with(options.clone());
        let older = std::fs::read_to_string(&file).unwrap();
        let (_stream, last_tick) = burst(&server);
        let ahead = last_tick - now_ms();
        server.kill9();
        lose(&file, &older);
        let restarted = Server::start_with(options);
        let first = first_time_after_restart(&restarted);
        assert!(ahead > 100, "{loss}: the burst ran only {ahead} ms ahead");
        assert!(
            first > last_tick,
            "{loss}: restarted at {first} ms, IDs were issued up to {last_tick} ms ({ahead} ms ahead)"
        );
        assert_eq!(restarted.info_field("state_file_found"), *found, "{loss}");
        if *found != "reserved" {
            assert_eq!(
                restarted.info_field("resumed_from"),
                "load-time+max-drift",
                "{loss}"
            );
            assert!(
                restarted
                    .log()
                    .contains(&format!("{} {found}", file.display())),
                "{loss}: the log does not say so"
            );
        }
    }
}

#[test]
fn a_clock_behind_the_reservation_is_refused_until_it_catches_up() {
    let dir = data_dir("behind");
    std::fs::write(
        dir.join("idgen-snowflake.state"),
        format!("{}\n", now_ms() + 60_000),
    )
    .unwrap();
    let server = Server::start_with(Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    });
    let err = error_of(&mut server.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(
        err.starts_with("ERR IDs start above") && err.contains("retry in"),
        "{err}"
    );
    let reserved: i64 = server.info_field("reserved_until_ms").parse().unwrap();
    assert!(
        reserved >= now_ms() + 59_000,
        "the reservation on disk is never lowered"
    );
}

#[test]
fn an_unusable_state_file_stops_the_module_from_loading() {
    let dir = data_dir("badstate");
    let file = dir.join("idgen-snowflake.state");
    // Values idgen never writes: refused with the file and the field, never carried on from.
    for (text, says) in [
        (
            "yesterday\n",
            "reservation time 'yesterday' is not a time in ms",
        ),
        (
            "-5 layout=twitter epoch=1288834974657\n",
            "reservation time '-5' is not a time",
        ),
        (
            "99999999999999999 layout=twitter epoch=1288834974657\n",
            "'99999999999999999'",
        ),
        (
            "1795000000000 layout=twitter epoch=-3\n",
            "epoch=-3 is not a time",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let log = Server::try_start(Options {
            dir: Some(dir.to_path_buf()),
            ..Options::default()
        })
        .err()
        .unwrap_or_else(|| panic!("{text:?} was accepted"));
        assert!(
            log.contains(&file.display().to_string()) && log.contains(says),
            "{text:?}: {log}"
        );
    }
    // Something other than a file in its place: refused, never read as a first start.
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), &file).unwrap();
    let dangling = Server::try_start(Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    });
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let directory = Server::try_start(Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    });
    for (result, says) in [
        (dangling, "is a symbolic link to nothing"),
        (directory, "is not a regular file"),
    ] {
        let log = result.err().unwrap_or_else(|| panic!("{says}: loaded"));
        assert!(log.contains(&format!("{} {says}", file.display())), "{log}");
    }
    let log = Server::try_start(Options::module(&["state-file", "/proc/no/such/dir/state"]))
        .err()
        .unwrap();
    assert!(
        log.contains("cannot open /proc/no/such/dir/state.lock"),
        "{log}"
    );
}

#[test]
fn a_second_server_on_the_same_configuration_refuses_to_load() {
    let dir = data_dir("twice");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::module(&["worker-id", "9"])
    };
    let first = Server::start_with(options.clone());
    let log = Server::try_start(options.clone())
        .err()
        .expect("the second server loaded");
    assert!(log.contains("locked by another running server"), "{log}");
    // The same files reached through links: a linked directory, and links to each file.
    let linked_dir = data_dir("twice-linked-dir");
    std::os::unix::fs::symlink(&*dir, linked_dir.join("dir")).unwrap();
    let linked_files = data_dir("twice-linked-files");
    let files = [
        ("state-file", "idgen-snowflake.state"),
        ("dateseq-witness-file", "idgen-dateseq.witness"),
        ("workerid-witness-file", "idgen-workerid.witness"),
    ];
    for (_, file) in files {
        std::os::unix::fs::symlink(dir.join(file), linked_files.join(file)).unwrap();
    }
    for (setting, file) in files {
        for path in [linked_dir.join("dir").join(file), linked_files.join(file)] {
            let path = path.display().to_string();
            let log = Server::try_start(Options::module(&["worker-id", "9", setting, &path]))
                .err()
                .unwrap_or_else(|| panic!("a second server loaded with {setting} {path}"));
            assert!(
                log.contains("locked by another running server"),
                "{setting} {path}: {log}"
            );
        }
    }
    drop(first);
    Server::start_with(options); // the lock goes with the process
}

#[test]
fn config_set_dir_cannot_move_the_state_file_away_from_a_restart() {
    let dir = data_dir("movedir");
    let elsewhere = data_dir("movedir-elsewhere");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..bursting(&["worker-id", "4"]).server(&["--enable-protected-configs", "yes"])
    };
    let server = Server::start_with(options.clone());
    let _: () = cmd(&["CONFIG", "SET", "dir", &elsewhere.display().to_string()])
        .query(&mut server.connection())
        .unwrap();
    // Back with the original --dir, as a service manager would start it.
    let Crash {
        last_tick,
        ahead,
        first,
    } = crash_in_a_burst(server, options);
    assert!(
        ahead > 100,
        "the burst ran only {ahead} ms ahead: the hazard was not set up"
    );
    assert!(
        first > last_tick,
        "restarted at {first} ms, IDs were issued up to {last_tick} ms ({ahead} ms ahead)"
    );
}

#[test]
fn state_files_named_like_their_lock_or_temporary_file_work() {
    for name in ["ids.lock", "ids.tmp"] {
        let dir = data_dir(&format!("names-{name}"));
        // Whatever sits beside the state file under the lock's name is kept, not truncated.
        std::fs::write(dir.join(format!("{name}.lock")), "precious").unwrap();
        let options = Options {
            dir: Some(dir.to_path_buf()),
            ..Options::module(&["state-file", name])
        };
        let mut server = Server::start_with(options.clone());
        let (_stream, last_tick) = burst(&server);
        server.kill9();
        let server = Server::start_with(options);
        let first = first_time_after_restart(&server);
        assert!(
            first > last_tick,
            "{name}: restarted at {first}, issued up to {last_tick}"
        );
        let kept = std::fs::read_to_string(dir.join(format!("{name}.lock"))).unwrap();
        assert_eq!(kept, "precious", "{name}: the lock file was truncated");
    }
}

/// A start without its state file puts IDs above the load time plus the drift limit, at the
/// limit: a burst sent at once is refused until the clock moves, and the refusal says so and
/// when to retry (not "the clock stepped back"). Made certain by lowering the limit under the
/// start fence (`idgen.max-drift-ms` 60,000 to 1,000), and tried as the issue sent it, a COUNT
/// of 100,000 on a fresh start.
#[test]
fn a_burst_at_the_start_fence_is_refused_as_such_and_served_once_the_clock_allows() {
    let server = Server::start(&["max-drift-ms", "60000"]);
    let mut con = server.connection();
    let _: () = cmd(&["CONFIG", "SET", "idgen.max-drift-ms", "1000"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(
        err.contains("IDs start above") && err.contains("retry in") && !err.contains("stepped"),
        "{err}"
    );
    for _ in 0..3 {
        let fresh = Server::start(&[]);
        let mut con = fresh.connection();
        match cmd(&["SNOWFLAKE.NEXT", "COUNT", "100000"]).query::<Vec<i64>>(&mut con) {
            Ok(ids) => assert_eq!(ids.len(), 100_000),
            Err(e) => {
                let err = idgen_tests::error_text(&e);
                assert!(
                    err.contains("IDs start above") && err.contains("retry in"),
                    "{err}"
                );
                let wait: u64 = err
                    .rsplit("retry in ")
                    .next()
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                std::thread::sleep(Duration::from_millis(wait + 1));
                let ids: Vec<i64> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "100000"])
                    .query(&mut con)
                    .unwrap();
                assert_eq!(ids.len(), 100_000);
            }
        }
    }
}

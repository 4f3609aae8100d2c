//! The named layouts are their originals: each takes its original's epoch unless `idgen.epoch`
//! says otherwise, other people's decoders read our IDs as the originals' own, and a server
//! that issued IDs refuses to restart under settings whose IDs could equal them.

use idgen_tests::{cmd, data_dir, decode, now_ms, when_caught_up, Options, Server};

const TWITTER: i64 = 1_288_834_974_657;
const INSTAGRAM: i64 = 1_314_220_021_721;
/// 2014-09-01T00:00:00Z.
const SONYFLAKE: i64 = 1_409_529_600_000;

fn config_epoch(con: &mut dyn redis::ConnectionLike) -> i64 {
    let pair: Vec<String> = cmd(&["CONFIG", "GET", "idgen.epoch"]).query(con).unwrap();
    pair[1].parse().unwrap()
}

#[test]
fn each_profile_takes_its_originals_epoch_unless_one_is_set() {
    for (layout, epoch) in [
        ("twitter", TWITTER),
        ("instagram", INSTAGRAM),
        ("sonyflake", SONYFLAKE),
        ("js53", TWITTER),
        ("time:41,worker:10,sequence:12", TWITTER),
    ] {
        let server = Server::start(&["layout", layout]);
        let mut con = server.connection();
        assert_eq!(config_epoch(&mut con), epoch, "{layout}: CONFIG GET");
        assert_eq!(
            server.info_field("epoch_ms"),
            epoch.to_string(),
            "{layout}: INFO"
        );
        let before = now_ms();
        let id: i64 = when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT"]));
        // A node starts above its load time plus the drift limit (1 s by default).
        let after = now_ms() + idgen_core::DEFAULT_MAX_DRIFT_MS as i64;
        let decoded = decode(&mut con, id);
        assert_eq!(decoded.epoch_ms, epoch, "{layout}: DECODE");
        let time = decoded.time_ms;
        // Sonyflake counts 10 ms units: its time is the start of the unit.
        assert!(
            (before - 10..=after).contains(&time),
            "{layout}: {time} not in {before}..={after}"
        );
    }
    let server = Server::start(&["layout", "sonyflake", "epoch", &TWITTER.to_string()]);
    let mut con = server.connection();
    assert_eq!(config_epoch(&mut con), TWITTER, "a set epoch wins");
    let id: i64 = when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT"]));
    assert_eq!(decode(&mut con, id).epoch_ms, TWITTER);
}

/// `[time_ms, node, sequence]` of each ID, as other people's decoders read it (from the venv
/// `make test` builds: snowflake-id-toolkit, sonyflake-py).
fn python_decode(profile: &str, ids: &[i64]) -> Vec<[i64; 3]> {
    let input: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    let text = idgen_tests::run_python("snowflake_decode.py", &[profile], &input.join("\n"));
    let numbers: Vec<i64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(numbers.len(), ids.len() * 3, "{text}");
    numbers.chunks(3).map(|c| [c[0], c[1], c[2]]).collect()
}

#[test]
fn other_peoples_decoders_read_each_profile_as_its_original() {
    // (profile, load arguments, the node the original's decoder reports)
    let cases: [(&str, &[&str], i64); 3] = [
        (
            "twitter",
            &["datacenter-id", "1", "worker-id", "3"],
            (1 << 5) | 3,
        ),
        ("instagram", &["worker-id", "1234"], 1234),
        ("sonyflake", &["worker-id", "4321"], 4321),
    ];
    for (profile, args, node) in cases {
        let mut load = vec!["layout", profile];
        load.extend_from_slice(args);
        let server = Server::start(&load);
        let mut con = server.connection();
        let before = now_ms();
        let mut ids: Vec<i64> = when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT", "COUNT", "300"]));
        for _ in 0..20 {
            ids.push(when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT"])));
        }
        let after = now_ms();
        let theirs = python_decode(profile, &ids);
        for (&id, [time_ms, their_node, sequence]) in ids.iter().zip(theirs) {
            let ours = decode(&mut con, id);
            assert_eq!(time_ms, ours.time_ms, "{profile} {id}: time");
            assert!(
                (before - 10..=after + 1_000).contains(&time_ms),
                "{profile} {id}: their decoder reads {time_ms}, the call was {before}..={after}"
            );
            assert_eq!(their_node, node, "{profile} {id}: node");
            assert_eq!(sequence, ours.sequence, "{profile} {id}: sequence");
        }
    }
}

#[test]
fn a_restart_under_a_later_epoch_is_refused_unless_accepted() {
    let dir = data_dir("lineage");
    let with = |args: &[&str]| Options {
        dir: Some(dir.to_path_buf()),
        ..Options::module(args)
    };
    let twitter_epoch = TWITTER.to_string();
    // A `layout sonyflake` server as every one was before profiles had epochs.
    let old = Server::start_with(with(&["layout", "sonyflake", "epoch", &twitter_epoch]));
    let last: i64 = when_caught_up(&mut old.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
    drop(old);
    let state = std::fs::read_to_string(dir.join("idgen-snowflake.state")).unwrap();
    assert!(
        state.contains("layout=time:39,sequence:8,worker:16,tick-ms:10")
            && state.contains(&format!("epoch={TWITTER}")),
        "{state}"
    );

    // Upgraded, with the layout's own epoch now the default: refused, saying why and what to do.
    let log = Server::try_start(with(&["layout", "sonyflake"]))
        .err()
        .expect("a later epoch must be refused");
    assert!(
        log.contains("new IDs would equal old ones") && log.contains("accept-id-overlap"),
        "{log}"
    );
    assert!(log.contains(&format!("idgen.epoch {TWITTER}")), "{log}");
    // The same settings as before still start, and carry on above the old IDs.
    let same = Server::start_with(with(&["layout", "sonyflake", "epoch", &twitter_epoch]));
    let next: i64 = when_caught_up(&mut same.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(next > last);
    drop(same);

    // Accepted on purpose: it starts, says so in the log, and records the new lineage, so the
    // next restart needs no flag.
    let accepted = Server::start_with(with(&["layout", "sonyflake", "accept-id-overlap", "yes"]));
    assert!(
        accepted.log().contains("starting anyway"),
        "{}",
        accepted.log()
    );
    drop(accepted);
    let state = std::fs::read_to_string(dir.join("idgen-snowflake.state")).unwrap();
    assert!(state.contains(&format!("epoch={SONYFLAKE}")), "{state}");
    let again = Server::start_with(with(&["layout", "sonyflake"]));
    assert_eq!(config_epoch(&mut again.connection()), SONYFLAKE);
    drop(again);
    // A narrower layout (js53 on Twitter's epoch) makes smaller IDs than these: refused.
    let log = Server::try_start(with(&["layout", "js53"]))
        .err()
        .expect("a narrower layout must be refused");
    assert!(log.contains("new IDs would equal old ones"), "{log}");
}

#[test]
fn a_state_file_from_before_lineages_is_read_as_twitters_epoch_or_the_set_one() {
    let dir = data_dir("lineage-upgrade");
    let write_old_file =
        || std::fs::write(dir.join("idgen-snowflake.state"), format!("{}\n", now_ms())).unwrap();
    let with = |args: &[&str]| Options {
        dir: Some(dir.to_path_buf()),
        ..Options::module(args)
    };
    write_old_file();
    let log = Server::try_start(with(&["layout", "sonyflake"]))
        .err()
        .expect("a sonyflake server upgraded without an epoch must be refused");
    assert!(log.contains(&format!("epoch {TWITTER}")), "{log}");
    for args in [
        &["layout", "sonyflake", "epoch", "1288834974657"][..],
        &["layout", "twitter"][..],
        &["layout", "instagram", "epoch", "1314220021721"][..],
    ] {
        write_old_file();
        let server = Server::start_with(with(args));
        let _: i64 = when_caught_up(&mut server.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
    }
}

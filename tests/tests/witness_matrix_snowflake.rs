//! The Snowflake state file against every way it can be lost between runs: the IDs after
//! repeat nothing, or the module refuses to load naming the file.
//! (The matrix of DATESEQ counters is `witness_matrix.rs`: the three outcomes and the inventory
//! are described there.)

use idgen_tests::file_losses::{file_losses, End};
use idgen_tests::{cmd, Options, Server};

#[test]
fn the_snowflake_state_file_lost_every_way_repeats_nothing_or_is_refused() {
    use idgen_tests::burst::{burst, BURST_LAYOUT};
    let mut cases = 0;
    for loss in file_losses() {
        for end in [End::Kill9, End::Clean] {
            cases += 1;
            let case = format!("{} / {end:?}", loss.name);
            let dir = idgen_tests::data_dir(&format!("matrix-snowflake-{cases}"));
            let file = dir.join("idgen-snowflake.state");
            let options = Options {
                dir: Some(dir.to_path_buf()),
                ..Options::module(&["worker-id", "6", "layout", BURST_LAYOUT])
            };
            let mut server = Server::start_with(options.clone());
            let older = std::fs::read_to_string(&file).unwrap();
            let (stream, last_tick) = burst(&server);
            match end {
                End::Kill9 => server.kill9(),
                End::Clean => {
                    drop(stream);
                    server.shutdown();
                }
            }
            (loss.lose)(&file, &older);
            match Server::try_start(options) {
                Ok(restarted) => {
                    let mut con = restarted.connection();
                    let id: i64 = idgen_tests::when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT"]));
                    let first = idgen_tests::decode(&mut con, id).time_ms;
                    assert!(
                        first > last_tick,
                        "{case}: restarted at {first}, issued up to {last_tick}"
                    );
                }
                // Refused: the log names the file and says what was wrong.
                Err(log) => {
                    assert!(log.contains(&file.display().to_string()), "{case}: {log}");
                    assert!(
                        [
                            "garbage",
                            "not text",
                            "a directory",
                            "a dangling link",
                            "swapped"
                        ]
                        .iter()
                        .any(|w| loss.name.starts_with(w)),
                        "{case}: refused, yet this loss is one to carry on from: {log}"
                    );
                }
            }
        }
    }
    eprintln!(
        "{cases} Snowflake cases: the state file lost every way, after a kill -9 or a clean stop"
    );
    assert_eq!(cases, 18);
}

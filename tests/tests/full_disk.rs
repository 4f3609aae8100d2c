//! A disk that fills under load, at every file the module writes (the Snowflake state file, the
//! DATESEQ and lease witness files), while DATESEQ, lease and Snowflake calls run; then kill -9 while it fails, the disk freed, and a restart with no
//! persistence of the data (so only the files witness what was handed out). Nothing
//! acknowledged before the failure or during it is handed out again: no DATESEQ value, no
//! Snowflake ID, and no worker ID granted over a live holder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use idgen_tests::lease::{assert_granted_above, coordinator_past_its_first_fence};
use idgen_tests::tmpfs::Tmpfs;
use idgen_tests::{cmd, wait_for, Options, Server};

const PREFIXES: [&str; 4] = ["invoice", "order", "refund", "{eu}:ticket"];

/// What the clients were told.
#[derive(Default)]
struct Told {
    dateseq: HashMap<&'static str, Vec<u64>>,
    snowflakes: Vec<i64>,
    /// (namespace, expires_at_ms) of each grant: worker ID 0 of a namespace of its own, so
    /// that namespaces first written while the disk is full are among them.
    grants: Vec<(String, i64)>,
    refusals: usize,
}

/// Calls on `server` until `stop`, noting every acknowledged reply.
fn load(
    server: &Server,
    client: usize,
    stop: Arc<AtomicBool>,
    told: Arc<Mutex<Told>>,
) -> thread::JoinHandle<()> {
    let mut con = server.connection();
    thread::spawn(move || {
        let mut round = 0usize;
        let note = |f: &mut dyn FnMut(&mut Told)| f(&mut told.lock().unwrap());
        while !stop.load(Ordering::Relaxed) {
            round += 1;
            let prefix = PREFIXES[round % PREFIXES.len()];
            match cmd(&["DATESEQ.NEXT", prefix]).query::<u64>(&mut con) {
                Ok(v) => note(&mut |t| t.dateseq.entry(prefix).or_default().push(v)),
                Err(_) => note(&mut |t| t.refusals += 1),
            }
            match cmd(&["SNOWFLAKE.NEXT", "COUNT", "20"]).query::<Vec<i64>>(&mut con) {
                Ok(ids) => note(&mut |t| t.snowflakes.extend(&ids)),
                Err(_) => note(&mut |t| t.refusals += 1),
            }
            if round.is_multiple_of(4) {
                let ns = format!("fleet-{client}-{round}");
                match cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "20000", "MAX", "1"])
                    .query::<Vec<i64>>(&mut con)
                {
                    Ok(g) => note(&mut |t| t.grants.push((ns.clone(), g[2]))),
                    Err(_) => note(&mut |t| t.refusals += 1),
                }
            }
        }
    })
}

/// The files on `disk`, the data nowhere: what the files witness is all that survives a kill.
fn on(disk: &Tmpfs) -> Options {
    let at = |file: &str| disk.join(file).display().to_string();
    Options {
        module_args: vec!["state-file".into(), at("snowflake.state")],
        config_lines: vec![
            format!("idgen.dateseq-witness-file \"{}\"", at("dateseq.witness")),
            format!("idgen.workerid-witness-file \"{}\"", at("workerid.witness")),
        ],
        ..Options::default()
    }
}

/// Load, then the disk fills, load on it for a while, kill -9, the disk freed, restart: the
/// restarted server repeats nothing it told.
fn fills_under_load(name: &str) {
    let disk = Tmpfs::mount(name, "1m");
    let mut server = coordinator_past_its_first_fence(on(&disk));
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let told = Arc::new(Mutex::new(Told::default()));
    let clients: Vec<_> = (0..2)
        .map(|client| load(&server, client, Arc::clone(&stop), Arc::clone(&told)))
        .collect();
    let counted = || told.lock().unwrap().snowflakes.len();
    assert!(wait_for(Duration::from_secs(10), || counted() > 2_000));
    let filler = disk.fill();
    let before = told.lock().unwrap().refusals;
    // On until the failure shows (the state file's reservation and the witness blocks run
    // out), and a while longer.
    assert!(
        wait_for(Duration::from_secs(10), || told.lock().unwrap().refusals
            > before + 50),
        "nothing was refused on a failing disk"
    );
    thread::sleep(Duration::from_millis(300));
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        let _ = client.join();
    }
    std::fs::remove_file(filler).unwrap();
    let restarted = Server::start_with(Options {
        port: Some(port),
        ..on(&disk)
    });
    let mut con = restarted.connection();
    let told = told.lock().unwrap();
    for prefix in PREFIXES {
        let Some(values) = told.dateseq.get(prefix) else {
            continue;
        };
        let highest = values.iter().max().unwrap();
        for _ in 0..3 {
            let v: u64 = cmd(&["DATESEQ.NEXT", prefix]).query(&mut con).unwrap();
            assert!(
                v > *highest,
                "{name}: {prefix} handed out {v} again (up to {highest} were told)"
            );
        }
    }
    let highest_id = told.snowflakes.iter().max().unwrap();
    let ids: Vec<i64> =
        idgen_tests::when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT", "COUNT", "100"]));
    assert!(
        ids.iter().all(|id| id > highest_id),
        "{name}: a Snowflake ID repeated"
    );
    // Each namespace's one worker ID granted again: above the end of the lease told before.
    assert_granted_above(&mut con, &told.grants, name);
    let values: usize = told.dateseq.values().map(Vec::len).sum();
    eprintln!(
        "{name}: {values} DATESEQ values, {} Snowflake IDs, {} grants told; {} refusals",
        told.snowflakes.len(),
        told.grants.len(),
        told.refusals
    );
}

#[test]
fn a_disk_that_fills_under_load_then_kill_9_repeats_nothing() {
    fills_under_load("full-under-load");
}

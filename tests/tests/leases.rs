//! Processes that make IDs in process under worker-ID leases (`idgen-lease-worker`, built on
//! idgen-client) against a real coordinator: churn with kill -9, SIGSTOP past the TTL and a
//! coordinator restart; a promoted replica with WAIT on.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use idgen_core::TWITTER_EPOCH_MS;
use idgen_tests::backend::Backend;
use idgen_tests::clock::ClockShift;
use idgen_tests::partition::Partition;
use idgen_tests::{cmd, now_ms, wait_for, Options, Server, TempDir};

fn spawn_worker(port: u16, ttl_ms: u64, run_ms: u64, replicas: usize) -> Child {
    Worker {
        port,
        ttl_ms,
        run_ms,
        replicas,
        ..Worker::default()
    }
    .spawn()
}

/// How to run one `idgen-lease-worker`.
#[derive(Default)]
struct Worker {
    port: u16,
    ttl_ms: u64,
    run_ms: u64,
    replicas: usize,
    /// `--start-within-ms`; the worker's default (one TTL) when `None`.
    start_within_ms: Option<u64>,
    env: Vec<(String, String)>,
    /// Where its stderr goes; discarded when `None`.
    stderr: Option<std::fs::File>,
}

impl Worker {
    fn spawn(self) -> Child {
        let mut command = Command::new(idgen_tests::lease_worker_binary());
        command
            .envs(self.env)
            .args([
                "--url",
                &format!("redis://127.0.0.1:{}/", self.port),
                "--namespace",
                "fleet",
            ])
            .args(["--ttl-ms", &self.ttl_ms.to_string()])
            .args(["--run-ms", &self.run_ms.to_string()])
            .args(["--replicas", &self.replicas.to_string()]);
        if let Some(ms) = self.start_within_ms {
            command.args(["--start-within-ms", &ms.to_string()]);
        }
        command
            .stdout(Stdio::piped())
            .stderr(self.stderr.map_or_else(Stdio::null, Stdio::from))
            .spawn()
            .expect("run idgen-lease-worker")
    }
}

/// What one process printed: its leases (token -> worker ID) and its IDs with their tokens.
#[derive(Default)]
struct Printed {
    leases: HashMap<u64, u32>,
    ids: Vec<(u64, u64)>,
}

fn parse(out: &[u8]) -> Printed {
    let mut printed = Printed::default();
    for line in String::from_utf8_lossy(out).lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts[..] {
            ["L", token, worker] => {
                printed
                    .leases
                    .insert(token.parse().unwrap(), worker.parse().unwrap());
            }
            ["I", id, token] => printed
                .ids
                .push((id.parse().unwrap(), token.parse().unwrap())),
            _ => {} // a line cut short by kill -9
        }
    }
    printed
}

/// Unix ms of an ID in the Twitter layout.
fn time_of(id: u64) -> i64 {
    (id >> 22) as i64 + TWITTER_EPOCH_MS
}

/// A worker and what will be done to it.
struct Running {
    child: Child,
    /// Drains the child's stdout as it comes (a full pipe would stall the child).
    output: std::thread::JoinHandle<Vec<u8>>,
    kill_at: Option<Instant>,
    /// When to SIGSTOP it, for how long, and (once stopped) the wall-clock ms of the stop.
    pause: Option<(Instant, Duration)>,
    stopped: Option<(i64, Instant)>,
    /// Where its stderr goes: a failed start says why there.
    stderr_path: std::path::PathBuf,
}

/// The coordinator's horizon in these tests: the workers' TTL, so a worker whose grant starts
/// above the coordinator's fence (a TTL past its start) borrows that much ahead at once rather
/// than waiting for the default horizon.
fn horizon(ttl_ms: u64) -> Options {
    Options::module(&["workerid-horizon-ms", &ttl_ms.to_string()])
}

/// A coordinator that writes every command to its AOF before replying, in a data dir of its
/// own; the options start it again on the same port from that AOF.
fn durable_coordinator(name: &str, ttl_ms: u64) -> (TempDir, Options, Server) {
    durable_coordinator_of(Backend::Module, name, ttl_ms)
}

/// [`durable_coordinator`] served by `b`: the module, or the library on a plain server (which
/// comes back from the AOF with the library, as a managed service keeps its functions).
fn durable_coordinator_of(b: Backend, name: &str, ttl_ms: u64) -> (TempDir, Options, Server) {
    let dir = idgen_tests::data_dir(name);
    let options = Options {
        dir: Some(dir.to_path_buf()),
        no_module: b == Backend::Library,
        ..horizon(ttl_ms)
    }
    .server(&["--appendonly", "yes", "--appendfsync", "always"]);
    let coordinator = Server::start_with(options.clone());
    b.install(&coordinator, ttl_ms);
    let options = Options {
        port: Some(coordinator.port),
        ..options
    };
    (dir, options, coordinator)
}

/// A worker that has ended.
struct Finished {
    printed: Printed,
    /// Wall-clock ms of its SIGSTOP and of its end, if it was paused.
    pause_window: Option<(i64, i64)>,
    stderr_path: std::path::PathBuf,
}

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status();
    assert!(status.is_ok_and(|s| s.success()), "kill {sig} failed");
}

#[test]
fn churn_with_kills_pauses_and_a_coordinator_restart_repeats_no_id() {
    churn(Backend::Module);
}

/// The same churn, the worker IDs leased from the Functions library on a stock server.
#[test]
fn churn_under_the_library_repeats_no_id_either() {
    churn(Backend::Library);
}

fn churn(b: Backend) {
    const PROCESSES: usize = 120;
    const AT_ONCE: usize = 6;
    const TTL_MS: u64 = 1000;
    let (dir, options, mut coordinator) = durable_coordinator_of(b, "lease-churn", TTL_MS);
    let port = coordinator.port;

    let mut running: Vec<Running> = Vec::new();
    let mut finished: Vec<Finished> = Vec::new();
    let (mut started, mut failed_starts, mut killed, mut paused) = (0, 0, 0, 0);
    let mut why_failed: HashMap<String, usize> = HashMap::new();
    let mut restarted = false;
    let begin = Instant::now();
    while started < PROCESSES || !running.is_empty() {
        assert!(
            begin.elapsed() < Duration::from_secs(240),
            "churn took too long"
        );
        if started == PROCESSES / 2 && !restarted {
            // The coordinator dies and comes back from its AOF on the same port.
            coordinator.kill9();
            coordinator = Server::start_with(options.clone());
            restarted = true;
        }
        while started < PROCESSES && running.len() < AT_ONCE {
            let n = started;
            started += 1;
            let pause = (n % 15 == 7).then(|| {
                (
                    Instant::now() + Duration::from_millis(300),
                    Duration::from_millis(2_500),
                )
            });
            // 4.2 s after waking: a reconnect to a coordinator restarting at that moment backs
            // off up to 1 s, 1.2 s was once not enough, and 3.2 s once was not on a coordinator
            // whose fsyncs stalled for a second.
            let run_ms = if pause.is_some() {
                7_000
            } else {
                300 + (n as u64 * 137) % 900
            };
            let kill_at = (n % 10 == 3).then(|| Instant::now() + Duration::from_millis(run_ms / 2));
            let stderr_path = dir.join(format!("worker-{n}.err"));
            let mut child = Worker {
                port,
                ttl_ms: TTL_MS,
                run_ms,
                // Rides out the coordinator's restart on a slow disk.
                start_within_ms: Some(3_000),
                // Lease events in its log, read when a check on it fails.
                env: [("RUST_LOG", "idgen_client=info"), ("NO_COLOR", "1")]
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .to_vec(),
                stderr: Some(std::fs::File::create(&stderr_path).expect("worker stderr file")),
                ..Worker::default()
            }
            .spawn();
            let mut stdout = child.stdout.take().unwrap();
            let output = std::thread::spawn(move || {
                let mut out = Vec::new();
                let _ = std::io::Read::read_to_end(&mut stdout, &mut out);
                out
            });
            running.push(Running {
                child,
                output,
                stderr_path,
                kill_at,
                pause,
                stopped: None,
            });
        }
        let now = Instant::now();
        let mut i = 0;
        while i < running.len() {
            let r = &mut running[i];
            if r.kill_at.is_some_and(|t| now >= t) {
                r.kill_at = None;
                let _ = r.child.kill();
                killed += 1;
            }
            if let Some((at, length)) = r.pause {
                if now >= at && r.stopped.is_none() {
                    signal(&r.child, "-STOP");
                    r.stopped = Some((now_ms(), now + length));
                    paused += 1;
                }
            }
            if let Some((stop_ms, until)) = r.stopped {
                if now >= until && r.pause.is_some() {
                    signal(&r.child, "-CONT");
                    r.pause = None;
                    r.stopped = Some((stop_ms, until));
                }
            }
            if r.pause.is_none() && matches!(r.child.try_wait(), Ok(Some(_))) {
                let r = running.swap_remove(i);
                let pause_window = r.stopped.map(|(stop_ms, _)| (stop_ms, now_ms()));
                let mut child = r.child;
                let status = child.wait().unwrap();
                let stdout = r.output.join().unwrap();
                if stdout.is_empty() && !status.success() {
                    failed_starts += 1;
                    let why = std::fs::read_to_string(&r.stderr_path).unwrap_or_default();
                    let why = why
                        .lines()
                        .last()
                        .unwrap_or("killed before a word")
                        .to_string();
                    *why_failed.entry(why).or_insert(0) += 1;
                }
                finished.push(Finished {
                    printed: parse(&stdout),
                    pause_window,
                    stderr_path: r.stderr_path,
                });
                continue;
            }
            i += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    let mut all = HashSet::new();
    let mut holders: HashMap<u32, HashSet<u64>> = HashMap::new();
    let mut total = 0;
    let mut resumed = 0;
    for Finished {
        printed,
        pause_window,
        stderr_path,
    } in &finished
    {
        for (token, worker) in &printed.leases {
            holders.entry(*worker).or_default().insert(*token);
        }
        for (id, _) in &printed.ids {
            total += 1;
            assert!(all.insert(*id), "ID {id} issued twice");
        }
        // A paused process issued nothing under the lease it held when stopped once it woke:
        // every ID made under a token in use before the stop is older than the stop. One paused
        // before its first lease was recorded finds that lease lapsed when it wakes: its start
        // fails, and it issues nothing at all (a failed start, above).
        let started_before_pause = !printed.leases.is_empty();
        if let Some(&(stop_ms, _)) = pause_window.as_ref().filter(|_| started_before_pause) {
            resumed += 1;
            let before: HashSet<u64> = printed
                .ids
                .iter()
                .filter(|(id, _)| time_of(*id) < stop_ms)
                .map(|(_, token)| *token)
                .collect();
            for (id, token) in &printed.ids {
                if before.contains(token) {
                    assert!(
                        time_of(*id) <= stop_ms + 50,
                        "a paused process issued {id} (time {}) under token {token} after waking; stopped at {stop_ms}",
                        time_of(*id)
                    );
                }
            }
            let after = printed
                .ids
                .iter()
                .filter(|(_, t)| !before.contains(t))
                .count();
            assert!(
                after > 0,
                "the paused process never re-acquired and issued again: leases {:?}, {} IDs, \
                 paused at {stop_ms}; its log:\n{}",
                printed.leases,
                printed.ids.len(),
                std::fs::read_to_string(stderr_path).unwrap_or_default(),
            );
        }
    }
    let reused = holders.values().filter(|tokens| tokens.len() > 1).count();
    eprintln!(
        "{started} processes ({failed_starts} could not start), \
         {killed} killed -9, {paused} paused past their TTL ({resumed} after their start), \
         {total} IDs, all distinct; \
         {} worker IDs used, {reused} of them by more than one lease",
        holders.len()
    );
    eprintln!("failed starts by reason: {why_failed:?}");
    assert!(started - failed_starts >= 100, "too few processes ran");
    assert!(total > 100_000, "too few IDs to mean anything: {total}");
    assert!(reused > 0, "no worker ID was recycled");
    assert!(paused >= 5 && killed >= 10 && resumed >= 3);
    drop(coordinator);
}

/// The replication link of the coordinator is cut. With `--replicas 1` (WAIT) a grant the
/// replica never got is not used: the process refuses to start and gives the ID back. Without
/// it, and without the module's own wait (`idgen.workerid-ack-replicas 0`), the processes issue
/// under grants the replica lacks, and once the replica is promoted it grants a held worker ID
/// again: the hazard both waits are there for (the Functions library has only the client's).
#[test]
fn wait_keeps_grants_the_replica_lacks_out_of_use() {
    if idgen_tests::needs::root_missing("wait_keeps_grants_the_replica_lacks_out_of_use") {
        return;
    }
    let mut primary = Server::start(&[]);
    let replica = Server::start(&[]);
    replica.replicate(&primary);
    // The client's wait alone: the module's (on by default, which refuses these grants itself:
    // tests/tests/lease_split_brain.rs) turned off.
    let _: () = cmd(&["CONFIG", "SET", "idgen.workerid-ack-replicas", "0"])
        .query(&mut primary.connection())
        .unwrap();
    let _cut = Partition::replication_link(&primary).unwrap_or_else(|e| panic!("{e}"));

    for _ in 0..2 {
        let out = spawn_worker(primary.port, 5_000, 500, 1)
            .wait_with_output()
            .unwrap();
        assert!(!out.status.success(), "started with a grant no replica had");
        assert!(parse(&out.stdout).ids.is_empty(), "issued IDs under it");
    }
    let live: Vec<Vec<i64>> = cmd(&["WORKERID.LIST", "fleet"])
        .query(&mut primary.connection())
        .unwrap();
    assert!(
        live.is_empty(),
        "unused grants were not given back: {live:?}"
    );

    // Without WAIT: two processes issue under grants that never reach the replica.
    let mut holders: Vec<Child> = (0..2)
        .map(|_| spawn_worker(primary.port, 5_000, 3_000, 0))
        .collect();
    assert!(wait_for(Duration::from_secs(10), || {
        let live: Vec<Vec<i64>> = cmd(&["WORKERID.LIST", "fleet"])
            .query(&mut primary.connection())
            .unwrap();
        live.len() == 2
    }));
    primary.kill9();
    let mut r = replica.connection();
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    let next: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "5000"])
        .query(&mut r)
        .unwrap();
    assert!(
        next[0] < 2,
        "the promoted replica granted {next:?}, not a held ID"
    );
    for child in &mut holders {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A process started while its coordinator is down (here: killed, then back from its AOF on the
/// same port 800 ms later) keeps trying and takes a lease once the coordinator is back, above
/// the IDs issued before the crash.
#[test]
fn a_process_started_while_the_coordinator_is_down_waits_for_it() {
    let (_dir, options, mut coordinator) = durable_coordinator("lease-wait-for-coordinator", 1_000);
    let port = coordinator.port;
    let worker = || Worker {
        port,
        ttl_ms: 1_000,
        run_ms: 300,
        start_within_ms: Some(3_000),
        ..Worker::default()
    };
    let before = worker().spawn().wait_with_output().unwrap();
    assert!(before.status.success());
    coordinator.kill9();

    let waiting = worker().spawn();
    std::thread::sleep(Duration::from_millis(800));
    let coordinator = Server::start_with(options);
    let after = waiting.wait_with_output().unwrap();
    assert!(
        after.status.success(),
        "a process started while the coordinator was down gave up"
    );
    let (before, after) = (parse(&before.stdout), parse(&after.stdout));
    assert!(!before.ids.is_empty() && !after.ids.is_empty());
    let last_before = before.ids.iter().map(|(id, _)| *id).max().unwrap();
    assert!(after.ids.iter().all(|(id, _)| *id > last_before));
    drop(coordinator);
}

#[test]
fn a_worker_tries_for_its_first_lease_for_the_whole_of_start_within() {
    // Nothing listens on the port: every try fails at once.
    let port = idgen_tests::free_port();
    let began = Instant::now();
    let out = Worker {
        port,
        ttl_ms: 1_000,
        run_ms: 100,
        start_within_ms: Some(2_500),
        ..Worker::default()
    }
    .spawn()
    .wait_with_output()
    .unwrap();
    let took = began.elapsed();
    assert!(!out.status.success());
    assert!(
        took >= Duration::from_millis(2_500) && took < Duration::from_millis(4_500),
        "gave up after {took:?}, not at --start-within-ms 2500"
    );
}

#[test]
fn a_recycled_id_on_a_clock_behind_starts_above_its_last_holder() {
    let coordinator = Server::start_with(horizon(2_000));
    // Past the fence a fresh coordinator puts grants above: the first holder then issues at the
    // clock's time, not borrowed ahead, and its ID is the one recycled.
    coordinator.wait_past_lease_fence();
    let port = coordinator.port;
    let first = spawn_worker(port, 2_000, 1_000, 0)
        .wait_with_output()
        .unwrap();
    let first = parse(&first.stdout);
    // The next process's clock is 700 ms behind: without the record it would make IDs at times
    // the first one already used, under the same worker ID.
    let dir = idgen_tests::data_dir("lease-clock-behind");
    let shift = ClockShift::new(&dir);
    shift.set_ms(-700);
    let second = Worker {
        port,
        ttl_ms: 2_000,
        run_ms: 1_000,
        env: shift.env(),
        ..Worker::default()
    }
    .spawn()
    .wait_with_output()
    .unwrap();
    let second = parse(&second.stdout);
    let worker = |p: &Printed| p.leases.values().copied().collect::<Vec<_>>();
    assert_eq!(
        worker(&first),
        worker(&second),
        "the same worker ID, recycled"
    );
    let last_first = first.ids.iter().map(|(id, _)| time_of(*id)).max().unwrap();
    let earliest_second = second.ids.iter().map(|(id, _)| time_of(*id)).min().unwrap();
    assert!(
        earliest_second > last_first,
        "the recycled ID went back to {earliest_second}, below its last holder's {last_first}"
    );
    let firsts: HashSet<u64> = first.ids.iter().map(|(id, _)| *id).collect();
    assert!(
        second.ids.iter().all(|(id, _)| !firsts.contains(id)),
        "IDs repeated"
    );
}

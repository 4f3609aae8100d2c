//! Ticket servers as real processes on loopback sockets: stepping, durability through kill -9,
//! the round-robin and prefetching clients, start-up settings, shutdown and growing the set.
//! The protocol and clients' tooling are in ticket_protocol.rs, the data directory in
//! ticket_store.rs.

use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

use idgen_tests::redis::{self, Value};
use idgen_tests::ticket::{run_cli, serve_once, TicketServer};
use idgen_tests::{cmd, data_dir, error_of};
use ticket_client::{RoundRobin, RETRY_AFTER};

#[test]
fn odd_and_even_servers_hand_out_disjoint_tickets_under_concurrent_load() {
    let dir = data_dir("ticket-pair");
    let (odd, even) = TicketServer::odd_and_even(&dir, &["--block", "1000"]);
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let url = if i % 2 == 0 { odd.url() } else { even.url() };
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut mine = Vec::new();
                for _ in 0..20 {
                    let mut pipe = redis::pipe();
                    for _ in 0..100 {
                        pipe.cmd("TICKET.NEXT");
                    }
                    pipe.cmd("TICKET.NEXT").arg("COUNT").arg(50);
                    let mut replies: Vec<Value> = pipe.query(&mut con).unwrap();
                    let Some(Value::Array(batch)) = replies.pop() else {
                        panic!("COUNT reply")
                    };
                    for v in replies.into_iter().chain(batch) {
                        let Value::Int(t) = v else { panic!("{v:?}") };
                        mine.push((i % 2, t));
                    }
                }
                mine
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        for (even_server, ticket) in h.join().unwrap() {
            assert_eq!(
                ticket % 2,
                if even_server == 0 { 1 } else { 0 },
                "{ticket} from the wrong server"
            );
            assert!(all.insert(ticket), "{ticket} handed out twice");
        }
    }
    assert_eq!(all.len(), 8 * 20 * 150);
}

#[test]
fn kill_9_under_load_fifty_times_never_repeats_an_acknowledged_ticket() {
    // Sized by count, not by time: each round kills the server once its client has been
    // acknowledged SEEN tickets, however slow the machine, and the load goes on meanwhile.
    const ROUNDS: usize = 50;
    const SEEN: usize = 40;
    let dir = data_dir("ticket-kill");
    // A small block, so that the bound on disk moves many times within each round.
    let mut server = TicketServer::start(1, 1, &dir, &["--block", "50"]);
    let mut acknowledged = HashSet::new();
    for round in 0..ROUNDS {
        let url = server.url();
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let mut seen_tx = Some(seen_tx);
        let load = std::thread::spawn(move || {
            let mut got = Vec::new();
            let Ok(mut con) = redis::Client::open(url).and_then(|c| c.get_connection()) else {
                return got;
            };
            loop {
                let mut pipe = redis::pipe();
                pipe.cmd("TICKET.NEXT")
                    .cmd("TICKET.NEXT")
                    .arg("COUNT")
                    .arg(7);
                match pipe.query::<(u64, Vec<u64>)>(&mut con) {
                    Ok((one, many)) => {
                        got.push(one);
                        got.extend(many);
                        if got.len() >= SEEN {
                            if let Some(tx) = seen_tx.take() {
                                let _ = tx.send(());
                            }
                        }
                    }
                    Err(_) => return got,
                }
            }
        });
        seen_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("round {round}: {SEEN} tickets not given in 30 s"));
        server.kill9();
        let got = load.join().unwrap();
        assert!(got.len() >= SEEN, "round {round}: {} tickets", got.len());
        for ticket in got {
            assert!(
                acknowledged.insert(ticket),
                "round {round}: ticket {ticket} handed out twice"
            );
        }
        server.restart();
    }
}

#[test]
fn round_robin_client_alternates_and_rides_out_a_killed_server() {
    let dir = data_dir("ticket-rr");
    let (odd, mut even) = TicketServer::odd_and_even(&dir, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = RoundRobin::new(&[odd.addr(), even.addr()]).unwrap();
    let first: Vec<u64> = (0..6)
        .map(|_| runtime.block_on(client.next("default")).unwrap())
        .collect();
    let parities: Vec<u64> = first.iter().map(|t| t % 2).collect();
    assert!(
        parities.windows(2).all(|w| w[0] != w[1]),
        "not alternating: {first:?}"
    );

    let mut seen: HashSet<u64> = first.into_iter().collect();
    let mut even_before_kill = 0;
    let started = Instant::now();
    let mut killed_at = None;
    let mut even_after_restart = 0;
    for i in 0..4000 {
        if i == 1000 {
            even_before_kill = seen.iter().filter(|t| *t % 2 == 0).max().copied().unwrap();
            even.kill9();
            killed_at = Some(Instant::now());
        }
        if i == 2500 {
            even.restart();
            // The client probes a failed server again after RETRY_AFTER.
            std::thread::sleep(RETRY_AFTER + Duration::from_millis(100));
        }
        let ticket = runtime
            .block_on(client.next("default"))
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
        assert!(seen.insert(ticket), "call {i}: {ticket} twice");
        if i > 2500 && ticket.is_multiple_of(2) {
            assert!(
                ticket > even_before_kill,
                "the restarted server went back to {ticket}"
            );
            even_after_restart += 1;
        }
    }
    assert!(killed_at.is_some() && started.elapsed() < Duration::from_secs(60));
    assert!(
        even_after_restart > 100,
        "the restarted server was not used again ({even_after_restart})"
    );
}

#[test]
fn requirepass_is_enforced() {
    let dir = data_dir("ticket-auth");
    let server = TicketServer::start(1, 1, &dir, &["--requirepass", "s3cret"]);
    let mut con = server.connection();
    assert!(error_of(&mut con, &cmd(&["TICKET.NEXT"])).starts_with("NOAUTH"));
    // Redis 7's order: an unknown command is named as such before authentication is asked for.
    assert!(error_of(&mut con, &cmd(&["NO.SUCH"])).starts_with("ERR unknown command"));
    assert!(error_of(&mut con, &cmd(&["AUTH", "wrong"])).starts_with("WRONGPASS"));
    let _: () = cmd(&["AUTH", "s3cret"]).query(&mut con).unwrap();
    let t: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(t, 1);
    let url = format!("redis://:s3cret@127.0.0.1:{}/?protocol=resp3", server.port);
    let t: u64 = cmd(&["TICKET.NEXT"])
        .query(&mut redis::Client::open(url).unwrap().get_connection().unwrap())
        .unwrap();
    assert_eq!(t, 2);
}

#[test]
fn bad_start_up_settings_are_refused_with_a_message() {
    let dir = data_dir("ticket-flags");
    let (ok, err) = serve_once("3", "2", &dir, &[]);
    assert!(
        !ok && err.contains("--offset must be between 1 and --increment (2), got 3"),
        "{err}"
    );
    let (ok, err) = serve_once("1", "0", &dir, &[]);
    assert!(
        !ok && err.contains("--increment 0 must be at least 1"),
        "{err}"
    );
    // A data directory is used by one server at a time, and only as the server that wrote it.
    let running = TicketServer::start(1, 2, &dir, &[]);
    let _: u64 = cmd(&["TICKET.NEXT"])
        .query(&mut running.connection())
        .unwrap();
    let (ok, err) = serve_once("1", "2", &dir, &[]);
    assert!(
        !ok && err.contains("in use by another ticket server"),
        "two servers on one directory: {err}"
    );
    drop(running);
    let (ok, err) = serve_once("1", "3", &dir, &[]);
    assert!(!ok && err.contains("renumbering"), "{err}");
}

#[test]
fn sigterm_shuts_down_gracefully() {
    let dir = data_dir("ticket-term");
    let mut server = TicketServer::start(1, 1, &dir, &[]);
    let mut con = server.connection();
    let t: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(t, 1);
    let many: Vec<u64> = cmd(&["TICKET.NEXT", "other", "COUNT", "5"])
        .query(&mut con)
        .unwrap();
    assert_eq!(many, [1, 2, 3, 4, 5]);
    let status = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server
        .wait_exit(Duration::from_secs(10))
        .expect("still running 10 s after SIGTERM");
    assert!(exit.success(), "{exit:?}");
    // A clean stop recorded the exact next tickets: no gap after the restart.
    server.restart();
    let mut con = server.connection();
    let t: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(t, 2, "a gap after a clean stop");
    let t: u64 = cmd(&["TICKET.NEXT", "other"]).query(&mut con).unwrap();
    assert_eq!(t, 6);
}

#[test]
fn the_cli_prints_tickets_round_robin() {
    let dir = data_dir("ticket-cli");
    let (odd, even) = TicketServer::odd_and_even(&dir, &[]);
    let servers = format!("{},{}", odd.addr(), even.addr());
    let (ok, out, err) = run_cli(&["next", "--servers", &servers, "--count", "4"]);
    assert!(ok, "{err}");
    let tickets: Vec<u64> = out.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(tickets, vec![1, 2, 3, 4]);
}

#[test]
fn the_password_can_come_from_a_file_and_stays_out_of_the_command_line() {
    let dir = data_dir("ticket-pass-file");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("password");
    std::fs::write(&file, "fr0m-a-file\n").unwrap();
    let server = TicketServer::start(
        1,
        1,
        &dir.join("data"),
        &["--requirepass-file", &file.display().to_string()],
    );
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.pid())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains("fr0m-a-file"));
    let mut con = server.connection();
    assert!(error_of(&mut con, &cmd(&["TICKET.NEXT"])).starts_with("NOAUTH"));
    let _: () = cmd(&["AUTH", "fr0m-a-file"]).query(&mut con).unwrap();
    let t: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(t, 1);
}

/// An error reply is the caller's answer, not a sign that a server is down: a request for an
/// invalid sequence name fails with the servers' own error and leaves both in the rotation;
/// only a server that cannot be reached is skipped.
#[test]
fn the_round_robin_client_marks_a_server_down_only_when_unreachable() {
    let dir = data_dir("ticket-rr-errors");
    let (odd, mut even) = TicketServer::odd_and_even(&dir, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = RoundRobin::new(&[odd.addr(), even.addr()]).unwrap();
    let err = runtime
        .block_on(client.next("bad name"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("sequence names"), "{err}");
    assert!(
        client.down_servers().is_empty(),
        "{:?}",
        client.down_servers()
    );
    let tickets: Vec<u64> = (0..4)
        .map(|_| runtime.block_on(client.next("default")).unwrap())
        .collect();
    assert!(
        tickets.windows(2).all(|w| w[0] % 2 != w[1] % 2),
        "{tickets:?}"
    );
    even.kill9();
    for _ in 0..4 {
        runtime.block_on(client.next("default")).unwrap();
    }
    assert_eq!(client.down_servers(), vec![even.addr()]);
}

/// Two processes' worth of prefetching clients (separate round-robin clients and pools), four
/// threads each, hand tickets out of blocks while one server is killed and restarted: no ticket
/// twice, and the handout rides out the dead server.
#[test]
fn prefetching_clients_never_share_a_ticket_and_ride_out_a_dead_server() {
    use std::sync::Arc;
    use ticket_client::prefetch::Prefetch;

    let dir = data_dir("ticket-prefetch");
    let (odd, mut even) = TicketServer::odd_and_even(&dir, &["--block", "100000"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let pools: Vec<Prefetch> = (0..2)
        .map(|_| {
            let client = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()]).unwrap());
            Prefetch::start(client, "default", 50_000, runtime.handle())
        })
        .collect();
    let run = |pools: &[Prefetch], per_thread: usize| -> Vec<u64> {
        std::thread::scope(|scope| {
            let threads: Vec<_> = pools
                .iter()
                .flat_map(|pool| (0..4).map(move |_| pool.handle()))
                .map(|mut handle| {
                    scope.spawn(move || {
                        (0..per_thread)
                            .map(|_| handle.ticket().unwrap())
                            .collect::<Vec<u64>>()
                    })
                })
                .collect();
            threads
                .into_iter()
                .flat_map(|t| t.join().unwrap())
                .collect()
        })
    };
    let mut all = run(&pools, 250_000);
    even.kill9();
    all.extend(run(&pools, 250_000));
    even.restart();
    all.extend(run(&pools, 250_000));
    let total = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        total,
        "{} tickets handed out twice",
        total - all.len()
    );
    assert_eq!(total, 6_000_000);
}

/// Growing the set from 2 servers to 3 while clients keep calling: both old servers stop
/// cleanly, `ticket-server highest` reads what they handed out, the three servers of the new
/// generation (the two old directories renumbered, one new) start above it, and the round-robin
/// client follows the new set. Calls fail only while no server runs; no ticket is handed out
/// twice; the new tickets come from all three servers.
#[test]
fn the_set_grows_from_two_servers_to_three_without_a_repeat() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let dir = data_dir("ticket-grow");
    let (odd_dir, even_dir, third_dir) = (dir.join("odd"), dir.join("even"), dir.join("third"));
    let mut odd = TicketServer::start(1, 2, &odd_dir, &["--block", "1000"]);
    let mut even = TicketServer::start(2, 2, &even_dir, &["--block", "1000"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()]).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let tickets = Arc::new(Mutex::new(Vec::new()));
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let (client, stop, tickets) = (client.clone(), stop.clone(), tickets.clone());
            runtime.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(t) = client.next("default").await {
                        tickets.lock().unwrap().push(t);
                    } else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            })
        })
        .collect();
    let wait_for_tickets = |n: usize| {
        let start = tickets.lock().unwrap().len();
        assert!(idgen_tests::wait_for(Duration::from_secs(30), || {
            tickets.lock().unwrap().len() >= start + n
        }));
    };
    wait_for_tickets(3_000);

    // The old generation stops cleanly.
    for server in [&mut odd, &mut even] {
        let pid = server.pid().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        server.wait_exit(Duration::from_secs(10)).expect("stopped");
    }
    let before_growth = tickets.lock().unwrap().len();
    let (ok, highest, err) = run_cli(&[
        "highest",
        "--data-dir",
        &odd_dir.display().to_string(),
        "--data-dir",
        &even_dir.display().to_string(),
    ]);
    assert!(ok, "{err}");
    let highest: u64 = highest.trim().parse().unwrap();
    let seen_max = *tickets.lock().unwrap().iter().max().unwrap();
    assert!(
        highest >= seen_max,
        "highest {highest} below a ticket seen: {seen_max}"
    );
    // Renumbering without a new generation is refused.
    let (ok, _, err) = run_cli(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--offset",
        "1",
        "--increment",
        "3",
        "--data-dir",
        &odd_dir.display().to_string(),
    ]);
    assert!(!ok && err.contains("new generation"), "{err}");

    let above = highest.to_string();
    let new_set = [
        TicketServer::start(1, 3, &odd_dir, &["--start-above", &above]),
        TicketServer::start(2, 3, &even_dir, &["--start-above", &above]),
        TicketServer::start(3, 3, &third_dir, &["--start-above", &above]),
    ];
    client
        .set_servers(&new_set.iter().map(|s| s.addr()).collect::<Vec<_>>())
        .unwrap();
    wait_for_tickets(3_000);
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        runtime.block_on(caller).unwrap();
    }

    let all = tickets.lock().unwrap().clone();
    let distinct: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "a ticket was handed out twice");
    let grown = &all[before_growth..];
    assert!(grown.iter().all(|&t| t > highest));
    let residues: HashSet<u64> = grown.iter().map(|t| t % 3).collect();
    assert_eq!(residues.len(), 3, "not all three servers issued");
}

/// The log lines a server writes up to "ticket server ready", started with `listen` and
/// `password` (given through the environment, as a deployment that keeps it out of
/// `/proc/PID/cmdline` would).
fn start_log(name: &str, listen: &str, password: Option<&str>) -> String {
    use std::io::BufRead;
    let dir = data_dir(name);
    let mut command = Command::new(idgen_tests::ticket::binary());
    command
        .args(["serve", "--init", "--listen", listen, "--data-dir"])
        .arg(dir.as_os_str())
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some(password) = password {
        command.env("TICKET_SERVER_REQUIREPASS", password);
    }
    let mut child = command.spawn().unwrap();
    let mut log = String::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("ticket server ready") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    log
}

/// Listening beyond loopback without a password is warned about at start; loopback, or a
/// password, is not.
#[test]
fn listening_beyond_loopback_without_a_password_is_warned_about() {
    const WARNING: &str = "listening beyond loopback without a password";
    let open = start_log("ticket-warn-open", "0.0.0.0:0", None);
    assert!(open.contains(WARNING), "{open}");
    let guarded = start_log("ticket-warn-guarded", "0.0.0.0:0", Some("s3cret"));
    assert!(
        guarded.contains("ticket server ready") && !guarded.contains(WARNING),
        "{guarded}"
    );
    let local = start_log("ticket-warn-local", "127.0.0.1:0", None);
    assert!(
        local.contains("ticket server ready") && !local.contains(WARNING),
        "{local}"
    );
}

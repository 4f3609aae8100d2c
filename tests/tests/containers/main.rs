//! The project's Docker images under testcontainers: the module through a mapped port, a
//! primary and a replica on one Docker network, and the odd/even ticket servers with one
//! container killed and restarted under load; and docker/compose.yml brought up.
//!
//! They need a Docker engine; `IDGEN_SKIP_DOCKER=1` skips them on purpose (docs/operations.md).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod docker;

use docker::{
    docker, docker_ready, redis_image, ticket_image, unique_name, Compose, ImageExt, Mount,
    SyncRunner, REDIS_PORT,
};
use idgen_core::dateseq::Calendar;
use idgen_tests::{cmd, data_dir, error_of, free_port, now_ms, wait_for};
use ticket_client::RoundRobin;

fn connect(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Whether a server answers PING on `port` within 30 s.
fn answers(port: u16) -> bool {
    wait_for(Duration::from_secs(30), || {
        redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .and_then(|mut con| cmd(&["PING"]).query::<String>(&mut con))
            .is_ok()
    })
}

/// Worker-id bits of a Twitter-layout ID.
fn worker_of(id: i64) -> i64 {
    (id >> 12) & 31
}

#[test]
fn the_module_answers_through_a_containers_mapped_port() {
    if !docker_ready("the_module_answers_through_a_containers_mapped_port") {
        return;
    }
    // The image is FROM scratch here, with no zoneinfo on disk: named zones must come from the
    // bundled data. UTC+14 and UTC-11 are 25 hours apart, so their dates always differ. West
    // first: a running server refuses a zone that takes the date back.
    let (east, west) = ("Pacific/Kiritimati", "Pacific/Pago_Pago");
    let redis = redis_image(&[
        "worker-id",
        "7",
        "dateseq-timezone",
        west,
        "--protected-mode",
        "no",
    ])
    .start()
    .expect("start the module's container");
    let port = redis.get_host_port_ipv4(REDIS_PORT).unwrap();
    // Published on loopback only: the server has no password and protected mode is off.
    let published = docker(&["port", redis.id(), "6379/tcp"]);
    assert_eq!(published, format!("127.0.0.1:{port}"));
    let mut con = connect(port);

    let ids: Vec<i64> = cmd(&["SNOWFLAKE.NEXT", "COUNT", "1000"])
        .query(&mut con)
        .unwrap();
    assert_eq!(ids.len(), 1000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "not increasing");
    assert!(ids.iter().all(|&id| worker_of(id) == 7));
    let next: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    assert!(next > ids[999]);

    let today = |zone: &str| Calendar::new(zone).unwrap().day_of(now_ms()).date as i64;
    let mut dates = Vec::new();
    for zone in [west, east] {
        let _: () = cmd(&["CONFIG", "SET", "idgen.dateseq-timezone", zone])
            .query(&mut con)
            .unwrap();
        // Retried if the call straddles the zone's midnight.
        let (value, date) = loop {
            let before = today(zone);
            let value: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
            if today(zone) == before {
                break (value, before);
            }
        };
        assert_eq!(value / 1_000_000, date, "{zone}");
        dates.push(date);
    }
    assert_ne!(dates[0], dates[1]);
    let config: Vec<String> = cmd(&["CONFIG", "GET", "idgen.worker-id"])
        .query(&mut con)
        .unwrap();
    assert_eq!(config, ["idgen.worker-id", "7"]);
    let info: String = cmd(&["INFO", "idgen"]).query(&mut con).unwrap();
    assert!(info.contains("worker_id:7"), "{info}");

    let err = error_of(&mut con, &cmd(&["SNOWFLAKE.NEXT", "COUNT", "lots"]));
    assert!(err.starts_with("ERR"), "{err}");
    let after: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    assert!(after > next, "the server carries on after a bad call");

    // redis-cli from the host, as users reach a container.
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "SNOWFLAKE.NEXT"])
        .output()
        .expect("run redis-cli");
    let from_cli: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(from_cli > after);
}

#[test]
fn a_replica_container_mirrors_dateseq_and_refuses_snowflake() {
    if !docker_ready("a_replica_container_mirrors_dateseq_and_refuses_snowflake") {
        return;
    }
    let network = unique_name("replication");
    let primary_name = format!("{network}-primary");
    let primary = redis_image(&["worker-id", "1", "--protected-mode", "no"])
        .with_network(&network)
        .with_container_name(&primary_name)
        .start()
        .expect("start the primary");
    let replica = redis_image(&[
        "worker-id",
        "2",
        "--protected-mode",
        "no",
        "--replicaof",
        &primary_name,
        "6379",
    ])
    .with_network(&network)
    .with_container_name(format!("{network}-replica"))
    .start()
    .expect("start the replica");
    let mut p = connect(primary.get_host_port_ipv4(REDIS_PORT).unwrap());
    let mut r = connect(replica.get_host_port_ipv4(REDIS_PORT).unwrap());
    assert!(
        wait_for(Duration::from_secs(30), || {
            let info: String = cmd(&["INFO", "replication"]).query(&mut r).unwrap();
            info.contains("master_link_status:up")
        }),
        "the replica never linked to {primary_name} over the Docker network"
    );

    let prefixes = ["order", "invoice", "{tenant7}:ticket"];
    let mut last = std::collections::HashMap::new();
    for i in 0..300 {
        let prefix = prefixes[i % 3];
        let value: i64 = cmd(&["DATESEQ.NEXT", prefix]).query(&mut p).unwrap();
        last.insert(prefix, value);
    }
    let acked: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut p).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge");
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut p).unwrap();
    assert!(!keys.is_empty());
    for key in &keys {
        let read = |con: &mut dyn redis::ConnectionLike| -> (String, i64) {
            (
                cmd(&["GET", key]).query(con).unwrap(),
                cmd(&["PEXPIRETIME", key]).query(con).unwrap(),
            )
        };
        assert_eq!(read(&mut p), read(&mut r), "{key} differs on the replica");
    }
    for (prefix, value) in &last {
        let current: i64 = cmd(&["DATESEQ.CURRENT", prefix]).query(&mut r).unwrap();
        assert_eq!(current, *value, "{prefix}");
    }

    // As documented: a replica issues no Snowflake IDs (it would share a clock and sequence
    // with nobody), and writes are the primary's.
    let err = error_of(&mut r, &cmd(&["SNOWFLAKE.NEXT"]));
    assert!(err.starts_with("ERR") && err.contains("replica"), "{err}");
    let err = error_of(&mut r, &cmd(&["DATESEQ.NEXT", "order"]));
    assert!(err.starts_with("READONLY"), "{err}");
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut p).unwrap();
    assert_eq!(worker_of(id), 1);

    // Promoted, it issues under its own worker-id and carries the counters on, past the
    // default failover gap of 10,000 (what the old primary may have issued unreplicated).
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut r).unwrap();
    assert_eq!(worker_of(id), 2);
    let next: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut r).unwrap();
    assert_eq!(next, last["order"] + 10_000 + 1);
}

/// The durable bound in a ticket server's data directory: no ticket at or above it was issued.
fn durable_bound(dir: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(dir.join("default.seq")).unwrap();
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("bound="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no bound in {text:?}"))
}

/// Phases of the load, tagged on each ticket as its call returns.
const BEFORE_KILL: u8 = 0;
const KILLED: u8 = 1;
const RESTARTED: u8 = 2;

#[test]
fn ticket_pair_containers_ride_out_a_docker_kill_and_restart_under_load() {
    if !docker_ready("ticket_pair_containers_ride_out_a_docker_kill_and_restart_under_load") {
        return;
    }
    let network = unique_name("tickets");
    let dirs = [data_dir("container-odd"), data_dir("container-even")];
    // Fixed host ports: a restarted container must come back where the client looks for it.
    let odd_port = free_port();
    let even_port = loop {
        let port = free_port();
        if port != odd_port {
            break port;
        }
    };
    // A small block moves the durable bound often under load.
    let server = |offset: &str, port: u16, dir: &std::path::Path| {
        ticket_image(
            &[
                "--offset",
                offset,
                "--increment",
                "2",
                "--block",
                "1000",
                "--init",
            ],
            Some(port),
        )
        .with_network(&network)
        .with_mount(Mount::bind_mount(dir.display().to_string(), "/data"))
        .start()
        .expect("start a ticket server")
    };
    let _odd = server("1", odd_port, &dirs[0]);
    let even = server("2", even_port, &dirs[1]);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Arc::new(
        RoundRobin::new(&[
            format!("127.0.0.1:{odd_port}"),
            format!("127.0.0.1:{even_port}"),
        ])
        .unwrap(),
    );
    let phase = Arc::new(AtomicU8::new(BEFORE_KILL));
    let stop = Arc::new(AtomicBool::new(false));
    // Tickets seen so far, by phase and parity: each phase lasts until both servers that should
    // answer in it have (the odd one alone while the even one is down).
    let seen: Arc<[AtomicUsize; 6]> = Arc::new(Default::default());
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (client, phase, stop, seen) =
                (client.clone(), phase.clone(), stop.clone(), seen.clone());
            runtime.spawn(async move {
                let mut tickets = Vec::new();
                let mut errors = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match client.next("default").await {
                        Ok(t) => {
                            let p = phase.load(Ordering::SeqCst);
                            seen[usize::from(p) * 2 + (t % 2) as usize]
                                .fetch_add(1, Ordering::Relaxed);
                            tickets.push((t, p));
                        }
                        Err(e) => errors.push(e.to_string()),
                    }
                }
                (tickets, errors)
            })
        })
        .collect();
    let until_seen = |p: u8, parity: usize, what: &str| {
        let count = || seen[usize::from(p) * 2 + parity].load(Ordering::Relaxed);
        assert!(
            wait_for(Duration::from_secs(60), || count() > 100),
            "{what}: only {} tickets in a minute",
            count()
        );
    };

    until_seen(BEFORE_KILL, 0, "the even server before the kill");
    docker(&["kill", even.id()]);
    phase.store(KILLED, Ordering::SeqCst);
    let bound_at_kill = durable_bound(&dirs[1]);
    until_seen(KILLED, 1, "the odd server alone");
    even.start().expect("restart the killed container");
    assert!(answers(even_port), "the restarted container never answered");
    phase.store(RESTARTED, Ordering::SeqCst);
    // The client probes a failed server again after RETRY_AFTER.
    until_seen(
        RESTARTED,
        0,
        "the client going back to the restarted server",
    );
    stop.store(true, Ordering::Relaxed);

    let mut all = Vec::new();
    for caller in callers {
        let (tickets, errors) = runtime.block_on(caller).unwrap();
        assert!(errors.is_empty(), "callers saw errors: {errors:?}");
        all.extend(tickets);
    }
    let unique: HashSet<u64> = all.iter().map(|(t, _)| *t).collect();
    assert_eq!(unique.len(), all.len(), "a ticket was handed out twice");

    let even_in = |p: u8| all.iter().filter(move |(t, tp)| t % 2 == 0 && *tp == p);
    let odd_after_kill = all.iter().filter(|(t, p)| t % 2 == 1 && *p != BEFORE_KILL);
    assert!(
        odd_after_kill.count() > 100,
        "the odd server did not carry the load"
    );
    let before: Vec<u64> = even_in(BEFORE_KILL).map(|(t, _)| *t).collect();
    let after: Vec<u64> = even_in(RESTARTED).map(|(t, _)| *t).collect();
    assert!(
        before.len() > 100,
        "only {} even tickets before the kill",
        before.len()
    );
    assert!(
        after.len() > 100,
        "the client did not go back to the restarted server ({} tickets)",
        after.len()
    );
    assert!(
        before.iter().all(|&t| t < bound_at_kill),
        "a ticket at or above the durable bound {bound_at_kill} was issued before the kill"
    );
    let resumed_at = *after.iter().min().unwrap();
    assert!(
        resumed_at >= bound_at_kill,
        "the restarted server issued {resumed_at}, below its durable bound {bound_at_kill}"
    );
    assert!(durable_bound(&dirs[1]) > bound_at_kill);
    eprintln!(
        "{} tickets; even: {} before the kill, {} after the restart; durable bound at the kill \
         {bound_at_kill}, resumed at {resumed_at}",
        all.len(),
        before.len(),
        after.len()
    );
    drop(even);
}

#[test]
fn the_compose_file_starts_the_module_and_the_ticket_pair() {
    if !docker_ready("the_compose_file_starts_the_module_and_the_ticket_pair") {
        return;
    }
    let compose = Compose::new(
        "compose",
        &["REDIS_PORT", "TICKETS_ODD_PORT", "TICKETS_EVEN_PORT"],
    );
    compose.run(&["config", "--quiet"]);
    // Initialisation is a deliberate first step, not part of every start.
    for init in ["tickets-odd-init", "tickets-even-init"] {
        compose.run(&["run", "--rm", init]);
    }
    compose.run(&["up", "-d"]);
    for var in ["REDIS_PORT", "TICKETS_ODD_PORT", "TICKETS_EVEN_PORT"] {
        assert!(answers(compose.port(var)), "{var} never answered");
    }
    let mut redis = connect(compose.port("REDIS_PORT"));
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut redis).unwrap();
    assert_eq!(worker_of(id), 1);
    let aof: Vec<String> = cmd(&["CONFIG", "GET", "appendonly"])
        .query(&mut redis)
        .unwrap();
    assert_eq!(aof, ["appendonly", "yes"]);
    let ticket = |var: &str| -> u64 {
        cmd(&["TICKET.NEXT"])
            .query(&mut connect(compose.port(var)))
            .unwrap()
    };
    assert_eq!(ticket("TICKETS_ODD_PORT") % 2, 1);
    assert_eq!(ticket("TICKETS_EVEN_PORT") % 2, 0);

    // Each service's health check passes: redis-cli and `ticket-server ping` inside the images.
    for service in ["redis", "tickets-odd", "tickets-even"] {
        let id = compose.run(&["ps", "-q", service]).trim().to_string();
        let healthy = wait_for(Duration::from_secs(60), || {
            docker(&["inspect", "--format", "{{.State.Health.Status}}", &id]) == "healthy"
        });
        assert!(healthy, "{service} never became healthy");
    }
    // redis-cli inside the containers, as `docker compose exec` users reach them.
    let inside: i64 = compose
        .run(&["exec", "-T", "redis", "redis-cli", "SNOWFLAKE.NEXT"])
        .trim()
        .parse()
        .unwrap();
    assert!(inside > id);
    let inside: u64 = compose
        .run(&[
            "exec",
            "-T",
            "tickets-even",
            "redis-cli",
            "-p",
            "7001",
            "TICKET.NEXT",
        ])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(inside % 2, 0);

    // The even server's volume is lost: restarted on a blank one it refuses to serve, and says
    // how to recover; recovered with --start-above, it carries on above what it handed out.
    compose.run(&["rm", "--stop", "--force", "tickets-even"]);
    docker(&[
        "volume",
        "rm",
        &format!("{}_tickets-even", compose.project()),
    ]);
    compose.run(&["up", "-d", "tickets-even"]);
    let id = compose
        .run(&["ps", "-q", "tickets-even"])
        .trim()
        .to_string();
    let exited = wait_for(Duration::from_secs(30), || {
        docker(&["inspect", "--format", "{{.State.Status}}", &id]) == "exited"
    });
    assert!(exited, "a ticket server on a blank volume kept running");
    let logs = compose.run(&["logs", "--no-color", "tickets-even"]);
    assert!(
        logs.contains("holds no ticket store") && logs.contains("--start-above N"),
        "{logs}"
    );
    compose.run(&[
        "run",
        "--rm",
        "tickets-even-init",
        "--offset",
        "2",
        "--increment",
        "2",
        "--start-above",
        "1000",
    ]);
    compose.run(&["up", "-d", "tickets-even"]);
    assert!(answers(compose.port("TICKETS_EVEN_PORT")), "never answered");
    let after = ticket("TICKETS_EVEN_PORT");
    assert!(after > 1000 && after % 2 == 0, "{after}");
}

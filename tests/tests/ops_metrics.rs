//! What an operator watches: the ticket server's Prometheus metrics (read with curl, scraped
//! by a real prometheus), INFO idgen through redis_exporter's Lua hook, and the alert rules of
//! ops/prometheus under promtool's own tests. Needs curl, prometheus (with promtool) and
//! prometheus-redis-exporter: `make test` installs them (scripts/deps.sh).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use idgen_client::metrics;
use idgen_client::LeaseStats;
use idgen_tests::ticket::TicketServer;
use idgen_tests::{
    cmd, data_dir, free_port, lease_worker_binary, sample, workspace_root, KillOnDrop, Server,
};
use ticket_client::prefetch::Prefetch;
use ticket_client::prefetch_metrics;
use ticket_client::RoundRobin;

fn spawn(program: &str, args: &[String]) -> KillOnDrop {
    let child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} (make test installs it): {e}"));
    KillOnDrop(child)
}

/// The body of GET `url` by curl, or None when it fails.
fn curl(url: &str) -> Option<String> {
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "5", url])
        .output();
    let out = out.expect("curl (make test installs it)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Polls `check` until it returns Some, for at most `within`.
fn wait_for<T>(within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let mut found = None;
    idgen_tests::wait_for(within, || {
        found = check();
        found.is_some()
    });
    found.unwrap_or_else(|| panic!("{what} within {within:?}"))
}

/// The value of the sample `name` (with its labels, as written) in a text exposition.
fn ticket_server_with_metrics(dir: &Path, metrics_port: u16) -> TicketServer {
    let listen = format!("127.0.0.1:{metrics_port}");
    TicketServer::start(
        1,
        1,
        dir,
        &["--metrics-listen", &listen, "--requirepass", "secret"],
    )
}

#[test]
fn curl_reads_tickets_errors_auth_failures_and_each_sequence_s_headroom() {
    let dir = data_dir("metrics-curl");
    let metrics_port = free_port();
    let server = ticket_server_with_metrics(&dir, metrics_port);
    let url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let mut con = server.connection();
    let _: () = cmd(&["AUTH", "secret"]).query(&mut con).unwrap();
    for _ in 0..5 {
        let _: u64 = cmd(&["TICKET.NEXT", "orders"]).query(&mut con).unwrap();
    }
    let _: Vec<u64> = cmd(&["TICKET.NEXT", "invoices", "COUNT", "10"])
        .query(&mut con)
        .unwrap();
    let refused: redis::RedisResult<()> = cmd(&["AUTH", "wrong"]).query(&mut con);
    assert!(refused.is_err());
    let unknown: redis::RedisResult<()> = cmd(&["NO.SUCH"]).query(&mut con);
    assert!(unknown.is_err());

    let text = curl(&url).expect("the metrics page");
    assert_eq!(
        sample(&text, "ticket_server_tickets_issued_total"),
        Some(15.0)
    );
    assert_eq!(
        sample(&text, "ticket_server_auth_failures_total"),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, r#"ticket_server_errors_total{kind="wrongpass"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"ticket_server_errors_total{kind="unknown_command"}"#
        ),
        Some(1.0)
    );
    assert_eq!(sample(&text, "ticket_server_connections"), Some(1.0));
    let bound = sample(&text, r#"ticket_server_durable_bound{sequence="orders"}"#);
    assert!(bound.is_some_and(|b| b > 5.0), "{text}");
    // Tickets 6 and on are left of the 63-bit range: 2^63 - 1 - 6 + 1 of them.
    let headroom = sample(
        &text,
        r#"ticket_server_headroom_tickets{sequence="orders"}"#,
    );
    assert_eq!(headroom, Some((i64::MAX - 5) as f64));
    let writes = sample(&text, "ticket_server_bound_write_seconds_count");
    assert!(
        writes.is_some_and(|n| n >= 2.0),
        "one bound write per sequence at least"
    );
    drop(con);
    let text = curl(&url).expect("the metrics page");
    assert_eq!(sample(&text, "ticket_server_connections"), Some(0.0));
}

#[test]
fn prometheus_scrapes_a_ticket_server_and_answers_queries_on_it() {
    let dir = data_dir("metrics-prometheus");
    let metrics_port = free_port();
    let server = ticket_server_with_metrics(&dir, metrics_port);
    let mut con = server.connection();
    let _: () = cmd(&["AUTH", "secret"]).query(&mut con).unwrap();
    let _: Vec<u64> = cmd(&["TICKET.NEXT", "orders", "COUNT", "42"])
        .query(&mut con)
        .unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: ticket-server\n    \
             static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let web_port = free_port();
    let _prometheus = spawn(
        "prometheus",
        &[
            format!("--config.file={}", config.display()),
            format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
            format!("--web.listen-address=127.0.0.1:{web_port}"),
        ],
    );
    let query = format!(
        "http://127.0.0.1:{web_port}/api/v1/query?query=ticket_server_tickets_issued_total"
    );
    let answer = wait_for(Duration::from_secs(30), "a scraped sample", || {
        curl(&query).filter(|body| body.contains("\"value\""))
    });
    assert!(
        answer.contains(r#""42"]"#),
        "prometheus holds the 42 tickets issued: {answer}"
    );
    let up = format!("http://127.0.0.1:{web_port}/api/v1/query?query=up");
    let answer = curl(&up).expect("up");
    assert!(answer.contains(r#""1"]"#), "the target is up: {answer}");
}

#[test]
fn redis_exporter_maps_info_idgen_through_the_lua_script() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for _ in 0..7 {
        let _: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    }
    let port = free_port();
    let script = workspace_root().join("ops/redis-exporter/idgen.lua");
    let _exporter = spawn(
        "prometheus-redis-exporter",
        &[
            format!("--redis.addr=redis://127.0.0.1:{}", server.port),
            format!("--web.listen-address=127.0.0.1:{port}"),
            format!("--script={}", script.display()),
        ],
    );
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = wait_for(Duration::from_secs(20), "the exporter's page", || {
        curl(&url).filter(|t| t.contains("redis_script_values"))
    });
    let value = |key: &str| sample(&text, &format!("redis_script_values{{key=\"{key}\"}}"));
    assert_eq!(value("idgen_ids_issued"), Some(7.0), "{text}");
    assert_eq!(value("idgen_clock_backwards_events"), Some(0.0));
    assert_eq!(
        value("idgen_eviction_can_evict"),
        Some(0.0),
        "noeviction: 0"
    );
    assert_eq!(value("idgen_state_file_error"), Some(0.0));
    assert_eq!(value("idgen_layout"), None, "text fields are left out");
    assert_eq!(
        sample(&text, "redis_exporter_last_scrape_error{err=\"\"}"),
        Some(0.0)
    );
}

#[test]
fn the_lease_worker_serves_its_lease_and_renewals() {
    let server = Server::start(&["workerid-horizon-ms", "600"]);
    server.wait_past_lease_fence();
    let worker = lease_worker_binary();
    let port = free_port();
    let _worker = spawn(
        worker.to_str().unwrap(),
        &[
            "--url".into(),
            server.url(),
            "--namespace".into(),
            "metrics".into(),
            "--ttl-ms".into(),
            "600".into(),
            "--run-ms".into(),
            "20000".into(),
            format!("--metrics-listen=127.0.0.1:{port}"),
        ],
    );
    let url = format!("http://127.0.0.1:{port}/metrics");
    // Renewals come every third of the TTL: a few within a second.
    let text = wait_for(
        Duration::from_secs(10),
        "renewals on the metrics page",
        || curl(&url).filter(|t| sample(t, "idgen_lease_renewals_total").is_some_and(|n| n >= 2.0)),
    );
    let listed: Vec<Vec<i64>> = cmd(&["WORKERID.LIST", "metrics"])
        .query(&mut server.connection())
        .unwrap();
    let listed = &listed[0];
    assert_eq!(sample(&text, "idgen_lease_live"), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "idgen_lease_worker_id"),
        Some(listed[0] as f64)
    );
    assert_eq!(sample(&text, "idgen_lease_token"), Some(listed[1] as f64));
    assert!(sample(&text, "idgen_lease_until_ms").is_some_and(|t| t > 1e12));
    assert_eq!(sample(&text, "idgen_lease_failures_total"), Some(0.0));
    // The coordinator gone: calls fail, and the lease ends.
    drop(server);
    let text = wait_for(Duration::from_secs(10), "failures and no lease", || {
        curl(&url).filter(|t| {
            sample(t, "idgen_lease_failures_total").is_some_and(|n| n >= 1.0)
                && sample(t, "idgen_lease_live") == Some(0.0)
        })
    });
    assert_eq!(sample(&text, "idgen_lease_worker_id"), Some(-1.0));
}

#[test]
fn the_alert_rules_pass_promtool_s_tests() {
    let rules = workspace_root().join("ops/prometheus");
    for test in ["ticket-server-alerts.test.yml", "idgen-alerts.test.yml"] {
        let out = Command::new("promtool")
            .args(["test", "rules", test])
            .current_dir(&rules)
            .output()
            .expect("promtool (make test installs prometheus)");
        let printed = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{test}:\n{printed}");
        assert!(printed.contains("SUCCESS"), "{printed}");
    }
}

#[test]
fn docs_operations_names_every_info_field_and_metric_as_it_appears() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/operations.md")).unwrap();
    let server = Server::start(&[]);
    let info: String = cmd(&["INFO", "idgen"])
        .query(&mut server.connection())
        .unwrap();
    let fields: Vec<&str> = info
        .lines()
        .filter_map(|line| line.split_once(':').map(|(name, _)| name))
        .filter(|name| name.starts_with("idgen_"))
        .collect();
    assert!(fields.len() > 30, "{info}");
    let missing: Vec<_> = fields
        .iter()
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "INFO fields not in docs/operations.md: {missing:?}"
    );

    let dir = data_dir("metrics-doc");
    let metrics_port = free_port();
    let ticket = ticket_server_with_metrics(&dir, metrics_port);
    let mut con = ticket.connection();
    let _: () = cmd(&["AUTH", "secret"]).query(&mut con).unwrap();
    let _: u64 = cmd(&["TICKET.NEXT", "orders"]).query(&mut con).unwrap();
    let text = curl(&format!("http://127.0.0.1:{metrics_port}/metrics")).expect("metrics");
    let mut names = metric_names(&text);
    assert_eq!(names.len(), 8, "{text}");

    // The clients' metrics, as a service holding them renders them.
    let none = LeaseStats {
        lease: None,
        until_ms: None,
        renewals: 0,
        failures: 0,
    };
    names.extend(metric_names(&metrics::render(&none)));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Arc::new(RoundRobin::new(&[ticket.addr()]).unwrap());
    let prefetch = Prefetch::start(client, "doc", 10, runtime.handle());
    names.extend(metric_names(&prefetch_metrics::render(&prefetch)));
    assert_eq!(names.len(), 8 + 6 + 4, "{names:?}");
    let missing: Vec<_> = names
        .iter()
        .filter(|name| !doc.contains(&format!("`{name}")))
        .collect();
    assert!(
        missing.is_empty(),
        "metrics not in docs/operations.md: {missing:?}"
    );
}

/// The metrics a Prometheus text page declares, counters with their `_total`, as the docs name
/// them.
fn metric_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| {
            let (name, kind) = rest.split_once(' ')?;
            Some(if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_string()
            })
        })
        .collect()
}

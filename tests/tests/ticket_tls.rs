//! TLS: a ticket server serving RESP over TLS (rustls) to redis-cli, redis-py and the project's
//! own clients, client certificates when asked for, and the lease client reaching a Redis on
//! its tls-port. Certificates are made here with the openssl command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use idgen_tests::ticket::{run_cli_env, TicketServer};
use idgen_tests::{
    data_dir, free_port, lease_worker_binary, module_path, workspace_root, KillOnDrop,
};

/// A CA, a server certificate for 127.0.0.1 signed by it, and a client certificate.
struct Certs {
    dir: PathBuf,
}

impl Certs {
    fn make(dir: &Path) -> Certs {
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("openssl (make test installs it)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let req = |name: &str, cn: &str| {
            let (key, csr, subj) = (
                format!("{name}.key"),
                format!("{name}.csr"),
                format!("/CN={cn}"),
            );
            let mut args = vec!["req"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
            openssl(&args);
        };
        let mut ca = vec!["req", "-x509"];
        ca.extend(ec);
        ca.extend([
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=idgen-test-ca",
        ]);
        openssl(&ca);
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .unwrap();
        std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        for (name, cn) in [("server", "localhost"), ("client", "idgen-client")] {
            req(name, cn);
            let (csr, pem, ext) = (
                format!("{name}.csr"),
                format!("{name}.pem"),
                format!("{name}.ext"),
            );
            openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "2",
                "-extfile",
                &ext,
            ]);
        }
        Certs {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }
}

fn tls_ticket_server(dir: &Path, certs: &Certs, client_certs: bool) -> TicketServer {
    let (cert, key, ca) = (
        certs.path("server.pem"),
        certs.path("server.key"),
        certs.path("ca.pem"),
    );
    let mut args = vec!["--tls-cert-file", &cert, "--tls-key-file", &key];
    if client_certs {
        args.extend(["--tls-ca-cert-file", &ca]);
    }
    TicketServer::start(1, 1, &dir.join("store"), &args)
}

/// redis-cli's output for `args` (with `--tls --cacert ca.pem`), and whether it succeeded.
fn redis_cli_tls(certs: &Certs, port: u16, extra: &[&str], args: &[&str]) -> (bool, String) {
    let out = Command::new("redis-cli")
        .args([
            "--tls",
            "--cacert",
            &certs.path("ca.pem"),
            "-p",
            &port.to_string(),
        ])
        .args(extra)
        .args(args)
        .output()
        .expect("redis-cli");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success() && !text.contains("rror"), text)
}

#[test]
fn redis_cli_gets_tickets_over_tls_and_plain_clients_are_refused() {
    let dir = data_dir("tls-redis-cli");
    let certs = Certs::make(&dir);
    let server = tls_ticket_server(&dir, &certs, false);
    let (ok, text) = redis_cli_tls(&certs, server.port, &[], &["TICKET.NEXT", "orders"]);
    assert!(ok && text.trim() == "1", "{text}");
    let (ok, text) = redis_cli_tls(&certs, server.port, &[], &["TICKET.NEXT", "orders"]);
    assert!(ok && text.trim() == "2", "{text}");
    let plain = Command::new("redis-cli")
        .args(["-p", &server.port.to_string(), "TICKET.NEXT", "orders"])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&plain.stdout).into_owned()
        + &String::from_utf8_lossy(&plain.stderr);
    assert!(
        !text.trim().starts_with('3'),
        "a plain client got a ticket from the TLS port: {text}"
    );
}

#[test]
fn a_client_certificate_is_required_when_a_ca_is_given() {
    let dir = data_dir("tls-client-certs");
    let certs = Certs::make(&dir);
    let server = tls_ticket_server(&dir, &certs, true);
    let (ok, text) = redis_cli_tls(&certs, server.port, &[], &["TICKET.NEXT", "orders"]);
    assert!(!ok, "no client certificate, yet: {text}");
    let (cert, key) = (certs.path("client.pem"), certs.path("client.key"));
    let with_cert = ["--cert", cert.as_str(), "--key", key.as_str()];
    let (ok, text) = redis_cli_tls(&certs, server.port, &with_cert, &["TICKET.NEXT", "orders"]);
    assert!(ok && text.trim() == "1", "{text}");
}

#[test]
fn redis_py_and_the_project_s_clients_take_rediss_urls() {
    let dir = data_dir("tls-clients");
    let certs = Certs::make(&dir);
    let server = tls_ticket_server(&dir, &certs, false);
    let ca = certs.path("ca.pem");
    let url = format!("rediss://127.0.0.1:{}", server.port);
    // ticket-server next through the round-robin client; the CA from SSL_CERT_FILE.
    let (ok, out, err) = run_cli_env(
        &["next", "--servers", &url, "--count", "3"],
        &[("SSL_CERT_FILE", &ca)],
    );
    assert!(ok, "{err}");
    assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["1", "2", "3"]);
    // Without the CA the server's certificate is refused, and said to be.
    let (ok, _, err) = run_cli_env(
        &["next", "--servers", &url],
        &[("SSL_CERT_FILE", "/dev/null")],
    );
    assert!(!ok && err.contains("certificate"), "{err}");
    // redis-py with ssl=True.
    let python = workspace_root().join("target/venv/bin/python");
    let script = format!(
        "import redis; r = redis.Redis(port={}, ssl=True, ssl_ca_certs={ca:?}); \
         print(r.execute_command('TICKET.NEXT', 'default'))",
        server.port
    );
    let out = Command::new(&python)
        .args(["-c", &script])
        .output()
        .expect("the tests' venv (make test)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "4");
}

#[test]
fn the_lease_client_reaches_a_redis_on_its_tls_port() {
    let dir = data_dir("tls-lease");
    let certs = Certs::make(&dir);
    let port = free_port();
    let server = Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args([
            "--tls-cert-file",
            &certs.path("server.pem"),
            "--tls-key-file",
            &certs.path("server.key"),
        ])
        .args([
            "--tls-ca-cert-file",
            &certs.path("ca.pem"),
            "--tls-auth-clients",
            "no",
        ])
        .args(["--save", "", "--dir", &dir.display().to_string()])
        .arg("--loadmodule")
        .arg(module_path())
        .args(["workerid-horizon-ms", "1000"])
        .stdout(Stdio::null())
        .spawn()
        .map(KillOnDrop)
        .expect("redis-server");
    let worker = lease_worker_binary();
    // Grants start a horizon (1 s) after the server's start: the worker's first IDs wait for
    // that, so it runs past it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let out = loop {
        let out = Command::new(&worker)
            .args([
                "--url",
                &format!("rediss://127.0.0.1:{port}/"),
                "--namespace",
                "tls",
            ])
            .args([
                "--ttl-ms",
                "1000",
                "--run-ms",
                "2500",
                "--start-within-ms",
                "3000",
            ])
            .env("SSL_CERT_FILE", certs.path("ca.pem"))
            .output()
            .expect("idgen-lease-worker");
        if out.status.success() || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.lines().next().is_some_and(|l| l.starts_with("L ")),
        "a lease: {text}"
    );
    assert!(
        text.lines().filter(|l| l.starts_with("I ")).count() > 10,
        "IDs under it"
    );
    drop(server);
}

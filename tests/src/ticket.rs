//! Ticket-server processes for the tests: `target/release/ticket-server serve` on free
//! loopback ports (override the binary with `TICKET_SERVER`), killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, release_artifact};

/// Path of the ticket-server binary.
pub fn binary() -> PathBuf {
    release_artifact(
        "TICKET_SERVER",
        "ticket-server",
        "ticket-server",
        &["ticket-server", "ticket-client", "crates/idgen-core"],
    )
}

/// A running `ticket-server serve`; killed on drop (its data directory is the caller's).
pub struct TicketServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Arguments and extra environment it was started with, to restart it alike.
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Its stderr, over every restart: what a failed start prints.
    log: PathBuf,
}

impl TicketServer {
    /// Starts server `offset` of `increment` on `data_dir`, with `extra` flags, on a free port.
    pub fn start(offset: u64, increment: u64, data_dir: &Path, extra: &[&str]) -> TicketServer {
        // A fresh directory on the first start; a no-op on the restarts that reuse these args.
        let init = !extra.contains(&"--start-above");
        TicketServer::start_as(offset, increment, data_dir, extra, init, Vec::new())
    }

    /// Starts server `offset` of `increment` on a `data_dir` that already holds its store, with
    /// `extra` flags and no `--init`.
    pub fn start_existing(
        offset: u64,
        increment: u64,
        data_dir: &Path,
        extra: &[&str],
    ) -> TicketServer {
        TicketServer::start_as(offset, increment, data_dir, extra, false, Vec::new())
    }

    fn start_as(
        offset: u64,
        increment: u64,
        data_dir: &Path,
        extra: &[&str],
        init: bool,
        env: Vec<(String, String)>,
    ) -> TicketServer {
        let port = free_port();
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--offset".into(),
            offset.to_string(),
            "--increment".into(),
            increment.to_string(),
            "--data-dir".into(),
            data_dir.display().to_string(),
        ];
        if init {
            args.push("--init".into());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        TicketServer::try_spawn(port, args, env).unwrap_or_else(|why| panic!("{why}"))
    }

    /// Starts server `offset` of `increment` on a fresh `data_dir`, with `extra` flags and this
    /// extra environment (kept across restarts), e.g. [`crate::writefault::WriteFaults::env`].
    pub fn start_with_env(
        offset: u64,
        increment: u64,
        data_dir: &Path,
        extra: &[&str],
        env: Vec<(String, String)>,
    ) -> TicketServer {
        TicketServer::start_as(offset, increment, data_dir, extra, true, env)
    }

    /// Starts server `offset` of `increment` on a `data_dir` that already holds its store, as
    /// [`TicketServer::start_existing`]; the server's log when it exits instead of serving.
    ///
    /// # Errors
    /// The server's stderr when it refuses to start.
    pub fn try_start_existing(
        offset: u64,
        increment: u64,
        data_dir: &Path,
    ) -> Result<TicketServer, String> {
        let port = free_port();
        let args: Vec<String> = [
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--offset",
            &offset.to_string(),
            "--increment",
            &increment.to_string(),
            "--data-dir",
            &data_dir.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        TicketServer::try_spawn(port, args, Vec::new())
    }

    fn try_spawn(
        port: u16,
        args: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Result<TicketServer, String> {
        let log = std::env::temp_dir().join(format!(
            "idgen-ticket-server-{}-{port}.log",
            std::process::id()
        ));
        let mut server = TicketServer {
            child: spawn_child(&args, &env, &log),
            port,
            args,
            env,
            log,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let server = self;
        let deadline = Instant::now() + Duration::from_secs(10);
        // A TLS port is ready once it accepts: a plain PING cannot tell more.
        let tls = server.args.iter().any(|a| a == "--tls-cert-file");
        loop {
            if tls {
                if std::net::TcpStream::connect(("127.0.0.1", server.port)).is_ok() {
                    return Ok(());
                }
            } else if let Ok(mut con) = server.try_connection() {
                // Any answer will do: with --requirepass it is NOAUTH.
                match redis::cmd("PING").query::<String>(&mut con) {
                    Ok(_) => return Ok(()),
                    Err(e) if e.code().is_some() => return Ok(()),
                    Err(_) => {}
                }
            }
            if !matches!(server.child.try_wait(), Ok(None)) {
                return Err(format!(
                    "ticket-server exited at start: {:?}\n{}",
                    server.args,
                    server.log()
                ));
            }
            assert!(
                Instant::now() < deadline,
                "ticket-server did not answer PING: {:?}\n{}",
                server.args,
                server.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The odd and even servers of a pair (offsets 1 and 2 of 2), in `dir/odd` and `dir/even`.
    pub fn odd_and_even(dir: &Path, extra: &[&str]) -> (TicketServer, TicketServer) {
        (
            TicketServer::start(1, 2, &dir.join("odd"), extra),
            TicketServer::start(2, 2, &dir.join("even"), extra),
        )
    }

    /// Restarts it on the same port without `--init`, with `extra` flags instead (e.g.
    /// `--start-above N` after its data directory was lost).
    pub fn restart_without_init(&mut self, extra: &[&str]) {
        self.kill9();
        self.args.retain(|a| a != "--init");
        self.args.extend(extra.iter().map(|s| s.to_string()));
        self.child = spawn_child(&self.args, &self.env, &self.log);
        self.wait_ready().unwrap_or_else(|why| panic!("{why}"));
    }

    /// Starts it again on the same port, directory and flags.
    pub fn restart(&mut self) {
        self.kill9();
        self.child = spawn_child(&self.args, &self.env, &self.log);
        self.wait_ready().unwrap_or_else(|why| panic!("{why}"));
    }

    fn try_connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(Duration::from_secs(2))
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A new connection.
    pub fn connection(&self) -> redis::Connection {
        self.try_connection().expect("connect to ticket-server")
    }

    /// What it wrote to stderr so far, across restarts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it with SIGKILL and waits.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits up to `limit` for it to exit; its status, if it did.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// Runs `ticket-server` with `args` and extra `env`, appending its stderr to `log`.
fn spawn_child(args: &[String], env: &[(String, String)], log: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open ticket-server log");
    Command::new(binary())
        .args(args)
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("run ticket-server")
}

impl Drop for TicketServer {
    fn drop(&mut self) {
        self.kill9();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `ticket-server serve` as server `offset` of `increment` on `dir` with `extra` flags, run to its
/// end (a start that is refused): (success, stderr).
pub fn serve_once(offset: &str, increment: &str, dir: &Path, extra: &[&str]) -> (bool, String) {
    let dir = dir.display().to_string();
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--offset",
        offset,
        "--increment",
        increment,
        "--data-dir",
        &dir,
    ];
    args.extend(extra);
    let (ok, _, err) = run_cli(&args);
    (ok, err)
}

/// Runs `ticket-server` with `args` to completion: (success, stdout, stderr).
pub fn run_cli(args: &[&str]) -> (bool, String, String) {
    run_cli_env(args, &[])
}

/// Runs `ticket-server` with `args` and these environment variables to completion: (success,
/// stdout, stderr).
pub fn run_cli_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(binary())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run ticket-server");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

//! A real redis-server (or valkey-server) with the module loaded, started on a free loopback
//! port and stopped when its guard drops; and other processes a test started by hand.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::dirs::scratch_dir;
use crate::{cmd, free_port, module_path, now_ms, wait_for, Connection};

/// The variable naming the server program the harness starts.
pub const SERVER_VAR: &str = "IDGEN_SERVER";

/// The server program the harness starts: `redis-server`, or what `IDGEN_SERVER` names.
pub fn server_program() -> String {
    std::env::var(SERVER_VAR)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "redis-server".to_string())
}

/// The variable naming the program of servers started without the module (for the Functions
/// library), when it differs from [`SERVER_VAR`]'s: a Redis 6, where the library runs as scripts.
pub const LIBRARY_SERVER_VAR: &str = "IDGEN_LIBRARY_SERVER";

/// The program of a server started without the module: `IDGEN_LIBRARY_SERVER`, or
/// [`server_program`].
pub fn library_server_program() -> String {
    std::env::var(LIBRARY_SERVER_VAR)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(server_program)
}

/// How to start a server.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Load arguments of the module, e.g. `["worker-id", "3"]`.
    pub module_args: Vec<String>,
    /// Extra redis-server arguments, e.g. `["--appendonly", "yes"]`.
    pub server_args: Vec<String>,
    /// Lines of a redis.conf to start from (loadmodule is added by the harness when non-empty).
    pub config_lines: Vec<String>,
    /// Reuse this directory (data survives restarts) instead of a fresh one.
    pub dir: Option<PathBuf>,
    /// A plain redis-server, without the module.
    pub no_module: bool,
    /// This build of the module instead of the release build (one that follows a
    /// [`crate::clock::ClockShift`]).
    pub module: Option<PathBuf>,
    /// Extra environment, e.g. [`clock::ClockShift::env`].
    pub env: Vec<(String, String)>,
    /// Listen on this port (e.g. a restart where clients expect it) instead of a free one.
    pub port: Option<u16>,
    /// This server program instead of [`server_program`]'s (or, without the module,
    /// [`library_server_program`]'s).
    pub program: Option<String>,
}

impl Options {
    /// Options with these module load arguments.
    pub fn module(args: &[&str]) -> Self {
        Options {
            module_args: args.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        }
    }

    /// Adds redis-server arguments.
    pub fn server(mut self, args: &[&str]) -> Self {
        self.server_args.extend(args.iter().map(|s| s.to_string()));
        self
    }

    /// The program these options start: [`Options::program`], else the module's server or,
    /// without the module, the library's.
    pub fn program(&self) -> String {
        self.program
            .clone()
            .unwrap_or_else(|| match self.no_module {
                false => server_program(),
                true => library_server_program(),
            })
    }
}

/// The major version `program --version` names (`Redis server v=6.0.16 ...`; Valkey names the
/// Redis it follows in `INFO`, its own here), once per program.
pub fn program_major(program: &str) -> u32 {
    static SEEN: std::sync::Mutex<Vec<(String, u32)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, major)) = seen.iter().find(|(p, _)| p == program) {
        return *major;
    }
    let out = Command::new(program)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{program} --version: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let major = text
        .split("v=")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{program} --version: {text}"));
    seen.push((program.to_string(), major));
    major
}

/// A running redis-server with the module; killed, and its directory removed, on drop.
pub struct Server {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its working directory (AOF, RDB, log).
    pub dir: PathBuf,
    keep_dir: bool,
}

impl Server {
    /// Starts a server with `module_args` and waits until it answers PING.
    pub fn start(module_args: &[&str]) -> Server {
        Server::start_with(Options::module(module_args))
    }

    /// Starts a server as `options` say; panics with its log if it does not come up.
    pub fn start_with(options: Options) -> Server {
        match Server::try_start(options) {
            Ok(server) => server,
            Err(log) => panic!("{} did not start:\n{log}", server_program()),
        }
    }

    /// Starts a server; on failure returns its log (e.g. why the module refused to load).
    pub fn try_start(options: Options) -> Result<Server, String> {
        // A port found free can be taken by another suite's server before this one binds it
        // (the suites run side by side): then another port, unless the test chose this one.
        for _ in 0..4 {
            match Server::start_once(&options) {
                Err(log) if options.port.is_none() && log.contains("Address already in use") => {}
                started => return started,
            }
        }
        Server::start_once(&options)
    }

    fn start_once(options: &Options) -> Result<Server, String> {
        let module =
            (!options.no_module).then(|| options.module.clone().unwrap_or_else(module_path));
        let keep_dir = options.dir.is_some();
        let dir = options.dir.clone().unwrap_or_else(scratch_dir);
        std::fs::create_dir_all(&dir).expect("create server dir");
        let port = options.port.unwrap_or_else(free_port);
        let log = dir.join("redis.log");
        let program = options.program();
        let mut command = Command::new(&program);
        if !options.config_lines.is_empty() {
            let mut conf = match &module {
                Some(module) => format!(
                    "loadmodule {} {}\n",
                    module.display(),
                    options.module_args.join(" ")
                ),
                None => String::new(),
            };
            for line in &options.config_lines {
                conf.push_str(line);
                conf.push('\n');
            }
            let path = dir.join("redis.conf");
            std::fs::write(&path, conf).expect("write redis.conf");
            command.arg(&path);
        }
        command
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                // A replica's full sync starts at once, not after the default 5 s wait for more
                // replicas to share it.
                "--repl-diskless-sync-delay",
                "0",
            ])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log);
        if let Some(module) = module.filter(|_| options.config_lines.is_empty()) {
            command
                .arg("--loadmodule")
                .arg(module)
                .args(&options.module_args);
        }
        command.args(&options.server_args);
        command.envs(options.env.iter().map(|(k, v)| (k, v)));
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {program} (apt-get install {program}): {e}"));
        let mut server = Server {
            child,
            port,
            dir,
            keep_dir,
        };
        // Generous: four suites and a release build share two cores in make test.
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = server.child.try_wait() {
                return Err(server.log());
            }
            if let Ok(mut con) = server.try_connection() {
                if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                    return Ok(server);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("no PONG within 60 s\n{}", server.log()))
    }

    fn try_connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(Duration::from_secs(5))
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A new RESP2 connection (which calls the library in the server's form: [`Connection`]).
    pub fn connection(&self) -> Connection {
        Connection::to_port(self.try_connection().expect("connect"), self.port)
    }

    /// A new RESP3 connection.
    pub fn connection_resp3(&self) -> Connection {
        let url = format!("{}?protocol=resp3", self.url());
        Connection::to_port(
            redis::Client::open(url)
                .and_then(|c| c.get_connection())
                .expect("connect RESP3"),
            self.port,
        )
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the server cleanly (`SHUTDOWN NOSAVE`: the module's shutdown writes run, the data
    /// is left as persisted) and waits, up to 10 s, for it to exit.
    pub fn shutdown(&mut self) {
        if let Ok(mut con) = self.try_connection() {
            let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut con);
        }
        let exited = wait_for(Duration::from_secs(10), || !self.is_alive());
        assert!(exited, "still running 10 s after SHUTDOWN");
    }

    /// Kills the process with SIGKILL, as a crash would, and waits for it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Makes this server a replica of `primary` and waits (up to 60 s: the suites share two
    /// cores in make test) for the link to be up, and for the primary to count it online (it
    /// does at the replica's first acknowledgement, a moment later).
    pub fn replicate(&self, primary: &Server) {
        let _: () = cmd(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()])
            .query(&mut self.connection())
            .expect("REPLICAOF");
        let up = wait_for(Duration::from_secs(60), || {
            let info: String = cmd(&["INFO", "replication"])
                .query(&mut self.connection())
                .unwrap_or_default();
            info.contains("master_link_status:up")
        });
        assert!(
            up,
            "the replica's link to its primary did not come up in 60 s"
        );
        let me = format!("port={},state=online", self.port);
        let online = wait_for(Duration::from_secs(60), || {
            let info: String = cmd(&["INFO", "replication"])
                .query(&mut primary.connection())
                .unwrap_or_default();
            info.contains(&me)
        });
        assert!(
            online,
            "the primary did not count its replica online in 60 s"
        );
    }

    /// Waits until the fence this server puts lease grants above (its load or promotion plus
    /// `idgen.workerid-horizon-ms`) has passed: its grants then start above what earlier holders
    /// recorded, nothing more.
    pub fn wait_past_lease_fence(&self) {
        let fence: i64 = self
            .info_field("workerid_fence_ms")
            .parse()
            .expect("a fence");
        std::thread::sleep(Duration::from_millis((fence - now_ms()).max(0) as u64 + 20));
    }

    /// Waits until the clock has passed where Snowflake IDs started at load (the load time
    /// plus `idgen.max-drift-ms`, or the state file's reservation): from then on IDs keep to
    /// the clock and may borrow ahead of it again, as before any restart.
    pub fn wait_past_resume(&self) {
        let resumed: i64 = self
            .info_field("resumed_above_ms")
            .parse()
            .expect("resumed_above_ms");
        std::thread::sleep(Duration::from_millis(
            (resumed - now_ms()).max(0) as u64 + 2,
        ));
    }

    /// Waits (up to 30 s) until this replica took in all `primary` had sent when called.
    pub fn wait_caught_up(&self, primary: &Server) {
        let sent = primary.replication_offset();
        let caught_up = wait_for(Duration::from_secs(30), || {
            self.replication_offset() >= sent
        });
        assert!(caught_up, "the replica never caught up with its primary");
    }

    /// `master_repl_offset` from `INFO replication`: how far its replication stream has gone
    /// (sent, on a primary; taken in, on a replica).
    pub fn replication_offset(&self) -> i64 {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut self.connection())
            .expect("INFO replication");
        info.lines()
            .find_map(|line| line.strip_prefix("master_repl_offset:"))
            .and_then(|offset| offset.trim().parse().ok())
            .unwrap_or_else(|| panic!("no master_repl_offset in INFO replication:\n{info}"))
    }

    /// `INFO idgen` field `name` (without the `idgen_` prefix).
    pub fn info_field(&self, name: &str) -> String {
        let info: String = redis::cmd("INFO")
            .arg("idgen")
            .query(&mut self.connection())
            .expect("INFO");
        let key = format!("idgen_{name}:");
        info.lines()
            .find_map(|line| line.strip_prefix(&key))
            .unwrap_or_else(|| panic!("no {key} in INFO idgen:\n{info}"))
            .trim()
            .to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
        if !self.keep_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A child process killed (and reaped) on drop: a server a test started by hand.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

//! The harness for integration tests: real `redis-server` processes with the module loaded, on
//! free loopback ports, stopped when their guard drops; ticket servers ([`ticket`]); the Docker
//! images under testcontainers ([`containers`]).
//!
//! The module is `target/release/libredis_idgen.so` (override with `IDGEN_MODULE`); `make test`
//! builds it first. The server is `redis-server`, or the program `IDGEN_SERVER` names
//! (`valkey-server`: `make test` runs the module's suites on both). A missing module or server
//! fails the test with a message saying so.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use redis;

pub mod burst;
pub mod clock;
pub mod cluster;
pub mod containers;
pub mod docs;
pub mod lease;
pub mod partition;
pub mod ticket;
pub mod tmpfs;
pub mod witness_file;

/// `<source>` (C, a path from the workspace root) built into a shared library from this
/// checkout's source; panics when it cannot be built.
pub fn compiled(source: &str) -> PathBuf {
    try_compiled(source).unwrap_or_else(|why| panic!("{why}"))
}

/// `<source>` (C, a path from the workspace root) built into a shared library from this
/// checkout's source, or why it could not be.
pub fn try_compiled(source: &str) -> Result<PathBuf, String> {
    let source = workspace_root().join(source);
    let stem = source.file_stem().and_then(|s| s.to_str()).unwrap_or("lib");
    let out = std::env::temp_dir().join(format!("idgen-{stem}-{}.so", std::process::id()));
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .map_err(|e| format!("run cc (apt-get install gcc): {e}"))?;
    if !status.success() {
        return Err(format!("cc could not build {}", source.display()));
    }
    Ok(out)
}

/// A second module for the tests (tests/demoter/demoter.c): loaded with `host port`, it runs
/// `REPLICAOF host port` through `RM_Call` when a string key named `{demote}...` changes, from
/// inside the command that changed it.
pub fn demoter() -> &'static Path {
    static DEMOTER: OnceLock<PathBuf> = OnceLock::new();
    DEMOTER.get_or_init(|| compiled("tests/demoter/demoter.c"))
}

/// The value of the sample `name` (no labels) in a page of Prometheus text.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// Path of the module to load.
pub fn module_path() -> PathBuf {
    release_artifact(
        "IDGEN_MODULE",
        "libredis_idgen.so",
        "redis-idgen",
        &["modules/redis-idgen", "modules/idgen-core"],
    )
}

/// The variable naming the server program the harness starts.
pub const SERVER_VAR: &str = "IDGEN_SERVER";

/// The server program the harness starts: `redis-server`, or what `IDGEN_SERVER` names.
pub fn server_program() -> String {
    std::env::var(SERVER_VAR)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "redis-server".to_string())
}

/// The root of the checkout this test or benchmark runs in, found at run time: from the running
/// executable (`<root>/target/<profile>/deps/<name>`), else from the current directory (cargo
/// runs tests and benches in their package's directory). Not the path it was compiled in: a
/// copied checkout with an old `target/` must run its own binaries and write its own reports.
pub fn workspace_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let is_root = |dir: &&Path| {
            std::fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]"))
        };
        let exe = std::env::current_exe().ok();
        let from_exe = exe.as_deref().and_then(|exe| {
            let target = exe
                .ancestors()
                .find(|d| d.file_name() == Some("target".as_ref()))?;
            target.parent().filter(is_root).map(Path::to_path_buf)
        });
        let cwd = std::env::current_dir().ok();
        let from_cwd = || {
            cwd.as_deref()
                .and_then(|cwd| cwd.ancestors().find(is_root))
                .map(Path::to_path_buf)
        };
        from_exe
            .or_else(from_cwd)
            .expect("no Cargo workspace above the executable or the current directory")
    })
}

/// `target/release/FILE` of the workspace, or the path in `env_var`. Fails clearly when it is
/// missing, or older than any Rust source under the `sources` folders: a test must
/// run the code of its own checkout (`make test` builds it first; `cargo test` cannot, as it
/// holds the build lock while tests run).
pub fn release_artifact(env_var: &str, file: &str, package: &str, sources: &[&str]) -> PathBuf {
    if let Some(path) = std::env::var_os(env_var) {
        return PathBuf::from(path);
    }
    let root = workspace_root();
    let path = root.join("target/release").join(file);
    let build = format!("build it with `cargo build --release -p {package}` (make test does)");
    let built = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is missing: {build}", path.display()));
    let dirs: Vec<PathBuf> = sources.iter().map(|s| root.join(s)).collect();
    if let Some(newer) = newer_source(built, &dirs) {
        panic!(
            "{} is older than {}: it would test stale code; {build}",
            path.display(),
            newer.display()
        );
    }
    path
}

/// A Rust source under `dirs` changed after `built`, if there is one.
pub fn newer_source(built: std::time::SystemTime, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .filter_map(|dir| newest_source(dir))
        .find(|(_, at)| *at > built)
        .map(|(path, _)| path)
}

/// The most recently modified `.rs` file at or below `path`, and when. Not `Cargo.toml`: cargo
/// leaves a fresh artifact untouched after a manifest edit that changes no code (a
/// `rust-version`, a description), which would read here as stale forever.
fn newest_source(path: &Path) -> Option<(PathBuf, std::time::SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_dir() {
        return std::fs::read_dir(path)
            .ok()?
            .filter_map(|entry| newest_source(&entry.ok()?.path()))
            .max_by_key(|(_, at)| *at);
    }
    let name = path.file_name()?.to_str()?;
    Some((path.to_path_buf(), meta.modified().ok()?)).filter(|_| name.ends_with(".rs"))
}

/// A TCP port on 127.0.0.1 that nothing listens on right now, from [`TEST_PORTS`]: below the
/// kernel's ephemeral range, so no client socket of another test can take it between now and
/// the server's bind (a port from `bind(0)` could be, and a server once failed to start so).
pub fn free_port() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let span = usize::from(TEST_PORTS.end - TEST_PORTS.start);
    // Each process starts elsewhere in the range, so two test binaries rarely meet.
    let start = std::process::id() as usize * 7919;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = TEST_PORTS.start + ((start + n) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {TEST_PORTS:?}");
}

/// Ports the tests listen on: under Linux's default ephemeral range (32768-60999).
pub const TEST_PORTS: std::ops::Range<u16> = 20000..32000;

/// Wall-clock ms since 1970.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as i64)
}

/// A fresh, empty directory named after `name`, for data that must outlive one server; removed
/// when the guard drops, so also when the test fails.
pub fn data_dir(name: &str) -> TempDir {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("idgen-{name}-{}-{n}", std::process::id()));
    TempDir::make(dir)
}

/// A directory removed, with everything in it, when the guard drops: at the end of the test
/// that made it, whether it passed or panicked.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Makes `path` an empty directory, removing what was there.
    fn make(path: PathBuf) -> TempDir {
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        TempDir(path)
    }

    /// Removes the directory and everything in it now, as a lost disk would (tests of what a
    /// server does when its data vanishes); the guard stays and removes whatever is there later.
    pub fn lose(&self, sub: &str) {
        let _ = std::fs::remove_dir_all(self.0.join(sub));
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty directory under the system temp dir, removed by [`Server`]'s drop.
fn scratch_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("idgen-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
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
    /// Extra environment, e.g. [`clock::ClockShift::env`].
    pub env: Vec<(String, String)>,
    /// Listen on this port (e.g. a restart where clients expect it) instead of a free one.
    pub port: Option<u16>,
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
        let module = (!options.no_module).then(module_path);
        let keep_dir = options.dir.is_some();
        let dir = options.dir.clone().unwrap_or_else(scratch_dir);
        std::fs::create_dir_all(&dir).expect("create server dir");
        let port = options.port.unwrap_or_else(free_port);
        let log = dir.join("redis.log");
        let program = server_program();
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
        let deadline = Instant::now() + Duration::from_secs(20);
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
        Err(format!("no PONG within 20 s\n{}", server.log()))
    }

    fn try_connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(Duration::from_secs(5))
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A new RESP2 connection.
    pub fn connection(&self) -> redis::Connection {
        self.try_connection().expect("connect")
    }

    /// A new RESP3 connection.
    pub fn connection_resp3(&self) -> redis::Connection {
        let url = format!("{}?protocol=resp3", self.url());
        redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("connect RESP3")
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

    /// Makes this server a replica of `primary` and waits (up to 20 s) for the link to be up.
    pub fn replicate(&self, primary: &Server) {
        let _: () = cmd(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()])
            .query(&mut self.connection())
            .expect("REPLICAOF");
        let up = wait_for(Duration::from_secs(20), || {
            let info: String = cmd(&["INFO", "replication"])
                .query(&mut self.connection())
                .unwrap_or_default();
            info.contains("master_link_status:up")
        });
        assert!(
            up,
            "the replica's link to its primary did not come up in 20 s"
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

/// What `SNOWFLAKE.DECODE` says of an ID, field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub time_ms: i64,
    /// ISO-8601, ms precision.
    pub time: String,
    pub datacenter: i64,
    pub worker: i64,
    pub sequence: i64,
    pub epoch_ms: i64,
}

/// `SNOWFLAKE.DECODE id` on `con`, read by field name (RESP2's flat array or RESP3's map); panics
/// on an error or a field missing.
pub fn decode(con: &mut redis::Connection, id: i64) -> Decoded {
    let reply: redis::Value = cmd(&["SNOWFLAKE.DECODE", &id.to_string()])
        .query(con)
        .unwrap_or_else(|e| panic!("SNOWFLAKE.DECODE {id}: {e}"));
    let pairs: Vec<(redis::Value, redis::Value)> = match reply {
        redis::Value::Map(pairs) => pairs,
        redis::Value::Array(flat) => flat
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect(),
        other => panic!("SNOWFLAKE.DECODE {id} replied {other:?}"),
    };
    let mut d = Decoded::default();
    for (name, value) in pairs {
        let name: String = redis::from_redis_value(name).expect("a field name");
        match (name.as_str(), value) {
            ("time", v) => d.time = redis::from_redis_value(v).expect("time as text"),
            (field, redis::Value::Int(n)) => match field {
                "time_ms" => d.time_ms = n,
                "datacenter" => d.datacenter = n,
                "worker" => d.worker = n,
                "sequence" => d.sequence = n,
                "epoch_ms" => d.epoch_ms = n,
                other => panic!("SNOWFLAKE.DECODE: unknown field {other}"),
            },
            (field, v) => panic!("SNOWFLAKE.DECODE: {field} is {v:?}"),
        }
    }
    d
}

/// Runs `cmd` and returns its error text; panics if it succeeded.
pub fn error_of(con: &mut redis::Connection, cmd: &redis::Cmd) -> String {
    match cmd.query::<redis::Value>(con) {
        Err(e) => error_text(&e),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// An error as Redis sent it: code, then message.
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// `command`'s reply, retried for up to 3 s while a Snowflake command is refused because the
/// node resumed ahead of its clock: a node starts above its load time plus
/// `idgen.max-drift-ms`, at the drift limit, so right after a start it issues no more than one
/// tick's sequence per tick of the clock, and may wait for the clock's next tick first.
pub fn when_caught_up<T: redis::FromRedisValue>(
    con: &mut redis::Connection,
    command: &redis::Cmd,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match command.query(con) {
            Ok(value) => return value,
            Err(e) if e.to_string().contains("behind the last issued ID") => {
                assert!(Instant::now() < deadline, "still refused after 3 s: {e}");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Builds a command from words.
pub fn cmd(words: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(words[0]);
    for w in &words[1..] {
        c.arg(*w);
    }
    c
}

/// Path of the `idgen-lease-worker` binary (override with `IDGEN_LEASE_WORKER`).
pub fn lease_worker_binary() -> PathBuf {
    release_artifact(
        "IDGEN_LEASE_WORKER",
        "idgen-lease-worker",
        "idgen-client",
        &["modules/idgen-client", "modules/idgen-core"],
    )
}

/// A child process killed (and reaped) on drop: a server a test started by hand.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `check` holds, up to `timeout`.
pub fn wait_for(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// Runs `tests/python/<script>` with `args` in the venv `make test` builds (scripts/venv.sh),
/// with `input` on its stdin: other people's clients and decoders. Its stdout; panics with its
/// stderr when it fails.
pub fn run_python(script: &str, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let python = workspace_root().join("target/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/venv.sh (make test does)",
        python.display()
    );
    let mut child = Command::new(&python)
        .arg(workspace_root().join("tests/python").join(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to the script");
    let out = child.wait_with_output().expect("wait for the script");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

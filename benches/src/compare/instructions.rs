//! Instructions per request inside a server, counted by callgrind: a figure that does not
//! swing with the machine's load as wall-clock rates do. The server runs under
//! `valgrind --tool=callgrind`; for each command the counters are zeroed, one client sends it
//! `n` times unpipelined, and the dump's total is divided by `n`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server under callgrind, killed on drop.
struct Counted {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether valgrind and callgrind_control are installed.
pub fn available() -> bool {
    let runs = |program: &str| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    runs("valgrind") && runs("callgrind_control")
}

/// Starts `program args` under callgrind in `dir`, listening on `port`.
fn start(dir: &Path, port: u16, program: &Path, args: &[String]) -> Result<Counted, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}/out.%p", dir.display()))
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("valgrind: {e}"))?;
    let counted = Counted {
        child,
        dir: dir.to_path_buf(),
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(mut con) = connection(port) {
            if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                return Ok(counted);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "{} did not start under valgrind",
        program.display()
    ))
}

fn connection(port: u16) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))?
        .get_connection_with_timeout(Duration::from_secs(30))
}

/// The instructions one request of each of `commands` costs inside the server, over `n`
/// requests each.
fn per_request(server: &Counted, commands: &[Vec<String>], n: u32) -> Result<Vec<u64>, String> {
    let pid = server.child.id().to_string();
    let control = |flag: &str| {
        Command::new("callgrind_control")
            .args([flag, &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("callgrind_control: {e}"))
    };
    let mut con = connection(server.port).map_err(|e| e.to_string())?;
    let mut counts = Vec::new();
    for words in commands {
        let mut cmd = redis::cmd(&words[0]);
        for word in &words[1..] {
            cmd.arg(word);
        }
        cmd.query::<redis::Value>(&mut con)
            .map_err(|e| e.to_string())?; // warm up
        control("-z")?;
        for _ in 0..n {
            cmd.query::<redis::Value>(&mut con)
                .map_err(|e| e.to_string())?;
        }
        control("-d")?;
        counts.push(newest_total(&server.dir)? / u64::from(n));
    }
    Ok(counts)
}

/// The total instruction count of the newest dump in `dir` (the dump is then removed).
fn newest_total(dir: &Path) -> Result<u64, String> {
    let newest = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("out."))
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .ok_or("callgrind wrote no dump")?
        .path();
    let text = std::fs::read_to_string(&newest).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&newest);
    text.lines()
        .find_map(|l| {
            let rest = l
                .strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .ok_or_else(|| format!("no total in {}", newest.display()))
}

/// Instructions per request for the commands of redis-server with the module (AOF on, as
/// benches/module.sh counts them) and of the ticket-server, as `(server, command, count)`.
///
/// # Errors
/// Why the counts could not be taken, in words for the report.
pub fn count(
    dir: &Path,
    module: &Path,
    ticket_server: &Path,
    n: u32,
) -> Result<Vec<(&'static str, String, u64)>, String> {
    if !available() {
        return Err("valgrind is not installed (make bench installs it as root)".into());
    }
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut rows = Vec::new();

    let port = idgen_tests::free_port();
    let redis_dir = dir.join("callgrind-redis");
    let args: Vec<String> = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes",
        "--dir",
        &redis_dir.display().to_string(),
        "--loadmodule",
        &module.display().to_string(),
        "dateseq-digits",
        "10",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let redis = start(&redis_dir, port, Path::new("redis-server"), &args)?;
    let commands: Vec<Vec<String>> = [
        "PING",
        "INCR counted",
        "SNOWFLAKE.NEXT",
        "SNOWFLAKE.NEXT COUNT 100",
        "DATESEQ.NEXT counted",
        "DATESEQ.NEXT counted-bulk COUNT 100",
    ]
    .iter()
    .map(|c| words(c))
    .collect();
    for (command, ir) in commands.iter().zip(per_request(&redis, &commands, n)?) {
        rows.push(("redis-server + module", command.join(" "), ir));
    }
    drop(redis);

    let port = idgen_tests::free_port();
    let ticket_dir = dir.join("callgrind-ticket");
    let args: Vec<String> = [
        "serve",
        "--init",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--data-dir",
        &ticket_dir.join("data").display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let tickets = start(&ticket_dir, port, ticket_server, &args)?;
    let commands: Vec<Vec<String>> = ["PING", "TICKET.NEXT"].iter().map(|c| words(c)).collect();
    for (command, ir) in commands.iter().zip(per_request(&tickets, &commands, n)?) {
        rows.push(("ticket-server", command.join(" "), ir));
    }
    Ok(rows)
}

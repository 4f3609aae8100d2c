//! Instructions per request inside a server, counted by callgrind: a figure that does not
//! swing with the machine's load as wall-clock rates do. The server runs under
//! `valgrind --tool=callgrind`; for each command the counters are zeroed, one client sends it
//! `n` times, unpipelined and then 16 at a time, and each dump's total is divided by `n`.
//!
//! Redis's `serverCron` is left out of the count (`--toggle-collect`): its memory statistics
//! cost about 270,000 instructions each run, ten runs a second, and landed on whichever command
//! was being counted in proportion to how long valgrind took over it (±300 a request).

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
        // In this order: --toggle-collect turns collection off at the start, whatever came
        // before it (seen: the counts were serverCron's alone).
        .arg("--toggle-collect=serverCron")
        .arg("--collect-atstart=yes")
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

/// What one request of a command costs inside a server.
#[derive(Clone, Debug, Default)]
pub struct Count {
    /// Instructions per request, one request per round trip.
    pub unpipelined: u64,
    /// Instructions per request, 16 per round trip.
    pub pipelined: u64,
    /// Where the unpipelined instructions go inside a module's command, when the server is
    /// redis-server and `callgrind_annotate` can tell.
    pub split: Option<Split>,
}

/// A module command's instructions per request, by where they go.
#[derive(Clone, Copy, Debug, Default)]
pub struct Split {
    /// The reply (`RM_ReplyWith*`).
    pub reply: u64,
    /// The other Redis API calls (`RM_*`).
    pub api: u64,
    /// The module's own code.
    pub own: u64,
}

/// Requests per round trip in the pipelined count.
pub const PIPELINE: u32 = 16;

/// Server starts each count is the median of. Redis seeds its hash functions at random on each
/// start, and the command table's bucket chains that the seed makes moved one command's count by
/// up to ~90 instructions a request from one start to the next (the command lookup's
/// `strcasecmp` calls: 120 a request in one start, 270 in another, 2026-11-26).
pub const STARTS: usize = 3;

/// The median of each field of each command's count over the server starts in `starts` (one
/// list of counts, in command order, per start).
fn median(starts: &[Vec<Count>]) -> Vec<Count> {
    let of = |mut values: Vec<u64>| {
        values.sort_unstable();
        values.get(values.len() / 2).copied().unwrap_or(0)
    };
    let commands = starts.iter().map(Vec::len).min().unwrap_or(0);
    (0..commands)
        .map(|i| {
            let field = |f: &dyn Fn(&Count) -> u64| of(starts.iter().map(|s| f(&s[i])).collect());
            let splits: Vec<Split> = starts.iter().filter_map(|s| s[i].split).collect();
            let split_field =
                |f: &dyn Fn(&Split) -> u64| of(splits.iter().map(f).collect::<Vec<_>>());
            Count {
                unpipelined: field(&|c| c.unpipelined),
                pipelined: field(&|c| c.pipelined),
                split: (!splits.is_empty()).then(|| Split {
                    reply: split_field(&|s| s.reply),
                    api: split_field(&|s| s.api),
                    own: split_field(&|s| s.own),
                }),
            }
        })
        .collect()
}

/// `count(start)` for each of [`STARTS`] server starts, and the median of what they gave.
fn over_starts(
    mut count: impl FnMut(usize) -> Result<Vec<Count>, String>,
) -> Result<Vec<Count>, String> {
    let starts = (0..STARTS).map(&mut count).collect::<Result<Vec<_>, _>>()?;
    Ok(median(&starts))
}

/// The instructions one request of each of `commands` costs inside the server, over `n`
/// requests each, unpipelined and pipelined; with the split of `module`'s commands (the file
/// name of its library, as callgrind shows it) when given.
fn per_request(
    server: &Counted,
    commands: &[Vec<String>],
    n: u32,
    module: Option<&str>,
) -> Result<Vec<Count>, String> {
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
        let dump = newest_dump(&server.dir)?;
        let unpipelined = total(&dump)? / u64::from(n);
        let split = module.and_then(|m| split(&dump, m, n));
        let _ = std::fs::remove_file(&dump);
        let mut pipe = redis::pipe();
        for _ in 0..PIPELINE {
            pipe.add_command(cmd.clone());
        }
        control("-z")?;
        for _ in 0..n / PIPELINE {
            pipe.query::<Vec<redis::Value>>(&mut con)
                .map_err(|e| e.to_string())?;
        }
        control("-d")?;
        let dump = newest_dump(&server.dir)?;
        let pipelined = total(&dump)? / u64::from(n / PIPELINE * PIPELINE);
        let _ = std::fs::remove_file(&dump);
        counts.push(Count {
            unpipelined,
            pipelined,
            split,
        });
    }
    Ok(counts)
}

/// The newest dump in `dir`.
fn newest_dump(dir: &Path) -> Result<PathBuf, String> {
    Ok(std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("out."))
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .ok_or("callgrind wrote no dump")?
        .path())
}

/// The total instruction count of a dump.
fn total(dump: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(dump).map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| {
            let rest = l
                .strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .ok_or_else(|| format!("no total in {}", dump.display()))
}

/// Where a module command's instructions go, per request, from `callgrind_annotate`'s
/// inclusive counts: the module's command callbacks (functions of `module`'s library that Redis
/// calls), the `RM_ReplyWith*` functions, and every other `RM_*` function.
fn split(dump: &Path, module: &str, n: u32) -> Option<Split> {
    let out = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(dump)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut callbacks, mut reply, mut api) = (0u64, 0u64, 0u64);
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(Ok(count)) = words.next().map(|c| c.replace(',', "").parse::<u64>()) else {
            continue;
        };
        let Some(function) = words.find(|w| w.starts_with("???:") || w.contains(".c:")) else {
            continue;
        };
        let name = function.rsplit(':').next().unwrap_or("");
        if line.contains(module) && function.ends_with("COMMANDS::call") {
            callbacks += count;
        } else if name.starts_with("RM_ReplyWith") {
            reply += count;
        } else if name.starts_with("RM_") {
            api += count;
        }
    }
    let per = |c: u64| c / u64::from(n);
    (callbacks > 0).then(|| Split {
        reply: per(reply),
        api: per(api),
        own: per(callbacks.saturating_sub(reply + api)),
    })
}

/// The module that shows DATESEQ.NEXT's Redis API floor: the Redis calls DATESEQ.NEXT makes
/// for a counter that exists, made from C with next to no code of their own.
pub const FLOOR_SOURCE: &str = "benches/floor/dateseq_floor.c";

/// The server it is counted in: redis-server with the module and the floor module.
pub const FLOOR_SERVER: &str = "redis-server + module + floor";

/// INCR of a key with a TTL, as DATESEQ.NEXT's counter has: the like-for-like baseline.
pub const INCR_EXPIRING: &str = "INCR expiring";

/// INCR of a key without a TTL: the baseline the issue set for DATESEQ.NEXT.
pub const INCR_PLAIN: &str = "INCR counted";

/// DATESEQ.NEXT of one value, counted in the main server and in the floor's.
pub const DATESEQ_ONE: &str = "DATESEQ.NEXT counted";

/// The floor's command with DATESEQ.NEXT's exact ACL check on the counter key.
pub const FLOOR_CHECKED: &str = "FLOOR.DATESEQ floored";

/// The floor's command without the ACL check: what the check costs.
pub const FLOOR_UNCHECKED: &str = "FLOOR.DATESEQ-UNCHECKED floored";

/// A peer module to count beside ours: its name, library, load arguments and command.
pub struct PeerModule {
    pub name: String,
    pub path: PathBuf,
    pub load: Vec<String>,
    pub command: Vec<String>,
}

/// One row of the table: the server, the command and its count.
pub type Row = (String, String, Count);

/// redis-server's arguments for a count: AOF on (as benches/module.sh counts), on `port`, in
/// `dir`, with `module` and its load arguments, and the modules `beside` it (no arguments).
fn redis_args(
    port: u16,
    dir: &Path,
    (module, load): (&Path, &[String]),
    beside: &[PathBuf],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes",
        "--dir",
        &dir.display().to_string(),
        "--loadmodule",
        &module.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(load.iter().cloned());
    for other in beside {
        args.extend(["--loadmodule".to_string(), other.display().to_string()]);
    }
    args
}

/// What `count` finds in a redis-server started under callgrind with `module` (and the modules
/// `beside` it), in `dir-<start>`: the median over [`STARTS`] starts.
fn in_redis(
    dir: &Path,
    module: (&Path, &[String]),
    beside: &[PathBuf],
    count: impl Fn(&Counted) -> Result<Vec<Count>, String>,
) -> Result<Vec<Count>, String> {
    over_starts(|start_no| {
        let port = idgen_tests::free_port();
        let start_dir = PathBuf::from(format!("{}-{start_no}", dir.display()));
        let args = redis_args(port, &start_dir, module, beside);
        count(&start(&start_dir, port, Path::new("redis-server"), &args)?)
    })
}

/// A row per command of `server` with its count, or one row saying why none was taken.
fn push_rows(
    rows: &mut Vec<Row>,
    server: &str,
    commands: &[Vec<String>],
    counted: Result<Vec<Count>, String>,
) {
    match counted {
        Ok(counts) => {
            for (command, count) in commands.iter().zip(counts) {
                rows.push((server.to_string(), command.join(" "), count));
            }
        }
        Err(why) => rows.push((
            server.to_string(),
            format!("not counted: {why}"),
            Count::default(),
        )),
    }
}

/// Instructions per request for the commands of redis-server with the module, of
/// redis-server with the module and DATESEQ.NEXT's floor module, of each peer module in a
/// redis-server of its own, and of the ticket-server.
///
/// # Errors
/// Why the counts could not be taken, in words for the report.
pub fn count(
    dir: &Path,
    module: &Path,
    ticket_server: &Path,
    peers: &[PeerModule],
    n: u32,
) -> Result<Vec<Row>, String> {
    if !available() {
        return Err("valgrind is not installed (make bench installs it as root)".into());
    }
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut rows = Vec::new();

    // The sealed commands' key: a fixed one, as any key costs the same.
    let key_file = dir.join("seal.key");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(&key_file, format!("{}\n", "2b7e1516".repeat(8)))
        .map_err(|e| format!("{}: {e}", key_file.display()))?;
    let mut load = words("dateseq-digits 10 seal-key-file");
    load.push(key_file.display().to_string());
    let commands: Vec<Vec<String>> = [
        "PING",
        INCR_PLAIN,
        "SNOWFLAKE.NEXT",
        "SNOWFLAKE.NEXT SEALED",
        "SNOWFLAKE.NEXT COUNT 100",
        DATESEQ_ONE,
        "DATESEQ.NEXT counted-bulk COUNT 100",
        "UUID7.NEXT",
        "UUID7.NEXT SEALED",
        "ULID.NEXT",
    ]
    .iter()
    .map(|c| words(c))
    .collect();
    let library = module.file_name().map(|f| f.to_string_lossy().into_owned());
    let counts = in_redis(
        &dir.join("callgrind-redis"),
        (module, &load),
        &[],
        |redis| per_request(redis, &commands, n, library.as_deref()),
    )?;
    push_rows(&mut rows, "redis-server + module", &commands, Ok(counts));

    // DATESEQ.NEXT's API floor beside the module, in servers of their own: with it loaded,
    // SNOWFLAKE.NEXT cost ~70 instructions a request more in 3 starts of 4 (2026-11-26).
    let commands: Vec<Vec<String>> = [
        "PING",
        INCR_PLAIN,
        INCR_EXPIRING,
        DATESEQ_ONE,
        FLOOR_CHECKED,
        FLOOR_UNCHECKED,
    ]
    .iter()
    .map(|c| words(c))
    .collect();
    let counted = idgen_tests::try_compiled(FLOOR_SOURCE).and_then(|floor| {
        in_redis(
            &dir.join("callgrind-floor"),
            (module, &load),
            &[floor],
            |redis| {
                // A TTL, as each day's counter has: finding it costs a lookup more a call.
                let mut con = connection(redis.port).map_err(|e| e.to_string())?;
                redis::cmd("SET")
                    .arg(&["expiring", "0", "PX", "172800000"])
                    .query::<()>(&mut con)
                    .map_err(|e| e.to_string())?;
                per_request(redis, &commands, n, None)
            },
        )
    });
    push_rows(&mut rows, FLOOR_SERVER, &commands, counted);

    for peer in peers {
        let server = format!("redis-server + peer {}", peer.name);
        let commands = vec![words("PING"), peer.command.clone()];
        let peer_dir = dir.join(format!("callgrind-peer-{}", peer.name));
        let counted = in_redis(&peer_dir, (&peer.path, &peer.load), &[], |redis| {
            per_request(redis, &commands, n, None)
        });
        push_rows(&mut rows, &server, &commands, counted);
    }

    let commands: Vec<Vec<String>> = ["PING", "TICKET.NEXT"].iter().map(|c| words(c)).collect();
    let counts = over_starts(|start_no| {
        let port = idgen_tests::free_port();
        let ticket_dir = dir.join(format!("callgrind-ticket-{start_no}"));
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
        per_request(&tickets, &commands, n, None)
    })?;
    push_rows(&mut rows, "ticket-server", &commands, Ok(counts));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::{median, Count, Split};

    fn count(unpipelined: u64, pipelined: u64, own: Option<u64>) -> Count {
        Count {
            unpipelined,
            pipelined,
            split: own.map(|own| Split {
                reply: 600,
                api: 5,
                own,
            }),
        }
    }

    #[test]
    fn each_field_is_the_median_of_the_starts() {
        let starts = vec![
            vec![count(5_100, 3_000, Some(160)), count(4_200, 2_300, None)],
            vec![count(4_900, 3_200, Some(158)), count(4_300, 2_340, None)],
            vec![count(5_000, 3_100, Some(170)), count(4_250, 2_320, None)],
        ];
        let m = median(&starts);
        assert_eq!((m[0].unpipelined, m[0].pipelined), (5_000, 3_100));
        assert_eq!(m[0].split.map(|s| s.own), Some(160));
        assert_eq!((m[1].unpipelined, m[1].pipelined), (4_250, 2_320));
        assert!(m[1].split.is_none());
    }
}

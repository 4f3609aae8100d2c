//! The Functions library as scripts (`EVALSHA`), on a server that runs Lua but has no
//! `FUNCTION`: Redis 6.0 (Debian 11's source package, built once into the cache by
//! scripts/debian-server.sh; `IDGEN_REDIS6` names another build). Installed, found and called
//! by the client in that form; the same replies and errors as the functions on this
//! checkout's default server; what a restart or `SCRIPT FLUSH` takes from the server's script
//! cache is loaded again from the library's key, and no ID or value repeats across it.

use std::process::Command;

use idgen_functions::scripts::{self, Library};
use idgen_functions::{self as library, LibraryError, Settings};
use idgen_tests::library::set_node;
use idgen_tests::{error_text, redis, workspace_root, Options, Server};

/// A Redis 6.0 server program: `IDGEN_REDIS6`, or Debian 11's redis built into the cache.
fn redis6() -> String {
    if let Ok(program) = std::env::var("IDGEN_REDIS6") {
        return program;
    }
    let out = Command::new(workspace_root().join("scripts/debian-server.sh"))
        .args(["redis", "bullseye"])
        .output()
        .expect("run scripts/debian-server.sh");
    assert!(
        out.status.success(),
        "no Redis 6 to test on: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn start6(dir: Option<std::path::PathBuf>, port: Option<u16>) -> Server {
    Server::start_with(
        Options {
            no_module: true,
            program: Some(redis6()),
            dir,
            port,
            ..Options::default()
        }
        .server(&["--appendonly", "yes", "--appendfsync", "always"]),
    )
}

/// A plain connection: what the client finds and calls is its own doing here, not the
/// harness's (whose connections call the scripts for the suites' FCALLs).
fn raw(server: &Server) -> redis::Connection {
    redis::Client::open(server.url())
        .and_then(|c| c.get_connection())
        .expect("connect")
}

/// The server's answer, error or not, as text: what a caller sees.
fn answer(result: redis::RedisResult<redis::Value>) -> String {
    match result {
        Ok(value) => format!("{value:?}"),
        Err(e) => error_text(&e),
    }
}

/// `snowflake_next` of the state key `sf`, once past the fence a start or a reload sets: a
/// reload within a tenth of a second of the last fence resumes above its reservation, which
/// runs ahead of it (refused as such, naming the fence and when to retry).
fn snowflake_after_fence(lib: &Library, con: &mut redis::Connection) -> u64 {
    for _ in 0..200 {
        match lib.call(con, "snowflake_next", &["sf"], &[]) {
            Err(e) if error_text(&e).contains("resume above") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            result => return result.unwrap(),
        }
    }
    panic!("snowflake_next refused for 2 s");
}

#[test]
fn on_redis_6_the_library_runs_as_scripts_and_repeats_nothing_across_restarts_and_flushes() {
    let dir = idgen_tests::data_dir("library-scripts");
    let mut server = start6(Some(dir.to_path_buf()), None);
    let mut con = raw(&server);
    // The functions' installer is refused (no FUNCTION); the scripts' is not.
    let e = library::install(&mut con).unwrap_err();
    assert!(
        matches!(&e, LibraryError::Redis(e) if scripts::no_functions(e)),
        "{e}"
    );
    // A newer library's text in the key is left alone, as the functions' installer leaves one.
    let newer = scripts::text(&Settings::default()).unwrap().replace(
        &format!("local VERSION = '{}'", library::version()),
        "local VERSION = '99.0.0'",
    );
    let _: () = redis::cmd("SET")
        .arg(scripts::KEY)
        .arg(&newer)
        .query(&mut con)
        .unwrap();
    let e = scripts::install(&mut con, &Settings::default()).unwrap_err();
    assert!(e.to_string().contains("99.0.0, newer than this one"), "{e}");
    let _: () = redis::cmd("DEL").arg(scripts::KEY).query(&mut con).unwrap();
    let loaded = scripts::install(&mut con, &Settings::default()).unwrap();
    assert_eq!(loaded.len(), scripts::FUNCTIONS.len());
    let lib = Library::find(&mut con).unwrap();
    assert_eq!(lib.form(), "EVALSHA");
    let version: String = lib.call(&mut con, "idgen_version", &[], &[]).unwrap();
    assert_eq!(version, library::version());

    set_node(&mut con, "sf", 3, 7);
    let layout = idgen_core::layout::Layout::twitter();
    let mut ids: Vec<u64> = Vec::new();
    let mut values: Vec<u64> = Vec::new();
    let take = |con: &mut redis::Connection, ids: &mut Vec<u64>, values: &mut Vec<u64>| {
        for _ in 0..300 {
            let id: u64 = snowflake_after_fence(&lib, con);
            let d = layout.decode(id);
            assert_eq!((d.datacenter, d.worker), (3, 7), "{id}");
            ids.push(id);
            values.push(lib.call(con, "dateseq_next", &["seq"], &[]).unwrap());
        }
    };
    take(&mut con, &mut ids, &mut values);
    // The library's state outlives a script's run: the second ID goes on in the first one's
    // fenced millisecond, the next in its sequence (a library loaded afresh at every call
    // would fence again, starting a tick further at sequence 0 each time). The fence is 1 s
    // ahead of the clock, so this holds however slow the machine, bar a second between calls.
    let (first, second) = (layout.decode(ids[0]), layout.decode(ids[1]));
    assert_eq!(
        (second.ticks, second.sequence),
        (first.ticks, first.sequence + 1),
        "the second ID did not follow the first in its millisecond"
    );
    // SCRIPT FLUSH: the scripts and the library's Lua state gone, as a reload.
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    let flushed = redis::cmd("EVALSHA")
        .arg(&loaded[0].1)
        .arg(1)
        .arg("sf")
        .query::<u64>(&mut con)
        .unwrap_err();
    assert!(error_text(&flushed).contains("NOSCRIPT"), "{flushed}");
    take(&mut con, &mut ids, &mut values);
    // kill -9 and a start from the AOF: the script cache is empty again.
    drop(con);
    server.kill9();
    let server = start6(Some(dir.to_path_buf()), Some(server.port));
    let mut con = raw(&server);
    let lib = Library::find(&mut con).unwrap();
    assert_eq!(lib.form(), "EVALSHA");
    take(&mut con, &mut ids, &mut values);
    for (what, seen) in [("IDs", &ids), ("values", &values)] {
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "{what} went back or repeated across a flush or a restart"
        );
    }

    // Leases, through the scripts.
    let grant: Vec<i64> = lib
        .call(&mut con, "workerid_acquire", &["ns"], &["TTL", "1000"])
        .unwrap();
    assert_eq!(grant.len(), 4, "{grant:?}");
    let listed: Vec<redis::Value> = lib.call(&mut con, "workerid_list", &["ns"], &[]).unwrap();
    assert_eq!(listed.len(), 1);
}

/// `idgen-lease-worker install-library` on a server without FUNCTION installs the scripts and
/// says so, naming the key the clients reload them from; the client then finds them.
#[test]
fn the_installer_puts_scripts_where_there_is_no_function() {
    let six = start6(None, None);
    let url = format!("redis://127.0.0.1:{}/", six.port);
    let out = Command::new(idgen_tests::lease_worker_binary())
        .args(["install-library", "--url", &url])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("as 8 scripts (EVALSHA)"), "{said}");
    assert!(said.contains(scripts::KEY), "{said}");
    let mut con = raw(&six);
    let lib = Library::find(&mut con).unwrap();
    assert_eq!(lib.form(), "EVALSHA");
    let value: u64 = lib.call(&mut con, "dateseq_next", &["d"], &[]).unwrap();
    assert!(value > 0);
}

/// Bad calls answer alike in both forms: the scripts on Redis 6, the functions on this
/// checkout's default server.
#[test]
fn scripts_and_functions_give_the_same_errors() {
    let six = start6(None, None);
    let mut con6 = raw(&six);
    scripts::install(&mut con6, &Settings::default()).unwrap();
    let scripts = Library::find(&mut con6).unwrap();
    // This checkout's default server, whatever the library's suites run on.
    let seven = Server::start_with(Options {
        no_module: true,
        program: Some(idgen_tests::server_program()),
        ..Options::default()
    });
    let mut con7 = raw(&seven);
    idgen_tests::library::install(&mut seven.connection());
    let functions = Library::find(&mut con7).unwrap();
    assert_eq!(functions.form(), "FCALL");
    let calls: &[(&str, &[&str], &[&str])] = &[
        ("snowflake_next", &["nopair"], &[]),
        ("snowflake_next", &["a", "b"], &[]),
        ("snowflake_next", &["sf"], &["COUNT", "0"]),
        ("snowflake_next", &["sf"], &["SIZE", "1"]),
        ("dateseq_next", &["d"], &["DIGITS", "11"]),
        ("dateseq_next", &["d"], &["PERIOD", "week"]),
        ("dateseq_next", &["d", "d"], &[]),
        ("dateseq_current", &["d"], &["COUNT", "2"]),
        ("workerid_acquire", &["ns"], &["TTL", "1"]),
        ("workerid_renew", &["ns"], &["0", "1"]),
        ("idgen_version", &["k"], &[]),
    ];
    for (function, keys, args) in calls {
        let a = answer(scripts.call(&mut con6, function, keys, args));
        let b = answer(functions.call(&mut con7, function, keys, args));
        assert_eq!(a, b, "{function} {keys:?} {args:?}");
        assert!(a.contains("ERR"), "{function} {keys:?} {args:?}: {a}");
    }
}

/// On a server whose script globals are read-only (Redis 7 and later, Valkey), the scripts
/// refuse, saying to install the functions (a Redis 6 runs them); the client finds the
/// functions there.
#[test]
fn where_script_globals_are_read_only_the_scripts_refuse_and_say_why() {
    let server = Server::start_with(Options {
        no_module: true,
        program: Some(idgen_tests::server_program()),
        ..Options::default()
    });
    let mut con = raw(&server);
    let major = idgen_tests::library::redis_major(&mut con);
    scripts::install(&mut con, &Settings::default()).unwrap();
    let text: String = redis::cmd("GET").arg(scripts::KEY).query(&mut con).unwrap();
    let script = redis::Script::new(&scripts::script(&text, "idgen_version"));
    match script.invoke::<String>(&mut con) {
        Ok(version) if major < 7 => assert_eq!(version, library::version()),
        Err(e) if major >= 7 => assert!(
            error_text(&e).contains("keeps no Lua state between scripts"),
            "{e}"
        ),
        other => panic!("redis_version {major}: {other:?}"),
    }
    if major >= 7 {
        idgen_tests::library::install(&mut server.connection());
        assert_eq!(Library::find(&mut con).unwrap().form(), "FCALL");
    }
}

/// The module on Redis 6 refuses to load with one line naming the server's version and the
/// oldest it needs, before anything else is said; the server does not start with it.
#[test]
fn the_module_refuses_redis_6_naming_both_versions() {
    let version = redis::cmd("INFO")
        .arg("server")
        .query::<String>(&mut start6(None, None).connection())
        .unwrap()
        .split("redis_version:")
        .nth(1)
        .and_then(|v| v.lines().next())
        .unwrap()
        .trim()
        .to_string();
    let log = Server::try_start(Options {
        program: Some(redis6()),
        ..Options::default()
    })
    .err()
    .expect("Redis 6 started with the module");
    let ours: Vec<&str> = log.lines().filter(|l| l.contains("idgen")).collect();
    assert!(
        ours.first().is_some_and(|l| l.contains(&format!(
            "this server is Redis {version}; the module needs Redis 7.0.0 or later"
        ))),
        "{log}"
    );
    assert!(
        !log.contains("Failed subscribing"),
        "the binding library spoke first:\n{log}"
    );
}

//! The harness itself: it refuses to test a binary older than its sources.

use std::time::{Duration, SystemTime};

use idgen_tests::{data_dir, newer_source};

#[test]
fn a_source_newer_than_the_binary_is_found() {
    let dir = data_dir("stale");
    std::fs::create_dir_all(dir.join("src/inner")).unwrap();
    std::fs::write(dir.join("README.md"), "prose does not rebuild anything").unwrap();
    // Nor does a manifest edit that changes no code (cargo leaves the artifact as it is).
    std::fs::write(dir.join("Cargo.toml"), "[package]\nrust-version = \"1.89\"").unwrap();
    std::fs::write(dir.join("src/inner/lib.rs"), "fn main() {}").unwrap();
    let edited = SystemTime::now();
    let dirs = [dir.to_path_buf()];
    assert_eq!(
        newer_source(edited + Duration::from_secs(60), &dirs),
        None,
        "built after the edit"
    );
    assert_eq!(
        newer_source(edited - Duration::from_secs(60), &dirs),
        Some(dir.join("src/inner/lib.rs")),
        "built before the edit"
    );
    std::fs::remove_file(dir.join("src/inner/lib.rs")).unwrap();
    assert_eq!(
        newer_source(edited - Duration::from_secs(60), &dirs),
        None,
        "only .rs files count"
    );
}

/// `Options::no_module` gives a plain redis-server: the INCR baseline of the comparison runs on
/// one, not on a server with the module loaded.
#[test]
fn no_module_starts_a_plain_redis_server() {
    let plain = idgen_tests::Server::start_with(idgen_tests::Options {
        no_module: true,
        ..Default::default()
    });
    // Redis 8 built with its modules lists them; idgen must not be there.
    let modules = idgen_tests::modules_listed(&mut plain.connection());
    assert!(
        modules.iter().all(|(name, _)| name != "idgen"),
        "{modules:?}"
    );
    let err = idgen_tests::error_of(
        &mut plain.connection(),
        &idgen_tests::cmd(&["SNOWFLAKE.NEXT"]),
    );
    assert!(err.contains("unknown command"), "{err}");
}

/// The checkout is found at run time, from the test's own executable.
#[test]
fn the_workspace_root_is_the_checkout_the_test_runs_in() {
    let root = idgen_tests::workspace_root();
    let exe = std::env::current_exe().unwrap();
    assert!(
        exe.starts_with(root),
        "{} not under {}",
        exe.display(),
        root.display()
    );
    assert!(root.join("tests/tests/harness.rs").is_file());
}

/// `IDGEN_SERVER=valkey-server` runs the suites on Valkey: the server started is the one named
/// (Valkey still answers `redis_version`, so the check is on `server_name`).
#[test]
fn the_server_started_is_the_program_named() {
    let server = idgen_tests::Server::start(&[]);
    let info: String = idgen_tests::cmd(&["INFO", "server"])
        .query(&mut server.connection())
        .unwrap();
    let on_valkey = info.lines().any(|l| l.trim() == "server_name:valkey");
    assert_eq!(
        on_valkey,
        idgen_tests::server_program().contains("valkey"),
        "{} started a server that says:\n{info}",
        idgen_tests::server_program()
    );
}

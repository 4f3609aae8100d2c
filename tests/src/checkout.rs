//! What this checkout's tests run: its root, the release artifacts built from its sources
//! (refused when older than them), and C libraries built from its test sources.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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

/// Path of the module to load.
pub fn module_path() -> PathBuf {
    release_artifact(
        "IDGEN_MODULE",
        "libredis_idgen.so",
        "redis-idgen",
        &["server/redis-idgen", "crates/idgen-core"],
    )
}

/// Path of the `idgen-lease-worker` binary (override with `IDGEN_LEASE_WORKER`).
pub fn lease_worker_binary() -> PathBuf {
    release_artifact(
        "IDGEN_LEASE_WORKER",
        "idgen-lease-worker",
        "idgen-lease-worker",
        &[
            "tools/idgen-lease-worker",
            "crates/idgen-client",
            "server/idgen-functions",
            "crates/idgen-core",
        ],
    )
}

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
    let out = crate::dirs::process_dir().join(format!("{stem}.so"));
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

/// A copy of the release build of the module, in this test process's directory, that names
/// `shim` as its first needed library: a server that loads modules with `RTLD_DEEPBIND`
/// (Valkey 8.1) has the module find libc's functions before a preloaded shim's, but not before
/// those of a library the module itself needs.
pub fn module_needing(shim: &Path, name: &str) -> PathBuf {
    let copy = crate::dirs::process_dir().join(format!("module-{name}.so"));
    std::fs::copy(module_path(), &copy).expect("copy the module");
    let out = Command::new("patchelf")
        .arg("--add-needed")
        .arg(shim)
        .arg(&copy)
        .output()
        .expect("patchelf (Debian's patchelf; scripts/deps.sh installs it)");
    assert!(
        out.status.success(),
        "patchelf --add-needed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    copy
}

/// A second module for the tests (tests/demoter/demoter.c): loaded with `host port`, it runs
/// `REPLICAOF host port` through `RM_Call` when a string key named `{demote}...` changes, from
/// inside the command that changed it.
pub fn demoter() -> &'static Path {
    static DEMOTER: OnceLock<PathBuf> = OnceLock::new();
    DEMOTER.get_or_init(|| compiled("tests/demoter/demoter.c"))
}

//! Sets `IDGEN_GIT_REVISION` for src/version.rs: the revision `INFO idgen` reports.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=IDGEN_GIT_REVISION");
    let revision = match std::env::var("IDGEN_GIT_REVISION") {
        Ok(given) if !given.is_empty() => given,
        _ => from_git().unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=IDGEN_GIT_REVISION={revision}");
}

/// HEAD's revision, "-modified" when the sources built differ from it; None outside a checkout
/// that tracks this crate (a crate package).
fn from_git() -> Option<String> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let core_dir = crate_dir.join("../idgen-core");
    git(crate_dir, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let head = git(crate_dir, &["rev-parse", "HEAD"])?;
    // Built again when HEAD moves, the index changes or a source does.
    let mut watched = vec!["HEAD".to_string(), "index".into(), "packed-refs".into()];
    watched.extend(git(crate_dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // A path that does not exist would have cargo run this script on every build.
        let path = git(crate_dir, &["rev-parse", "--git-path", &name]).map(|p| crate_dir.join(p));
        if let Some(path) = path.filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for dir in [crate_dir, core_dir.as_path()] {
        for source in ["src", "Cargo.toml", "build.rs"].map(|s| dir.join(s)) {
            if source.exists() {
                println!("cargo:rerun-if-changed={}", source.display());
            }
        }
    }
    // --no-optional-locks: a status that refreshed the index would change a watched file.
    let changes = git(
        crate_dir,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--",
            ".",
            "../idgen-core",
        ],
    )?;
    Some(if changes.is_empty() {
        head
    } else {
        format!("{head}-modified")
    })
}

/// The trimmed output of `git args` run in `dir`, when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| text.trim().to_string())
}

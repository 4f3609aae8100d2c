//! What a build says it is: `MODULE LIST` shows the release's version as Redis modules encode
//! it, and `INFO idgen` shows it and the git revision the module was built from, each checked
//! against this checkout (Cargo.toml as cargo reads it, and git).

use std::process::Command;

use idgen_tests::{cmd, modules_listed, workspace_root, Server};

/// The output of `program args` run at the checkout's root, when it succeeds.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The module's version as cargo reads its Cargo.toml (`cargo pkgid` ends in `#0.1.0`).
fn cargo_version() -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let id = output(&cargo, &["pkgid", "-p", "redis-idgen"]).expect("cargo pkgid -p redis-idgen");
    id.rsplit(['#', '@']).next().unwrap().to_string()
}

/// What build.rs should have found: HEAD, "-modified" when the module's or idgen-core's files
/// differ from it, "unknown" outside a git checkout.
fn expected_revision() -> String {
    let Some(head) = output("git", &["rev-parse", "HEAD"]) else {
        return "unknown".into();
    };
    let sources = ["server/redis-idgen", "crates/idgen-core"];
    let mut status = vec!["--no-optional-locks", "status", "--porcelain", "--"];
    status.extend(sources);
    match output("git", &status) {
        Some(changes) if !changes.is_empty() => format!("{head}-modified"),
        _ => head,
    }
}

/// `field:value` of an INFO reply.
fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_string())
}

#[test]
fn module_list_and_info_show_the_release_and_the_revision_built_from() {
    let version = cargo_version();
    let parts: Vec<i64> = version
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap())
        .collect();
    let encoded = parts[0] * 10_000 + parts[1] * 100 + parts[2];
    let server = Server::start(&[]);
    for mut con in [server.connection(), server.connection_resp3()] {
        let modules = modules_listed(&mut con);
        let listed = modules.iter().find(|(name, _)| name == "idgen");
        assert_eq!(
            listed.map(|(_, v)| *v),
            Some(encoded),
            "MODULE LIST should show {version} as {encoded}: {modules:?}"
        );
    }
    let info: String = cmd(&["INFO", "idgen"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(info_field(&info, "idgen_version"), Some(version), "{info}");
    assert_eq!(
        info_field(&info, "idgen_git_revision"),
        Some(expected_revision()),
        "the module was built from another revision: make build, then test again\n{info}"
    );
}

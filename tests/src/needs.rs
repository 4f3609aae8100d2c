//! What a test needs beyond a redis-server and loopback ports: root, for a mount (a tmpfs
//! filled up, an ext4 image turned read-only) or a firewall rule (a partition). `make check`
//! (`IDGEN_CHECK=1`, scripts/check.sh) runs as any user: there a test that needs root and does
//! not have it returns at once, saying so. Everywhere else it runs, and fails if root is
//! missing: `make test` runs every test.

/// Whether this test should stop here: under `make check`, without root. Prints why.
pub fn root_missing(test: &str) -> bool {
    if std::env::var_os("IDGEN_CHECK").is_none() || is_root() {
        return false;
    }
    eprintln!("{test}: skipped, it needs root (a mount or a firewall rule); make test runs it");
    true
}

/// Whether this process runs as root (its effective user ID, from /proc).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let uids = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .to_string();
            uids.split_whitespace().nth(1).map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

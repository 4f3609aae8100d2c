//! Other people's clients and decoders, in Python: scripts under `tests/python/` run in the venv
//! `make test` builds.

use std::process::{Command, Stdio};

use crate::workspace_root;

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

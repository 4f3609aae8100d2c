//! The Python section: the idgen package's calls per second beside the usual Python ID
//! libraries, in one process (`benches/python_speed.py`), with the wheel built from this
//! checkout and installed into the tests' venv first.

use std::path::Path;
use std::process::Command;

/// The section's Markdown, or a line saying why it was not measured.
pub fn section(root: &Path, coordinator_url: &str, ttl_ms: u64) -> String {
    match measure(root, coordinator_url, ttl_ms) {
        Ok(md) => md,
        Err(why) => format!("Not measured: {why}.\n"),
    }
}

fn measure(root: &Path, coordinator_url: &str, ttl_ms: u64) -> Result<String, String> {
    let run = |program: &Path, args: &[&str]| -> Result<String, String> {
        let out = Command::new(program)
            .args(args)
            .current_dir(root)
            .output()
            .map_err(|e| format!("could not run {}: {e}", program.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!("{} failed: {}", program.display(), err.trim()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let wheel = run(&root.join("scripts/wheel.sh"), &[])?;
    let python = root.join("target/venv/bin/python");
    run(
        &python,
        &[
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--force-reinstall",
            wheel.trim(),
        ],
    )?;
    run(
        &python,
        &[
            "benches/python_speed.py",
            coordinator_url,
            &ttl_ms.to_string(),
        ],
    )
}

//! The hostile suite's ticket-server options: every numeric or address option given every bad
//! value is refused naming what was given, in time, and never starts a server on it. (The
//! module's and the state files' hostile cases are in `hostile.rs`.)

use idgen_tests::{data_dir, quotes};

#[test]
fn ticket_server_options_are_refused_with_what_was_given() {
    let root = data_dir("hostile-ticket-options");
    let flags = [
        "--offset",
        "--increment",
        "--block",
        "--max-clients",
        "--timeout",
        "--start-above",
        "--sqids-min-length",
        "--listen",
    ];
    let values = [
        "-1",
        "abc",
        "",
        "99999999999999999999999",
        "1.5",
        "256",
        "0",
    ];
    let mut cases = 0;
    for flag in flags {
        for value in values {
            let arg = format!("{flag}={value}");
            // A directory of its own: a valid case leaves a store behind.
            let d = format!("--data-dir={}", root.join(cases.to_string()).display());
            let mut args = vec![
                "serve",
                "--listen=127.0.0.1:0",
                "--increment=2",
                d.as_str(),
                "--init",
            ];
            // --start-above replaces --init (clap refuses both).
            let replaced =
                |a: &&str| a.starts_with(flag) || (flag == "--start-above" && *a == "--init");
            args.retain(|a| !replaced(a));
            args.push(&arg);
            let (ok, _, err) = run_cli_with_deadline(&args);
            cases += 1;
            if ok {
                continue; // a valid value: the server started, and was stopped
            }
            assert!(
                quotes(&err, value),
                "{arg}: the refusal does not quote {value:?}: {err}"
            );
        }
    }
    eprintln!("{cases} cases of ticket-server options");
    assert!(cases >= 50);
}

/// Runs `ticket-server` with `args`; a server that starts (a valid value) is stopped after its
/// start and counted as a success.
fn run_cli_with_deadline(args: &[&str]) -> (bool, String, String) {
    use std::process::{Command, Stdio};
    let mut child = Command::new(idgen_tests::ticket::binary())
        .args(args)
        // The message only: a backtrace's frame numbers would pass for quoted values.
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (true, String::new(), String::new());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

//! Other ecosystems' clients against a ticket server: redis-py (its default pipeline is
//! MULTI/EXEC) and valkey-glide (it reads `INFO REPLICATION` at connect), from the venv that
//! `make test` builds (scripts/venv.sh, pinned in tests/python/requirements.txt).

use std::process::Command;

use idgen_tests::ticket::TicketServer;
use idgen_tests::{data_dir, workspace_root};

#[test]
fn redis_py_and_valkey_glide_get_tickets() {
    let python = workspace_root().join("target/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/venv.sh (make test does)",
        python.display()
    );
    let dir = data_dir("ticket-python");
    let server = TicketServer::start(1, 1, &dir, &[]);
    let out = Command::new(&python)
        .arg(workspace_root().join("tests/python/ticket_clients.py"))
        .arg(server.port.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python clients failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.trim(),
        r#"{"redis_py": {"single": 1, "transaction": [2, 3, 4], "role": "master"}, "glide": {"tickets": [5, 6, 7]}}"#
    );
    let _ = std::fs::remove_dir_all(dir);
}

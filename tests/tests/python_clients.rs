//! Other ecosystems' clients against a ticket server: redis-py (its default pipeline is
//! MULTI/EXEC) and valkey-glide (it reads `INFO REPLICATION` at connect), from the venv that
//! `make test` builds (scripts/venv.sh, pinned in tests/python/requirements.txt).

use idgen_tests::ticket::TicketServer;
use idgen_tests::{data_dir, run_python};

#[test]
fn redis_py_and_valkey_glide_get_tickets() {
    let dir = data_dir("ticket-python");
    let server = TicketServer::start(1, 1, &dir, &[]);
    let stdout = run_python("ticket_clients.py", &[&server.port.to_string()], "");
    assert_eq!(
        stdout.trim(),
        r#"{"redis_py": {"single": 1, "transaction": [2, 3, 4], "role": "master"}, "glide": {"tickets": [5, 6, 7]}}"#
    );
}

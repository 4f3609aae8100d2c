//! `TICKET.NEXT ... SEALED` on a real ticket server: tickets sealed under `--seal-key-file`
//! unseal, through the module's IDGEN.UNSEAL under the same key, to the tickets issued; without
//! a key nothing is taken; a file that holds no key stops the server, naming the file.

use idgen_tests::ticket::{serve_once, TicketServer};
use idgen_tests::{cmd, data_dir, error_of, Server};

const KEY: &str = "2b7e151628aed2a6abf7158809cf4f3cef4359d8d580aa4f7f036d6f04fc6a94";

fn info_field(
    con: &mut dyn idgen_tests::redis::ConnectionLike,
    section: &str,
    field: &str,
) -> String {
    let info: String = cmd(&["INFO", section]).query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("{field} missing from {info}"))
        .trim()
        .to_string()
}

#[test]
fn sealed_tickets_unseal_under_the_same_key_in_the_module() {
    let dir = data_dir("ticket-sealed");
    let key_file = dir.join("seal.key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let key = key_file.display().to_string();
    let tickets = TicketServer::start(1, 2, &dir.join("odd"), &["--seal-key-file", &key]);
    let module = Server::start(&["seal-key-file", &key]);
    let (mut t, mut m) = (tickets.connection(), module.connection());
    let unseal = |m: &mut dyn idgen_tests::redis::ConnectionLike, v: i64| -> i64 {
        cmd(&["IDGEN.UNSEAL", &v.to_string()]).query(m).unwrap()
    };

    let plain: i64 = cmd(&["TICKET.NEXT"]).query(&mut t).unwrap();
    let sealed: i64 = cmd(&["TICKET.NEXT", "SEALED"]).query(&mut t).unwrap();
    assert_eq!(unseal(&mut m, sealed), plain + 2);
    let three: Vec<i64> = cmd(&["TICKET.NEXT", "default", "COUNT", "3", "SEALED"])
        .query(&mut t)
        .unwrap();
    let back: Vec<i64> = three.iter().map(|&v| unseal(&mut m, v)).collect();
    assert_eq!(back, vec![plain + 4, plain + 6, plain + 8]);
    for words in [
        &["TICKET.NEXT", "SEALED", "SQIDS"][..],
        &["TICKET.NEXT", "SQIDS", "SEALED"],
    ] {
        let sqid: String = cmd(words).query(&mut t).unwrap();
        let inner: Vec<i64> = cmd(&["IDGEN.DECODE", &sqid]).query(&mut m).unwrap();
        assert!(unseal(&mut m, inner[0]) > plain + 8, "{words:?}");
    }
    // A sequence named like the flag is named before it.
    let _: i64 = cmd(&["TICKET.NEXT", "sealed", "SEALED"])
        .query(&mut t)
        .unwrap();
    let named: i64 = cmd(&["TICKET.CURRENT", "sealed"]).query(&mut t).unwrap();
    assert_eq!(named, 1);
    assert_eq!(
        info_field(&mut t, "tickets", "seal_key_id"),
        info_field(&mut m, "idgen", "idgen_seal_key_id"),
        "one key, one check value"
    );
    let err = error_of(
        &mut t,
        &cmd(&["TICKET.NEXT", "default", "COUNT", "1001", "SEALED"]),
    );
    assert!(err.contains("1000 with SEALED"), "{err}");
}

#[test]
fn without_a_key_sealed_is_refused_and_takes_nothing() {
    let dir = data_dir("ticket-unsealed");
    let server = TicketServer::start(1, 1, &dir, &[]);
    let mut con = server.connection();
    let first: i64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    let err = error_of(&mut con, &cmd(&["TICKET.NEXT", "SEALED"]));
    assert!(err.contains("no sealing key"), "{err}");
    let next: i64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(next, first + 1, "the refused call took a ticket");
}

#[test]
fn a_key_file_that_holds_no_key_stops_the_server() {
    let dir = data_dir("ticket-bad-key");
    let key_file = dir.join("bad.key");
    std::fs::write(&key_file, "abcd\n").unwrap();
    let key = key_file.display().to_string();
    let (ok, err) = serve_once(
        "1",
        "1",
        &dir.join("data"),
        &["--init", "--seal-key-file", &key],
    );
    assert!(!ok, "the server started with a 2-byte key");
    assert!(
        err.contains("bad.key") && err.contains("64 hex digits"),
        "{err}"
    );
    assert!(!err.contains("abcd"), "the key's text is not shown: {err}");
}

//! Every `idgen.*` setting, given hostile values every way a value can arrive (CONFIG SET,
//! load arguments, redis.conf lines), is refused with an error and the server stays up.

use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, error_text, Options, Server};

/// Every setting, and a valid value for it (for the ones CONFIG SET may change).
const SETTINGS: &[&str] = &[
    "worker-id",
    "datacenter-id",
    "epoch",
    "layout",
    "state-file",
    "dateseq-witness-file",
    "workerid-witness-file",
    "max-drift-ms",
    "sequence-random-start",
    "dateseq-timezone",
    "dateseq-ttl",
    "dateseq-digits",
    "dateseq-failover-gap",
    "sqids-alphabet",
    "sqids-min-length",
    "accept-id-overlap",
];

/// Values no setting accepts.
fn hostile() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("a NUL byte", b"UTC\0x".to_vec()),
        ("a NUL byte alone", b"\0".to_vec()),
        ("1 MB", vec![b'7'; 1 << 20]),
        ("invalid UTF-8", b"\xff\xfe+08:00".to_vec()),
        // Not -1: idgen.epoch -1 means the layout's own epoch.
        ("negative", b"-2".to_vec()),
        ("overflow", b"99999999999999999999999".to_vec()),
        ("empty", Vec::new()),
    ]
}

#[test]
fn config_set_refuses_hostile_values_and_the_server_carries_on() {
    let server = Server::start(&[]);
    let mut con = server.connection();
    for name in SETTINGS {
        let key = format!("idgen.{name}");
        let before: Vec<Vec<u8>> = cmd(&["CONFIG", "GET", &key]).query(&mut con).unwrap();
        for (what, value) in hostile() {
            let reply = redis::cmd("CONFIG")
                .arg("SET")
                .arg(&key)
                .arg(&value)
                .query::<Value>(&mut con);
            match reply {
                Err(e) => {
                    let text = error_text(&e);
                    assert!(
                        text.starts_with("ERR CONFIG SET failed"),
                        "{key} {what}: {text}"
                    );
                    assert!(
                        text.len() < 1000,
                        "{key} {what}: the error echoes the value"
                    );
                }
                Ok(v) => panic!("{key} accepted {what}: {v:?}"),
            }
            let after: Vec<Vec<u8>> = cmd(&["CONFIG", "GET", &key]).query(&mut con).unwrap();
            assert_eq!(after, before, "{key} changed after refusing {what}");
        }
    }
    let pong: String = cmd(&["PING"]).query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let _: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    let _: i64 = cmd(&["DATESEQ.NEXT", "p"]).query(&mut con).unwrap();
}

/// `value` as a double-quoted redis.conf token (Redis unescapes \xHH).
fn quoted(value: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in value {
        if b.is_ascii_alphanumeric() || b"+-:/._".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

#[test]
fn hostile_values_at_load_refuse_the_module_with_a_reason_never_a_crash() {
    for name in SETTINGS {
        for (what, value) in hostile() {
            // "-1", "" (off) and a long number are file names a state file may have.
            let file_name = ["negative", "overflow", "empty"].contains(&what);
            if name.ends_with("-file") && file_name {
                continue;
            }
            // As a load argument on the loadmodule line, and as an idgen.* line of redis.conf.
            let as_arg = Options {
                module_args: vec![name.to_string(), quoted(&value)],
                config_lines: vec!["# load argument".into()],
                ..Options::default()
            };
            let as_line = Options {
                config_lines: vec![format!("idgen.{name} {}", quoted(&value))],
                ..Options::default()
            };
            for (how, options) in [("load argument", as_arg), ("redis.conf", as_line)] {
                let log = match Server::try_start(options) {
                    Ok(_) => panic!("idgen.{name} = {what} as a {how}: the module loaded"),
                    Err(log) => log,
                };
                assert!(
                    !log.contains("panicked") && !log.contains("crashed"),
                    "idgen.{name} = {what} as a {how} crashed the server:\n{log}"
                );
                assert!(
                    log.contains("module not loaded") || log.contains(&format!("idgen.{name}")),
                    "idgen.{name} = {what} as a {how}: no reason in the log:\n{log}"
                );
            }
        }
    }
}

#[test]
fn module_unload_is_refused_and_the_module_keeps_working() {
    let server =
        Server::start_with(Options::module(&[]).server(&["--enable-module-command", "yes"]));
    let mut con = server.connection();
    let first: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    let err = cmd(&["MODULE", "UNLOAD", "idgen"])
        .query::<Value>(&mut con)
        .map(|v| format!("{v:?}"))
        .unwrap_or_else(|e| error_text(&e));
    assert!(err.starts_with("ERR"), "MODULE UNLOAD: {err}");
    assert!(
        server.log().contains("MODULE UNLOAD refused"),
        "{}",
        server.log()
    );
    let next: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    assert!(next > first);
}

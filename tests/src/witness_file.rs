//! What every witness file of the module must refuse: a foreign line, bytes that are not text,
//! a directory or a dangling link in its place, and a second server on it; and what it must
//! not: a last line cut short by a crash.

use std::path::Path;

use crate::{data_dir, Options, Server};

/// Puts something in the file's place.
type Make<'a> = dyn Fn(&Path) + 'a;

/// Checks the refusals of the witness file `file` (the default name of setting `idgen.<setting>`),
/// given one line the module writes (`line`) and the start of another (`cut`).
pub fn refuses_foreign_or_shared(name: &str, setting: &str, file: &str, line: &str, cut: &str) {
    let dir = data_dir(name);
    let path = dir.join(file);
    let in_dir = || Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    };
    let foreign = format!("{line}\nhello\n");
    let cases: [(&str, &Make<'_>); 4] = [
        ("a foreign line", &|p| std::fs::write(p, &foreign).unwrap()),
        ("not text", &|p| {
            std::fs::write(p, [0xff, 0xfe, b'\n']).unwrap()
        }),
        ("a directory", &|p| std::fs::create_dir(p).unwrap()),
        ("a dangling link", &|p| {
            std::os::unix::fs::symlink(p.with_extension("nowhere"), p).unwrap()
        }),
    ];
    for (what, make) in cases {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir_all(&path);
        make(&path);
        let log = Server::try_start(in_dir())
            .err()
            .unwrap_or_else(|| panic!("{file}, {what}: loaded"));
        assert!(
            log.contains(file),
            "{what}: the refusal names the file:\n{log}"
        );
    }
    // A last line cut short by a crash is not foreign: it was never synced whole.
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, format!("{line}\n{cut}")).unwrap();
    let server = Server::start_with(in_dir());
    // A second server on the same file: every other state file of its own.
    let files = [
        "state-file",
        "dateseq-witness-file",
        "workerid-witness-file",
    ];
    let config_lines = files
        .iter()
        .map(|f| match *f == setting {
            true => format!("idgen.{f} {}", path.display()),
            false => format!("idgen.{f} \"\""),
        })
        .collect();
    let other = Options {
        config_lines,
        ..Options::default()
    };
    let log = Server::try_start(other)
        .err()
        .unwrap_or_else(|| panic!("a second server on one {file}"));
    assert!(log.contains("locked by another running server"), "{log}");
    drop(server);
}

//! The one durable write every state file uses (`idgen_durable`), on a real file system
//! that fills up or turns read-only: the write fails with the error and the file keeps what it
//! held; once the disk is back, writes go through. (A crash between its steps is tested where
//! it is written, by stopping it after each step.) Then the module's own state file on a disk
//! that fills up: SNOWFLAKE.NEXT refuses once its reservation runs out, and resumes.

use std::time::Duration;

use idgen_durable as durable;
use idgen_tests::tmpfs::Tmpfs;
use idgen_tests::{cmd, wait_for, Options, Server};

#[test]
fn a_full_disk_fails_the_write_and_keeps_the_old_file() {
    if idgen_tests::needs::root_missing("a_full_disk_fails_the_write_and_keeps_the_old_file") {
        return;
    }
    let disk = Tmpfs::mount("durable-full", "1m");
    let file = disk.join("a.state");
    durable::replace(&file, b"old\n").unwrap();
    let filler = disk.fill();
    let big = vec![b'x'; 16 * 1024];
    let err = durable::replace(&file, &big).unwrap_err();
    assert!(err.to_string().contains("No space left"), "{err}");
    assert_eq!(durable::read(&file).unwrap().as_deref(), Some("old\n"));
    std::fs::remove_file(filler).unwrap();
    // The filler's pages are freed once no process holds it: a child another test forks at
    // that moment holds its descriptor until it execs.
    let mut written = Err(std::io::Error::other("not tried"));
    assert!(
        wait_for(Duration::from_secs(5), || {
            written = durable::replace(&file, &big);
            written.is_ok()
        }),
        "space came back, yet the write still fails: {written:?}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), big);
}

#[test]
fn a_read_only_disk_fails_the_write_and_keeps_the_old_file() {
    if idgen_tests::needs::root_missing("a_read_only_disk_fails_the_write_and_keeps_the_old_file") {
        return;
    }
    let disk = Tmpfs::mount("durable-ro", "64k");
    let file = disk.join("a.state");
    durable::replace(&file, b"old\n").unwrap();
    disk.set_writable(false);
    let err = durable::replace(&file, b"new\n").unwrap_err();
    assert!(err.to_string().contains("Read-only"), "{err}");
    assert_eq!(durable::read(&file).unwrap().as_deref(), Some("old\n"));
    disk.set_writable(true);
    durable::replace(&file, b"new\n").unwrap();
    assert_eq!(durable::read(&file).unwrap().as_deref(), Some("new\n"));
}

#[test]
fn the_snowflake_reservation_on_a_full_disk_refuses_then_resumes() {
    if idgen_tests::needs::root_missing(
        "the_snowflake_reservation_on_a_full_disk_refuses_then_resumes",
    ) {
        return;
    }
    let disk = Tmpfs::mount("durable-module", "1m");
    let server = Server::start_with(Options {
        dir: Some(disk.to_path_buf()),
        ..Options::default()
    });
    let mut con = server.connection();
    let before: i64 = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap();
    // (A read-only remount is refused while redis-server holds files open for writing.)
    let filler = disk.fill();
    // The reservation (500 ms ahead) runs out, and nothing extends it.
    let refused = wait_for(Duration::from_secs(5), || {
        cmd(&["SNOWFLAKE.NEXT"]).query::<i64>(&mut con).is_err()
    });
    assert!(
        refused,
        "IDs went on past a reservation that could not be written"
    );
    let error = server.info_field("state_file_error");
    assert!(error.contains("No space left"), "{error}");
    let reserved: i64 = server.info_field("reserved_until_ms").parse().unwrap();
    std::fs::remove_file(filler).unwrap();
    let mut after = 0;
    assert!(wait_for(Duration::from_secs(5), || {
        after = cmd(&["SNOWFLAKE.NEXT"]).query(&mut con).unwrap_or(0);
        after > 0
    }));
    assert!(after > before);
    assert_eq!(server.info_field("state_file_error"), "");
    let text = std::fs::read_to_string(disk.join("idgen-snowflake.state")).unwrap();
    let on_disk: i64 = text.split_whitespace().next().unwrap().parse().unwrap();
    assert!(on_disk > reserved, "{on_disk} <= {reserved}");
}

//! No acknowledgement before durability, for every file the module writes (the Snowflake state
//! file, the DATESEQ and lease witness files) and every way a write fails (it stops halfway
//! and leaves a cut line, EIO, or the fsync fails): while the fault lasts nothing is
//! acknowledged that the file does not hold; the server is killed (kill -9, no persistence of the
//! data), the fault cleared, and it starts again with the file readable and nothing told
//! before handed out again. The faults come from an LD_PRELOAD shim (`tests/writefault/`).

use std::time::{Duration, Instant};

use idgen_tests::lease::{assert_granted_above, coordinator_past_its_first_fence};
use idgen_tests::redis;
use idgen_tests::writefault::{Fault, WriteFaults};
use idgen_tests::{cmd, error_text, when_caught_up, Options, Server};

/// A file the module writes, and what it takes to exercise it.
#[derive(Clone, Copy, Debug)]
enum Durable {
    StateFile,
    DateseqWitness,
    LeaseWitness,
}

impl Durable {
    /// The end of its path (the state file is written as a temporary file, then renamed).
    fn suffix(self) -> &'static str {
        match self {
            Durable::StateFile => "idgen-snowflake.state.tmp",
            Durable::DateseqWitness => "idgen-dateseq.witness",
            Durable::LeaseWitness => "idgen-workerid.witness",
        }
    }

    /// What a refusal because of it says.
    fn refusal(self) -> &'static str {
        match self {
            Durable::StateFile => "IDs are durably reserved only up to the last write",
            Durable::DateseqWitness => "cannot write the DATESEQ witness file",
            Durable::LeaseWitness => "cannot write the lease witness file",
        }
    }
}

/// What was acknowledged, and so must not come again.
#[derive(Default)]
struct Told {
    values: Vec<u64>,
    ids: Vec<i64>,
    /// (namespace, expires_at_ms) of grants of worker ID 0 in pools of one.
    grants: Vec<(String, i64)>,
}

/// One call of what exercises `file`, noted in `told` when acknowledged; the error otherwise.
fn call(
    con: &mut dyn redis::ConnectionLike,
    file: Durable,
    n: usize,
    told: &mut Told,
) -> Result<(), String> {
    match file {
        Durable::StateFile => cmd(&["SNOWFLAKE.NEXT", "COUNT", "100"])
            .query::<Vec<i64>>(con)
            .map(|ids| told.ids.extend(ids)),
        Durable::DateseqWitness => cmd(&["DATESEQ.NEXT", "invoice", "COUNT", "50"])
            .query::<Vec<u64>>(con)
            .map(|range| told.values.extend(range[0]..=range[1])),
        Durable::LeaseWitness => {
            let ns = format!("fleet-{n}");
            cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "20000", "MAX", "1"])
                .query::<Vec<i64>>(con)
                .map(|g| told.grants.push((ns, g[2])))
        }
    }
    .map_err(|e| error_text(&e))
}

fn faulted(file: Durable, fault: Fault) {
    let case = format!("{file:?} / {fault:?}");
    let dir = idgen_tests::data_dir("write-faults");
    let faults = WriteFaults::new(&dir);
    let options = faults.options(
        file.suffix(),
        Options {
            dir: Some(dir.to_path_buf()),
            ..Options::default()
        },
    );
    let mut server = coordinator_past_its_first_fence(options.clone());
    let mut con = server.connection();
    let mut told = Told::default();
    for n in 0..3 {
        call(&mut con, file, n, &mut told).unwrap_or_else(|e| panic!("{case}: {e}"));
    }
    // Twice: the second time after a write that followed the first failure, so that a cut
    // line left by it would meet the next line (the file must stay readable).
    let mut n = 3;
    for round in 0..2 {
        if round == 1 {
            faults.set(Fault::None);
            let deadline = Instant::now() + Duration::from_secs(10);
            while let Err(e) = call(&mut con, file, n, &mut told) {
                assert!(
                    Instant::now() < deadline,
                    "{case}: still refused once cleared: {e}"
                );
                n += 1;
            }
        }
        faults.set(fault);
        // Refused once what is on disk is spent (at once for a lease; within the state file's
        // reservation, 500 ms, or a DATESEQ block), naming the file; then every call after is
        // refused too. (Snowflake IDs may first be refused for a moment while the reservation
        // is late, on a loaded machine: not yet the file's refusal.)
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            n += 1;
            let outcome = call(&mut con, file, n, &mut told);
            if outcome.as_ref().is_err_and(|e| e.contains(file.refusal())) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{case}: not refused naming the file in 10 s: {outcome:?}"
            );
        }
        for _ in 0..3 {
            n += 1;
            let again = call(&mut con, file, n, &mut told);
            assert!(
                again.is_err(),
                "{case}: acknowledged while the file cannot be written"
            );
        }
    }
    drop(con);
    server.kill9();
    faults.set(Fault::None);
    let restarted = Server::try_start(Options {
        port: Some(server.port),
        ..options
    })
    .unwrap_or_else(|log| panic!("{case}: the server did not start again:\n{log}"));
    let mut con = restarted.connection();
    match file {
        Durable::StateFile => {
            let highest = told.ids.iter().max().unwrap();
            let ids: Vec<i64> = when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT", "COUNT", "100"]));
            assert!(
                ids.iter().all(|id| id > highest),
                "{case}: an ID came again"
            );
        }
        Durable::DateseqWitness => {
            let highest = told.values.iter().max().unwrap();
            let v: u64 = cmd(&["DATESEQ.NEXT", "invoice"]).query(&mut con).unwrap();
            assert!(
                v > *highest,
                "{case}: {v} came again (up to {highest} were told)"
            );
        }
        Durable::LeaseWitness => assert_granted_above(&mut con, &told.grants, &case),
    }
}

fn every_fault(file: Durable) {
    for fault in [Fault::Halfway, Fault::Eio, Fault::FsyncEio] {
        faulted(file, fault);
    }
}

#[test]
fn the_state_file() {
    every_fault(Durable::StateFile);
}

#[test]
fn the_dateseq_witness_file() {
    every_fault(Durable::DateseqWitness);
}

#[test]
fn the_lease_witness_file() {
    every_fault(Durable::LeaseWitness);
}

//! What each in-process generator does when its sequence is spent and when the wall clock steps
//! back, measured rather than copied from its documentation. Run by the comparison under the
//! clock shim (`LD_PRELOAD`, tests/clockshift), which moves this process's CLOCK_REALTIME by the
//! offset in `--offset-file`; this program rewrites that offset itself.
//!
//! Without `--offset-file` it measures only what happens when the sequence is spent (the shim's
//! system calls would slow the loop below the cap). Prints one line per generator:
//! `name|when the sequence is spent|when the clock steps back` (`-` for a phase not run). Each
//! generator runs in a child process of its own: the workspace aborts on panic, and a generator
//! that panics is reported as such while the others still run.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use idgen_benches::compare::drive::Factory;
use idgen_benches::compare::{generators, peer_crates};

/// Step the clock back under each generator.
#[derive(Parser)]
struct Args {
    /// The shim's offset file (8 bytes, little-endian ms); without it the clock is not stepped.
    #[arg(long)]
    offset_file: Option<PathBuf>,
    /// How far the clock steps back, ms.
    #[arg(long, default_value_t = 1_100)]
    step_ms: i64,
    /// Run only the generator at this index (in a child process).
    #[arg(long)]
    only: Option<usize>,
}

/// What one phase of calls saw.
#[derive(Default)]
struct Phase {
    ids: u64,
    refusals: u64,
    repeats: u64,
    /// IDs smaller than the largest made before the phase.
    backwards: u64,
    longest: Duration,
    largest: u128,
    /// The longest time without a new ID (between batches of 16 calls that made one).
    longest_gap: Duration,
}

/// Calls `make` for `length` (monotonic time), in batches of 16 timed together so that the loop
/// itself stays faster than the generators' caps; then counts against the IDs in `seen`.
fn run(
    make: &mut dyn FnMut() -> Option<u128>,
    length: Duration,
    seen: &mut HashSet<u128>,
    before: u128,
) -> Phase {
    let mut phase = Phase::default();
    let mut ids = Vec::with_capacity(1 << 20);
    let start = Instant::now();
    let end = start + length;
    let (mut now, mut last_id_at) = (start, start);
    while now < end {
        let before = ids.len();
        for _ in 0..16 {
            match make() {
                Some(id) => ids.push(id),
                None => phase.refusals += 1,
            }
        }
        let then = Instant::now();
        phase.longest = phase.longest.max(then - now);
        if ids.len() > before {
            phase.longest_gap = phase.longest_gap.max(then - last_id_at);
            last_id_at = then;
        }
        now = then;
    }
    phase.longest_gap = phase.longest_gap.max(now - last_id_at);
    phase.ids = ids.len() as u64;
    for id in ids {
        if !seen.insert(id) {
            phase.repeats += 1;
        }
        if id < before {
            phase.backwards += 1;
        }
        phase.largest = phase.largest.max(id);
    }
    phase
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let offset = match &args.offset_file {
        Some(path) => Some(OpenOptions::new().write(true).open(path)?),
        None => None,
    };
    let set_offset = |ms: i64| match &offset {
        Some(file) => file.write_all_at(&ms.to_le_bytes(), 0),
        None => Ok(()),
    };
    // (name, generator, IDs per second its layout allows, if capped)
    let subjects: Vec<(&str, Factory, Option<f64>)> = vec![
        (
            "idgen-core (held to the clock)",
            generators::snowflake(0),
            Some(4_096_000.0),
        ),
        (
            "idgen-core (default drift 2 s)",
            generators::snowflake(idgen_core::DEFAULT_MAX_DRIFT_MS),
            Some(4_096_000.0),
        ),
        (
            "rs-snowflake real_time_generate",
            peer_crates::rs_snowflake(),
            Some(4_096_000.0),
        ),
        ("snowflaked", peer_crates::snowflaked(), Some(4_096_000.0)),
        (
            "ferroid BasicSnowflakeGenerator",
            peer_crates::ferroid(),
            Some(4_096_000.0),
        ),
        ("sonyflake", peer_crates::sonyflake(), Some(25_600.0)),
        ("UUID v7", generators::stateless(generators::uuid_v7), None),
        ("ULID", generators::stateless(generators::ulid), None),
        (
            "ObjectId",
            generators::stateless(peer_crates::object_id),
            None,
        ),
        ("Simpleflake", generators::simpleflake(), None),
    ];
    let Some(only) = args.only else {
        for (i, (name, _, _)) in subjects.iter().enumerate() {
            println!("{}", in_child(&args, i, name)?);
        }
        return Ok(());
    };
    // A generator's panic is a finding, reported by the parent, not a message on stderr.
    std::panic::set_hook(Box::new(|_| {}));
    if let Some((name, factory, cap)) = subjects.into_iter().nth(only) {
        set_offset(0)?;
        let mut make = factory();
        let mut seen = HashSet::new();
        let tight = run(&mut *make, Duration::from_millis(100), &mut seen, 0);
        let spent = if offset.is_some() {
            "-".to_string()
        } else {
            spent(&tight, cap)
        };
        print!("{name}|{spent}|");
        std::io::Write::flush(&mut std::io::stdout())?;
        let stepped = if offset.is_some() {
            set_offset(-args.step_ms)?;
            let length = Duration::from_millis(2 * args.step_ms as u64);
            let back = run(&mut *make, length, &mut seen, tight.largest);
            set_offset(0)?;
            stepped_back(&back, args.step_ms)
        } else {
            "-".to_string()
        };
        println!("{stepped}");
    }
    Ok(())
}

/// Runs generator `index` in a child process with the same options; its line, completed with
/// PANICS when the child died before finishing it.
fn in_child(args: &Args, index: usize, name: &str) -> anyhow::Result<String> {
    let mut child = std::process::Command::new(std::env::current_exe()?);
    child.args([
        "--only",
        &index.to_string(),
        "--step-ms",
        &args.step_ms.to_string(),
    ]);
    if let Some(file) = &args.offset_file {
        child.arg("--offset-file").arg(file);
    }
    let out = child.stderr(std::process::Stdio::null()).output()?;
    let line = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
    let complete = line.matches('|').count() == 2 && !line.ends_with('|');
    Ok(if out.status.success() && complete {
        line
    } else if line.ends_with('|') {
        format!("{line}PANICS") // died while the clock was behind
    } else {
        format!("{name}|PANICS|-")
    })
}

/// What a tight loop at the real time shows of the generator when its sequence is spent.
fn spent(tight: &Phase, cap: Option<f64>) -> String {
    let rate = tight.ids as f64 / 0.1;
    if tight.repeats > 0 {
        format!("REPEATS ({} of {})", tight.repeats, tight.ids)
    } else if tight.refusals > 0 {
        format!("refuses ({} errors in 100 ms)", tight.refusals)
    } else if cap.is_some_and(|cap| rate > cap * 1.05) {
        format!("borrows ahead of the clock ({:.0} IDs/s)", rate)
    } else if cap.is_some() && tight.longest >= Duration::from_micros(500) {
        format!(
            "waits for the next tick (longest call {:.1} ms)",
            ms(tight.longest)
        )
    } else if cap.is_some() {
        format!("not spent at {:.0} IDs/s", rate)
    } else {
        "no sequence (random bits)".into()
    }
}

/// What the generator did while the clock was `step_ms` behind.
fn stepped_back(back: &Phase, step_ms: i64) -> String {
    let caught_up = Duration::from_millis(step_ms as u64 / 2);
    if back.repeats > 0 {
        format!("REPEATS ({} of {})", back.repeats, back.ids)
    } else if back.backwards > 0 {
        format!("goes backwards ({} IDs below earlier ones)", back.backwards)
    } else if back.refusals > 0 && back.longest_gap >= caught_up {
        format!(
            "refuses until the clock catches up ({} errors, {:.0} ms without an ID)",
            back.refusals,
            ms(back.longest_gap)
        )
    } else if back.refusals > 0 {
        format!(
            "carries on; refuses only while a tick is spent ({} errors, longest {:.1} ms without an ID)",
            back.refusals,
            ms(back.longest_gap)
        )
    } else if back.longest >= caught_up {
        format!(
            "waits until the clock catches up (longest call {:.0} ms)",
            ms(back.longest)
        )
    } else {
        format!(
            "continues ahead of the clock (longest call {:.1} ms)",
            ms(back.longest)
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

//! Building the module at load: the configuration (load arguments, then redis.conf), the
//! generator and its restart reservation, and what Redis tells of its role, cluster mode and
//! eviction policy. Anything wrong is a [`LoadError`], and the module does not load.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::snowflake::lineage::Lineage;
use idgen_core::{Clock, Generator, SystemClock, TWITTER_EPOCH_MS};
use redis_module::{Context, ContextFlags, RedisString};

use crate::config::{Config, Effect};
use crate::dateseq::witness_file::WitnessFile;
use crate::error::LoadError;
use crate::eviction::{self, Eviction};
use crate::ffi;
use crate::identity::watch::Watch;
use crate::leases::witness_file as lease_witness;
use crate::snowflake::reservation;
use crate::snowflake::resumed::Resumed;
use crate::state::{Parts, State};

/// The module's state, from the load arguments and Redis's configuration; `changed` hears of
/// every setting Redis sets from now on (redis.conf's lines first).
///
/// # Errors
/// The first thing refused: the module must not load then.
pub fn start(ctx: &Context, args: &[RedisString], changed: fn(Effect)) -> Result<State, LoadError> {
    // Kept for the life of the process: Redis holds references to it for CONFIG GET and SET.
    let config: &'static Config = Box::leak(Box::new(Config::with_defaults()));
    let load_args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    config
        .apply_load_args(&load_args)
        .map_err(LoadError::Setting)?;
    crate::registration::register(ctx, config, changed);
    if !ffi::module::load_configs(ctx) {
        return Err(LoadError::ConfigFile);
    }
    let mut ids = Generator::new(config.settings().map_err(LoadError::Setting)?, SystemClock)?;
    let flags = ctx.get_flags();
    let mut eviction = Eviction::default();
    let accepted = config.flag(|c| &c.accept_eviction);
    if let Some(warning) = eviction.follow(eviction::read_policy(ctx), accepted) {
        ffi::log("warning", &warning);
    }
    // Every earlier run on this clock ended before now, so issued nothing above now plus its
    // drift limit (the limit not lowered across the restart).
    let load_ms = SystemClock.now_ms();
    let drift_floor_ms = load_ms.saturating_add(config.int(|c| &c.max_drift_ms));
    let (reservation, found) = match resolve(config, |c| &c.state_file)? {
        Some(path) => {
            let lineage = Lineage {
                layout: ids.settings().layout.clone(),
                epoch_ms: ids.settings().epoch_ms,
            };
            let check = |floor, recorded: Option<&str>| {
                let warning =
                    check_lineage(config, floor, recorded, &lineage, SystemClock.now_ms())?;
                if let Some(warning) = warning {
                    ffi::log("warning", &format!("idgen: {warning}"));
                }
                Ok(())
            };
            let (reservation, found) =
                reservation::start(path, lineage.record(), drift_floor_ms, check)
                    .map_err(LoadError::StateFile)?;
            (Some(reservation), Some(found))
        }
        None => {
            ffi::log(
                "warning",
                "idgen: idgen.state-file is empty: IDs may repeat after a restart whose clock \
                 is behind the last run's",
            );
            (None, None)
        }
    };
    let resumed = Resumed::decide(found.as_ref(), drift_floor_ms);
    ids.resume_after(resumed.above_ms);
    let line = resumed.describe(&config.text(|c| &c.state_file));
    ffi::log(if resumed.warns() { "warning" } else { "notice" }, &line);
    let witness_file = match resolve(config, |c| &c.dateseq_witness_file)? {
        Some(path) => {
            Some(WitnessFile::open(path, SystemClock.now_ms()).map_err(LoadError::StateFile)?)
        }
        None => {
            ffi::log(
                "warning",
                "idgen: idgen.dateseq-witness-file is empty: a DATESEQ counter restored from an \
                 older RDB or AOF, or not yet synced at a crash, repeats values",
            );
            None
        }
    };
    let lease_witness = match resolve(config, |c| &c.workerid_witness_file)? {
        Some(path) => {
            let now_ms = SystemClock.now_ms();
            let fence_ms = now_ms.saturating_add(config.int(|c| &c.workerid_horizon_ms));
            Some(lease_witness::open(path, (now_ms, fence_ms)).map_err(LoadError::StateFile)?)
        }
        None => {
            ffi::log(
                "warning",
                "idgen: idgen.workerid-witness-file is empty: every start fences lease grants \
                 for idgen.workerid-horizon-ms",
            );
            None
        }
    };
    let parts = Parts {
        witness_file,
        lease_witness,
        ids,
        resumed,
        reservation,
        replica: flags.contains(ContextFlags::SLAVE),
        cluster: flags
            .contains(ContextFlags::CLUSTER)
            .then(|| Watch::new(SystemClock.now_ms())),
        eviction,
    };
    State::new(config, parts)
}

/// A line for the log saying what the module runs with.
pub fn summary(s: &State) -> String {
    let settings = s.snowflakes().generator().settings();
    format!(
        "idgen: layout {} epoch {} datacenter-id {} worker-id {}, dateseq zone {}, IDs reserved below {}",
        settings.layout,
        settings.epoch_ms,
        settings.datacenter_id,
        settings.worker_id,
        s.dateseq().calendar().name(),
        s.snowflakes()
            .reservation()
            .map_or(i64::MAX, |r| r.durable_until()),
    )
}

/// A state file's setting (`idgen.state-file`, the witness files) as an absolute
/// path, unless switched off. Resolved against the working directory (Redis's `dir`) now, and
/// stored back, so that a later `CONFIG SET dir` cannot move it: a restart with the original
/// `dir` must find what the running server wrote.
///
/// # Errors
/// When the working directory cannot be read.
fn resolve(
    config: &Config,
    cell: fn(&Config) -> &Mutex<String>,
) -> Result<Option<PathBuf>, LoadError> {
    let path = config.text(cell);
    if path.is_empty() {
        return Ok(None);
    }
    let cwd = std::env::current_dir()
        .map_err(|e| LoadError::StateFile(format!("cannot read the working directory: {e}")))?;
    let absolute = cwd.join(path);
    config.set_text(cell, absolute.to_string_lossy().into_owned());
    Ok(Some(absolute))
}

/// Checks that IDs issued under `now` carry on above those the state file says were issued
/// before `floor_ms` under `recorded` (its lineage words; `None` in a file written before
/// lineages were recorded, whose IDs used the configured epoch if one was set, else Twitter's,
/// the only default then). `idgen.accept-id-overlap yes` turns a refusal into a warning.
///
/// # Errors
/// Why the module must not start: the overlap, and what to do about it.
fn check_lineage(
    config: &Config,
    floor_ms: i64,
    recorded: Option<&str>,
    now: &Lineage,
    now_ms: i64,
) -> Result<Option<String>, String> {
    let issued = match recorded {
        Some(words) => Lineage::parse_record(words).map_err(|e| {
            format!(
                "idgen.state-file {} holds a lineage this module cannot read: {e}",
                config.text(|c| &c.state_file)
            )
        })?,
        None => Lineage {
            layout: now.layout.clone(),
            epoch_ms: if config.epoch_set.load(std::sync::atomic::Ordering::Relaxed) {
                now.epoch_ms
            } else {
                TWITTER_EPOCH_MS
            },
        },
    };
    let Err(overlap) = now.carries_on_from(&issued, floor_ms, now_ms) else {
        return Ok(None);
    };
    let why = format!(
        "idgen.state-file says this server issued IDs under layout {} epoch {} until {floor_ms} \
         ms; under layout {} epoch {} {overlap}",
        issued.layout, issued.epoch_ms, now.layout, now.epoch_ms
    );
    if config.flag(|c| &c.accept_overlap) {
        return Ok(Some(format!(
            "{why}; starting anyway, as idgen.accept-id-overlap is yes"
        )));
    }
    Err(format!(
        "{why}. Keep the old ones (idgen.epoch {} and idgen.layout {}), or, if IDs issued before \
         can never meet the new ones, start once with idgen.accept-id-overlap yes",
        issued.epoch_ms, issued.layout
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use idgen_core::Layout;

    fn twitter() -> Lineage {
        Lineage {
            layout: Layout::parse("twitter").unwrap(),
            epoch_ms: TWITTER_EPOCH_MS,
        }
    }

    #[test]
    fn a_state_file_of_the_same_lineage_carries_on() {
        let config = Config::with_defaults();
        let now = twitter();
        let record = now.record();
        assert_eq!(
            check_lineage(&config, 1_000, Some(&record), &now, 2_000),
            Ok(None)
        );
    }

    #[test]
    fn a_later_epoch_that_could_reach_old_ids_is_refused_unless_accepted() {
        let config = Config::with_defaults();
        let old = twitter();
        let now = Lineage {
            epoch_ms: TWITTER_EPOCH_MS + 86_400_000,
            ..old.clone()
        };
        let at = TWITTER_EPOCH_MS + 10 * 86_400_000;
        let err = check_lineage(&config, at, Some(&old.record()), &now, at).unwrap_err();
        assert!(err.contains("idgen.accept-id-overlap yes"), "{err}");
        assert!(
            err.contains(&format!("idgen.epoch {}", TWITTER_EPOCH_MS)),
            "{err}"
        );
        config
            .accept_overlap
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let warning = check_lineage(&config, at, Some(&old.record()), &now, at).unwrap();
        assert!(warning.unwrap().contains("starting anyway"));
    }

    #[test]
    fn an_unreadable_lineage_is_refused() {
        let config = Config::with_defaults();
        for words in [
            "layout=twitter epoch=-3",
            "layout=time:80 epoch=1",
            "epoch=1",
        ] {
            let err = check_lineage(&config, 1_000, Some(words), &twitter(), 2_000).unwrap_err();
            assert!(err.contains("cannot read"), "{words}: {err}");
        }
    }
}

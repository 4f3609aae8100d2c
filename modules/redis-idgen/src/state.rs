//! The module as a value: made once at load, then handed to every command, event and INFO.
//!
//! Everything a command changes lives in one [`State`] behind one lock, so a call takes one
//! lock, and never waits for it: Redis runs commands, events, timers and configuration
//! callbacks one at a time on its main thread. The lock makes the state `Sync` without
//! `unsafe`, and turns the two ways it could be reached twice into a refusal instead of a torn
//! read or a deadlock: INFO in a crash report, from whichever thread crashed (while the main
//! thread may still be inside a command), and a command re-entered through another module (an
//! `RM_Call` from a keyspace-event handler that DATESEQ.NEXT's write fired). try-lock's
//! `TryLock`, as the lock is only ever tried: taking it is one atomic swap and giving it back one
//! release store (a plain store on x86). parking_lot's mutex, which must look for waiters when
//! it unlocks, costs two locked compare-exchanges a call (docs/benchmarks.md).

use std::sync::Arc;

use crate::cluster::claims::Claim;
use crate::dateseq::ledger::Ledger;
use crate::dateseq::stats::Stats;
use crate::dateseq::{Fence, Witnesses};
use crate::leases::memory::Memory;
use crate::leases::witness_line::Witnessed;
use idgen_core::dateseq::DayCache;
use idgen_core::{Clock, Form128, Generator, Generator128, Sealer, SqidCodec, SystemClock};
use rand::rngs::StdRng;
use rand::SeedableRng;
use try_lock::{Locked, TryLock};

use crate::callers::Callers;
use crate::cluster::Watch;
use crate::config::{Config, Effect};
use crate::dateseq::witness_file::WitnessFile;
use crate::deferred::{Deferred, Event};
use crate::error::{CommandError, LoadError};
use crate::eviction::Eviction;
use crate::ffi::key::KeyNameCache;
use crate::leases::witness_file::LeaseWitness;
use crate::snowflake::issuer::Snowflakes;
use crate::snowflake::reservation::Reservation;
use crate::snowflake::resumed::Resumed;

/// The module: its configuration and its state.
pub struct Module {
    /// Every `idgen.*` value; lives as long as the process.
    pub config: &'static Config,
    state: TryLock<State>,
    /// Events that came while the state was taken.
    deferred: Deferred,
}

impl Module {
    /// The module around `state`.
    pub fn new(state: State) -> Module {
        Module {
            config: state.config,
            state: TryLock::new(state),
            deferred: Deferred::default(),
        }
    }

    /// The state, for one command, event or INFO, with the events that came while it was taken
    /// applied first; `None`, without waiting, while another call holds it (see the module's
    /// documentation above).
    #[inline]
    pub fn enter(&self) -> Option<Locked<'_, State>> {
        let mut state = self.state.try_lock()?;
        if self.deferred.waiting() {
            self.catch_up(&mut state);
        }
        Some(state)
    }

    /// Applies the events that came while the state was taken.
    #[cold]
    fn catch_up(&self, state: &mut State) {
        for event in self.deferred.take() {
            if let Some(warning) = state.follow(event) {
                crate::ffi::log("warning", &warning);
            }
        }
    }

    /// Has the state follow `event`: now, or when it is next entered if a command holds it
    /// (the event came from inside that command). Returns a line for the log, if any.
    pub fn raise(&self, event: Event) -> Option<String> {
        match self.enter() {
            Some(mut state) => state.follow(event),
            None => {
                let line = format!(
                    "idgen: {event} came from inside one of idgen's commands; applied on the next call"
                );
                self.deferred.push(event);
                Some(line)
            }
        }
    }
}

/// Everything the commands share and change.
pub struct State {
    /// Every `idgen.*` value.
    pub config: &'static Config,
    /// SNOWFLAKE.NEXT's generator and reservation (reached through [`State::snowflakes`]).
    snowflakes: Snowflakes,
    /// Which callers are connections that never run a script (asked once each).
    pub callers: Callers,
    /// Whether this server replicates another one, followed through role-change events.
    pub replica: bool,
    /// The other nodes' worker-id claims, on a cluster node.
    pub cluster: Option<Watch>,
    /// Whether `maxmemory-policy` can evict the module's keys.
    pub eviction: Eviction,
    /// Today's date in the configured zone.
    pub days: DayCache,
    /// The counter key name last used.
    pub key_names: KeyNameCache,
    /// Which counters still skip the failover gap in this term (since the last promotion).
    pub fence: Fence,
    /// How far each counter went in its period: a counter found below it continues above it.
    pub witnesses: Witnesses,
    /// Where each counter is reserved on disk (`idgen.dateseq-witness-file`); `None` when off.
    pub witness_file: Option<WitnessFile>,
    /// DATESEQ.NEXT's counts.
    pub dateseq: Stats,
    /// Sqids of the configured alphabet and minimum length (shared with replies that wait).
    pub sqids: Arc<SqidCodec>,
    /// The sealing key's permutation (`idgen.seal-key-file`), if one is set.
    pub sealer: Option<Sealer>,
    /// UUID7.NEXT's generator.
    pub uuid7: Generator128<SystemClock, StdRng>,
    /// ULID.NEXT's generator.
    pub ulid: Generator128<SystemClock, StdRng>,
    /// Reused for UUID7.NEXT and ULID.NEXT COUNT.
    pub id128_buf: Vec<u128>,
    /// What this node remembers of its lease namespaces (reached through [`State::leases`]).
    leases: Memory,
    /// Why SNOWFLAKE.NEXT is refused: this node's primary claimed its worker-id pair
    /// (`identity.rs`).
    pub primary_conflict: Option<String>,
    /// Whether state moved here by MIGRATE, RESTORE or COPY is witnessed as it arrives
    /// (`arrival.rs`; not where hearing it would disturb other clients).
    pub arrivals_witnessed: bool,
}

/// What the state is made from at load, besides the configuration.
pub struct Parts {
    pub ids: Generator<SystemClock>,
    pub resumed: Resumed,
    pub reservation: Option<Reservation>,
    pub replica: bool,
    pub cluster: Option<Watch>,
    pub eviction: Eviction,
    /// The DATESEQ witness file and the reservations it held at load.
    pub witness_file: Option<(WitnessFile, Ledger)>,
    /// The lease witness file and what it held at load.
    pub lease_witness: Option<(LeaseWitness, Witnessed)>,
}

impl State {
    /// The state at load; the 128-bit generators share the Snowflake generator's drift limit.
    ///
    /// # Errors
    /// A configured value the parts below refuse, or no random seed for the 128-bit generators.
    pub fn new(config: &'static Config, parts: Parts) -> Result<State, LoadError> {
        let drift = parts.ids.settings().max_drift_ms;
        Ok(State {
            config,
            uuid7: generator(Form128::Uuid7, drift)?,
            ulid: generator(Form128::Ulid, drift)?,
            id128_buf: Vec::new(),
            days: DayCache::new(config.calendar().map_err(LoadError::Setting)?),
            sqids: Arc::new(config.sqid_codec().map_err(LoadError::Setting)?),
            sealer: config.sealer().map_err(LoadError::Setting)?,
            snowflakes: Snowflakes::new(parts.ids, parts.reservation, parts.resumed),
            callers: Callers::default(),
            replica: parts.replica,
            cluster: parts.cluster,
            eviction: parts.eviction,
            key_names: KeyNameCache::default(),
            fence: Fence::new(),
            witnesses: witnesses(config, &parts.witness_file),
            witness_file: parts.witness_file.map(|(file, _)| file),
            dateseq: Stats::default(),
            leases: Memory::new(parts.lease_witness, lease_fence_from_now(config)),
            primary_conflict: None,
            arrivals_witnessed: false,
        })
    }

    /// Takes in the outcomes of the witness file's writes since the last call.
    #[cold]
    pub fn take_confirmations(&mut self) {
        let Some(file) = &self.witness_file else {
            return;
        };
        for (name, reserved, written) in file.confirmations() {
            self.witnesses.confirm(name, reserved, written);
        }
    }

    /// At a clean shutdown: rewrites the DATESEQ witness file with what each counter actually
    /// handed out, so the next start skips nothing.
    pub fn close_witness_file(&mut self) {
        let witnesses = &self.witnesses;
        let Some(file) = &mut self.witness_file else {
            return;
        };
        let handed_out = |key: &[u8]| witnesses.mark(witnesses.name(key)).map(|m| m.highest);
        match file.close_exact(handed_out) {
            Ok(()) => crate::ffi::log(
                "notice",
                &format!(
                    "idgen: DATESEQ witness file {} holds what each counter handed out",
                    file.path().display()
                ),
            ),
            Err(why) => crate::ffi::log(
                "warning",
                &format!("idgen: {why}: the next start skips what was reserved and not used"),
            ),
        }
    }

    /// Makes a live setting's new value take effect.
    ///
    /// # Errors
    /// When the configuration cannot be used (its checks should have refused it before).
    pub fn apply(&mut self, effect: Effect) -> Result<(), String> {
        let config = self.config;
        match effect {
            Effect::None => {}
            Effect::MaxDrift => {
                let ms = config.int(|c| &c.max_drift_ms) as u64;
                self.snowflakes.set_max_drift_ms(ms);
                self.uuid7.set_max_drift_ms(ms);
                self.ulid.set_max_drift_ms(ms);
            }
            Effect::RandomStart => {
                let on = config.flag(|c| &c.random_start);
                self.snowflakes.set_random_start(on);
            }
            Effect::TimeZone => self.days = DayCache::new(config.calendar()?),
            Effect::Sqids => self.sqids = Arc::new(config.sqid_codec()?),
            Effect::WitnessMax => self.witnesses.set_max(witness_max(config)),
            Effect::SealKey => {
                // The file was checked by CONFIG SET and is read again here: should it have
                // changed in between, refuse sealing rather than go on with the old key.
                self.sealer = None;
                self.sealer = config.sealer()?;
            }
        }
        Ok(())
    }

    /// Follows `event`; a line for the log, if any.
    pub fn follow(&mut self, event: Event) -> Option<String> {
        match event {
            Event::Role { replica } => {
                self.set_role(replica);
                None
            }
            Event::Setting(effect) => self.apply(effect).err().map(|why| format!("idgen: {why}")),
            Event::Policy { policy, accepted } => self.eviction.follow(policy, accepted),
        }
    }

    /// This server became a replica, or a primary: a promotion starts a new DATESEQ term (see
    /// `crate::dateseq::fence`) and fences lease grants for a horizon.
    pub fn set_role(&mut self, replica: bool) {
        self.replica = replica;
        if replica {
            // Another primary may write every lease record meanwhile.
            self.leases.role_changed(None);
            return;
        }
        self.fence.new_term();
        let fence_ms = lease_fence_from_now(self.config);
        if let Some(file) = self.leases.role_changed(Some(fence_ms)) {
            // The promotion's lease fence on disk before any command runs as primary: a
            // restart within the horizon must keep it, though nothing was granted yet. The one
            // wait on a disk in the main thread, once per promotion.
            if let Err(why) = file.wait_here() {
                crate::ffi::log(
                    "warning",
                    &format!(
                        "idgen: {why}: a restart within idgen.workerid-horizon-ms of this \
                         promotion may not keep its lease fence"
                    ),
                );
            }
        }
        self.witness_what_was_replicated();
    }

    /// SNOWFLAKE.NEXT's state, to read.
    pub fn snowflakes(&self) -> &Snowflakes {
        &self.snowflakes
    }

    /// SNOWFLAKE.NEXT's state beside the reply forms' codecs: what one call needs at once.
    #[inline(always)]
    pub fn snowflakes_and_forms(&mut self) -> (&mut Snowflakes, &Arc<SqidCodec>, Option<&Sealer>) {
        (&mut self.snowflakes, &self.sqids, self.sealer.as_ref())
    }

    /// What this node remembers of its lease namespaces.
    pub fn leases(&self) -> &Memory {
        &self.leases
    }

    /// What this node remembers of its lease namespaces, to change through its methods.
    pub fn leases_mut(&mut self) -> &mut Memory {
        &mut self.leases
    }

    /// Waits for the DATESEQ witness file to hold what this node witnessed as a replica
    /// (`arrival.rs`), before it issues as a primary: a crash right after the promotion must
    /// find it. Once per promotion, like the lease fence's write.
    fn witness_what_was_replicated(&self) {
        let Some(file) = &self.witness_file else {
            return;
        };
        if let Err(why) = file.wait_here() {
            crate::ffi::log(
                "warning",
                &format!(
                    "idgen: {why}: a crash soon after this promotion may hand out again values \
                     its primary handed out"
                ),
            );
        }
    }

    /// The sealer, or the error that says how to set one.
    ///
    /// # Errors
    /// [`CommandError::NoSealKey`] when `idgen.seal-key-file` is empty.
    pub fn sealer(&self) -> Result<&Sealer, CommandError> {
        self.sealer.as_ref().ok_or(CommandError::NoSealKey)
    }

    /// The datacenter and worker this node puts into its IDs, as it announces them.
    pub fn claim(&self) -> Claim {
        let settings = self.snowflakes.generator().settings();
        Claim {
            datacenter: settings.datacenter_id,
            worker: settings.worker_id,
            primary: !self.replica,
        }
    }
}

/// The fence lease grants start above when this server loads or is promoted: now plus the
/// horizon. The namespaces it holds may lack renewals that reached only an older copy (a
/// restore, an AOF without `appendfsync always`, a replica behind its primary), and a holder
/// that made them may issue IDs up to a horizon past its last one.
fn lease_fence_from_now(config: &Config) -> i64 {
    SystemClock
        .now_ms()
        .saturating_add(config.int(|c| &c.workerid_horizon_ms))
}

/// The DATESEQ witnesses at load: every counter of a live period the witness file reserved
/// carries on above its reservation, and after a crash every counter of a period under way
/// above what new counters could take unnamed.
fn witnesses(config: &Config, file: &Option<(WitnessFile, Ledger)>) -> Witnesses {
    let mut witnesses = Witnesses::new(witness_max(config), file.is_some());
    if let Some((_, ledger)) = file {
        witnesses.after_crashes(&ledger.crashed);
    }
    for entry in file.iter().flat_map(|(_, ledger)| &ledger.entries) {
        let name = witnesses.name(&entry.name);
        witnesses.seed(name, entry.ends_ms, entry.reserved);
    }
    witnesses
}

/// `idgen.dateseq-witness-max` as a count.
fn witness_max(config: &Config) -> usize {
    config.int(|c| &c.dateseq_witness_max) as usize
}

/// A generator of `form` over the system clock and a ChaCha generator seeded from the OS.
fn generator(
    form: Form128,
    max_drift_ms: u64,
) -> Result<Generator128<SystemClock, StdRng>, LoadError> {
    let rng = StdRng::try_from_os_rng().map_err(|e| LoadError::Seed(e.to_string()))?;
    Ok(Generator128::new(form, SystemClock, rng, max_drift_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(config: &'static Config) -> State {
        let ids = Generator::new(config.settings().unwrap(), SystemClock).unwrap();
        let parts = Parts {
            ids,
            resumed: Resumed::decide(None, 0),
            reservation: None,
            replica: false,
            cluster: None,
            witness_file: None,
            lease_witness: None,
            eviction: Eviction::default(),
        };
        State::new(config, parts).unwrap()
    }

    #[test]
    fn a_role_change_raised_inside_a_command_is_applied_before_the_next_call_reads_the_role() {
        let config: &'static Config = Box::leak(Box::new(Config::with_defaults()));
        let module = Module::new(state(config));
        let command = module.enter().expect("the state is free");
        // REPLICAOF through another module's RM_Call, from inside the command.
        let said = module.raise(Event::Role { replica: true });
        assert!(
            said.is_some_and(|l| l.contains("next call")),
            "the log says so"
        );
        assert!(!command.replica, "the running command started as a primary");
        drop(command);
        assert!(
            module.enter().unwrap().replica,
            "the next call refuses as a replica"
        );
        assert_eq!(module.raise(Event::Role { replica: false }), None);
        assert!(
            !module.enter().unwrap().replica,
            "applied once: a promotion is not undone"
        );
    }

    #[test]
    fn a_key_file_that_went_bad_before_it_was_applied_stops_sealing() {
        let dir = tempfile::tempdir().unwrap();
        let (good, bad) = (dir.path().join("good.key"), dir.path().join("bad.key"));
        std::fs::write(&good, "5e".repeat(32)).unwrap();
        std::fs::write(&bad, "not a key").unwrap();
        let config: &'static Config = Box::leak(Box::new(Config::with_defaults()));
        config.set_text(|c| &c.seal_key_file, good.display().to_string());
        let mut s = state(config);
        assert!(s.sealer().is_ok());
        // As if the file changed between CONFIG SET's check and the apply.
        config.set_text(|c| &c.seal_key_file, bad.display().to_string());
        assert!(s.apply(Effect::SealKey).is_err());
        assert!(
            matches!(s.sealer(), Err(CommandError::NoSealKey)),
            "still sealing with a key the configuration no longer names"
        );
    }

    #[test]
    fn a_promotion_starts_a_new_term_and_fences_lease_grants() {
        let config: &'static Config = Box::leak(Box::new(Config::with_defaults()));
        let mut s = state(config);
        let (term, fence) = (s.fence.term(), s.leases.fence_ms());
        s.set_role(true);
        assert!(
            s.replica && s.fence.term() == term,
            "becoming a replica changes no term"
        );
        s.set_role(false);
        assert!(!s.replica && s.fence.term() == term + 1);
        assert!(s.leases.fence_ms() >= fence);
    }
}

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

use idgen_core::{Clock, Generator, Sealer, SqidCodec, SystemClock};
use try_lock::{Locked, TryLock};

use crate::callers::Callers;
use crate::cmd::lease_reply::Unacknowledged;
use crate::config::{Config, Effect};
use crate::dateseq::ledger::Ledger;
use crate::dateseq::witness_file::WitnessFile;
use crate::dateseq::Counters;
use crate::deferred::{Deferred, Event};
use crate::error::{CommandError, LoadError};
use crate::eviction::{Eviction, Keys};
use crate::ffi::ctx::Ctx;
use crate::ffi::key::{CounterKeys, KeyNames};
use crate::files::journal::Durable;
use crate::identity::claims::Claim;
use crate::identity::watch::Watch;
use crate::identity::Identity;
use crate::leases::memory::Memory;
use crate::leases::witness_file::LeaseWitness;
use crate::leases::witness_line::Witnessed;
use crate::replica_acks::ReplicaAcks;
use crate::replication_guard::Guard;
use crate::snowflake::issuer::Snowflakes;
use crate::snowflake::reservation::Reservation;
use crate::snowflake::resumed::Resumed;
use crate::time128::Time128;

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

/// Everything the commands share and change, each part owned by its feature and reached
/// through the methods below.
pub struct State {
    /// Every `idgen.*` value.
    config: &'static Config,
    /// SNOWFLAKE.NEXT's generator and reservation.
    snowflakes: Snowflakes,
    /// DATESEQ's counters: their witnesses, the witness file, which skip the failover gap.
    dateseq: Counters,
    /// The Redis string of the counter key named last (`crate::ffi::key::CounterKeys`).
    counter_names: KeyNames,
    /// What this node remembers of its lease namespaces.
    leases: Memory,
    /// Lease grants and renewals waiting for replicas to hold them, before their reply.
    acks: ReplicaAcks<Unacknowledged>,
    /// UUID7.NEXT's and ULID.NEXT's generators.
    time128: Time128,
    /// Sqids of the configured alphabet and minimum length (shared with replies that wait).
    sqids: Arc<SqidCodec>,
    /// The sealing key's permutation (`idgen.seal-key-file`), if one is set.
    sealer: Option<Sealer>,
    /// Which callers are connections that never run a script (asked once each).
    callers: Callers,
    /// Whether this server replicates another one, followed through role-change events.
    replica: bool,
    /// Who else claims this node's worker-id pair: its primary, or other Cluster nodes.
    identity: Identity,
    /// Whether `maxmemory-policy` can evict the module's keys.
    eviction: Eviction,
    /// Whether this primary's replicas bound what a split brain hands out.
    guard: Guard,
    /// Whether state moved here by MIGRATE, RESTORE or COPY is witnessed as it arrives
    /// (`arrival.rs`; not where hearing it would disturb other clients).
    arrivals_witnessed: bool,
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
        let calendar = config.calendar().map_err(LoadError::Setting)?;
        Ok(State {
            config,
            time128: Time128::new(drift)?,
            sqids: Arc::new(config.sqid_codec().map_err(LoadError::Setting)?),
            sealer: config.sealer().map_err(LoadError::Setting)?,
            snowflakes: Snowflakes::new(parts.ids, parts.reservation, parts.resumed),
            dateseq: Counters::new(calendar, witness_max(config), parts.witness_file),
            counter_names: KeyNames::default(),
            leases: Memory::new(
                parts.lease_witness,
                lease_fence_from_now(config),
                config.int(|c| &c.workerid_horizon_ms),
            ),
            acks: ReplicaAcks::default(),
            callers: Callers::default(),
            replica: parts.replica,
            identity: Identity::new(parts.cluster),
            eviction: parts.eviction,
            guard: Guard::default(),
            arrivals_witnessed: false,
        })
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
                self.time128.set_max_drift_ms(ms);
            }
            Effect::RandomStart => {
                let on = config.flag(|c| &c.random_start);
                self.snowflakes.set_random_start(on);
            }
            Effect::TimeZone => self.dateseq.set_calendar(config.calendar()?),
            Effect::Sqids => self.sqids = Arc::new(config.sqid_codec()?),
            Effect::WitnessMax => self.dateseq.set_witness_max(witness_max(config)),
            Effect::AckReplicas => self.acks.forget(),
            Effect::Horizon => {
                let horizon = config.int(|c| &c.workerid_horizon_ms);
                self.leases.horizon_changed(horizon, SystemClock.now_ms());
            }
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
            Event::Replication {
                min_replicas,
                replicas,
            } => self.guard.follow(min_replicas, replicas),
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
        // Only replicas seen from now on count: the old primary's are not this node's.
        self.acks.forget();
        let now = SystemClock.now_ms();
        let horizon = self.config.int(|c| &c.workerid_horizon_ms);
        let fence_ms = now.saturating_add(self.leases.fence_horizon_ms(horizon, now));
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
        self.dateseq.promoted();
    }

    /// Every `idgen.*` value.
    pub fn config(&self) -> &'static Config {
        self.config
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

    /// Refuses SNOWFLAKE.NEXT where this node must not issue: on a replica, or while its
    /// worker-id pair is claimed by its primary or another cluster node.
    ///
    /// # Errors
    /// [`CommandError::Replica`] or [`CommandError::WorkerClaim`].
    #[inline(always)]
    pub fn may_issue_snowflakes(&self) -> Result<(), CommandError> {
        if self.replica {
            return Err(CommandError::Replica);
        }
        match self.identity.refusal(&SystemClock) {
            Some(why) => Err(CommandError::WorkerClaim(why)),
            None => Ok(()),
        }
    }

    /// DATESEQ's counters, to read.
    pub fn dateseq(&self) -> &Counters {
        &self.dateseq
    }

    /// DATESEQ's counters, to move on through their methods.
    #[inline(always)]
    pub fn dateseq_mut(&mut self) -> &mut Counters {
        &mut self.dateseq
    }

    /// DATESEQ's counters, and their keys on this server for `ctx`'s command.
    #[inline(always)]
    pub fn dateseq_keys<'s>(&'s mut self, ctx: &'s Ctx) -> (&'s mut Counters, CounterKeys<'s>) {
        let cluster = self.identity.in_cluster();
        let keys = CounterKeys::new(ctx, &mut self.counter_names, cluster);
        (&mut self.dateseq, keys)
    }

    /// What this node remembers of its lease namespaces.
    pub fn leases(&self) -> &Memory {
        &self.leases
    }

    /// What this node remembers of its lease namespaces, to change through its methods.
    pub fn leases_mut(&mut self) -> &mut Memory {
        &mut self.leases
    }

    /// Whether this primary's replicas bound what a split brain hands out.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Lease writes waiting for replicas.
    pub fn acks(&self) -> &ReplicaAcks<Unacknowledged> {
        &self.acks
    }

    /// Lease writes waiting for replicas, to add to or settle.
    pub fn acks_mut(&mut self) -> &mut ReplicaAcks<Unacknowledged> {
        &mut self.acks
    }

    /// UUID7.NEXT's and ULID.NEXT's generators, to read.
    pub fn time128(&self) -> &Time128 {
        &self.time128
    }

    /// The 128-bit generators beside the sealer: what one call needs at once.
    pub fn time128_and_sealer(&mut self) -> (&mut Time128, Option<&Sealer>) {
        (&mut self.time128, self.sealer.as_ref())
    }

    /// Sqids of the configured alphabet and minimum length.
    pub fn sqids(&self) -> &Arc<SqidCodec> {
        &self.sqids
    }

    /// Whether the command `ctx` runs was called from a script (asked of Redis once per
    /// connection that never runs one).
    #[inline]
    pub fn called_by_script(&mut self, ctx: &Ctx) -> bool {
        ctx.called_by_script(&mut self.callers)
    }

    /// Whether this server replicates another one.
    pub fn replica(&self) -> bool {
        self.replica
    }

    /// Who else claims this node's worker-id pair.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Who else claims this node's worker-id pair, to tell what was heard through its methods.
    pub fn identity_mut(&mut self) -> &mut Identity {
        &mut self.identity
    }

    /// The `maxmemory-policy` in force, to read.
    pub fn eviction(&self) -> &Eviction {
        &self.eviction
    }

    /// Refuses a command whose `keys` the policy in force can evict, unless `accepted`.
    ///
    /// # Errors
    /// An `ERR` naming the policy, what it can do, and the two fixes.
    #[inline]
    pub fn check_eviction(&mut self, keys: Keys, accepted: bool) -> Result<(), CommandError> {
        self.eviction.check(keys, accepted)
    }

    /// Whether state moved here is witnessed as it arrives.
    pub fn arrivals_witnessed(&self) -> bool {
        self.arrivals_witnessed
    }

    /// Whether the keyspace events that bring state here are heard, decided at load.
    pub fn set_arrivals_witnessed(&mut self, heard: bool) {
        self.arrivals_witnessed = heard;
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

/// `idgen.dateseq-witness-max` as a count.
fn witness_max(config: &Config) -> usize {
    config.int(|c| &c.dateseq_witness_max) as usize
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
        let (term, fence) = (s.dateseq.term(), s.leases.fence_ms());
        s.set_role(true);
        assert!(
            s.replica && s.dateseq.term() == term,
            "becoming a replica changes no term"
        );
        s.set_role(false);
        assert!(!s.replica && s.dateseq.term() == term + 1);
        assert!(s.leases.fence_ms() >= fence);
    }
}

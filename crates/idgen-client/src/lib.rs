//! Snowflake IDs made in process under a worker-ID lease from the idgen Redis module.
//!
//! ```no_run
//! use idgen_client::{LeaseOptions, LeasedGenerator};
//!
//! let ids = LeasedGenerator::start(LeaseOptions::new("redis://127.0.0.1:6379/", "orders")).unwrap();
//! let id = ids.next_id().unwrap();
//! ```
//!
//! [`LeasedGenerator::start`] acquires a worker ID (`WORKERID.ACQUIRE`), records with the
//! coordinator how far ahead it may issue (`WORKERID.RENEW ... UNTIL`), and hands IDs out from
//! the core generator on the caller's thread; a background thread renews at a fraction of the
//! TTL. The issuing path never waits for the network: it takes an uncontended lock, reads the
//! monotonic clock, and refuses ([`IssueError::NoLease`]) unless
//!
//! - the lease is certainly alive by this process's own monotonic clock: it counts from a time
//!   taken *before* the renewal was sent, minus a margin, so a process paused past its TTL
//!   (SIGSTOP, a GC pause) issues nothing when it wakes and re-acquires first; and
//! - the ID's time is at or below what the coordinator has recorded (`UNTIL`): a later holder of
//!   the same worker ID starts above it, so a recycled ID cannot repeat its predecessor's IDs.
//!
//! With [`LeaseOptions::replicas`] > 0 every grant and renewal must also reach that many
//! replicas (`WAIT`) before it is used, so a coordinator failover cannot forget it.

pub mod coordinator;
pub mod metrics;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use idgen_core::layout::Field;
use idgen_core::{Clock, GenerateError, Generator, Settings, SystemClock};

pub use coordinator::{Backend, Coordinator, Grant, LeaseCallError};

/// How often the renewal thread looks for a stop while it waits.
const STOP_POLL: Duration = Duration::from_millis(50);
/// The pause after a first failed lease call; it doubles with each further one.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest pause between failed lease calls.
const BACKOFF_MOST: Duration = Duration::from_secs(1);

/// How to lease and generate.
#[derive(Clone, Debug)]
pub struct LeaseOptions {
    /// The coordinator: a Redis primary with the idgen module or its Functions library.
    pub url: String,
    /// Module or library; found on connect by default.
    pub backend: Backend,
    /// The namespace (a hash key) holding the fleet's leases.
    pub namespace: String,
    /// Lease length. Default 10 s.
    pub ttl: Duration,
    /// Renew this often. Default a third of the TTL. Also each lease call's timeout.
    pub renew_every: Duration,
    /// Stop issuing this long before the lease could end by the local clock. Default a tenth of
    /// the TTL.
    pub margin: Duration,
    /// Replicas that must acknowledge each grant and renewal (WAIT). Default 0.
    pub replicas: usize,
    /// How long [`LeasedGenerator::start`] keeps trying for a first lease while the coordinator
    /// is unreachable, slow or short of replicas (it backs off between tries). Default: one TTL.
    pub start_within: Duration,
    /// Layout, epoch and drift limit; the worker and datacenter IDs come from the lease (the
    /// leased ID's low bits are the worker, the rest the datacenter).
    pub settings: Settings,
}

impl LeaseOptions {
    /// Defaults for `namespace` on the coordinator at `url`.
    pub fn new(url: &str, namespace: &str) -> Self {
        LeaseOptions {
            url: url.to_string(),
            backend: Backend::Auto,
            namespace: namespace.to_string(),
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_millis(3_333),
            margin: Duration::from_secs(1),
            replicas: 0,
            start_within: Duration::from_secs(10),
            settings: Settings::default(),
        }
    }

    /// Sets the TTL, renewing at a third of it, stopping a tenth of it early, and trying for a
    /// first lease for one TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self.start_within = ttl;
        self.renew_every = ttl / 3;
        self.margin = ttl / 10;
        self
    }

    /// How many worker IDs the layout has room for: the size of the lease pool.
    pub fn pool_size(&self) -> u32 {
        let layout = &self.settings.layout;
        1 << (layout.bits(Field::Datacenter) + layout.bits(Field::Worker)).min(16)
    }
}

/// Why no ID was issued.
#[derive(Debug, PartialEq, Eq)]
pub enum IssueError {
    /// No live lease right now (lost, expired, or not yet re-acquired): retry shortly.
    NoLease,
    /// The generator refused (clock behind, or at the recorded limit until the next renewal).
    Generate(GenerateError),
}

impl std::fmt::Display for IssueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IssueError::NoLease => write!(f, "no live worker-ID lease: retry shortly"),
            IssueError::Generate(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for IssueError {}

/// What the issuing path needs, under one lock.
struct Held {
    generator: Option<Generator<SystemClock>>,
    grant: Option<Grant>,
    /// The lease is certainly alive before this.
    valid_until: Instant,
    /// The UNTIL the coordinator has on record for the lease held (Unix ms).
    recorded_until_ms: Option<i64>,
    /// The tick start of the last ID issued under an earlier lease: a new lease's generator
    /// starts above it too, so the IDs of one `LeasedGenerator` only ever increase.
    issued_before_ms: i64,
}

impl Held {
    /// Drops the generator, remembering how far it issued.
    fn retire_generator(&mut self) {
        if let Some(generator) = self.generator.take() {
            let last = generator.last_tick_unix_ms();
            self.issued_before_ms = self.issued_before_ms.max(last);
        }
    }
}

/// The pause after `failures` consecutive failed lease calls: 10 ms doubling, at most 1 s.
fn backoff(failures: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1 << failures.min(7))
        .min(BACKOFF_MOST)
}

struct Shared {
    held: Mutex<Held>,
    stop: AtomicBool,
    options: LeaseOptions,
    /// RENEWs that succeeded.
    renewals: AtomicU64,
    /// Lease calls that failed: refused, unreachable or not replicated.
    failures: AtomicU64,
}

/// The lease as monitoring sees it ([`LeasedGenerator::stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseStats {
    /// The lease held now, if it is certainly alive.
    pub lease: Option<Grant>,
    /// The UNTIL the coordinator has on record for it, Unix ms.
    pub until_ms: Option<i64>,
    /// RENEWs that succeeded since start.
    pub renewals: u64,
    /// Lease calls that failed since start (refused, unreachable, not replicated).
    pub failures: u64,
}

/// A Snowflake generator under a worker-ID lease, renewed in the background.
pub struct LeasedGenerator {
    shared: Arc<Shared>,
    renewer: Mutex<Option<JoinHandle<()>>>,
}

impl LeasedGenerator {
    /// Acquires a lease, then renews it in the background. A coordinator that cannot be
    /// reached, answers late or lacks replicas is tried again, with backoff, for
    /// [`LeaseOptions::start_within`]; a refusal (e.g. every worker ID leased) is final.
    ///
    /// # Errors
    /// When the first lease cannot be had.
    pub fn start(options: LeaseOptions) -> Result<Self, LeaseCallError> {
        let shared = Arc::new(Shared {
            held: Mutex::new(Held {
                generator: None,
                grant: None,
                valid_until: Instant::now(),
                issued_before_ms: i64::MIN,
                recorded_until_ms: None,
            }),
            stop: AtomicBool::new(false),
            options,
            renewals: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        });
        let coordinator = shared.first_lease()?;
        let renewer = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("idgen-lease".into())
                .spawn(move || shared.renew_loop(Some(coordinator)))
                .map_err(|e| LeaseCallError::Unreachable(e.to_string()))?
        };
        Ok(LeasedGenerator {
            shared,
            renewer: Mutex::new(Some(renewer)),
        })
    }

    /// The next ID.
    ///
    /// # Errors
    /// [`IssueError::NoLease`] while no lease is certainly alive; the generator's refusals.
    pub fn next_id(&self) -> Result<u64, IssueError> {
        self.next_id_leased().map(|(id, _)| id)
    }

    /// The next ID and the lease it was made under.
    ///
    /// # Errors
    /// As [`LeasedGenerator::next_id`].
    pub fn next_id_leased(&self) -> Result<(u64, Grant), IssueError> {
        let mut held = self.shared.lock();
        if Instant::now() >= held.valid_until {
            return Err(IssueError::NoLease);
        }
        let grant = held.grant.ok_or(IssueError::NoLease)?;
        let generator = held.generator.as_mut().ok_or(IssueError::NoLease)?;
        generator
            .next_id()
            .map(|id| (id, grant))
            .map_err(IssueError::Generate)
    }

    /// `count` increasing IDs appended to `out` under one lease, all or none.
    ///
    /// # Errors
    /// As [`LeasedGenerator::next_id`]; `out` is left as it was.
    pub fn next_ids(&self, count: usize, out: &mut Vec<u64>) -> Result<(), IssueError> {
        let mut held = self.shared.lock();
        if Instant::now() >= held.valid_until || held.grant.is_none() {
            return Err(IssueError::NoLease);
        }
        let generator = held.generator.as_mut().ok_or(IssueError::NoLease)?;
        generator.next_ids(count, out).map_err(IssueError::Generate)
    }

    /// The worker ID and token held now, if any.
    pub fn lease(&self) -> Option<Grant> {
        let held = self.shared.lock();
        held.grant.filter(|_| Instant::now() < held.valid_until)
    }

    /// The lease, its recorded UNTIL and the renewal counters, for monitoring.
    pub fn stats(&self) -> LeaseStats {
        let held = self.shared.lock();
        let live = Instant::now() < held.valid_until;
        LeaseStats {
            lease: held.grant.filter(|_| live),
            until_ms: held
                .recorded_until_ms
                .filter(|_| live && held.grant.is_some()),
            renewals: self.shared.renewals.load(Ordering::Relaxed),
            failures: self.shared.failures.load(Ordering::Relaxed),
        }
    }

    /// How much longer the lease held now is certainly alive, if one is.
    pub fn lease_left(&self) -> Option<Duration> {
        let held = self.shared.lock();
        held.grant?;
        held.valid_until.checked_duration_since(Instant::now())
    }

    /// Stops renewing and releases the lease; later calls get [`IssueError::NoLease`].
    pub fn close(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let renewer = self
            .renewer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(renewer) = renewer {
            let _ = renewer.join();
        }
    }

    /// Stops renewing and releases the lease.
    pub fn shutdown(self) {
        self.close();
    }
}

impl Drop for LeasedGenerator {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connects and takes a lease, trying again through transient failures until
    /// `start_within` has passed.
    fn first_lease(&self) -> Result<Coordinator, LeaseCallError> {
        let give_up = Instant::now() + self.options.start_within;
        let mut failures = 0u32;
        loop {
            let result = self.connect().and_then(|mut coordinator| {
                self.take_lease(&mut coordinator).map(|()| coordinator)
            });
            let now = Instant::now();
            match result {
                Err(e @ LeaseCallError::Refused(_)) => return Err(e),
                Err(e) if now >= give_up => return Err(e),
                Err(e) => tracing::warn!(error = %e, "no first lease yet: trying again"),
                Ok(coordinator) => return Ok(coordinator),
            }
            // The last pause ends at the deadline, with one more try there: the whole of
            // `start_within` is used, not cut short by the next back-off step.
            std::thread::sleep(backoff(failures).min(give_up - now));
            failures = failures.saturating_add(1);
        }
    }

    fn connect(&self) -> Result<Coordinator, LeaseCallError> {
        let o = &self.options;
        Coordinator::connect(
            &o.url,
            &o.namespace,
            o.backend,
            o.replicas,
            // A reply is awaited until the next renewal would be due. Its lateness never makes
            // a lease look longer: validity counts from when the call was sent.
            o.renew_every.max(Duration::from_millis(50)),
        )
    }

    /// Acquires a worker ID, records how far it may issue, and installs a generator for it
    /// that starts above the previous holder's record.
    fn take_lease(&self, coordinator: &mut Coordinator) -> Result<(), LeaseCallError> {
        let o = &self.options;
        let grant = coordinator.acquire(o.ttl, o.pool_size())?;
        let (sent, until) = self.record(coordinator, &grant)?;
        let worker_bits = o.settings.layout.bits(Field::Worker);
        let settings = Settings {
            datacenter_id: u64::from(grant.worker_id) >> worker_bits,
            worker_id: u64::from(grant.worker_id) & ((1 << worker_bits) - 1),
            ..o.settings.clone()
        };
        let mut generator = Generator::new(settings, SystemClock)
            .map_err(|e| LeaseCallError::Refused(e.to_string()))?;
        let mut held = self.lock();
        held.retire_generator();
        generator.resume_after(grant.start_above_ms.max(held.issued_before_ms));
        generator.set_ceiling(until);
        tracing::info!(
            worker_id = grant.worker_id,
            token = grant.token,
            calls = coordinator.form(),
            "lease acquired"
        );
        held.generator = Some(generator);
        held.grant = Some(grant);
        held.recorded_until_ms = Some(until);
        held.valid_until = sent + o.ttl.saturating_sub(o.margin);
        Ok(())
    }

    /// RENEW with `UNTIL` = now + TTL: when it was sent, and the recorded limit.
    fn record(
        &self,
        coordinator: &mut Coordinator,
        grant: &Grant,
    ) -> Result<(Instant, i64), LeaseCallError> {
        let sent = Instant::now();
        let until = SystemClock.now_ms() + self.options.ttl.as_millis() as i64;
        coordinator.renew(grant, self.options.ttl, until)?;
        Ok((sent, until))
    }

    fn renew_loop(&self, mut coordinator: Option<Coordinator>) {
        let mut next = Instant::now() + self.options.renew_every;
        // Consecutive failures: the pause before the next try doubles with each, up to 1 s.
        let mut failures = 0u32;
        while !self.stop.load(Ordering::Relaxed) {
            let (grant, valid_until) = {
                let held = self.lock();
                (held.grant, held.valid_until)
            };
            let now = Instant::now();
            let lapsed = grant.is_none() || now >= valid_until;
            if !lapsed && now < next {
                // Woken early only to notice a stop.
                std::thread::sleep((next - now).min(STOP_POLL));
                continue;
            }
            let result = match coordinator.as_mut() {
                None => self.connect().map(|c| coordinator = Some(c)),
                Some(con) => match grant {
                    Some(grant) if !lapsed => self.renew(con, &grant),
                    _ => self.take_lease(con),
                },
            };
            match result {
                Ok(()) => {
                    failures = 0;
                    next = Instant::now() + self.options.renew_every;
                    continue;
                }
                Err(LeaseCallError::Refused(why)) => {
                    self.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%why, "lease refused: acquiring again");
                    let mut held = self.lock();
                    held.grant = None;
                    held.retire_generator();
                }
                Err(e) => {
                    self.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "lease call failed: reconnecting");
                    coordinator = None;
                }
            }
            failures = failures.saturating_add(1);
            std::thread::sleep(backoff(failures));
        }
        // Nothing is issued once the grant is gone; the generator knows the last time used.
        let (grant, used) = {
            let mut held = self.lock();
            let used = held.generator.as_ref().map(|g| g.last_tick_unix_ms());
            (held.grant.take(), used)
        };
        if let (Some(grant), Some(used), Some(con)) = (grant, used, coordinator.as_mut()) {
            let _ = con.release(&grant, used);
        }
    }

    fn renew(&self, coordinator: &mut Coordinator, grant: &Grant) -> Result<(), LeaseCallError> {
        let (sent, until) = self.record(coordinator, grant)?;
        self.renewals.fetch_add(1, Ordering::Relaxed);
        let mut held = self.lock();
        if held.grant.map(|g| g.token) == Some(grant.token) {
            held.valid_until = sent + self.options.ttl.saturating_sub(self.options.margin);
            held.recorded_until_ms = Some(until);
            if let Some(generator) = held.generator.as_mut() {
                generator.set_ceiling(until);
            }
        }
        Ok(())
    }
}

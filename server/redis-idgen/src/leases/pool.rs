//! Worker-ID leases: one fleet's pool of worker IDs, handed out for a time, renewed by their
//! holders, and recycled when released or expired, without letting a new holder repeat an old
//! holder's IDs.
//!
//! The pool is stored as a Redis hash (see [`Pool::fields`]): `max` (the pool's size), `token`
//! (the last fencing token granted), `version` (one more on every change), `void_below` and
//! `grant_above` (set when the namespace was found reset, below), `owner` (written by the
//! Functions library, ignored here), and, per worker ID ever leased, `"<token> <expires_ms> <until_ms>
//! <floor_ms>"`: the holder's token, when its lease ends (0 once released), the highest time
//! any holder of that ID said it may put into an ID, and the time the current holder started
//! above. A new holder starts above `until_ms`. A holder that releases may lower `until_ms` to
//! the time it really used last, never below `floor_ms`, so its ID is at once reusable; an
//! expired holder's record stands until the clock passes it.
//! All times are the coordinator's (the primary's) Unix ms.
//!
//! **When the hash vanishes or goes back** (a TTL someone set, eviction, `DEL`, `FLUSHALL`, a
//! restore from an older copy), the records that kept holders apart are gone. Three rules keep
//! IDs from repeating even then ([`Terms`]):
//! - tokens are seeded from the clock ([`token_floor`]), so a recreated hash never grants a
//!   token an earlier holder had;
//! - no holder may record an UNTIL more than the *horizon* past the coordinator's clock, so
//!   a grant made at least a horizon after the last renewal the lost records saw starts above
//!   every ID an old holder may still issue: grants start above the coordinator's fence (its
//!   load or promotion plus the horizon) and above a namespace's `grant_above`;
//! - a namespace whose version or token is below one the coordinator saw
//!   ([`Pool::reset_if_behind`]) voids every earlier lease: their RENEWs fail, so their holders
//!   stop issuing.

use std::collections::BTreeMap;
use std::fmt;

use idgen_core::lease::{token_floor, MAX_POOL, MIN_TTL_MS};

/// What every namespace of one coordinator is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terms {
    /// No TTL is longer, and no holder may record an UNTIL further past the coordinator's clock:
    /// the most an old holder's IDs can run ahead of its last successful RENEW.
    pub horizon_ms: i64,
    /// How far above a reset or an unknown namespace's moment its grants start: the horizon,
    /// or a longer one set lately, whose holders may still be ahead
    /// (`crate::leases::memory::Memory::fence_horizon_ms`).
    pub fence_horizon_ms: i64,
    /// Every grant starts above this: the coordinator's load or latest promotion plus the horizon,
    /// since the records it started with may lack renewals that an older copy never saw.
    pub fence_ms: i64,
}

/// One worker ID's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Fencing token of the current (or last) holder.
    pub token: u64,
    /// When the lease ends, Unix ms; 0 once released.
    pub expires_ms: i64,
    /// The highest time any holder recorded it may use in an ID.
    pub until_ms: i64,
    /// The time the current holder started above: `until_ms` never goes below it.
    pub floor_ms: i64,
}

impl Lease {
    /// Whether the lease still holds at `now_ms`.
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.expires_ms > now_ms
    }

    /// The hash field value: `"<token> <expires_ms> <until_ms> <floor_ms>"`.
    pub fn to_field(self) -> String {
        format!(
            "{} {} {} {}",
            self.token, self.expires_ms, self.until_ms, self.floor_ms
        )
    }

    /// Parses a hash field value: four non-negative integers, the floor at most the record.
    pub fn parse(text: &str) -> Option<Lease> {
        let mut parts = text.split(' ');
        let mut time = || i64::try_from(canonical(parts.next()?)?).ok();
        let lease = Lease {
            token: u64::try_from(time()?).ok()?,
            expires_ms: time()?,
            until_ms: time()?,
            floor_ms: time()?,
        };
        (parts.next().is_none() && lease.floor_ms <= lease.until_ms).then_some(lease)
    }
}

/// A number as idgen writes one into a namespace: decimal digits, no sign, no leading zero (the
/// Functions library reads the same fields the same way). `+5`, `007` or ` 5` are what a hand
/// wrote, not idgen: refused, not read as 5 or 7.
fn canonical(text: &str) -> Option<u64> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    (digits && (text == "0" || !text.starts_with('0')))
        .then(|| text.parse().ok())
        .flatten()
}

/// How far a coordinator has seen a namespace go: a copy below it in either is older.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// The highest version.
    pub version: u64,
    /// The highest token.
    pub token: u64,
}

impl Seen {
    /// The later of two.
    pub fn max(self, other: Seen) -> Seen {
        Seen {
            version: self.version.max(other.version),
            token: self.token.max(other.token),
        }
    }
}

/// A lease just granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The worker ID.
    pub worker_id: u32,
    /// Its lease.
    pub lease: Lease,
    /// The holder's IDs must carry times above this: the last holder's `until_ms`, or a fence.
    pub start_above_ms: i64,
}

/// Why a lease operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseError {
    /// Every worker ID of the pool is leased.
    Exhausted(u32),
    /// The stored pool is not one this module wrote.
    Corrupt(String),
    /// A MAX out of range, as given.
    BadMax(i64),
    /// A MAX that differs from the pool's size.
    OtherMax { given: u32, max: u32 },
    /// A TTL outside [`MIN_TTL_MS`] to the horizon.
    BadTtl { ttl_ms: i64, horizon_ms: i64 },
    /// A worker ID outside the pool.
    NoSuchWorker { worker_id: i64, max: u32 },
    /// An UNTIL further than the horizon past the coordinator's clock.
    UntilTooFar {
        until_ms: i64,
        now_ms: i64,
        horizon_ms: i64,
    },
    /// The caller's token is not the current holder's, or the lease has expired.
    NotHolder {
        worker_id: u32,
        token: u64,
        expired: bool,
    },
    /// The namespace holds no pool: it was deleted, expired, evicted or flushed (or never made).
    Vanished,
    /// The namespace was found reset after this lease was granted: the lease is void.
    Void { worker_id: u32 },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const AGAIN: &str = "stop issuing and ACQUIRE again";
        match self {
            LeaseError::Exhausted(n) => {
                write!(f, "all {n} worker IDs of this namespace are leased")
            }
            LeaseError::Corrupt(why) => write!(
                f,
                "the namespace holds data idgen did not write ({why}): refusing to use or \
                 overwrite it; DEL it only if no process holds a lease from it"
            ),
            LeaseError::BadMax(n) => write!(f, "MAX {n} must be between 1 and {MAX_POOL}"),
            LeaseError::OtherMax { given, max } => write!(
                f,
                "MAX {given} differs from this namespace's size {max}: a namespace keeps the size \
                 it was made with"
            ),
            LeaseError::BadTtl { ttl_ms, horizon_ms } => write!(
                f,
                "TTL {ttl_ms} must be between {MIN_TTL_MS} and {horizon_ms} ms \
                 (idgen.workerid-horizon-ms)"
            ),
            LeaseError::NoSuchWorker { worker_id, max } => write!(
                f,
                "worker ID {worker_id} is not in this namespace: it must be between 0 and {}",
                i64::from(*max) - 1
            ),
            LeaseError::UntilTooFar {
                until_ms,
                now_ms,
                horizon_ms,
            } => write!(
                f,
                "UNTIL {until_ms} is more than {horizon_ms} ms (idgen.workerid-horizon-ms) past \
                 the coordinator's clock {now_ms}"
            ),
            LeaseError::NotHolder {
                worker_id,
                token,
                expired: true,
            } => write!(
                f,
                "lease of worker ID {worker_id} under token {token} has expired: {AGAIN}"
            ),
            LeaseError::NotHolder {
                worker_id,
                token,
                expired: false,
            } => write!(
                f,
                "token {token} is not the holder's of worker ID {worker_id}: {AGAIN}"
            ),
            LeaseError::Vanished => write!(
                f,
                "the namespace holds no leases: it was deleted, expired, evicted or flushed \
                 (or never made): {AGAIN}"
            ),
            LeaseError::Void { worker_id } => write!(
                f,
                "lease of worker ID {worker_id} is void: the namespace was reset (deleted, \
                 expired, evicted, flushed or restored from an older copy) after it was \
                 granted; {AGAIN}"
            ),
        }
    }
}

impl std::error::Error for LeaseError {}

/// A namespace's pool, as read from its hash.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pool {
    /// Size: worker IDs `0..max`; 0 for a namespace never used.
    pub max: u32,
    /// The last token granted.
    pub token: u64,
    /// One more on every change: a copy with a lower version is older.
    pub version: u64,
    /// Leases with a token below this are void: granted before the namespace was found reset.
    pub void_below: u64,
    /// Grants start above this: set when the namespace was found reset.
    pub grant_above_ms: i64,
    /// Every worker ID ever leased.
    pub leases: BTreeMap<u32, Lease>,
}

impl Pool {
    /// Reads a pool from its hash's `(field, value)` pairs.
    ///
    /// # Errors
    /// [`LeaseError::Corrupt`] for a field or value this module would not write, or fields that
    /// disagree with each other (a lease's token above the namespace's, a worker ID at or above
    /// `max`, a `max` of 0 or above [`MAX_POOL`]).
    pub fn from_fields<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Pool, LeaseError> {
        let corrupt = |f: &str, v: &str| LeaseError::Corrupt(format!("field {f:?} = {v:?}"));
        let mut pool = Pool::default();
        let mut max = None;
        for (field, value) in fields {
            let number = || canonical(value).ok_or_else(|| corrupt(field, value));
            match field {
                "max" => max = Some(u32::try_from(number()?).map_err(|_| corrupt(field, value))?),
                "token" => pool.token = number()?,
                "version" => pool.version = number()?,
                "void_below" => pool.void_below = number()?,
                // The server process that wrote the namespace last, which idgen's Functions
                // library records in place of a witness file; nothing the module decides on.
                "owner" => {}
                "grant_above" => {
                    pool.grant_above_ms =
                        i64::try_from(number()?).map_err(|_| corrupt(field, value))?
                }
                _ => {
                    let id = field
                        .parse::<u32>()
                        .ok()
                        .filter(|id| id.to_string() == field)
                        .ok_or_else(|| corrupt(field, value))?;
                    let lease = Lease::parse(value).ok_or_else(|| corrupt(field, value))?;
                    pool.leases.insert(id, lease);
                }
            }
        }
        match max {
            Some(m) if m == 0 || m > MAX_POOL => return Err(corrupt("max", &m.to_string())),
            Some(m) => pool.max = m,
            None if !pool.leases.is_empty() => {
                return Err(LeaseError::Corrupt("leases but no \"max\"".into()))
            }
            None => {}
        }
        for (id, lease) in &pool.leases {
            if *id >= pool.max || lease.token > pool.token {
                return Err(corrupt(&id.to_string(), &lease.to_field()));
            }
        }
        Ok(pool)
    }

    /// What this copy of the namespace shows of its history, for [`Pool::reset_if_behind`].
    pub fn seen(&self) -> Seen {
        Seen {
            version: self.version,
            token: self.token,
        }
    }

    /// Whether the namespace has gone back: its version or token is below what this coordinator
    /// `seen` in it before, so the hash was recreated or restored from an older copy, whose
    /// records may be missing renewals and grants. Every lease granted before is then void
    /// (their RENEWs fail), grants start above `now_ms` plus the horizon (above any ID an old
    /// holder may still issue), and tokens carry on above the highest seen. Returns whether it
    /// reset the pool; write it back then.
    pub fn reset_if_behind(&mut self, seen: Seen, now_ms: i64, terms: &Terms) -> bool {
        if self.version >= seen.version && self.token >= seen.token {
            return false;
        }
        self.token = self.token.max(seen.token);
        self.version = self.version.max(seen.version) + 1;
        self.void_below = self.token.saturating_add(1);
        self.grant_above_ms = self
            .grant_above_ms
            .max(now_ms.saturating_add(terms.fence_horizon_ms));
        true
    }

    /// Fences a namespace this coordinator knows nothing of (no witness, not written or read
    /// by it before) yet which holds leases: its records may lack renewals that reached only a
    /// lost copy, so grants start above `now_ms` plus the horizon. Its leases stay valid: they
    /// are not known to be behind, only not known to be current. Write it back.
    pub fn fence_unknown(&mut self, now_ms: i64, terms: &Terms) {
        self.version += 1;
        self.grant_above_ms = self
            .grant_above_ms
            .max(now_ms.saturating_add(terms.fence_horizon_ms));
    }

    /// Grants a free worker ID (never leased, released, or expired at `now_ms`) for `ttl_ms`,
    /// creating the pool with `max` IDs on first use: the lowest one whose record is already in
    /// the past, else the one whose record ends soonest (its holder must wait for its clock to
    /// pass it). It starts above that record and above the fences of `terms` and the pool.
    ///
    /// # Errors
    /// A bad MAX or TTL, or [`LeaseError::Exhausted`].
    pub fn acquire(
        &mut self,
        max: u32,
        now_ms: i64,
        ttl_ms: i64,
        terms: &Terms,
    ) -> Result<Grant, LeaseError> {
        check_ttl(ttl_ms, terms)?;
        if max == 0 || max > MAX_POOL {
            return Err(LeaseError::BadMax(max.into()));
        }
        if self.max != 0 && self.max != max {
            return Err(LeaseError::OtherMax {
                given: max,
                max: self.max,
            });
        }
        self.max = max;
        let until = |id: u32| self.leases.get(&id).map_or(0, |l| l.until_ms);
        let worker_id = (0..max)
            .filter(|id| !self.leases.get(id).is_some_and(|l| l.is_live(now_ms)))
            .min_by_key(|&id| (until(id).max(now_ms), id))
            .ok_or(LeaseError::Exhausted(max))?;
        let start_above_ms = until(worker_id)
            .max(self.grant_above_ms)
            .max(terms.fence_ms);
        self.token = self.token.saturating_add(1).max(token_floor(now_ms));
        self.version += 1;
        let lease = Lease {
            token: self.token,
            expires_ms: now_ms + ttl_ms,
            until_ms: start_above_ms,
            floor_ms: start_above_ms,
        };
        self.leases.insert(worker_id, lease);
        Ok(Grant {
            worker_id,
            lease,
            start_above_ms,
        })
    }

    /// Extends the lease of `worker_id` held under `token` to `now_ms + ttl_ms`, and records
    /// that its holder may put times up to `until_ms` into IDs (the record never goes down).
    ///
    /// # Errors
    /// A bad TTL, UNTIL or worker ID, or the caller is not the live holder.
    pub fn renew(
        &mut self,
        worker_id: i64,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
        until_ms: i64,
        terms: &Terms,
    ) -> Result<Lease, LeaseError> {
        check_ttl(ttl_ms, terms)?;
        if until_ms > now_ms.saturating_add(terms.horizon_ms) {
            return Err(LeaseError::UntilTooFar {
                until_ms,
                now_ms,
                horizon_ms: terms.horizon_ms,
            });
        }
        let lease = self.holder(worker_id, token, now_ms)?;
        lease.expires_ms = now_ms + ttl_ms;
        lease.until_ms = lease.until_ms.max(until_ms);
        let lease = *lease;
        self.version += 1;
        Ok(lease)
    }

    /// Ends the lease of `worker_id` held under `token` now. With `used_until_ms` (the last time
    /// the holder put into an ID) the record comes down to it, never below where the holder
    /// started, so the next holder need not wait for time the holder never used.
    ///
    /// # Errors
    /// A bad worker ID, or the caller is not the live holder.
    pub fn release(
        &mut self,
        worker_id: i64,
        token: u64,
        now_ms: i64,
        used_until_ms: Option<i64>,
    ) -> Result<Lease, LeaseError> {
        let lease = self.holder(worker_id, token, now_ms)?;
        lease.expires_ms = 0;
        if let Some(used) = used_until_ms {
            lease.until_ms = lease.until_ms.min(used).max(lease.floor_ms);
        }
        let lease = *lease;
        self.version += 1;
        Ok(lease)
    }

    /// The hash fields that record `worker_id`'s lease and the pool's counters: what an
    /// operation on that worker ID changed.
    pub fn fields_of(&self, worker_id: u32) -> Vec<(String, String)> {
        let mut fields = vec![
            ("token".to_string(), self.token.to_string()),
            ("version".to_string(), self.version.to_string()),
        ];
        if self.max != 0 {
            fields.push(("max".to_string(), self.max.to_string()));
        }
        if self.void_below != 0 {
            fields.push(("void_below".to_string(), self.void_below.to_string()));
        }
        if self.grant_above_ms != 0 {
            fields.push(("grant_above".to_string(), self.grant_above_ms.to_string()));
        }
        if let Some(lease) = self.leases.get(&worker_id) {
            fields.push((worker_id.to_string(), lease.to_field()));
        }
        fields
    }

    /// Every hash field of the pool.
    #[cfg(test)]
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut fields = self.fields_of(u32::MAX);
        fields.extend(
            self.leases
                .iter()
                .map(|(id, l)| (id.to_string(), l.to_field())),
        );
        fields
    }

    /// The live leases at `now_ms`, by worker ID.
    pub fn live(&self, now_ms: i64) -> impl Iterator<Item = (u32, &Lease)> {
        self.leases
            .iter()
            .filter(move |(_, l)| l.is_live(now_ms))
            .map(|(id, l)| (*id, l))
    }

    fn holder(
        &mut self,
        worker_id: i64,
        token: u64,
        now_ms: i64,
    ) -> Result<&mut Lease, LeaseError> {
        let void = token < self.void_below;
        let Some(id) = u32::try_from(worker_id).ok().filter(|id| *id < self.max) else {
            return Err(match (void, self.max) {
                (true, _) => LeaseError::Void {
                    worker_id: worker_id.clamp(0, u32::MAX.into()) as u32,
                },
                (false, 0) => LeaseError::Vanished,
                (false, max) => LeaseError::NoSuchWorker { worker_id, max },
            });
        };
        if void {
            return Err(LeaseError::Void { worker_id: id });
        }
        match self.leases.get_mut(&id) {
            Some(l) if l.token == token && l.is_live(now_ms) => Ok(l),
            Some(l) => Err(LeaseError::NotHolder {
                worker_id: id,
                token,
                expired: l.token == token,
            }),
            None => Err(LeaseError::NotHolder {
                worker_id: id,
                token,
                expired: false,
            }),
        }
    }
}

fn check_ttl(ttl_ms: i64, terms: &Terms) -> Result<(), LeaseError> {
    if (MIN_TTL_MS..=terms.horizon_ms).contains(&ttl_ms) {
        Ok(())
    } else {
        Err(LeaseError::BadTtl {
            ttl_ms,
            horizon_ms: terms.horizon_ms,
        })
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;

//! Worker-ID leases: one fleet's pool of worker IDs, handed out for a time, renewed by their
//! holders, and recycled when released or expired, without letting a new holder repeat an old
//! holder's IDs.
//!
//! The pool is stored as a Redis hash (see [`Pool::fields`]): `max` (the pool's size), `token`
//! (the last fencing token granted) and, per worker ID ever leased, `"<token> <expires_ms>
//! <until_ms> <floor_ms>"`: the holder's token, when its lease ends (0 once released), the
//! highest time any holder of that ID said it may put into an ID, and the time the current
//! holder started above. A new holder starts above `until_ms`. A holder that releases may lower
//! `until_ms` to the time it really used last, never below `floor_ms`, so its ID is at once
//! reusable; an expired holder's record stands until the clock passes it.
//! All times are the coordinator's (the primary's) Unix ms.

use std::collections::BTreeMap;
use std::fmt;

/// Largest pool: enough for every layout's node field this project ships (Twitter's 10 bits,
/// Sonyflake's 16), small enough to scan on every ACQUIRE.
pub const MAX_POOL: u32 = 65_536;
/// Shortest and longest lease.
pub const TTL_RANGE_MS: (i64, i64) = (100, 86_400_000);
/// How far past its lease's end a holder may record it will issue: room for its clock to run
/// that much ahead of the coordinator's. More would keep the next holder waiting for nothing.
pub const UNTIL_SLACK_MS: i64 = 60_000;

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
    pub fn to_field(&self) -> String {
        format!(
            "{} {} {} {}",
            self.token, self.expires_ms, self.until_ms, self.floor_ms
        )
    }

    /// Parses a hash field value.
    pub fn parse(text: &str) -> Option<Lease> {
        let mut parts = text.split(' ');
        let lease = Lease {
            token: parts.next()?.parse().ok()?,
            expires_ms: parts.next()?.parse().ok()?,
            until_ms: parts.next()?.parse().ok()?,
            floor_ms: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(lease)
    }
}

/// A lease just granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The worker ID.
    pub worker_id: u32,
    /// Its lease.
    pub lease: Lease,
    /// The holder's IDs must carry times above this: the last holder's `until_ms`.
    pub start_above_ms: i64,
}

/// Why a lease operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseError {
    /// Every worker ID of the pool is leased.
    Exhausted(u32),
    /// The stored pool is not one this module wrote.
    Corrupt(String),
    /// A MAX that differs from the pool's, or is out of range.
    BadMax(u32),
    /// A TTL outside [`TTL_RANGE_MS`].
    BadTtl(i64),
    /// A worker ID outside the pool.
    NoSuchWorker(u32),
    /// An UNTIL further than [`UNTIL_SLACK_MS`] past the lease's new end.
    UntilTooFar { until_ms: i64, expires_ms: i64 },
    /// The caller's token is not the current holder's, or the lease has expired.
    NotHolder { worker_id: u32, expired: bool },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::Exhausted(n) => {
                write!(f, "all {n} worker IDs of this namespace are leased")
            }
            LeaseError::Corrupt(why) => {
                write!(f, "the namespace holds data idgen did not write: {why}")
            }
            LeaseError::BadMax(n) => write!(
                f,
                "MAX {n} must be between 1 and {MAX_POOL}, and equal the namespace's size once set"
            ),
            LeaseError::BadTtl(ms) => write!(
                f,
                "TTL {ms} must be between {} and {} ms",
                TTL_RANGE_MS.0, TTL_RANGE_MS.1
            ),
            LeaseError::NoSuchWorker(id) => write!(f, "worker ID {id} is not in this namespace"),
            LeaseError::UntilTooFar { until_ms, expires_ms } => write!(
                f,
                "UNTIL {until_ms} is more than {UNTIL_SLACK_MS} ms past the lease's end {expires_ms}"
            ),
            LeaseError::NotHolder {
                worker_id,
                expired: true,
            } => write!(
                f,
                "lease of worker ID {worker_id} has expired: stop issuing and ACQUIRE again"
            ),
            LeaseError::NotHolder {
                worker_id,
                expired: false,
            } => write!(
                f,
                "token is not the holder's of worker ID {worker_id}: stop issuing and ACQUIRE again"
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
    /// Every worker ID ever leased.
    pub leases: BTreeMap<u32, Lease>,
}

impl Pool {
    /// Reads a pool from its hash's `(field, value)` pairs.
    ///
    /// # Errors
    /// [`LeaseError::Corrupt`] for a field or value this module would not write.
    pub fn from_fields<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Pool, LeaseError> {
        let corrupt = |f: &str, v: &str| LeaseError::Corrupt(format!("field {f:?} = {v:?}"));
        let mut pool = Pool::default();
        for (field, value) in fields {
            match field {
                "max" => pool.max = value.parse().map_err(|_| corrupt(field, value))?,
                "token" => pool.token = value.parse().map_err(|_| corrupt(field, value))?,
                _ => {
                    let id: u32 = field.parse().map_err(|_| corrupt(field, value))?;
                    let lease = Lease::parse(value).ok_or_else(|| corrupt(field, value))?;
                    pool.leases.insert(id, lease);
                }
            }
        }
        Ok(pool)
    }

    /// Grants a free worker ID (never leased, released, or expired at `now_ms`) for `ttl_ms`,
    /// creating the pool with `max` IDs on first use: the lowest one whose record is already in
    /// the past, else the one whose record ends soonest (its holder must wait for its clock to
    /// pass it).
    ///
    /// # Errors
    /// A bad MAX or TTL, or [`LeaseError::Exhausted`].
    pub fn acquire(&mut self, max: u32, now_ms: i64, ttl_ms: i64) -> Result<Grant, LeaseError> {
        check_ttl(ttl_ms)?;
        if max == 0 || max > MAX_POOL || (self.max != 0 && self.max != max) {
            return Err(LeaseError::BadMax(max));
        }
        self.max = max;
        let until = |id: u32| self.leases.get(&id).map_or(0, |l| l.until_ms);
        let worker_id = (0..max)
            .filter(|id| !self.leases.get(id).is_some_and(|l| l.is_live(now_ms)))
            .min_by_key(|&id| (until(id).max(now_ms), id))
            .ok_or(LeaseError::Exhausted(max))?;
        let start_above_ms = self.leases.get(&worker_id).map_or(0, |l| l.until_ms);
        self.token += 1;
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
    /// A bad TTL or worker ID, or [`LeaseError::NotHolder`].
    pub fn renew(
        &mut self,
        worker_id: u32,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
        until_ms: i64,
    ) -> Result<Lease, LeaseError> {
        check_ttl(ttl_ms)?;
        let expires_ms = now_ms + ttl_ms;
        if until_ms > expires_ms + UNTIL_SLACK_MS {
            return Err(LeaseError::UntilTooFar {
                until_ms,
                expires_ms,
            });
        }
        let lease = self.holder(worker_id, token, now_ms)?;
        lease.expires_ms = expires_ms;
        lease.until_ms = lease.until_ms.max(until_ms);
        Ok(*lease)
    }

    /// Ends the lease of `worker_id` held under `token` now. With `used_until_ms` (the last time
    /// the holder put into an ID) the record comes down to it, never below where the holder
    /// started, so the next holder need not wait for time the holder never used.
    ///
    /// # Errors
    /// A bad worker ID, or [`LeaseError::NotHolder`].
    pub fn release(
        &mut self,
        worker_id: u32,
        token: u64,
        now_ms: i64,
        used_until_ms: Option<i64>,
    ) -> Result<Lease, LeaseError> {
        let lease = self.holder(worker_id, token, now_ms)?;
        lease.expires_ms = 0;
        if let Some(used) = used_until_ms {
            lease.until_ms = lease.until_ms.min(used).max(lease.floor_ms);
        }
        Ok(*lease)
    }

    /// The hash fields that record `worker_id`'s lease and the pool's counters: what an
    /// operation on that worker ID changed.
    pub fn fields_of(&self, worker_id: u32) -> Vec<(String, String)> {
        let mut fields = vec![
            ("max".to_string(), self.max.to_string()),
            ("token".to_string(), self.token.to_string()),
        ];
        if let Some(lease) = self.leases.get(&worker_id) {
            fields.push((worker_id.to_string(), lease.to_field()));
        }
        fields
    }

    /// Every hash field of the pool.
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
        worker_id: u32,
        token: u64,
        now_ms: i64,
    ) -> Result<&mut Lease, LeaseError> {
        if worker_id >= self.max {
            return Err(LeaseError::NoSuchWorker(worker_id));
        }
        match self.leases.get_mut(&worker_id) {
            Some(l) if l.token == token && l.is_live(now_ms) => Ok(l),
            Some(l) => Err(LeaseError::NotHolder {
                worker_id,
                expired: l.token == token,
            }),
            None => Err(LeaseError::NotHolder {
                worker_id,
                expired: false,
            }),
        }
    }
}

fn check_ttl(ttl_ms: i64) -> Result<(), LeaseError> {
    if (TTL_RANGE_MS.0..=TTL_RANGE_MS.1).contains(&ttl_ms) {
        Ok(())
    } else {
        Err(LeaseError::BadTtl(ttl_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_the_lowest_free_id_with_rising_tokens_until_exhausted() {
        let mut pool = Pool::default();
        let a = pool.acquire(3, 1_000, 500).unwrap();
        let b = pool.acquire(3, 1_000, 500).unwrap();
        let c = pool.acquire(3, 1_000, 500).unwrap();
        assert_eq!((a.worker_id, b.worker_id, c.worker_id), (0, 1, 2));
        assert_eq!((a.lease.token, b.lease.token, c.lease.token), (1, 2, 3));
        assert_eq!(a.lease.expires_ms, 1_500);
        assert_eq!(pool.acquire(3, 1_000, 500), Err(LeaseError::Exhausted(3)));
        assert_eq!(pool.acquire(4, 1_000, 500), Err(LeaseError::BadMax(4)));
        assert_eq!(pool.acquire(3, 1_000, 50), Err(LeaseError::BadTtl(50)));
    }

    #[test]
    fn a_recycled_id_starts_above_every_earlier_holders_record() {
        let mut pool = Pool::default();
        let a = pool.acquire(1, 1_000, 500).unwrap();
        pool.renew(a.worker_id, a.lease.token, 1_200, 500, 1_900)
            .unwrap();
        pool.renew(a.worker_id, a.lease.token, 1_300, 500, 1_700)
            .unwrap(); // never goes down
                       // Expired at 1_800: the ID is free again, and its next holder starts above 1_900.
        let b = pool.acquire(1, 1_800, 500).unwrap();
        assert_eq!(b.worker_id, 0);
        assert_eq!(b.start_above_ms, 1_900);
        assert!(b.lease.token > a.lease.token);
        // The old holder is fenced off by its token.
        let err = pool.renew(0, a.lease.token, 1_850, 500, 2_000).unwrap_err();
        assert_eq!(
            err,
            LeaseError::NotHolder {
                worker_id: 0,
                expired: false
            }
        );
    }

    #[test]
    fn release_frees_at_once_and_expiry_is_told_apart() {
        let mut pool = Pool::default();
        let a = pool.acquire(1, 1_000, 500).unwrap();
        assert!(pool.release(0, a.lease.token + 1, 1_100, None).is_err());
        pool.release(0, a.lease.token, 1_100, None).unwrap();
        assert_eq!(pool.live(1_100).count(), 0);
        let b = pool.acquire(1, 1_100, 500).unwrap();
        assert_eq!(
            pool.renew(0, b.lease.token, 1_600, 500, 0),
            Err(LeaseError::NotHolder {
                worker_id: 0,
                expired: true
            })
        );
        assert_eq!(
            pool.renew(5, b.lease.token, 1_100, 500, 0),
            Err(LeaseError::NoSuchWorker(5))
        );
    }

    #[test]
    fn a_release_lowers_the_record_to_what_was_used_but_never_below_the_floor() {
        let mut pool = Pool::default();
        let a = pool.acquire(2, 1_000, 500).unwrap();
        pool.renew(0, a.lease.token, 1_000, 500, 1_500).unwrap();
        let released = pool.release(0, a.lease.token, 1_100, Some(1_090)).unwrap();
        assert_eq!(released.until_ms, 1_090);
        let b = pool.acquire(2, 1_100, 500).unwrap();
        assert_eq!((b.worker_id, b.start_above_ms), (0, 1_090));
        let released = pool.release(0, b.lease.token, 1_200, Some(5)).unwrap();
        assert_eq!(
            released.until_ms, 1_090,
            "not below where the holder started"
        );
        let released_high = pool.acquire(2, 1_200, 500).unwrap();
        pool.renew(0, released_high.lease.token, 1_200, 500, 1_800)
            .unwrap();
        let kept = pool
            .release(0, released_high.lease.token, 1_300, Some(9_999))
            .unwrap();
        assert_eq!(kept.until_ms, 1_800, "a release never raises the record");
    }

    #[test]
    fn prefers_ids_whose_record_is_past_then_the_soonest() {
        let mut pool = Pool::default();
        let a = pool.acquire(3, 1_000, 500).unwrap();
        let b = pool.acquire(3, 1_000, 500).unwrap();
        pool.renew(a.worker_id, a.lease.token, 1_000, 500, 9_000)
            .unwrap();
        pool.renew(b.worker_id, b.lease.token, 1_000, 500, 8_000)
            .unwrap();
        pool.release(a.worker_id, a.lease.token, 1_100, None)
            .unwrap();
        pool.release(b.worker_id, b.lease.token, 1_100, None)
            .unwrap();
        // Worker 2 was never used: its record (0) is past.
        assert_eq!(pool.acquire(3, 1_200, 500).unwrap().worker_id, 2);
        // Then the one whose record ends first.
        let next = pool.acquire(3, 1_200, 500).unwrap();
        assert_eq!((next.worker_id, next.start_above_ms), (1, 8_000));
    }

    #[test]
    fn the_hash_fields_read_back() {
        let mut pool = Pool::default();
        pool.acquire(8, 1_000, 500).unwrap();
        pool.acquire(8, 1_000, 500).unwrap();
        let fields = pool.fields();
        let read = Pool::from_fields(fields.iter().map(|(f, v)| (f.as_str(), v.as_str()))).unwrap();
        assert_eq!(read, pool);
        assert!(Pool::from_fields([("x", "1")]).is_err());
        assert!(Pool::from_fields([("3", "1 2")]).is_err());
        assert!(Pool::from_fields([("3", "1 2 3")]).is_err());
        assert!(Pool::from_fields([("3", "1 2 3 4 5")]).is_err());
    }
}

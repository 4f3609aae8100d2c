//! A lease coordinator's memory of the live leases it granted or renewed: the witness of each
//! holder's record in the namespace's hash.
//!
//! The hash is a key any client can write. A record edited by hand (an earlier expiry, a lower
//! `until`, another token) or removed (`HDEL`) would let the worker ID be granted again while
//! its holder still issues IDs, or below the times it may use. Only the coordinator writes
//! records, each write moving them on, so a live record that differs from what it last wrote
//! was changed by someone else: the namespace is refused as foreign until the record is put
//! back or the namespace deleted (a deleted namespace is reset: every lease in it is void).
//! A namespace found reset, or a promotion (another primary wrote meanwhile), forgets what was
//! remembered of it.

use std::collections::{BTreeMap, HashMap};

use crate::leases::pool::{Lease, LeaseError, Pool};

/// The live leases this coordinator last wrote, by namespace and worker ID.
#[derive(Debug, Default)]
pub struct Granted {
    by_namespace: HashMap<Vec<u8>, BTreeMap<u32, Lease>>,
}

impl Granted {
    /// Checks `pool`, namespace `ns` as just read, against the live leases remembered in it.
    ///
    /// # Errors
    /// [`LeaseError::Corrupt`] naming the first record that differs from what was written.
    pub fn check(&self, ns: &[u8], pool: &Pool, now_ms: i64) -> Result<(), LeaseError> {
        let Some(remembered) = self.by_namespace.get(ns) else {
            return Ok(());
        };
        for (worker_id, wrote) in remembered.iter().filter(|(_, l)| l.is_live(now_ms)) {
            let found = pool.leases.get(worker_id);
            if found != Some(wrote) {
                let found =
                    found.map_or_else(|| "nothing".into(), |l| format!("{:?}", l.to_field()));
                return Err(LeaseError::Corrupt(format!(
                    "field \"{worker_id}\" holds {found}, but the live lease this coordinator \
                     wrote there is {:?}: the record was changed by hand; put it back, or DEL \
                     the namespace to void every lease in it",
                    wrote.to_field()
                )));
            }
        }
        Ok(())
    }

    /// Remembers `lease`, just written for `worker_id` in `ns`; drops the leases of `ns` no
    /// longer live at `now_ms` (a released or expired lease needs no witness).
    pub fn record(&mut self, ns: &[u8], worker_id: u32, lease: Lease, now_ms: i64) {
        let remembered = match self.by_namespace.get_mut(ns) {
            Some(r) => r,
            None if lease.is_live(now_ms) => self.by_namespace.entry(ns.to_vec()).or_default(),
            None => return,
        };
        remembered.insert(worker_id, lease);
        remembered.retain(|_, l| l.is_live(now_ms));
        if remembered.is_empty() {
            self.by_namespace.remove(ns);
        }
    }

    /// Forgets `ns`: it was found reset, and every lease in it is void.
    pub fn forget(&mut self, ns: &[u8]) {
        self.by_namespace.remove(ns);
    }

    /// Forgets everything: after a promotion, another primary may have written every record.
    pub fn clear(&mut self) {
        self.by_namespace.clear();
    }

    /// How many live leases are remembered.
    pub fn len(&self) -> usize {
        self.by_namespace.values().map(BTreeMap::len).sum()
    }

    /// Whether none is.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.by_namespace.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_000_000_000;

    fn lease(token: u64, expires_ms: i64, until_ms: i64) -> Lease {
        Lease {
            token,
            expires_ms,
            until_ms,
            floor_ms: 0,
        }
    }

    fn pool_with(worker_id: u32, lease: Lease) -> Pool {
        let mut pool = Pool {
            max: 8,
            token: lease.token,
            version: 3,
            ..Pool::default()
        };
        pool.leases.insert(worker_id, lease);
        pool
    }

    #[test]
    fn a_live_record_changed_or_removed_by_hand_is_refused_naming_it() {
        let mut granted = Granted::default();
        let wrote = lease(7, NOW + 5_000, NOW + 9_000);
        granted.record(b"fleet", 4, wrote, NOW);
        assert_eq!(granted.check(b"fleet", &pool_with(4, wrote), NOW), Ok(()));
        let edits = [
            lease(7, NOW - 1, NOW + 9_000),     // made to look expired
            lease(7, NOW + 5_000, NOW + 10),    // a lower until
            lease(6, NOW + 5_000, NOW + 9_000), // another token
        ];
        for edited in edits {
            let err = granted
                .check(b"fleet", &pool_with(4, edited), NOW)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("field \"4\"") && err.contains("changed by hand"),
                "{err}"
            );
        }
        let removed = Pool {
            max: 8,
            ..Pool::default()
        };
        let err = granted.check(b"fleet", &removed, NOW).unwrap_err();
        assert!(err.to_string().contains("holds nothing"), "{err}");
        // Another namespace is not held to it.
        assert_eq!(granted.check(b"other", &removed, NOW), Ok(()));
    }

    #[test]
    fn only_live_leases_are_kept_and_a_reset_or_promotion_forgets_them() {
        let mut granted = Granted::default();
        granted.record(b"fleet", 1, lease(1, NOW + 100, NOW), NOW);
        granted.record(b"fleet", 2, lease(2, NOW + 100, NOW), NOW);
        assert_eq!(granted.len(), 2);
        // Released (expires 0), and later the other expired.
        granted.record(b"fleet", 1, lease(1, 0, NOW), NOW);
        assert_eq!(granted.len(), 1);
        let expired = pool_with(3, lease(3, NOW + 1_000, NOW));
        assert_eq!(granted.check(b"fleet", &expired, NOW + 200), Ok(()));
        granted.record(b"fleet", 3, lease(3, NOW + 1_000, NOW), NOW + 200);
        assert_eq!(
            granted.len(),
            1,
            "the expired lease of worker 2 was dropped"
        );
        granted.forget(b"fleet");
        assert!(granted.is_empty());
        granted.record(b"fleet", 3, lease(3, NOW + 1_000, NOW), NOW);
        granted.clear();
        assert!(granted.is_empty());
        // A lease not live is never remembered.
        granted.record(b"made-up", 0, lease(1, 0, NOW), NOW);
        assert!(granted.is_empty());
    }
}

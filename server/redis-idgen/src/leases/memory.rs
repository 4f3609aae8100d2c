//! What this node remembers of the lease namespaces it serves, between calls: the highest
//! version and token it saw in each (one found below went back), the live leases it last wrote
//! (a record found otherwise was changed by hand), the fence grants start above, the namespaces
//! that arrived from another node, and the lease witness file that keeps the first and the
//! fence across a restart. Handlers reach it only through these methods.

use std::collections::{HashMap, HashSet};

use super::grants::Granted;
use super::pool::{Lease, LeaseError, Pool, Seen, Terms};
use super::witness_file::LeaseWitness;
use super::witness_line::{Line, Witnessed};

/// A node's memory of its lease namespaces.
pub struct Memory {
    seen: HashMap<Vec<u8>, Seen>,
    granted: Granted,
    /// Grants start above this: the load (without a witness file) or the latest promotion,
    /// plus the horizon, as the namespaces here may lack renewals an older copy never saw.
    fence_ms: i64,
    witness: Option<LeaseWitness>,
    fenced: u64,
    arrived: HashSet<Vec<u8>>,
    /// `idgen.workerid-horizon-ms` as last set.
    horizon_ms: i64,
    /// A longer horizon set before, and until when holders told under it may still be ahead:
    /// fences use it until then ([`Memory::fence_horizon_ms`]).
    wide: Option<(i64, i64)>,
}

/// What a call may do with a namespace it opened ([`Memory::admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted {
    /// As it is.
    AsItIs,
    /// Unknown here, and only read: left unknown until a write fences it.
    UnknownRead,
    /// It went back since this node saw it: its leases are void; write it back at once.
    Reset,
    /// It holds leases no witness saw (restored from elsewhere, or arrived): fenced, and to be
    /// written back at once.
    Fenced,
}

impl Memory {
    /// At load: with a witness file, a namespace is trusted as far as the file saw it go and
    /// only the fence it recorded holds; without one, every start fences every namespace
    /// (`fence_from_now`).
    pub fn new(
        witness: Option<(LeaseWitness, Witnessed)>,
        fence_from_now: i64,
        horizon_ms: i64,
    ) -> Memory {
        let (witness, seen, fence_ms) = match witness {
            Some((file, found)) => (
                Some(file),
                found.namespaces.into_iter().collect(),
                found.fence_ms,
            ),
            None => (None, HashMap::new(), fence_from_now),
        };
        Memory {
            seen,
            granted: Granted::default(),
            fence_ms,
            witness,
            fenced: 0,
            arrived: HashSet::new(),
            horizon_ms,
            wide: None,
        }
    }

    /// `idgen.workerid-horizon-ms` changed to `new_ms` at `now_ms`: lowered, the old horizon
    /// still holds for fences for as long as a holder told under it may run ahead.
    pub fn horizon_changed(&mut self, new_ms: i64, now_ms: i64) {
        let old = self.fence_horizon_ms(self.horizon_ms, now_ms);
        if new_ms < old {
            self.wide = Some((old, now_ms.saturating_add(old)));
        }
        self.horizon_ms = new_ms;
    }

    /// The horizon fences use: the one set (`configured`), or a longer one set before whose
    /// holders may still be ahead of the clock.
    pub fn fence_horizon_ms(&self, configured: i64, now_ms: i64) -> i64 {
        match self.wide {
            Some((wide, until)) if now_ms < until => configured.max(wide),
            _ => configured,
        }
    }

    /// The fence grants start above.
    pub fn fence_ms(&self) -> i64 {
        self.fence_ms
    }

    /// The lease witness file, when on.
    pub fn witness(&self) -> Option<&LeaseWitness> {
        self.witness.as_ref()
    }

    /// Namespaces remembered, leases witnessed, namespaces fenced: for INFO.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.seen.len() as u64,
            self.granted.len() as u64,
            self.fenced,
        )
    }

    /// Checks `pool`, namespace `ns` as just read, against what this node remembers, and
    /// resets or fences it where it must be (a `writable` call only).
    ///
    /// # Errors
    /// A live holder's record changed by hand.
    pub fn admit(
        &mut self,
        ns: &[u8],
        pool: &mut Pool,
        writable: bool,
        now: i64,
        terms: &Terms,
    ) -> Result<Admitted, LeaseError> {
        let known = self.seen.get(ns).copied();
        // A namespace holding leases that neither the witness file nor this process saw
        // before (restored from another server's data, or loaded when the file was new): its
        // records may lack renewals that reached only a lost copy. Fenced at its first write;
        // a read leaves it unknown until then. So is one that arrived from another node.
        let arrived = self.arrived.contains(ns);
        let unknown = arrived
            || (known.is_none() && self.witness.is_some() && pool.seen() != Seen::default());
        if unknown && !writable {
            return Ok(Admitted::UnknownRead);
        }
        let seen = known.unwrap_or_default();
        let behind = pool.seen().max(seen) != pool.seen();
        if behind {
            // Every lease granted before is void: nothing left to witness.
            self.granted.forget(ns);
        } else {
            self.granted.check(ns, pool, now)?;
        }
        let reset = writable && pool.reset_if_behind(seen, now, terms);
        remember(&mut self.seen, ns, pool.seen());
        if arrived && writable {
            self.arrived.remove(ns);
        }
        Ok(if reset {
            Admitted::Reset
        } else if unknown {
            pool.fence_unknown(now, terms);
            self.fenced += 1;
            Admitted::Fenced
        } else {
            Admitted::AsItIs
        })
    }

    /// Namespace `ns` was written as `pool` says, `lease` (if any) its worker ID's record:
    /// remembered, and its version and token asked of the witness file.
    pub fn wrote(
        &mut self,
        ns: &[u8],
        pool: &Pool,
        worker_id: u32,
        lease: Option<Lease>,
        now: i64,
    ) {
        remember(&mut self.seen, ns, pool.seen());
        if let (Some(file), Some(seen)) = (&self.witness, self.seen.get(ns)) {
            file.ask(Line::Namespace(ns.to_vec(), *seen));
        }
        if let Some(lease) = lease {
            self.granted.record(ns, worker_id, lease, now);
        }
    }

    /// Namespace `ns` arrived from another node at `seen`: its earlier grants from here are
    /// forgotten and it is fenced at its next write. Returns the witness file to wait for, when
    /// it was asked to keep the namespace.
    pub fn arrived(&mut self, ns: &[u8], seen: Seen) -> Option<&LeaseWitness> {
        self.granted.forget(ns);
        remember(&mut self.seen, ns, seen);
        self.arrived.insert(ns.to_vec());
        let (file, seen) = (self.witness.as_ref()?, self.seen.get(ns)?);
        file.ask(Line::Namespace(ns.to_vec(), *seen));
        Some(file)
    }

    /// Another primary may have written every lease record: the live leases are forgotten,
    /// and after a promotion (`fence_ms` given) grants start above the new fence, asked of the
    /// witness file (returned, to wait for).
    pub fn role_changed(&mut self, fence_ms: Option<i64>) -> Option<&LeaseWitness> {
        self.granted.clear();
        self.fence_ms = fence_ms?;
        let file = self.witness.as_ref()?;
        file.ask(Line::Fence(self.fence_ms));
        Some(file)
    }
}

/// Keeps the highest `seen` of namespace `ns`. Only namespaces that exist are remembered: reads
/// of made-up names must not grow the module's memory.
fn remember(all: &mut HashMap<Vec<u8>, Seen>, ns: &[u8], seen: Seen) {
    match all.get_mut(ns) {
        Some(known) => *known = known.max(seen),
        None if seen != Seen::default() => {
            all.insert(ns.to_vec(), seen);
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_horizon_holds_for_fences_until_its_holders_cannot_be_ahead() {
        let mut memory = Memory::new(None, 0, 30_000);
        memory.horizon_changed(2_000, 1_000);
        assert_eq!(memory.fence_horizon_ms(2_000, 1_000), 30_000);
        assert_eq!(memory.fence_horizon_ms(2_000, 30_999), 30_000);
        assert_eq!(memory.fence_horizon_ms(2_000, 31_000), 2_000);
        // Lowered again before the first passed: the longest still holds, as long.
        memory.horizon_changed(100, 5_000);
        assert_eq!(memory.fence_horizon_ms(100, 30_999), 30_000);
        // Raised: at once.
        memory.horizon_changed(60_000, 40_000);
        assert_eq!(memory.fence_horizon_ms(60_000, 40_000), 60_000);
    }

    #[test]
    fn only_namespaces_that_exist_are_remembered() {
        let mut all = HashMap::new();
        remember(&mut all, b"made-up", Seen::default());
        assert!(all.is_empty());
        let seen = Seen {
            version: 3,
            token: 7_000,
        };
        remember(&mut all, b"fleet", seen);
        assert_eq!(all.get(&b"fleet"[..]), Some(&seen));
    }

    #[test]
    fn what_is_remembered_never_goes_down() {
        let mut all = HashMap::new();
        let high = Seen {
            version: 9,
            token: 9_000,
        };
        remember(&mut all, b"fleet", high);
        // A restored copy read later: lower, so it is still found older next time.
        remember(
            &mut all,
            b"fleet",
            Seen {
                version: 2,
                token: 2_000,
            },
        );
        remember(&mut all, b"fleet", Seen::default());
        assert_eq!(all.get(&b"fleet"[..]), Some(&high));
    }
}

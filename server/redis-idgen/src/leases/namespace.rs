//! One lease command's decisions on one namespace: read it through the key interface
//! ([`NamespaceKeys`]), check it against what this node remembers ([`Memory::admit`]: reset
//! or fenced first, and written back at once, when it went back or holds leases no witness
//! saw), decide with the pool's rules at the time given, and write back only what changed.

use super::keys::NamespaceKeys;
use super::memory::{Admitted, Memory};
use super::pool::{Grant, Lease, Pool, Terms};
use crate::error::CommandError;

/// A namespace open for one command.
pub struct Namespace<'a, K: NamespaceKeys> {
    memory: &'a mut Memory,
    keys: K,
    ns: &'a [u8],
    pool: Pool,
    terms: Terms,
    now_ms: i64,
}

impl<'a, K: NamespaceKeys> Namespace<'a, K> {
    /// Namespace `ns` as `keys` hold it at `now_ms`, under `idgen.workerid-horizon-ms` =
    /// `horizon_ms`; reset or fenced first (and written back) when it must be, for a `writable`
    /// command only.
    ///
    /// # Errors
    /// `keys`' own, a namespace that is not one, or a live holder's record changed by hand.
    pub fn open(
        memory: &'a mut Memory,
        mut keys: K,
        ns: &'a [u8],
        writable: bool,
        (now_ms, horizon_ms): (i64, i64),
    ) -> Result<Self, CommandError> {
        let fields = keys.read(ns)?;
        let mut pool = Pool::from_fields(fields.iter().map(|(f, v)| (f.as_str(), v.as_str())))?;
        let terms = Terms {
            horizon_ms,
            fence_horizon_ms: memory.fence_horizon_ms(horizon_ms, now_ms),
            fence_ms: memory.fence_ms(),
        };
        let admitted = memory.admit(ns, &mut pool, writable, now_ms, &terms)?;
        let mut namespace = Namespace {
            memory,
            keys,
            ns,
            pool,
            terms,
            now_ms,
        };
        let why = match admitted {
            Admitted::AsItIs | Admitted::UnknownRead => return Ok(namespace),
            Admitted::Reset => {
                "went back (deleted, expired, evicted, flushed or restored from an older copy): \
                 its earlier leases are void and grants"
            }
            Admitted::Fenced => {
                "holds leases the lease witness file never saw (restored from elsewhere, or \
                 loaded before the file existed): grants"
            }
        };
        crate::ffi::log(
            "warning",
            &format!(
                "idgen: namespace {} {why} start above {}",
                String::from_utf8_lossy(ns),
                namespace.pool.grant_above_ms
            ),
        );
        namespace.write(u32::MAX)?;
        Ok(namespace)
    }

    /// `WORKERID.ACQUIRE`: a free worker ID of a pool of `max`, for `ttl_ms`.
    ///
    /// # Errors
    /// [`Pool::acquire`]'s, or the write's.
    pub fn acquire(mut self, max: u32, ttl_ms: i64) -> Result<Grant, CommandError> {
        let grant = self.pool.acquire(max, self.now_ms, ttl_ms, &self.terms)?;
        self.write(grant.worker_id)?;
        Ok(grant)
    }

    /// `WORKERID.RENEW`: the lease of `worker_id` held under `token`, for `ttl_ms` more, its
    /// holder putting times up to `until_ms` into IDs.
    ///
    /// # Errors
    /// [`Pool::renew`]'s, or the write's.
    pub fn renew(
        mut self,
        (worker_id, token): (i64, u64),
        ttl_ms: i64,
        until_ms: i64,
    ) -> Result<Lease, CommandError> {
        let lease =
            self.pool
                .renew(worker_id, token, self.now_ms, ttl_ms, until_ms, &self.terms)?;
        self.write(worker_id as u32)?;
        Ok(lease)
    }

    /// `WORKERID.RELEASE`: the lease of `worker_id` held under `token` ends now, its record
    /// lowered to `used_until_ms` when given.
    ///
    /// # Errors
    /// [`Pool::release`]'s, or the write's.
    pub fn release(
        mut self,
        (worker_id, token): (i64, u64),
        used_until_ms: Option<i64>,
    ) -> Result<(), CommandError> {
        self.pool
            .release(worker_id, token, self.now_ms, used_until_ms)?;
        self.write(worker_id as u32)
    }

    /// `WORKERID.LIST`: every live lease, by worker ID.
    pub fn live(&self) -> Vec<(u32, Lease)> {
        self.pool
            .live(self.now_ms)
            .map(|(id, lease)| (id, *lease))
            .collect()
    }

    /// Writes what changed for `worker_id` (`u32::MAX`: only the pool's own fields), and
    /// remembers what the namespace now holds, whatever follows: else the next call would find
    /// its own record "changed by hand".
    fn write(&mut self, worker_id: u32) -> Result<(), CommandError> {
        self.keys.write(self.ns, &self.pool.fields_of(worker_id))?;
        let lease = self.pool.leases.get(&worker_id).copied();
        self.memory
            .wrote(self.ns, &self.pool, worker_id, lease, self.now_ms);
        Ok(())
    }
}

#[cfg(test)]
#[path = "namespace_tests.rs"]
mod tests;

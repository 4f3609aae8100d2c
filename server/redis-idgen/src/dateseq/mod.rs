//! Date sequences' server-side decisions and bookkeeping, all of it owned by [`Counters`], which
//! moves counters on through the key interface [`keys`] (Redis's keys in `crate::ffi::key`) at
//! the time it is given: what one call issues ([`plan`]), whether a missing counter's Cluster slot moves
//! ([`slot_move`]), which counters must
//! skip ahead after a promotion ([`fence`]), how far each counter went ([`witness`]), how far it
//! is reserved on disk ([`ledger`]), the witness file that holds those reservations
//! ([`witness_file`]), and the counts INFO shows ([`stats`]). The calendar, counter keys and
//! values are `idgen_core::dateseq`.

pub mod counters;
pub mod fence;
pub mod key_name;
pub mod keys;
pub mod ledger;
pub mod plan;
pub mod slot_move;
pub mod stats;
pub mod witness;
pub mod witness_file;

/// How long a period's witness and ledger entry outlive the period: room for a clock read
/// across the period's end.
pub const GRACE_MS: i64 = 3_600_000;

pub use counters::Counters;

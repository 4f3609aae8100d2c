//! Date sequences' server-side bookkeeping: which counters must skip ahead after a promotion
//! ([`fence`]), how far each counter went ([`witness`]), how far it is reserved on disk
//! ([`ledger`]), and the witness file that holds those reservations ([`witness_file`]). The
//! calendar, counter keys and values are `idgen_core::dateseq`.

pub mod fence;
pub mod ledger;
pub mod stats;
pub mod witness;
pub mod witness_file;

/// How long a period's witness and ledger entry outlive the period: room for a clock read
/// across the period's end.
pub const GRACE_MS: i64 = 3_600_000;

pub use fence::Fence;
pub use witness::Witnesses;

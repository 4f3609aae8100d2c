//! The terms of the worker-ID lease protocol that every side shares: the coordinators (the
//! module's `WORKERID.*`, the Functions library's `workerid_*`) and the clients that install
//! the library or lease from either. The pool itself is the module's (`redis-idgen`).

/// Largest pool: enough for every layout's node field this project ships (Twitter's 10 bits,
/// Sonyflake's 16), small enough to scan on every ACQUIRE.
pub const MAX_POOL: u32 = 65_536;
/// Shortest lease.
pub const MIN_TTL_MS: i64 = 100;
/// Shortest and longest horizon: how far past the coordinator's clock a holder may record an
/// UNTIL.
pub const HORIZON_RANGE_MS: (i64, i64) = (MIN_TTL_MS, 86_400_000);
/// Default horizon: a 10 s lease (idgen-client's default) with 20 s of room for a holder's clock
/// to run ahead of the coordinator's.
pub const DEFAULT_HORIZON_MS: i64 = 30_000;
/// Tokens granted at Unix ms `t` are at least `t * TOKENS_PER_MS`: below 2^53 (exact in
/// JavaScript and Lua) until the year 2255.
pub const TOKENS_PER_MS: u64 = 1_000;

/// The lowest token a grant at `now_ms` may take: tokens follow the clock, so a namespace
/// recreated from nothing (or from an older copy) still grants tokens above every earlier one,
/// as long as it grants fewer than [`TOKENS_PER_MS`] a millisecond and the coordinator's clock
/// does not step back across the loss.
pub fn token_floor(now_ms: i64) -> u64 {
    u64::try_from(now_ms)
        .unwrap_or(0)
        .saturating_mul(TOKENS_PER_MS)
}

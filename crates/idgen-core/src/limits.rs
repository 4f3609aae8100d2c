//! The bounds and defaults the module's commands and the Functions library's functions both
//! enforce: one source for each. The module takes them from here; the library declares them in
//! Lua, and idgen-functions' tests fail when a declaration differs (`lib_tests.rs`,
//! `the_library_declares_every_shared_constant_as_the_module_does`). The lease terms are in
//! [`crate::lease`], the Snowflake layout's in [`crate::layout`].

/// Most IDs one `COUNT n` of SNOWFLAKE.NEXT (UUID7.NEXT, ULID.NEXT) returns.
pub const MAX_COUNT: i64 = 100_000;
/// Most IDs one call returns as Sqids: a bound on the reply and on how long one call holds
/// the server's thread.
pub const MAX_SQIDS: u64 = 1_000;
/// Most values one `DATESEQ.NEXT ... COUNT n` reserves, and the largest failover gap.
pub const MAX_DATESEQ_COUNT: i64 = 1_000_000_000;
/// The values a date sequence skips on its first use after a failover: a second of writes at
/// 10,000 values/s (the module's `idgen.dateseq-failover-gap` default; the library's gap).
pub const DEFAULT_FAILOVER_GAP: i64 = 10_000;
/// The range of the drift limit (`idgen.max-drift-ms`, a state key's `max_drift_ms`): how far
/// IDs may run ahead of the clock. Its default is [`crate::DEFAULT_MAX_DRIFT_MS`].
pub const MAX_DRIFT_RANGE_MS: (i64, i64) = (0, 86_400_000);
/// Pool size when WORKERID.ACQUIRE names none: Twitter's 10 node bits.
pub const DEFAULT_POOL: u32 = 1024;

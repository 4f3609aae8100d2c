//! In-process generators for the comparison, each as a [`Factory`] of per-thread generators.
//! IDs wider than 64 bits are left-aligned in the `u128`, so their top 64 bits hold the time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use idgen_core::{Generator, Settings, SystemClock};

use super::drive::{Factory, ThreadGenerator};

/// A stateless generator, the same on every thread.
pub fn stateless(make: fn() -> u128) -> Factory {
    Arc::new(move || Box::new(move || Some(make())) as ThreadGenerator)
}

/// UUID version 4 (122 random bits).
pub fn uuid_v4() -> u128 {
    uuid::Uuid::new_v4().as_u128()
}

/// UUID version 7 (48 bits of ms, then random).
pub fn uuid_v7() -> u128 {
    uuid::Uuid::now_v7().as_u128()
}

/// ULID (48 bits of ms, 80 random).
pub fn ulid() -> u128 {
    ulid::Ulid::new().0
}

/// Simpleflake's epoch, 2000-01-01T00:00:00Z.
const SIMPLEFLAKE_EPOCH_MS: u64 = 946_684_800_000;

/// Simpleflake: 41 bits of ms since 2000, 22 random bits (no worker ID, no sequence), in the
/// low 64 bits. Random bits from a per-thread SplitMix64.
pub fn simpleflake() -> Factory {
    static SEEDS: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    Arc::new(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let mut state = now ^ SEEDS.fetch_add(0x6A09_E667_F3BC_C909, Ordering::Relaxed);
        Box::new(move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let random = (z ^ (z >> 31)) & ((1 << 22) - 1);
            let ms = idgen_tests::now_ms() as u64 - SIMPLEFLAKE_EPOCH_MS;
            Some((((ms & ((1 << 41) - 1)) << 22) | random) as u128)
        })
    })
}

/// idgen-core's Snowflake generator, one per thread with (datacenter, worker) IDs 0, 1, 2, ...; `drift_ms`
/// is how far it may run ahead of the clock (0: held to 4,096 IDs per ms per worker; a spent
/// millisecond is a refusal, counted as an error).
pub fn snowflake(drift_ms: u64) -> Factory {
    let workers = Arc::new(AtomicU64::new(0));
    Arc::new(move || {
        let n = workers.fetch_add(1, Ordering::Relaxed) % 1024;
        let settings = Settings {
            datacenter_id: n / 32,
            worker_id: n % 32,
            max_drift_ms: drift_ms,
            ..Settings::default()
        };
        let mut generator = Generator::new(settings, SystemClock).expect("valid settings");
        Box::new(move || generator.next_id().ok().map(u128::from))
    })
}

/// Tickets from a prefetching pool of the ticket pair: a handle per thread.
pub fn prefetch(pool: Arc<ticket_client::prefetch::Prefetch>) -> Factory {
    Arc::new(move || {
        let mut handle = pool.handle();
        Box::new(move || handle.ticket().ok().map(u128::from))
    })
}

/// IDs from one leased generator shared by every thread.
pub fn leased(generator: Arc<idgen_client::LeasedGenerator>) -> Factory {
    Arc::new(move || {
        let generator = Arc::clone(&generator);
        Box::new(move || generator.next_id().ok().map(u128::from))
    })
}

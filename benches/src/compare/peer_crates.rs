//! Other projects' in-process ID generators for the comparison, each as a [`Factory`]: the
//! crates a Rust user would pick instead, and MongoDB's ObjectId. Behind the `comparison`
//! feature, with the database rows: no test needs them, so `make test` does not compile them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::drive::Factory;

/// MongoDB's ObjectId (4 bytes of seconds, 5 random per process, a 3-byte counter), 96 bits.
pub fn object_id() -> u128 {
    let bytes = bson::oid::ObjectId::new().bytes();
    let mut wide = [0u8; 16];
    wide[..12].copy_from_slice(&bytes);
    u128::from_be_bytes(wide)
}

/// A distinct number per generator made, for the instance fields of the crates below.
fn next_instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The `rs-snowflake` crate's `real_time_generate` (Twitter layout, Unix epoch), one generator
/// per thread with its own (machine, node).
pub fn rs_snowflake() -> Factory {
    Arc::new(|| {
        let n = (next_instance() % 1024) as i32;
        let mut generator = snowflake::SnowflakeIdGenerator::new(n / 32, n % 32);
        Box::new(move || Some(generator.real_time_generate() as u64 as u128))
    })
}

/// The `snowflaked` crate (42 bits of ms, 10 of instance, 12 of sequence), one generator per
/// thread with its own instance.
pub fn snowflaked() -> Factory {
    Arc::new(|| {
        let mut generator = snowflaked::Generator::new((next_instance() % 1024) as u16);
        Box::new(move || Some(u128::from(generator.generate::<u64>())))
    })
}

/// The `sonyflake` crate (39 bits of 10 ms, 8 of sequence, 16 of machine), one generator per
/// thread with its own machine ID; it sleeps when a 10 ms tick's 256 IDs are spent.
pub fn sonyflake() -> Factory {
    Arc::new(|| {
        let machine = (next_instance() % 65_536) as u16;
        let generator = sonyflake::Sonyflake::builder()
            .machine_id(&move || Ok(machine))
            .finalize();
        match generator {
            Ok(generator) => {
                Box::new(move || generator.next_id().ok().map(|id| u128::from(id.to_u64())))
            }
            Err(_) => Box::new(|| None),
        }
    })
}

/// The `ferroid` crate's `BasicSnowflakeGenerator` (Twitter layout), one per thread with its
/// own machine ID; its clock is monotonic from process start, so the wall clock stepping back
/// does not reach it. A spent millisecond is `Pending`, counted as a refusal.
pub fn ferroid() -> Factory {
    use ferroid::generator::{BasicSnowflakeGenerator, IdGenStatus};
    use ferroid::id::SnowflakeTwitterId;
    use ferroid::time::{MonotonicClock, TWITTER_EPOCH};
    Arc::new(|| {
        let machine = next_instance() % 1024;
        let generator: BasicSnowflakeGenerator<SnowflakeTwitterId, _> =
            BasicSnowflakeGenerator::new(machine, MonotonicClock::with_epoch(TWITTER_EPOCH));
        Box::new(move || match generator.next_id() {
            IdGenStatus::Ready { id } => Some(u128::from(id.to_raw())),
            IdGenStatus::Pending { .. } => None,
        })
    })
}

//! In-process generators, nanoseconds per ID: the core Snowflake generator against the `uuid`
//! crate (v4, v7) and `ulid`; and sealing an ID or a UUIDv7 (FF1), which the module's `SEALED`
//! replies add to a call. `cargo bench --bench generators`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use idgen_core::{Generator, Sealer, Settings, SystemClock};

fn generators(c: &mut Criterion) {
    let mut group = c.benchmark_group("id per call");
    // Enough drift that a tight loop, faster than 4096 IDs per ms, never hits the limit.
    let settings = Settings {
        max_drift_ms: 86_400_000,
        ..Settings::default()
    };
    let mut snowflake = Generator::new(settings, SystemClock).expect("default settings are valid");
    group.bench_function("snowflake (idgen-core, twitter layout)", |b| {
        b.iter(|| black_box(snowflake.next_id()))
    });
    let mut batch = Vec::with_capacity(4096);
    group.bench_function("snowflake batch of 4096, per batch", |b| {
        b.iter(|| {
            batch.clear();
            black_box(snowflake.next_ids(4096, &mut batch))
        })
    });
    group.bench_function("uuid v4", |b| b.iter(|| black_box(uuid::Uuid::new_v4())));
    group.bench_function("uuid v7", |b| b.iter(|| black_box(uuid::Uuid::now_v7())));
    group.bench_function("ulid", |b| b.iter(|| black_box(ulid::Ulid::new())));
    group.finish();
}

fn sealing(c: &mut Criterion) {
    let mut group = c.benchmark_group("seal per call");
    // A fixed key: any key costs the same.
    let sealer = Sealer::new(&[7; 32]).expect("32 bytes are a key");
    let id = 2_124_474_529_882_451_968;
    group.bench_function("seal a 63-bit ID", |b| {
        b.iter(|| black_box(sealer.seal(black_box(id))))
    });
    let uuid = uuid::Uuid::now_v7().as_u128();
    group.bench_function("seal a UUIDv7", |b| {
        b.iter(|| black_box(sealer.seal_uuid7(black_box(uuid))))
    });
    group.finish();
}

criterion_group!(benches, generators, sealing);
criterion_main!(benches);

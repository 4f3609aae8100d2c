//! Benchmark helpers. The benchmarks themselves: `benches/module.sh` (redis-benchmark, the
//! module against INCR) and the `batch-rate` binary (how many IDs per second SNOWFLAKE.NEXT
//! COUNT sustains against the layout's limit).

//! Benchmarks. `cargo bench --bench compare [-- --quick]`: every approach side by side, into
//! `target/compare/report.md` with plots ([`compare`]). `cargo bench --bench generators`:
//! in-process generators with criterion. `benches/module.sh` and `benches/ticket.sh`: the
//! module and the ticket servers against INCR with redis-benchmark, using the `batch-rate` and
//! `ticket-rate` clients.

pub mod compare;

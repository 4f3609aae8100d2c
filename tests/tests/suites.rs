//! The module's and the Functions library's suites: one test binary, each suite a file of its
//! own beside this one and a module here (so `cargo test --test suites dateseq::` runs one).
//! `scripts/test.sh` runs this binary on every server: whole where the module loads, and its
//! library tests (`library`, `fault_matrix_state_key::`) on Redis 6.0. One binary links the
//! harness once where 54 did.

#[path = "bad_input.rs"]
mod bad_input;
#[path = "clock_steps.rs"]
mod clock_steps;
#[path = "cluster.rs"]
mod cluster;
#[path = "cluster_reshard.rs"]
mod cluster_reshard;
#[path = "code_layout.rs"]
mod code_layout;
#[path = "config.rs"]
mod config;
#[path = "dateseq.rs"]
mod dateseq;
#[path = "dateseq_periods.rs"]
mod dateseq_periods;
#[path = "dateseq_witness_file.rs"]
mod dateseq_witness_file;
#[path = "docs_links.rs"]
mod docs_links;
#[path = "docs_transcripts.rs"]
mod docs_transcripts;
#[path = "durable_write.rs"]
mod durable_write;
#[path = "exact_ids.rs"]
mod exact_ids;
#[path = "failover.rs"]
mod failover;
#[path = "failover_window.rs"]
mod failover_window;
#[path = "fault_matrix.rs"]
mod fault_matrix;
#[path = "fault_matrix_leases.rs"]
mod fault_matrix_leases;
#[path = "fault_matrix_state_key.rs"]
mod fault_matrix_state_key;
#[path = "forms_listed.rs"]
mod forms_listed;
#[path = "fromtime.rs"]
mod fromtime;
#[path = "full_disk.rs"]
mod full_disk;
#[path = "harness.rs"]
mod harness;
#[path = "hostile.rs"]
mod hostile;
#[path = "hostile_names.rs"]
mod hostile_names;
#[path = "identity.rs"]
mod identity;
#[path = "lease_split_brain.rs"]
mod lease_split_brain;
#[path = "lease_witness_file.rs"]
mod lease_witness_file;
#[path = "leases.rs"]
mod leases;
#[path = "library.rs"]
mod library;
#[path = "library_clock_steps.rs"]
mod library_clock_steps;
#[path = "library_dateseq.rs"]
mod library_dateseq;
#[path = "library_differential.rs"]
mod library_differential;
#[path = "library_fields.rs"]
mod library_fields;
#[path = "library_fleet.rs"]
mod library_fleet;
#[path = "library_role.rs"]
mod library_role;
#[path = "library_scripts.rs"]
mod library_scripts;
#[path = "library_sqids.rs"]
mod library_sqids;
#[path = "live_settings.rs"]
mod live_settings;
#[path = "lost_state.rs"]
mod lost_state;
#[path = "profiles.rs"]
mod profiles;
#[path = "release.rs"]
mod release;
#[path = "replication.rs"]
mod replication;
#[path = "restart.rs"]
mod restart;
#[path = "seal.rs"]
mod seal;
#[path = "snowflake.rs"]
mod snowflake;
#[path = "sqids.rs"]
mod sqids;
#[path = "time128.rs"]
mod time128;
#[path = "witness_matrix.rs"]
mod witness_matrix;
#[path = "witness_matrix_leases.rs"]
mod witness_matrix_leases;
#[path = "witness_matrix_snowflake.rs"]
mod witness_matrix_snowflake;
#[path = "witness_matrix_where.rs"]
mod witness_matrix_where;
#[path = "witness_travels.rs"]
mod witness_travels;
#[path = "workerid.rs"]
mod workerid;
#[path = "write_faults.rs"]
mod write_faults;

//! Worker-ID leases' server-side decisions and bookkeeping: one command on one namespace
//! ([`namespace`]), read and written through the key interface [`keys`] (Redis's hashes in
//! `crate::ffi::namespaces`) at the time it is given; a namespace's pool and its rules
//! ([`pool`]), what this node remembers of its namespaces between calls ([`memory`]), the
//! grants this node made ([`grants`]), the lease witness file's line format ([`witness_line`])
//! and the file itself ([`witness_file`]). The protocol's shared terms are `idgen_core::lease`.

pub mod grants;
pub mod keys;
pub mod memory;
pub mod namespace;
pub mod pool;
pub mod witness_file;
pub mod witness_line;

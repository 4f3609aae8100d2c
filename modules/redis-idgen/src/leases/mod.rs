//! Worker-ID leases' server-side bookkeeping: a namespace's pool ([`pool`]), what this node
//! remembers of its namespaces between calls ([`memory`]), the grants this node made ([`grants`]), the lease witness file's line format ([`witness_line`]) and the file
//! itself ([`witness_file`]). The protocol's shared terms are `idgen_core::lease`.

pub mod grants;
pub mod memory;
pub mod pool;
pub mod witness_file;
pub mod witness_line;

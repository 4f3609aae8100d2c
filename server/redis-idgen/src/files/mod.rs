//! The witness files' common parts: their line format ([`lines`]) and the background writer
//! that appends and syncs them ([`journal`]). Whole-file state is written by `idgen_durable`.

pub mod journal;
pub mod lines;

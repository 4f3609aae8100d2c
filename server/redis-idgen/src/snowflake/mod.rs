//! Snowflake IDs' server-side state: the generator and what it is held to ([`issuer`]), the
//! restart reservation in the state file ([`reservation`]), where IDs start at load ([`resumed`]), and which earlier layouts' IDs a
//! new layout may repeat ([`lineage`]). The generator itself is `idgen_core::Generator`.

pub mod issuer;
pub mod lineage;
pub mod reservation;
pub mod resumed;

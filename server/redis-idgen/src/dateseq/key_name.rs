//! The counter key named last, kept between calls: most calls name the same prefix in the same
//! period, and naming the key afresh (and hashing it for its witness) would cost more than the
//! rest of the call's own work.

use idgen_core::dateseq::counter_key;

use crate::error::CommandError;

#[derive(Default)]
pub struct LastKey {
    prefix: Vec<u8>,
    date: u32,
    named: bool,
    /// The name's witness name (`crate::dateseq::witness::Witnesses::name`).
    witness: u64,
    name: Vec<u8>,
}

impl LastKey {
    /// The counter key of `prefix` on `date`, and what `witness_name` makes of it (worked out
    /// only when the key changes).
    ///
    /// # Errors
    /// The prefix cannot name a key ([`counter_key`]'s errors).
    #[inline]
    pub fn get(
        &mut self,
        prefix: &[u8],
        date: u32,
        witness_name: impl FnOnce(&[u8]) -> u64,
    ) -> Result<(&[u8], u64), CommandError> {
        if !(self.named && self.date == date && self.prefix == prefix) {
            self.named = false;
            counter_key(prefix, date, &mut self.name)?;
            self.prefix.clear();
            self.prefix.extend_from_slice(prefix);
            self.date = date;
            self.witness = witness_name(&self.name);
            self.named = true;
        }
        Ok((&self.name, self.witness))
    }

    /// The key name last made.
    pub fn bytes(&self) -> &[u8] {
        &self.name
    }
}

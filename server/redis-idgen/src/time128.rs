//! UUID7.NEXT's and ULID.NEXT's state: a generator each, and the buffer `COUNT` fills. Handlers
//! reach it through these methods.

use idgen_core::{Form128, GenerateError, Generator128, SystemClock};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::error::LoadError;

type Generator = Generator128<SystemClock, StdRng>;

/// A node's 128-bit time-ordered IDs.
pub struct Time128 {
    uuid7: Generator,
    ulid: Generator,
    /// Reused for `COUNT`, so it does not allocate.
    buf: Vec<u128>,
}

impl Time128 {
    /// A generator of each form over the system clock and a ChaCha generator seeded from the
    /// OS, with `max_drift_ms` (the Snowflake generator's drift limit).
    ///
    /// # Errors
    /// No random seed from the OS.
    pub fn new(max_drift_ms: u64) -> Result<Time128, LoadError> {
        Ok(Time128 {
            uuid7: generator(Form128::Uuid7, max_drift_ms)?,
            ulid: generator(Form128::Ulid, max_drift_ms)?,
            buf: Vec::new(),
        })
    }

    /// The next ID of `form`.
    ///
    /// # Errors
    /// The clock is behind by more than the drift limit.
    pub fn next_id(&mut self, form: Form128) -> Result<u128, GenerateError> {
        self.generator_mut(form).next_id()
    }

    /// The next `n` IDs of `form`.
    ///
    /// # Errors
    /// The clock is behind by more than the drift limit.
    pub fn next_ids(&mut self, form: Form128, n: usize) -> Result<&[u128], GenerateError> {
        let ids = match form {
            Form128::Uuid7 => &mut self.uuid7,
            Form128::Ulid => &mut self.ulid,
        };
        self.buf.clear();
        ids.next_ids(n, &mut self.buf)?;
        Ok(&self.buf)
    }

    /// The generator of `form`, to read its counts.
    pub fn generator(&self, form: Form128) -> &Generator {
        match form {
            Form128::Uuid7 => &self.uuid7,
            Form128::Ulid => &self.ulid,
        }
    }

    /// `idgen.max-drift-ms` changed.
    pub fn set_max_drift_ms(&mut self, ms: u64) {
        self.uuid7.set_max_drift_ms(ms);
        self.ulid.set_max_drift_ms(ms);
    }

    fn generator_mut(&mut self, form: Form128) -> &mut Generator {
        match form {
            Form128::Uuid7 => &mut self.uuid7,
            Form128::Ulid => &mut self.ulid,
        }
    }
}

fn generator(form: Form128, max_drift_ms: u64) -> Result<Generator, LoadError> {
    let rng = StdRng::try_from_os_rng().map_err(|e| LoadError::Seed(e.to_string()))?;
    Ok(Generator128::new(form, SystemClock, rng, max_drift_ms))
}

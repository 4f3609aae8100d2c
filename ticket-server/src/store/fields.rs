//! The one-line files of a store (`STORE`, `<name>.seq`): a header, then `name=value` words.
//! Every value is checked against its range when read, and a file that fails names itself and
//! the field: a value idgen never writes (a negative number, an offset above its increment, a
//! bound past the last ticket) is someone else's data, never something to carry on from.

use std::path::Path;

use super::Step;

/// The largest ticket: tickets are signed 64-bit integers.
pub const LAST_TICKET: u64 = i64::MAX as u64;

/// The words of one file, read with its path for messages.
pub(super) struct Fields<'a> {
    path: &'a Path,
    text: &'a str,
}

impl<'a> Fields<'a> {
    /// The words of `text`, read from `path`; refused unless it starts with `header`.
    pub fn new(path: &'a Path, text: &'a str, header: &str, what: &str) -> anyhow::Result<Self> {
        if !text.starts_with(header) {
            anyhow::bail!(
                "{} is not a {what}: it starts {:?}, not {header:?}",
                path.display(),
                text.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(64)
                    .collect::<String>()
            );
        }
        Ok(Fields { path, text })
    }

    /// The value of `name`, which must lie in `min..=max`.
    pub fn get(&self, name: &str, min: u64, max: u64) -> anyhow::Result<u64> {
        let raw = self
            .text
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            .ok_or_else(|| anyhow::anyhow!("{}: no {name}= field", self.path.display()))?;
        raw.parse::<u64>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: {name}={raw} is out of range: it must be an integer from {min} to {max}",
                    self.path.display()
                )
            })
    }

    /// The `offset=` and `increment=` of a server's step: 1 <= offset <= increment.
    pub fn step(&self) -> anyhow::Result<Step> {
        let increment = self.get("increment", 1, LAST_TICKET)?;
        let offset = self.get("offset", 1, increment)?;
        Ok(Step { offset, increment })
    }
}

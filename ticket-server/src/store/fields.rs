//! The one-line files of a store (`STORE`, `<name>.seq`): a header, then `name=value` words.
//! Every value is checked against its range when read, and a file that fails names itself and
//! the field: a value idgen never writes (a negative number, an offset above its increment, a
//! bound past the last ticket) is someone else's data, never something to carry on from.

use std::path::Path;

use super::{OpenError, Step};

/// The largest ticket: tickets are signed 64-bit integers.
pub const LAST_TICKET: u64 = i64::MAX as u64;

/// The words of one file, read with its path for messages.
pub(super) struct Fields<'a> {
    path: &'a Path,
    text: &'a str,
}

impl<'a> Fields<'a> {
    /// The words of `text`, read from `path`; refused unless it starts with `header`.
    pub fn new(
        path: &'a Path,
        text: &'a str,
        header: &'static str,
        what: &'static str,
    ) -> Result<Self, OpenError> {
        if !text.starts_with(header) {
            return Err(OpenError::NotOurs {
                path: path.to_path_buf(),
                what,
                starts: text.lines().next().unwrap_or("").chars().take(64).collect(),
                header,
            });
        }
        Ok(Fields { path, text })
    }

    /// The value of `name`, which must lie in `min..=max`.
    pub fn get(&self, name: &'static str, min: u64, max: u64) -> Result<u64, OpenError> {
        let raw = self
            .text
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            .ok_or_else(|| OpenError::MissingField {
                path: self.path.to_path_buf(),
                name,
            })?;
        raw.parse::<u64>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| OpenError::FieldRange {
                path: self.path.to_path_buf(),
                name,
                raw: raw.to_string(),
                min,
                max,
            })
    }

    /// The `offset=` and `increment=` of a server's step: 1 <= offset <= increment.
    pub fn step(&self) -> Result<Step, OpenError> {
        let increment = self.get("increment", 1, LAST_TICKET)?;
        let offset = self.get("offset", 1, increment)?;
        Ok(Step { offset, increment })
    }
}

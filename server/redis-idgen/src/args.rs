//! The arguments of one command call, read front to back, through redis-module's string
//! functions: no copy, and no retain and release of each one (as the crate's `Vec<RedisString>`
//! of arguments would cost).

use redis_module::{raw, RedisString};

use crate::digits::parse_i64;
use crate::error::CommandError;

pub use idgen_core::limits::MAX_COUNT;

/// The arguments of one call, read front to back; argument 0 is the command name.
pub struct Args<'a> {
    argv: &'a [*mut raw::RedisModuleString],
    next: usize,
}

impl<'a> Args<'a> {
    /// The arguments Redis passed to a command: live strings that stay alive and unchanged
    /// for `'a` (see `crate::ffi::module::dispatch`).
    pub fn new(argv: &'a [*mut raw::RedisModuleString]) -> Self {
        Args { argv, next: 1 }
    }

    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.argv.len()
    }

    /// The next argument as a Redis string, for handing back to Redis during the call.
    pub fn next_raw(&mut self) -> Option<*mut raw::RedisModuleString> {
        let arg = *self.argv.get(self.next)?;
        self.next += 1;
        Some(arg)
    }

    /// The next argument's bytes.
    pub fn next_bytes(&mut self) -> Option<&'a [u8]> {
        // The arguments live, unchanged, for 'a (Args::new's contract).
        self.next_raw().map(|s| RedisString::string_as_slice(s))
    }

    /// The next argument as an integer, or the standard Redis error.
    pub fn next_i64(&mut self) -> Result<i64, CommandError> {
        let arg = self.next_bytes().ok_or(CommandError::Syntax)?;
        parse_i64(arg).ok_or_else(|| CommandError::not_an_integer(arg))
    }

    /// The next argument as a `COUNT n` value in `1..=max`.
    pub fn next_count(&mut self, max: i64) -> Result<i64, CommandError> {
        CommandError::check_range("COUNT", self.next_i64()?, 1, max)
    }

    /// Reads options until the end; `on` handles one (reading its value, if any) and says
    /// whether it knew it. An unknown option, one given twice or one missing its value is a
    /// syntax error that names it.
    pub fn options(
        &mut self,
        mut on: impl FnMut(&[u8], &mut Self) -> Result<bool, CommandError>,
    ) -> Result<(), CommandError> {
        // Most calls give none: return before the bookkeeping below.
        if self.next >= self.argv.len() {
            return Ok(());
        }
        // No command has more than a few options: a fixed array, so that the hot path does
        // not allocate.
        let mut seen: [&[u8]; 8] = [&[]; 8];
        let mut n = 0;
        while let Some(name) = self.next_bytes() {
            let syntax = |why: &str| {
                CommandError::OutOfRange(format!(
                    "syntax error: {} {why}",
                    crate::error::shown(name)
                ))
            };
            if seen[..n].iter().any(|s| s.eq_ignore_ascii_case(name)) {
                return Err(syntax("is given more than once"));
            }
            if n < seen.len() {
                seen[n] = name;
                n += 1;
            }
            match on(name, self) {
                Ok(true) => {}
                Ok(false) => return Err(syntax("is not an option of this command")),
                Err(CommandError::Syntax) => return Err(syntax("needs a value")),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// `t [MAX]` of the FROMTIME commands: the time (Unix ms or ISO-8601) and which end of its
/// tick.
///
/// # Errors
/// A time that is not one, or an option other than MAX.
pub fn time_and_end(args: &mut Args) -> Result<(i64, idgen_core::End), CommandError> {
    let raw = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let text = std::str::from_utf8(raw).map_err(|_| {
        CommandError::Time(idgen_core::TimeError::NotATime(
            String::from_utf8_lossy(raw).into_owned(),
        ))
    })?;
    let unix_ms = idgen_core::parse_time(text)?;
    let mut end = idgen_core::End::Lowest;
    args.options(|name, _| {
        let max = name.eq_ignore_ascii_case(b"MAX");
        if max {
            end = idgen_core::End::Highest;
        }
        Ok(max)
    })?;
    Ok((unix_ms, end))
}

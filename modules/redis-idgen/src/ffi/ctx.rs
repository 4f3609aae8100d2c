//! The context of one command call: its arguments in, its reply out.

use std::ffi::CString;
use std::os::raw::c_int;

use redis_module::raw;

use super::{api, bytes, need};
use crate::error::CommandError;

/// The context of one command call, valid for that call only.
pub struct Ctx(*mut raw::RedisModuleCtx);

impl Ctx {
    /// Wraps the context Redis passed to a command.
    ///
    /// # Safety
    /// `ctx` must be the live context of the command being run, and the `Ctx` must not outlive
    /// the call.
    pub unsafe fn new(ctx: *mut raw::RedisModuleCtx) -> Self {
        Ctx(ctx)
    }

    /// The raw context, for the other wrappers in this module.
    pub(super) fn raw(&self) -> *mut raw::RedisModuleCtx {
        self.0
    }

    /// Whether the call comes from a Lua script or function, whose numbers are doubles: an
    /// integer above 2^53 would reach it rounded.
    pub fn called_by_script(&self) -> bool {
        match api!(RedisModule_GetContextFlags) {
            // SAFETY: a live command context (Ctx::new's contract).
            Some(flags) => (unsafe { flags(self.0) } as u32) & raw::REDISMODULE_CTX_FLAGS_LUA != 0,
            None => false,
        }
    }

    /// Replies with an integer.
    pub fn reply_i64(&self, value: i64) -> Result<(), CommandError> {
        let reply = need!(RedisModule_ReplyWithLongLong);
        // SAFETY: a live command context (Ctx::new's contract); all reply calls below too.
        unsafe { reply(self.0, value) };
        Ok(())
    }

    /// Replies with nil.
    pub fn reply_null(&self) -> Result<(), CommandError> {
        let reply = need!(RedisModule_ReplyWithNull);
        // SAFETY: see reply_i64.
        unsafe { reply(self.0) };
        Ok(())
    }

    /// Starts an array of `len` elements; the next `len` replies fill it.
    pub fn reply_array(&self, len: usize) -> Result<(), CommandError> {
        let reply = need!(RedisModule_ReplyWithArray);
        // SAFETY: see reply_i64.
        unsafe { reply(self.0, len as _) };
        Ok(())
    }

    /// Replies with an array of IDs, as integers or as strings.
    pub fn reply_ids(&self, ids: &[u64], as_string: bool) -> Result<(), CommandError> {
        self.reply_array(ids.len())?;
        if as_string {
            let mut buf = [0u8; 20];
            for &id in ids {
                self.reply_bytes(decimal(id, &mut buf))?;
            }
        } else {
            let integer = need!(RedisModule_ReplyWithLongLong);
            for &id in ids {
                // SAFETY: see reply_i64.
                unsafe { integer(self.0, id as i64) };
            }
        }
        Ok(())
    }

    /// Starts a map of `len` pairs: a map in RESP3, a flat field-value array in RESP2.
    pub fn reply_map(&self, len: usize) -> Result<(), CommandError> {
        let reply = need!(RedisModule_ReplyWithMap);
        // SAFETY: see reply_i64.
        unsafe { reply(self.0, len as _) };
        Ok(())
    }

    /// Replies with a bulk string.
    pub fn reply_bytes(&self, text: &[u8]) -> Result<(), CommandError> {
        let reply = need!(RedisModule_ReplyWithStringBuffer);
        // SAFETY: see reply_i64; Redis copies `len` bytes from the pointer.
        unsafe { reply(self.0, text.as_ptr().cast(), text.len()) };
        Ok(())
    }

    /// Replies `+OK`.
    pub fn reply_ok(&self) -> Result<(), CommandError> {
        let reply = need!(RedisModule_ReplyWithSimpleString);
        // SAFETY: see reply_i64; a NUL-terminated static string.
        unsafe { reply(self.0, c"OK".as_ptr()) };
        Ok(())
    }

    /// The same context through redis-module's safe API (RM_Call and friends).
    pub fn safe(&self) -> redis_module::Context {
        redis_module::Context::new(self.0)
    }

    /// Replies with an error; `text` starts with its code, e.g. `ERR`.
    pub fn reply_error(&self, text: &str) {
        let Ok(text) = CString::new(text.replace('\0', " ")) else {
            return;
        };
        if let Some(reply) = api!(RedisModule_ReplyWithError) {
            // SAFETY: see reply_i64; `text` is NUL-terminated and copied by Redis.
            unsafe { reply(self.0, text.as_ptr()) };
        }
    }

    /// Replies with Redis's standard wrong-arity error for the command.
    pub fn reply_wrong_arity(&self) {
        if let Some(reply) = api!(RedisModule_WrongArity) {
            // SAFETY: see reply_i64.
            unsafe { reply(self.0) };
        }
    }
}

/// The decimal digits of `value`, written into the end of `buf`.
pub fn decimal(mut value: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buf[at..];
        }
    }
}

/// The arguments of one call, read front to back; argument 0 is the command name.
pub struct Args<'a> {
    argv: &'a [*mut raw::RedisModuleString],
    next: usize,
}

impl<'a> Args<'a> {
    /// The arguments Redis passed to a command.
    ///
    /// # Safety
    /// `argv` must point to `argc` live strings that stay alive and unchanged for `'a`.
    pub unsafe fn new(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Self {
        let argv = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            // SAFETY: the caller promises `argc` valid pointers at `argv` for 'a.
            unsafe { std::slice::from_raw_parts(argv, argc as usize) }
        };
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
        // SAFETY: the arguments live, unchanged, for 'a (Args::new's contract).
        self.next_raw().map(|s| unsafe { bytes(s) })
    }

    /// The next argument as an integer, or the standard Redis error.
    pub fn next_i64(&mut self) -> Result<i64, CommandError> {
        let arg = self.next_bytes().ok_or(CommandError::Syntax)?;
        parse_i64(arg).ok_or_else(|| CommandError::not_an_integer(arg))
    }

    /// Reads options until the end; `on` handles one (reading its value, if any) and says
    /// whether it knew it. An unknown option, one given twice or one missing its value is a
    /// syntax error that names it.
    pub fn options(
        &mut self,
        mut on: impl FnMut(&[u8], &mut Self) -> Result<bool, CommandError>,
    ) -> Result<(), CommandError> {
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

/// Parses a decimal integer the way Redis does: optional '-', digits, no spaces, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    std::str::from_utf8(s)
        .ok()
        .filter(|t| !t.starts_with('+'))
        .and_then(|t| t.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_as_redis_parses_them() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"0", Some(0)),
            (b"-7", Some(-7)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"+5", None),
            (b" 5", None),
            (b"5 ", None),
            (b"", None),
            (b"1e3", None),
            (b"0x10", None),
            (b"1.5", None),
            (b"\xff", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_i64(text),
                *want,
                "{:?}",
                text.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn decimals_are_written_at_the_end_of_the_buffer() {
        for n in [0, 7, 10, 1_795_349_173_409, u64::MAX] {
            let mut buf = [0u8; 20];
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }
}

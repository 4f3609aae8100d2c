//! A thin, non-panicking wrapper over the raw Redis context: arguments in, replies out.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};

use redis_module::raw;

use crate::error::CommandError;

/// Calls a Redis API function pointer, which Redis fills in when the module loads.
macro_rules! api {
    ($name:ident) => {{
        #[allow(unused_unsafe)]
        let f = unsafe { redis_module::raw::$name };
        match f {
            Some(f) => f,
            None => return Err(crate::error::CommandError::MissingApi(stringify!($name))),
        }
    }};
}
pub(crate) use api;

/// The context of one command call.
pub struct Ctx(pub *mut raw::RedisModuleCtx);

impl Ctx {
    /// Replies with an integer.
    pub fn reply_i64(&self, value: i64) -> Result<(), CommandError> {
        unsafe { api!(RedisModule_ReplyWithLongLong)(self.0, value) };
        Ok(())
    }

    /// Replies with nil.
    pub fn reply_null(&self) -> Result<(), CommandError> {
        unsafe { api!(RedisModule_ReplyWithNull)(self.0) };
        Ok(())
    }

    /// Replies with an array of integers.
    pub fn reply_i64s(&self, values: &[u64]) -> Result<(), CommandError> {
        let array = api!(RedisModule_ReplyWithArray);
        let integer = api!(RedisModule_ReplyWithLongLong);
        unsafe {
            array(self.0, values.len() as _);
            for &v in values {
                integer(self.0, v as i64);
            }
        }
        Ok(())
    }

    /// Starts a map of `len` pairs: a map in RESP3, a flat field-value array in RESP2.
    pub fn reply_map(&self, len: usize) -> Result<(), CommandError> {
        unsafe { api!(RedisModule_ReplyWithMap)(self.0, len as _) };
        Ok(())
    }

    /// Replies with a bulk string.
    pub fn reply_str(&self, text: &str) -> Result<(), CommandError> {
        unsafe {
            api!(RedisModule_ReplyWithStringBuffer)(self.0, text.as_ptr().cast(), text.len())
        };
        Ok(())
    }

    /// Replies with an error; `text` starts with its code, e.g. `ERR`.
    pub fn reply_error(&self, text: &str) {
        let text = CString::new(text.replace('\0', " ")).unwrap_or_default();
        if let Some(f) = unsafe { raw::RedisModule_ReplyWithError } {
            unsafe { f(self.0, text.as_ptr()) };
        }
    }

    /// Replies with Redis's standard wrong-arity error for the command.
    pub fn reply_wrong_arity(&self) {
        if let Some(f) = unsafe { raw::RedisModule_WrongArity } {
            unsafe { f(self.0) };
        }
    }
}

/// Writes a line to the Redis log; works with or without a context.
pub fn log(ctx: *mut raw::RedisModuleCtx, level: &str, text: &str) {
    let (Ok(level), Ok(fmt), Ok(text)) =
        (CString::new(level), CString::new("%s"), CString::new(text))
    else {
        return;
    };
    if let Some(f) = unsafe { raw::RedisModule_Log } {
        unsafe { f(ctx, level.as_ptr(), fmt.as_ptr(), text.as_ptr()) };
    }
}

/// The arguments of one call, read front to back; argument 0 is the command name.
pub struct Args<'a> {
    argv: &'a [*mut raw::RedisModuleString],
    next: usize,
}

impl<'a> Args<'a> {
    /// # Safety
    /// `argv` must point to `argc` strings that live for the whole call.
    pub unsafe fn new(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Self {
        let argv = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(argv, argc as usize)
        };
        Args { argv, next: 1 }
    }

    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.argv.len()
    }

    /// The next argument as a Redis string, for passing back to Redis.
    pub fn next_raw(&mut self) -> Option<*mut raw::RedisModuleString> {
        let arg = *self.argv.get(self.next)?;
        self.next += 1;
        Some(arg)
    }

    /// The next argument's bytes.
    pub fn next_bytes(&mut self) -> Option<&'a [u8]> {
        self.next_raw().map(bytes)
    }

    /// The next argument as an integer, or the standard Redis error.
    pub fn next_i64(&mut self) -> Result<i64, CommandError> {
        let arg = self.next_bytes().ok_or(CommandError::Syntax)?;
        parse_i64(arg).ok_or(CommandError::NotAnInteger)
    }

    /// Reads `[NAME value]` options until the end; `on` handles one and says if it knew it.
    pub fn options(
        &mut self,
        mut on: impl FnMut(&[u8], &mut Self) -> Result<bool, CommandError>,
    ) -> Result<(), CommandError> {
        while let Some(name) = self.next_bytes() {
            if !on(name, self)? {
                return Err(CommandError::Syntax);
            }
        }
        Ok(())
    }
}

/// The bytes of a Redis string, valid while the string lives.
pub fn bytes<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    let Some(ptr_len) = (unsafe { raw::RedisModule_StringPtrLen }) else {
        return &[];
    };
    let mut len = 0;
    let ptr: *const c_char = unsafe { ptr_len(s, &mut len) };
    if ptr.is_null() {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// Parses a decimal integer the way Redis does: optional '-', digits, no spaces, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    std::str::from_utf8(s)
        .ok()
        .filter(|t| !t.starts_with('+'))
        .and_then(|t| t.parse().ok())
}

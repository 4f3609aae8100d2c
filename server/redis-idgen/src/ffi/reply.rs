//! A command's reply, through redis-module's reply functions (`redis_module::raw::reply_with_*`),
//! but for the integer reply, which calls the API entry itself (`Ctx::reply_i64`): one RESP call
//! each, with no `RedisValue` built on the hot path. Each returns `Ok` (Redis accepts every
//! reply); they return a `Result` so that a handler can end with one.

use std::os::raw::c_char;

use redis_module::{raw, ContextFlags, RedisError};

use super::api;
use super::ctx::Ctx;
use crate::callers::{Asked, Callers};
use crate::digits::decimal;
use crate::error::CommandError;

impl Ctx {
    /// Whether the call comes from a Lua script or function, whose numbers are doubles: an
    /// integer above 2^53 would reach it rounded. Redis is asked once per connection
    /// ([`Callers`]).
    pub fn called_by_script(&self, callers: &mut Callers) -> bool {
        let id = self.client_id();
        callers.is_script(id, || Asked {
            script: self.safe().get_flags().contains(ContextFlags::LUA),
            connection: Ctx::is_connection(id),
        })
    }

    /// Replies with an integer: SNOWFLAKE.NEXT's reply, so through the API entry itself.
    /// redis-module's wrapper (`raw::reply_with_long_long`) was not inlined and turned the
    /// status Redis always returns into an enum (docs/benchmarks.md).
    #[inline]
    pub fn reply_i64(&self, value: i64) -> Result<(), CommandError> {
        // Never missing once loaded; were it, an error reply, not a client left waiting.
        let Some(reply) = api!(RedisModule_ReplyWithLongLong) else {
            return Err(CommandError::MissingApi("ReplyWithLongLong"));
        };
        // SAFETY: a live command context (Ctx::new's contract); Redis copies the value.
        unsafe { reply(self.raw(), value) };
        Ok(())
    }

    /// Replies with nil.
    pub fn reply_null(&self) -> Result<(), CommandError> {
        raw::reply_with_null(self.raw());
        Ok(())
    }

    /// Starts an array of `len` elements; the next `len` replies fill it.
    pub fn reply_array(&self, len: usize) -> Result<(), CommandError> {
        raw::reply_with_array(self.raw(), len as _);
        Ok(())
    }

    /// Starts a map of `len` pairs: a map in RESP3, a flat field-value array in RESP2.
    pub fn reply_map(&self, len: usize) -> Result<(), CommandError> {
        raw::reply_with_map(self.raw(), len as _);
        Ok(())
    }

    /// Replies with a bulk string.
    pub fn reply_bytes(&self, text: &[u8]) -> Result<(), CommandError> {
        raw::reply_with_string_buffer(self.raw(), text.as_ptr().cast::<c_char>(), text.len());
        Ok(())
    }

    /// Replies `+OK`.
    pub fn reply_ok(&self) -> Result<(), CommandError> {
        raw::reply_with_simple_string(self.raw(), c"OK".as_ptr());
        Ok(())
    }

    /// Replies with an array of IDs, as integers or as strings.
    pub fn reply_ids(&self, ids: &[u64], as_string: bool) -> Result<(), CommandError> {
        self.reply_array(ids.len())?;
        let mut buf = [0u8; 20];
        for &id in ids {
            if as_string {
                self.reply_bytes(decimal(id, &mut buf))?;
            } else {
                self.reply_i64(id as i64)?;
            }
        }
        Ok(())
    }

    /// Replies with `error`: Redis's own wrong-arity error, or the error's text, code first.
    pub fn reply_error(&self, error: &CommandError) {
        match error {
            CommandError::WrongArity => {
                self.safe().reply(Err(RedisError::WrongArity));
            }
            error => self.reply_error_text(&error.to_string()),
        }
    }
}

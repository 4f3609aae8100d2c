//! The lease feature's key interface (`crate::leases::keys`) on Redis: a namespace is a plain
//! hash, read by `HGETALL` and written by one `HSET` of absolute values, propagated as is
//! (replicas and the AOF replay the write, never the decision), then `PERSIST`ed: a namespace
//! that expires would hand its worker IDs out again. Through the crate's safe `call` API.

use redis_module::{CallOptionsBuilder, CallResult, Context, RedisValue};

use crate::error::CommandError;
use crate::leases::keys::NamespaceKeys;
use crate::leases::pool::LeaseError;

/// The namespaces of this server, for one command.
pub struct Namespaces<'c> {
    ctx: &'c Context,
}

impl<'c> Namespaces<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        Namespaces { ctx }
    }
}

impl NamespaceKeys for Namespaces<'_> {
    /// WRONGTYPE for a key that is not a hash.
    fn read(&mut self, ns: &[u8]) -> Result<Vec<(String, String)>, CommandError> {
        let reply = self
            .ctx
            .call("HGETALL", &[ns])
            .map_err(|e| match e.to_string() {
                t if t.starts_with("WRONGTYPE") => CommandError::WrongType,
                t => CommandError::OutOfRange(t),
            })?;
        let RedisValue::Array(items) = reply else {
            return Err(LeaseError::Corrupt("not a hash".into()).into());
        };
        let not_text =
            || CommandError::from(LeaseError::Corrupt("a field that is not text".into()));
        let mut texts = items.into_iter().map(text);
        let mut fields = Vec::with_capacity(texts.len() / 2);
        while let (Some(field), Some(value)) = (texts.next(), texts.next()) {
            fields.push((field.ok_or_else(not_text)?, value.ok_or_else(not_text)?));
        }
        Ok(fields)
    }

    fn write(&mut self, ns: &[u8], fields: &[(String, String)]) -> Result<(), CommandError> {
        let mut args: Vec<&[u8]> = vec![ns];
        for (field, value) in fields {
            args.push(field.as_bytes());
            args.push(value.as_bytes());
        }
        let options = CallOptionsBuilder::new().replicate().build();
        let failed = |e: redis_module::ErrorReply| {
            CommandError::OutOfRange(format!(
                "could not write the namespace: {}",
                e.to_utf8_string().unwrap_or_default()
            ))
        };
        let result: CallResult = self.ctx.call_ext("HSET", &options, args.as_slice());
        result.map_err(failed)?;
        // PERSIST of a key without an expiry changes nothing and is not propagated.
        let result: CallResult = self.ctx.call_ext("PERSIST", &options, &[ns]);
        result.map_err(failed)?;
        Ok(())
    }
}

fn text(value: RedisValue) -> Option<String> {
    match value {
        RedisValue::BulkString(s) | RedisValue::SimpleString(s) => Some(s),
        RedisValue::StringBuffer(b) => String::from_utf8(b).ok(),
        RedisValue::BulkRedisString(s) => s.try_as_str().ok().map(str::to_string),
        _ => None,
    }
}

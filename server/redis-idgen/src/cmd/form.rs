//! How IDs go out: integers, decimal strings (`STRING`) or Sqids (`SQIDS`), and the
//! `IDGEN.ENCODE` / `IDGEN.DECODE` commands that convert between numbers and Sqids.
//!
//! The Sqid alphabet and minimum length are `idgen.sqids-alphabet` and
//! `idgen.sqids-min-length` ([`crate::config`]); the codec lives in the state.

use idgen_core::sqid::MAX_NUMBERS;
use idgen_core::SqidCodec;

use crate::args::Args;
use crate::digits::{decimal, parse_i64};
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::state::State;

/// Most IDs one call returns as Sqids (an encode's cost is in docs/benchmarks.md).
pub use idgen_core::limits::MAX_SQIDS;

/// The form of the IDs in a reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Form {
    /// RESP integers.
    #[default]
    Integer,
    /// Decimal digits as bulk strings: for clients whose numbers are doubles.
    Decimal,
    /// Sqids of the configured alphabet, as bulk strings.
    Sqid,
}

impl Form {
    /// Takes the option `name` if it is STRING or SQIDS (true), else leaves it (false).
    ///
    /// # Errors
    /// When both are given.
    pub fn take(&mut self, name: &[u8]) -> Result<bool, CommandError> {
        let form = if name.eq_ignore_ascii_case(b"STRING") {
            Form::Decimal
        } else if name.eq_ignore_ascii_case(b"SQIDS") {
            Form::Sqid
        } else {
            return Ok(false);
        };
        if *self != Form::Integer && *self != form {
            return Err(CommandError::OutOfRange(
                "STRING and SQIDS cannot be combined".into(),
            ));
        }
        *self = form;
        Ok(true)
    }

    /// Integers become decimal strings when `exact` is false: a script's Lua numbers are
    /// doubles and would round them.
    pub fn exact_or_decimal(self, exact: bool) -> Form {
        match self {
            Form::Integer if !exact => Form::Decimal,
            form => form,
        }
    }

    /// Checks that a reply of `n` IDs may take this form.
    ///
    /// # Errors
    /// More than [`MAX_SQIDS`] as Sqids.
    pub fn check_count(self, n: u64) -> Result<(), CommandError> {
        if self == Form::Sqid && n > MAX_SQIDS {
            return Err(CommandError::Range {
                name: "COUNT",
                given: n as i64,
                min: 1,
                max: MAX_SQIDS as i64,
                when: " with SQIDS",
            });
        }
        Ok(())
    }

    /// Replies with one ID in this form.
    pub fn reply(self, ctx: &Ctx, id: u64, codec: &SqidCodec) -> Result<(), CommandError> {
        match self {
            Form::Integer => ctx.reply_i64(id as i64),
            Form::Decimal => ctx.reply_bytes(decimal(id, &mut [0; 20])),
            Form::Sqid => codec.encode_with(&[id], |sqid| ctx.reply_bytes(sqid))?,
        }
    }

    /// Replies with an array of IDs in this form. Sqids are all made first, so that a refusal
    /// is an error reply, never half an array.
    pub fn reply_all(self, ctx: &Ctx, ids: &[u64], codec: &SqidCodec) -> Result<(), CommandError> {
        if self != Form::Sqid {
            return ctx.reply_ids(ids, self == Form::Decimal);
        }
        let sqids = codec.encode_each(ids.iter().copied())?;
        ctx.reply_array(sqids.len())?;
        for sqid in &sqids {
            ctx.reply_bytes(sqid.as_bytes())?;
        }
        Ok(())
    }
}

/// `IDGEN.ENCODE n [n ...]`: the Sqid of 1 to 16 non-negative integers.
pub fn encode(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() < 2 {
        return Err(CommandError::WrongArity);
    }
    if args.len() - 1 > MAX_NUMBERS {
        return Err(CommandError::OutOfRange(format!(
            "IDGEN.ENCODE takes 1 to {MAX_NUMBERS} numbers, not {}",
            args.len() - 1
        )));
    }
    let mut numbers = [0u64; MAX_NUMBERS];
    let count = args.len() - 1;
    for slot in &mut numbers[..count] {
        let arg = args.next_bytes().ok_or(CommandError::WrongArity)?;
        let n = parse_i64(arg).ok_or_else(|| CommandError::not_an_integer(arg))?;
        *slot = CommandError::check_range("IDGEN.ENCODE number", n, 0, i64::MAX)? as u64;
    }
    s.sqids()
        .encode_with(&numbers[..count], |sqid| ctx.reply_bytes(sqid))?
}

/// `IDGEN.DECODE sqid`: the numbers a Sqid of this server's alphabet holds, as an array.
pub fn decode(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let raw = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let not_ours = || {
        CommandError::OutOfRange(format!(
            "{} is {}",
            crate::error::shown(raw),
            idgen_core::SqidError::NotASqid
        ))
    };
    s.sqids()
        .decode_with(raw, |numbers| {
            // Encode takes only what fits a RESP integer: a Sqid of a larger number is one
            // this alphabet makes, but of no ID.
            if let Some(&n) = numbers.iter().find(|&&n| n > i64::MAX as u64) {
                return Err(CommandError::OutOfRange(format!(
                    "{} is the Sqid of {n}, above the largest ID {} (IDGEN.ENCODE makes none \
                     above it)",
                    crate::error::shown(raw),
                    i64::MAX
                )));
            }
            ctx.reply_ids(numbers, false)
        })
        .map_err(|e| match e {
            idgen_core::SqidError::NotASqid => not_ours(),
            e => e.into(),
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_sqids_are_taken_alone_and_other_words_left() {
        let mut form = Form::default();
        assert!(form.take(b"string").unwrap());
        assert_eq!(form, Form::Decimal);
        assert!(
            form.take(b"STRING").unwrap(),
            "the same form again is no conflict here"
        );
        assert!(form.take(b"SQIDS").is_err());
        let mut form = Form::default();
        assert!(form.take(b"Sqids").unwrap());
        assert_eq!(form, Form::Sqid);
        assert!(!form.take(b"COUNT").unwrap());
    }

    #[test]
    fn integers_become_decimal_only_where_they_would_round() {
        assert_eq!(Form::Integer.exact_or_decimal(true), Form::Integer);
        assert_eq!(Form::Integer.exact_or_decimal(false), Form::Decimal);
        assert_eq!(Form::Sqid.exact_or_decimal(false), Form::Sqid);
        assert_eq!(Form::Decimal.exact_or_decimal(true), Form::Decimal);
    }

    #[test]
    fn sqids_cap_the_count_and_quote_it() {
        assert!(Form::Sqid.check_count(MAX_SQIDS).is_ok());
        let err = Form::Sqid
            .check_count(MAX_SQIDS + 1)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "ERR COUNT 1001 must be between 1 and 1000 with SQIDS");
        assert!(Form::Integer.check_count(MAX_SQIDS + 1).is_ok());
        assert!(Form::Decimal.check_count(u64::MAX).is_ok());
    }
}

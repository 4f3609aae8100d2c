//! Sealed IDs (`idgen_core::seal`): `IDGEN.SEAL`, `IDGEN.UNSEAL`, `UUID7.UNSEAL`, and the
//! `SEALED` option of SNOWFLAKE.NEXT, DATESEQ.NEXT and UUID7.NEXT. The key is read from
//! `idgen.seal-key-file`; CONFIG GET shows the path, `INFO idgen` the key's check value.

use uuid::Uuid;

use crate::args::Args;
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::state::State;

/// Most IDs one call seals: each takes a few microseconds of Redis's thread.
pub const MAX_SEALED: u64 = 1_000;

/// Takes the option `name` if it is SEALED (true).
pub fn take(sealed: &mut bool, name: &[u8]) -> bool {
    let is = name.eq_ignore_ascii_case(b"SEALED");
    *sealed |= is;
    is
}

/// Checks, before anything is issued, that `n` IDs may be sealed: a key is set, and `n` is at
/// most [`MAX_SEALED`].
///
/// # Errors
/// [`CommandError::NoSealKey`], or COUNT out of range.
pub fn check(s: &State, sealed: bool, n: u64) -> Result<(), CommandError> {
    if !sealed {
        return Ok(());
    }
    s.sealer()?;
    if n > MAX_SEALED {
        return Err(CommandError::Range {
            name: "COUNT",
            given: n as i64,
            min: 1,
            max: MAX_SEALED as i64,
            when: " with SEALED",
        });
    }
    Ok(())
}

/// `IDGEN.SEAL id`: the sealed form of an ID (0 to 2^63-1), in the same range.
pub fn seal(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    permute(ctx, args, s, true)
}

/// `IDGEN.UNSEAL sealed`: the ID a sealed ID came from.
pub fn unseal(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    permute(ctx, args, s, false)
}

fn permute(ctx: &Ctx, mut args: Args, s: &mut State, seal: bool) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let name = if seal { "id" } else { "sealed ID" };
    let value = CommandError::check_range(name, args.next_i64()?, 0, i64::MAX)? as u64;
    let sealer = s.sealer()?;
    let out = if seal {
        sealer.seal(value)?
    } else {
        sealer.unseal(value)?
    };
    ctx.reply_i64(out as i64)
}

/// `UUID7.UNSEAL uuid`: the UUIDv7 a sealed UUID (`UUID7.NEXT SEALED`) came from.
pub fn uuid7_unseal(ctx: &Ctx, mut args: Args, s: &mut State) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let raw = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let sealed = Uuid::try_parse_ascii(raw).map_err(|e| {
        CommandError::OutOfRange(format!("{} is not a UUID: {e}", crate::error::shown(raw)))
    })?;
    let v7 = s.sealer()?.unseal_uuid7(sealed.as_u128())?;
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let text = Uuid::from_u128(v7).hyphenated().encode_lower(&mut buf);
    ctx.reply_bytes(text.as_bytes())
}

//! `UUID7.NEXT`, `ULID.NEXT`, `UUID7.DECODE` and `ULID.DECODE`: 128-bit time-ordered IDs in
//! their canonical text (36-character lower-case UUID, 26-character Crockford base32 ULID).
//!
//! Each form has its own generator (`idgen_core::time128`): strictly increasing on this node,
//! across calls and within a batch, through clock steps back and busy milliseconds, never
//! waiting. They write no keys and nothing is propagated. Like SNOWFLAKE.NEXT they are refused
//! on a replica, unless `idgen.random-ids-on-replica` is yes: a replica's IDs would be unique
//! (74 or 80 random bits) but not ordered with its primary's.

use idgen_core::{with_utc_text, Form128};
use ulid::Ulid;
use uuid::Uuid;

use crate::args::{time_and_end, Args, MAX_COUNT};
use crate::error::CommandError;
use crate::ffi::ctx::Ctx;
use crate::state::State;

/// `UUID7.NEXT [COUNT n] [SEALED]`: SEALED gives a version 4 UUID that shows no time, which
/// `UUID7.UNSEAL` turns back into the UUIDv7.
pub fn uuid7_next(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    next(ctx, args, s, Form128::Uuid7)
}

/// `ULID.NEXT [COUNT n]`.
pub fn ulid_next(ctx: &Ctx, args: Args, s: &mut State) -> Result<(), CommandError> {
    next(ctx, args, s, Form128::Ulid)
}

/// `UUID7.DECODE uuid`.
pub fn uuid7_decode(ctx: &Ctx, args: Args, _: &mut State) -> Result<(), CommandError> {
    decode(ctx, args, Form128::Uuid7)
}

/// `ULID.DECODE ulid`.
pub fn ulid_decode(ctx: &Ctx, args: Args, _: &mut State) -> Result<(), CommandError> {
    decode(ctx, args, Form128::Ulid)
}

/// `UUID7.FROMTIME t [MAX]`.
pub fn uuid7_fromtime(ctx: &Ctx, args: Args, _: &mut State) -> Result<(), CommandError> {
    fromtime(ctx, args, Form128::Uuid7)
}

/// `ULID.FROMTIME t [MAX]`.
pub fn ulid_fromtime(ctx: &Ctx, args: Args, _: &mut State) -> Result<(), CommandError> {
    fromtime(ctx, args, Form128::Ulid)
}

/// The lowest ID (with MAX, the highest) of the millisecond `t` (Unix ms or ISO-8601).
fn fromtime(ctx: &Ctx, mut args: Args, form: Form128) -> Result<(), CommandError> {
    let (unix_ms, end) = time_and_end(&mut args)?;
    reply_text(ctx, form, idgen_core::time128_at(form, unix_ms, end)?)
}

fn name(form: Form128) -> &'static str {
    match form {
        Form128::Uuid7 => "UUID7.NEXT",
        Form128::Ulid => "ULID.NEXT",
    }
}

/// One ID as a bulk string, or `COUNT n` of them as an array, increasing.
fn next(ctx: &Ctx, mut args: Args, s: &mut State, form: Form128) -> Result<(), CommandError> {
    // COUNT n, and SEALED for UUIDs.
    let most = if form == Form128::Uuid7 { 4 } else { 3 };
    if args.len() > most {
        return Err(CommandError::WrongArity);
    }
    let (mut count, mut sealed) = (None, false);
    args.options(|option, args| {
        if form == Form128::Uuid7 && crate::cmd::seal::take(&mut sealed, option) {
            return Ok(true);
        }
        if !option.eq_ignore_ascii_case(b"COUNT") {
            return Ok(false);
        }
        count = Some(args.next_count(MAX_COUNT)? as usize);
        Ok(true)
    })?;
    crate::cmd::seal::check(s, sealed, count.unwrap_or(1) as u64)?;
    if s.replica() && !s.config().flag(|c| &c.random_ids_on_replica) {
        return Err(CommandError::ReplicaRandom(name(form)));
    }
    // Checked above: a sealer is set when SEALED is given.
    let (ids, sealer) = s.time128_and_sealer();
    let sealer = sealer.filter(|_| sealed);
    let out = |id: u128| sealer.map_or(Ok(id), |sealer| sealer.seal_uuid7(id));
    let Some(n) = count else {
        return reply_text(ctx, form, out(ids.next_id(form)?)?);
    };
    let batch = ids.next_ids(form, n)?;
    ctx.reply_array(batch.len())?;
    batch
        .iter()
        .try_for_each(|&id| reply_text(ctx, form, out(id)?))
}

/// Replies with the canonical text of `id`.
fn reply_text(ctx: &Ctx, form: Form128, id: u128) -> Result<(), CommandError> {
    match form {
        Form128::Uuid7 => {
            let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
            let text = Uuid::from_u128(id).hyphenated().encode_lower(&mut buf);
            ctx.reply_bytes(text.as_bytes())
        }
        Form128::Ulid => {
            let mut buf = [0u8; ulid::ULID_LEN];
            ctx.reply_bytes(Ulid(id).array_to_str(&mut buf).as_bytes())
        }
    }
}

/// `time_ms`, `time` (ISO-8601) and `random` (the random bits, in hex) of a UUIDv7 or ULID.
fn decode(ctx: &Ctx, mut args: Args, form: Form128) -> Result<(), CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity);
    }
    let raw = args.next_bytes().ok_or(CommandError::WrongArity)?;
    let value = parse(raw, form)?;
    let (unix_ms, random) = form
        .decompose(value)
        .map_err(|e| CommandError::OutOfRange(format!("{} is {e}", crate::error::shown(raw))))?;
    ctx.reply_map(3)?;
    ctx.reply_bytes(b"time_ms")?;
    ctx.reply_i64(unix_ms as i64)?;
    ctx.reply_bytes(b"time")?;
    with_utc_text(unix_ms as i64, |iso| ctx.reply_bytes(iso.as_bytes()))?;
    ctx.reply_bytes(b"random")?;
    let mut hex = [0u8; 32];
    ctx.reply_bytes(crate::digits::lower_hex(
        random,
        form.random_bits().div_ceil(4) as usize,
        &mut hex,
    ))
}

/// The 128 bits of a UUID or ULID in text, refusing what its specification calls invalid.
fn parse(raw: &[u8], form: Form128) -> Result<u128, CommandError> {
    let shown = crate::error::shown(raw);
    let bad = |why: String| CommandError::OutOfRange(format!("{shown} is {why}"));
    Ok(match form {
        // RFC 9562's text form only: 8-4-4-4-12 hex digits (any case), not the braced, URN or
        // hyphen-less forms the parser also knows.
        Form128::Uuid7 if raw.len() != 36 || raw[8] != b'-' => {
            return Err(bad(
                "not a UUID in RFC 9562's text form: 8-4-4-4-12 hex digits".into(),
            ))
        }
        Form128::Uuid7 => Uuid::try_parse_ascii(raw)
            .map_err(|e| bad(format!("not a UUID: {e}")))?
            .as_u128(),
        // 26 characters of Crockford base32 hold 130 bits; the spec refuses a first character
        // above 7, which would not fit in 128.
        Form128::Ulid if raw.first().is_some_and(|c| *c > b'7' && raw.len() == 26) => {
            return Err(bad(
                "not a ULID: above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ, the largest".into(),
            ))
        }
        Form128::Ulid => {
            let text = std::str::from_utf8(raw).map_err(|_| bad("not a ULID: not text".into()))?;
            Ulid::from_string(text)
                .map_err(|e| bad(format!("not a ULID: {e}")))?
                .0
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_read_only_in_its_text_form() {
        let canonical = "01a209df-4889-71b1-a99e-19803b3ccc77";
        let value = parse(canonical.as_bytes(), Form128::Uuid7).unwrap();
        assert_eq!(
            parse(canonical.to_uppercase().as_bytes(), Form128::Uuid7).unwrap(),
            value
        );
        for other in [
            "01a209df488971b1a99e19803b3ccc77",
            "{01a209df-4889-71b1-a99e-19803b3ccc77}",
            "urn:uuid:01a209df-4889-71b1-a99e-19803b3ccc77",
            "01a209df-4889-71b1-a99e-19803b3ccc7g",
            "",
        ] {
            let err = parse(other.as_bytes(), Form128::Uuid7)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("ERR '{other}' is not a UUID")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_ulid_above_128_bits_is_refused() {
        assert!(parse(b"7ZZZZZZZZZZZZZZZZZZZZZZZZZ", Form128::Ulid).is_ok());
        let err = parse(b"8ZZZZZZZZZZZZZZZZZZZZZZZZZ", Form128::Ulid)
            .unwrap_err()
            .to_string();
        assert!(err.contains("above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ"), "{err}");
    }

    #[test]
    fn a_ulid_is_crockford_base32_of_26_characters() {
        assert_eq!(
            parse(b"01m84xyj4k2rfpq8agh8th5exx", Form128::Ulid).unwrap(),
            parse(b"01M84XYJ4K2RFPQ8AGH8TH5EXX", Form128::Ulid).unwrap(),
        );
        for other in [
            &b"01M84XYJ4K2RFPQ8AGH8TH5EXU"[..],
            b"01M84XYJ4K2RFPQ8AGH8TH5EX",
            b"\xe9",
        ] {
            let err = parse(other, Form128::Ulid).unwrap_err().to_string();
            assert!(err.contains("is not a ULID"), "{err}");
        }
    }
}

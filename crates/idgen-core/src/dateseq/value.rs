//! Turning a day's counter into an ID: `yyyyMMdd * 10^digits + seq`.

use std::fmt;

/// Default number of digits for the sequence part.
pub const DEFAULT_DIGITS: u32 = 6;

/// The most digits that keep every value within a signed 64-bit integer
/// (99991231 * 10^10 + 10^10 - 1 < 2^63).
pub const MAX_DIGITS: u32 = 10;

/// Why a counter value could not become an ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueError {
    /// Digits outside 1..=[`MAX_DIGITS`].
    DigitsOutOfRange(i64),
    /// The day's counter no longer fits in `digits` digits.
    SequenceOverflow { date: u32, digits: u32 },
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::DigitsOutOfRange(d) => {
                write!(f, "DIGITS must be between 1 and {MAX_DIGITS}, got {d}")
            }
            ValueError::SequenceOverflow { date, digits } => write!(
                f,
                "the sequence for {date} is spent: it no longer fits in {digits} digits"
            ),
        }
    }
}

impl std::error::Error for ValueError {}

/// Checks a DIGITS argument.
///
/// # Errors
/// [`ValueError::DigitsOutOfRange`] outside 1..=[`MAX_DIGITS`].
pub fn check_digits(digits: i64) -> Result<u32, ValueError> {
    if (1..=MAX_DIGITS as i64).contains(&digits) {
        Ok(digits as u32)
    } else {
        Err(ValueError::DigitsOutOfRange(digits))
    }
}

/// `date * 10^digits + seq`, for `seq` in `0..10^digits`.
///
/// Values with different `digits` never collide: they have different numbers of decimal digits.
///
/// # Errors
/// [`ValueError::SequenceOverflow`] when `seq` needs more than `digits` digits (it never wraps
/// into another day's values), [`ValueError::DigitsOutOfRange`] for bad `digits`.
pub fn compose(date: u32, digits: u32, seq: u64) -> Result<i64, ValueError> {
    let digits = check_digits(digits as i64)?;
    let scale = SCALES[digits as usize];
    if seq >= scale {
        return Err(ValueError::SequenceOverflow { date, digits });
    }
    Ok((date as u64 * scale + seq) as i64)
}

/// 10^d for every d up to [`MAX_DIGITS`]: a load, not a loop, on every call.
const SCALES: [u64; MAX_DIGITS as usize + 1] = {
    let mut scales = [1u64; MAX_DIGITS as usize + 1];
    let mut d = 1;
    while d < scales.len() {
        scales[d] = scales[d - 1] * 10;
        d += 1;
    }
    scales
};

/// The highest sequence `digits` digits hold (`digits` checked by [`check_digits`]).
pub fn most_in(digits: u32) -> u64 {
    SCALES[digits.min(MAX_DIGITS) as usize] - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_a_counter_holds_is_all_nines() {
        assert_eq!(
            (most_in(1), most_in(6), most_in(10)),
            (9, 999_999, 9_999_999_999)
        );
    }

    #[test]
    fn composes_the_documented_example() {
        assert_eq!(compose(20261122, 6, 42), Ok(20261122000042));
        assert_eq!(
            compose(99991231, 10, 9_999_999_999),
            Ok(999_912_319_999_999_999)
        );
    }

    #[test]
    fn overflowing_digits_is_an_error_not_a_wrap() {
        assert_eq!(compose(20261122, 2, 99), Ok(2026112299));
        assert_eq!(
            compose(20261122, 2, 100),
            Err(ValueError::SequenceOverflow {
                date: 20261122,
                digits: 2
            })
        );
    }

    #[test]
    fn digits_outside_the_range_are_refused() {
        for d in [0, 11, -1, i64::MAX] {
            assert_eq!(check_digits(d), Err(ValueError::DigitsOutOfRange(d)));
        }
        assert_eq!(
            compose(20261122, 11, 1),
            Err(ValueError::DigitsOutOfRange(11))
        );
    }
}

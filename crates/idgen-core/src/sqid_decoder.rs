//! Sqids decoding for one alphabet: the numbers a Sqid holds, read as the Sqids specification
//! reads them, with no allocation. The `sqids` crate builds a set of the alphabet,
//! a rotated copy, a string and a vector of chunks per call, and finds each letter by a linear
//! scan; here one table per alphabet state maps a letter to its digit.
//!
//! [`crate::SqidCodec::decode`] re-encodes what this reads and keeps it only when that gives
//! the very string back. A Sqid's encoding decodes to its numbers under both this and the
//! crate, so the two accept the same strings, though on a string no encode makes (which both
//! then refuse) they may read different numbers.

use crate::sqid_encoder::{shuffle, SqidEncoder, MAX_ALPHABET};

/// Marks, in a letter's table entry, the separator and a letter outside the alphabet.
const SEPARATOR: u8 = u8::MAX - 1;
const OUTSIDE: u8 = u8::MAX;

/// Reads Sqids of one alphabet.
#[derive(Clone, Debug)]
pub struct SqidDecoder {
    /// The alphabet as the encoder keeps it (shuffled once), twice over, so that a rotation is
    /// a slice.
    doubled: Vec<u8>,
    /// Each ASCII letter's place in the alphabet, or [`OUTSIDE`].
    places: [u8; 128],
}

impl SqidDecoder {
    /// A decoder of what `encoder` makes.
    pub fn new(encoder: &SqidEncoder) -> SqidDecoder {
        let alphabet = encoder.alphabet();
        let mut places = [OUTSIDE; 128];
        for (place, &letter) in alphabet.iter().enumerate() {
            places[usize::from(letter)] = place as u8;
        }
        SqidDecoder {
            doubled: [alphabet, alphabet].concat(),
            places,
        }
    }

    /// Writes the numbers `id` holds into `out`, at most its length; how many. `None` where a
    /// letter is outside the alphabet, a number overflows 64 bits or there are more than fit.
    pub fn decode(&self, id: &[u8], out: &mut [u64]) -> Option<usize> {
        let len = self.doubled.len() / 2;
        let (&prefix, mut rest) = id.split_first()?;
        let offset = usize::from(*self.places.get(usize::from(prefix))?);
        if offset == usize::from(OUTSIDE) {
            return None;
        }
        let base = len as u64 - 1;
        // The first number, read through the places: under the alphabet rotated by the
        // prefix's place and reversed, a letter's place there is its distance back from the
        // prefix's last letter; the first place separates, the rest are digits.
        let first = |letter: u8| match self.places.get(usize::from(letter)) {
            Some(&place) if place != OUTSIDE => {
                let back = offset + len - 1 - usize::from(place);
                match if back >= len { back - len } else { back } {
                    0 => SEPARATOR,
                    at => (at - 1) as u8,
                }
            }
            _ => OUTSIDE,
        };
        let (n, read) = number(rest, base, first)?;
        if read == 0 {
            return Some(0);
        }
        *out.first_mut()? = n;
        let mut count = 1;
        let Some(after) = rest.get(read + 1..) else {
            return Some(count);
        };
        // More: the working alphabet, shuffled after each number, and a table of it.
        let rotated = &self.doubled[offset..offset + len];
        let mut work = [0u8; MAX_ALPHABET];
        let work = &mut work[..len];
        for (letter, &from) in work.iter_mut().zip(rotated.iter().rev()) {
            *letter = from;
        }
        shuffle(work);
        rest = after;
        while !rest.is_empty() {
            let digits = table(work);
            let (n, read) = number(rest, base, |letter| {
                digits.get(usize::from(letter)).copied().unwrap_or(OUTSIDE)
            })?;
            // An empty number: the padding starts here.
            if read == 0 {
                break;
            }
            *out.get_mut(count)? = n;
            count += 1;
            rest = match rest.get(read + 1..) {
                Some(after) => {
                    shuffle(work);
                    after
                }
                None => &[],
            };
        }
        Some(count)
    }
}

/// The number at the start of `letters` up to a separator, and how many letters it took;
/// `None` for a letter outside the alphabet or past 64 bits.
#[inline]
fn number(letters: &[u8], base: u64, digit: impl Fn(u8) -> u8) -> Option<(u64, usize)> {
    let mut n = 0u64;
    for (read, &letter) in letters.iter().enumerate() {
        match digit(letter) {
            SEPARATOR => return Some((n, read)),
            OUTSIDE => return None,
            d => n = n.checked_mul(base)?.checked_add(u64::from(d))?,
        }
    }
    Some((n, letters.len()))
}

/// Each ASCII letter's digit under `work` (its first letter separates, the rest are digits).
fn table(work: &[u8]) -> [u8; 128] {
    let mut digits = [OUTSIDE; 128];
    digits[usize::from(work[0])] = SEPARATOR;
    for (d, &letter) in work[1..].iter().enumerate() {
        digits[usize::from(letter)] = d as u8;
    }
    digits
}

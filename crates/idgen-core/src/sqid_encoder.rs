//! Sqids encoding built for one alphabet, giving exactly the strings of the `sqids` crate's
//! `encode` (a differential test holds it to that), at a fraction of the cost: the crate
//! collects the rotated alphabet into a new vector, builds each string from vectors of
//! characters and lowercases it, then scans every blocked word over it, on every call. Here
//! the rotation is read through a doubled alphabet, the string is written straight into the
//! caller's buffer, and the blocklist is one automaton run once over the string.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

/// Every variant of a Sqid holds a blocked word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocked;

/// The longest alphabet: every printable ASCII character but the space.
pub(crate) const MAX_ALPHABET: usize = 94;

/// Encodes lists of numbers with one alphabet, minimum length and blocklist.
#[derive(Clone, Debug)]
pub struct SqidEncoder {
    /// The alphabet as the crate keeps it (shuffled once), twice over: a rotation by `o`
    /// reversed is `doubled[o + len - 1 - j]`, with no wrap to compute.
    doubled: Vec<u8>,
    min_length: usize,
    blocklist: Option<Blocklist>,
}

/// The blocked words, as one automaton that ignores ASCII case.
#[derive(Clone, Debug)]
struct Blocklist {
    words: AhoCorasick,
    /// Per word: its length, and whether it holds a digit (then it blocks only at either end).
    rules: Vec<(usize, bool)>,
}

impl SqidEncoder {
    /// An encoder over `alphabet` (3 to 94 distinct printable ASCII characters, checked by the
    /// caller), padding to `min_length`, blocking `words` as the crate does: each lowercased,
    /// kept if it has 3 or more characters all in the lowercased alphabet.
    pub fn new<'w>(
        alphabet: &[u8],
        min_length: u8,
        words: impl IntoIterator<Item = &'w str>,
    ) -> SqidEncoder {
        debug_assert!((3..=MAX_ALPHABET).contains(&alphabet.len()));
        let mut shuffled = alphabet.to_vec();
        shuffle(&mut shuffled);
        let kept = kept_words(alphabet, words);
        let blocklist = (!kept.is_empty()).then(|| Blocklist {
            words: AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::DFA))
                .build(&kept)
                .expect("a few hundred short words fit a DFA"),
            rules: kept
                .iter()
                .map(|w| (w.len(), w.bytes().any(|b| b.is_ascii_digit())))
                .collect(),
        });
        SqidEncoder {
            doubled: [shuffled.as_slice(), shuffled.as_slice()].concat(),
            min_length: usize::from(min_length),
            blocklist,
        }
    }

    /// The alphabet as the crate keeps it: shuffled once.
    pub(crate) fn alphabet(&self) -> &[u8] {
        &self.doubled[..self.doubled.len() / 2]
    }

    /// The minimum length.
    pub(crate) fn min_length(&self) -> usize {
        self.min_length
    }

    /// Writes the Sqid of `numbers` (1 or more) into `out`, which it clears first.
    ///
    /// # Errors
    /// [`Blocked`] when every variant holds a blocked word.
    pub fn encode(&self, numbers: &[u64], out: &mut impl Sink) -> Result<(), Blocked> {
        let len = self.doubled.len() / 2;
        // The crate tries one more variant than the alphabet has letters.
        for increment in 0..=len {
            out.clear();
            self.encode_variant(numbers, increment, out);
            if !self.blocked(out.as_slice()) {
                return Ok(());
            }
        }
        Err(Blocked)
    }

    /// The variant `increment` of the Sqid of `numbers`.
    #[inline]
    fn encode_variant(&self, numbers: &[u64], increment: usize, out: &mut impl Sink) {
        let len = self.doubled.len() / 2;
        let alphabet = &self.doubled[..len];
        let offset = numbers
            .iter()
            .enumerate()
            .fold(numbers.len(), |sum, (i, &n)| {
                usize::from(alphabet[(n % len as u64) as usize]) + i + sum
            });
        let offset = (offset % len + increment) % len;
        out.push(alphabet[offset]);
        // The alphabet rotated by `offset`, reversed: its first letter separates, the rest are
        // the digits.
        let rotated = &self.doubled[offset..offset + len];
        let Some((&last, rest)) = numbers.split_last() else {
            return;
        };
        if rest.is_empty() {
            // One number and (nearly always) no padding: no working copy of the alphabet.
            push_digits(last, len - 1, |d| rotated[len - 2 - d], out);
            if out.len() >= self.min_length {
                return;
            }
        }
        out.truncate(1);
        let mut work = [0u8; MAX_ALPHABET];
        let work = &mut work[..len];
        for (j, letter) in work.iter_mut().enumerate() {
            *letter = rotated[len - 1 - j];
        }
        for &n in rest {
            push_digits(n, len - 1, |d| work[1 + d], out);
            out.push(work[0]);
            shuffle(work);
        }
        push_digits(last, len - 1, |d| work[1 + d], out);
        if self.min_length > out.len() {
            out.push(work[0]);
            while self.min_length > out.len() {
                shuffle(work);
                let take = (self.min_length - out.len()).min(len);
                out.extend_from_slice(&work[..take]);
            }
        }
    }

    /// Whether the crate's blocklist refuses `id`: a word equal to it when either is 3
    /// characters or shorter; else a word with a digit at its start or end; else any word in it.
    fn blocked(&self, id: &[u8]) -> bool {
        let Some(list) = &self.blocklist else {
            return false;
        };
        list.words.find_overlapping_iter(id).any(|m| {
            let (word_len, has_digit) = list.rules[m.pattern().as_usize()];
            if id.len() <= 3 || word_len <= 3 {
                m.start() == 0 && m.end() == id.len()
            } else if has_digit {
                m.start() == 0 || m.end() == id.len()
            } else {
                true
            }
        })
    }
}

/// The blocked words that can appear in a Sqid of `alphabet`, as the crate keeps them: each
/// lowercased, kept if it has 3 or more characters all in the lowercased alphabet; sorted.
pub(crate) fn kept_words<'w>(
    alphabet: &[u8],
    words: impl IntoIterator<Item = &'w str>,
) -> Vec<String> {
    let lowercase: Vec<u8> = alphabet.iter().map(u8::to_ascii_lowercase).collect();
    let mut kept: Vec<String> = words
        .into_iter()
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 3 && w.bytes().all(|b| lowercase.contains(&b)))
        .collect();
    kept.sort_unstable();
    kept.dedup();
    kept
}

/// Where an encoder writes a Sqid: a vector, or [`StackSink`].
pub trait Sink {
    fn clear(&mut self) {
        self.truncate(0);
    }
    fn push(&mut self, letter: u8);
    fn extend_from_slice(&mut self, letters: &[u8]);
    fn truncate(&mut self, len: usize);
    fn len(&self) -> usize;
    fn as_slice(&self) -> &[u8];
}

impl Sink for Vec<u8> {
    fn push(&mut self, letter: u8) {
        Vec::push(self, letter);
    }
    fn extend_from_slice(&mut self, letters: &[u8]) {
        Vec::extend_from_slice(self, letters);
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn as_slice(&self) -> &[u8] {
        self
    }
}

/// A Sqid of up to `N` letters on the stack: no allocation for the common one. Past `N` it
/// keeps counting but stops writing, and says so ([`StackSink::overflowed`]), never panicking.
pub struct StackSink<const N: usize> {
    letters: [u8; N],
    len: usize,
}

impl<const N: usize> StackSink<N> {
    pub fn new() -> Self {
        StackSink {
            letters: [0; N],
            len: 0,
        }
    }

    /// Whether more than `N` letters were written (the string is then cut).
    pub fn overflowed(&self) -> bool {
        self.len > N
    }
}

impl<const N: usize> Sink for StackSink<N> {
    fn push(&mut self, letter: u8) {
        if let Some(slot) = self.letters.get_mut(self.len) {
            *slot = letter;
        }
        self.len += 1;
    }
    fn extend_from_slice(&mut self, letters: &[u8]) {
        let end = self.len + letters.len();
        if let Some(slots) = self.letters.get_mut(self.len..end) {
            slots.copy_from_slice(letters);
        }
        self.len = end;
    }
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
    fn len(&self) -> usize {
        self.len
    }
    fn as_slice(&self) -> &[u8] {
        &self.letters[..self.len.min(N)]
    }
}

/// Appends `n` in base `base`, most significant digit first, each digit `d` as `letter(d)`.
#[inline]
fn push_digits(mut n: u64, base: usize, letter: impl Fn(usize) -> u8, out: &mut impl Sink) {
    let mut digits = [0u8; 64];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = letter((n % base as u64) as usize);
        n /= base as u64;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The Sqids specification's deterministic shuffle.
pub(crate) fn shuffle(letters: &mut [u8]) {
    let len = letters.len();
    for i in 0..len - 1 {
        let j = len - 1 - i;
        let r = (i * j + usize::from(letters[i]) + usize::from(letters[j])) % len;
        letters.swap(i, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqids::Sqids;

    /// A small deterministic generator (splitmix64), so a failure names its inputs.
    struct Numbers(u64);

    impl Numbers {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Mostly small and mostly large numbers, and the edges.
        fn number(&mut self) -> u64 {
            let r = self.next();
            match r % 8 {
                0 => r % 100,
                1 => u64::MAX - r % 4,
                2 => r >> (r % 64),
                _ => r,
            }
        }
    }

    /// The alphabets the differential tests run over: the default, the shortest, every
    /// printable character, cases and digits and punctuation mixed, and orders that put the
    /// blocklist's letters or digits first.
    fn alphabets() -> Vec<String> {
        let printable: String = (0x21u8..=0x7e).map(char::from).collect();
        vec![
            sqids::DEFAULT_ALPHABET.to_string(),
            sqids::DEFAULT_ALPHABET.chars().rev().collect(),
            "abc".to_string(),
            "xyz".to_string(),
            "0a1".to_string(),
            "sexSEX".to_string(),
            "fuckFUCK0123".to_string(),
            "abcdefghijklmnopqrstuvwxyz".to_string(),
            "0123456789abcdef".to_string(),
            "!#$%&()*+-./:;<=>?@[]^_{|}~".to_string(),
            printable,
        ]
    }

    fn reference(alphabet: &str, min_length: u8, words: &[String]) -> Sqids {
        Sqids::builder()
            .alphabet(alphabet.chars().collect())
            .min_length(min_length)
            .blocklist(words.iter().cloned().collect())
            .build()
            .unwrap()
    }

    /// Encodes `lists` both ways and compares; the number of lists compared.
    fn compare(alphabet: &str, min_length: u8, words: &[String], lists: &[Vec<u64>]) -> usize {
        let ours = SqidEncoder::new(
            alphabet.as_bytes(),
            min_length,
            words.iter().map(String::as_str),
        );
        let theirs = reference(alphabet, min_length, words);
        let mut out = Vec::new();
        for numbers in lists {
            let expected = theirs.encode(numbers).map_err(|_| Blocked);
            let got = ours
                .encode(numbers, &mut out)
                .map(|()| String::from_utf8(out.clone()).unwrap());
            assert_eq!(
                got, expected,
                "alphabet {alphabet:?}, min length {min_length}, numbers {numbers:?}"
            );
        }
        lists.len()
    }

    /// `n` lists: single numbers mostly, and lists of 2 to 16.
    fn lists(seed: u64, n: usize) -> Vec<Vec<u64>> {
        let mut gen = Numbers(seed);
        let mut lists: Vec<Vec<u64>> = [0, 1, 2, 60, 61, 62, 63, u64::MAX, u64::MAX - 1]
            .iter()
            .map(|&n| vec![n])
            .collect();
        while lists.len() < n {
            let count = if gen.next().is_multiple_of(4) {
                2 + gen.next() % 15
            } else {
                1
            };
            lists.push((0..count).map(|_| gen.number()).collect());
        }
        lists
    }

    /// Every differential case: each alphabet, minimum lengths from none to the largest, the
    /// default blocklist and one that blocks many short strings (so that variants are tried).
    fn differential(per_case: usize) -> usize {
        let default: Vec<String> = sqids::default_blocklist().into_iter().collect();
        let dense: Vec<String> = [
            "abc", "bca", "cab", "xyz", "zyx", "0a1", "a1a", "sex", "ses",
        ]
        .iter()
        .map(|w| w.to_string())
        .collect();
        let mut compared = 0;
        for (a, alphabet) in alphabets().iter().enumerate() {
            for min_length in [0, 1, 4, 10, 33, 255] {
                for (b, words) in [&default, &dense, &Vec::new()].into_iter().enumerate() {
                    let seed = (a * 1000 + usize::from(min_length) * 10 + b) as u64;
                    compared += compare(alphabet, min_length, words, &lists(seed, per_case));
                }
            }
        }
        compared
    }

    #[test]
    fn gives_the_sqids_crates_strings() {
        assert!(differential(60) > 10_000);
    }

    /// A million lists (make test runs the ignored tests beside the suites).
    #[test]
    #[ignore]
    fn gives_the_sqids_crates_strings_for_a_million_lists() {
        assert!(differential(5_100) >= 1_000_000);
    }

    #[test]
    fn a_blocklist_that_leaves_no_variant_is_refused_as_the_crate_refuses_it() {
        // Every 3-letter string of a 3-letter alphabet is blocked.
        let mut words = Vec::new();
        for x in ['a', 'b', 'c'] {
            for y in ['a', 'b', 'c'] {
                for z in ['a', 'b', 'c'] {
                    words.push(format!("{x}{y}{z}"));
                }
            }
        }
        assert_eq!(compare("abc", 3, &words, &[vec![0], vec![1], vec![5]]), 3);
        let ours = SqidEncoder::new(b"abc", 3, words.iter().map(String::as_str));
        assert_eq!(ours.encode(&[0], &mut Vec::new()), Err(Blocked));
    }
}

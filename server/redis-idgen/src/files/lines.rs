//! What the witness files' text has in common: one entry a line, appended, so a crash can cut
//! only the last line short ([`whole`] skips it); Redis key names of any bytes as one word
//! ([`write_name`]); and the error for a line this module never writes ([`Foreign`]).

use std::fmt;
use std::io::Write;

/// Every whole line of `text` with its index (from 0): a last line without its newline was
/// never synced whole, so nothing waited on it, and it is skipped.
pub fn whole(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let end = text.iter().rposition(|&b| b == b'\n');
    end.map(|end| text[..end].split(|&b| b == b'\n'))
        .into_iter()
        .flatten()
        .enumerate()
}

/// Appends `name` as one word: every byte outside `!`..`~`, and `%` itself, written `%XX`. The
/// empty name (a lease namespace may be the empty key) is the empty word: a line's last.
pub fn write_name(name: &[u8], out: &mut Vec<u8>) {
    for &b in name {
        if (b'!'..=b'~').contains(&b) && b != b'%' {
            out.push(b);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// A word of a line as a number, or None when it is missing or not one.
pub fn number<T: std::str::FromStr>(word: Option<&[u8]>) -> Option<T> {
    std::str::from_utf8(word?).ok()?.parse().ok()
}

/// The name a word written by [`write_name`] stands for (the empty word for the empty name);
/// `None` for a word it never writes.
pub fn parse_name(word: &[u8]) -> Option<Vec<u8>> {
    let mut name = Vec::with_capacity(word.len());
    let mut bytes = word.iter();
    while let Some(&b) = bytes.next() {
        if b == b'%' {
            let hex = [*bytes.next()?, *bytes.next()?];
            name.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else if (b'!'..=b'~').contains(&b) {
            name.push(b);
        } else {
            return None;
        }
    }
    Some(name)
}

/// A line of a witness file this module never writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Foreign {
    /// Its number, from 1.
    pub line: usize,
    /// Its text (cut to 80 bytes), for the error.
    pub text: String,
    /// What the file's lines look like.
    pub expected: &'static str,
}

impl Foreign {
    /// Line `i` (from 0) of a file whose lines look like `expected`.
    pub fn at(i: usize, line: &[u8], expected: &'static str) -> Foreign {
        Foreign {
            line: i + 1,
            text: String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned(),
            expected,
        }
    }
}

impl fmt::Display for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} ({:?}) is not {}: this module never writes that",
            self.line, self.text, self.expected
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_comes_back_and_the_word_has_no_space() {
        let name: Vec<u8> = (0..=255u8).collect();
        let mut out = Vec::new();
        write_name(&name, &mut out);
        assert!(out.iter().all(|b| (b'!'..=b'~').contains(b)));
        assert_eq!(parse_name(&out), Some(name));
    }

    #[test]
    fn a_last_line_without_its_newline_is_skipped() {
        let lines: Vec<_> = whole(b"a\nb\nc").collect();
        assert_eq!(lines, [(0, &b"a"[..]), (1, &b"b"[..])]);
        assert_eq!(whole(b"cut").count(), 0);
        assert_eq!(whole(b"").count(), 0);
        assert_eq!(whole(b"\n").collect::<Vec<_>>(), [(0, &b""[..])]);
    }

    #[test]
    fn hostile_names_come_back_as_one_word() {
        let mut names: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b" ".to_vec(),
            b"a b".to_vec(),
            b"\n".to_vec(),
            b"\r\n".to_vec(),
            b"%".to_vec(),
            b"%25".to_vec(),
            b"\0".to_vec(),
            b"\xff\xfe".to_vec(),
            "\u{1F600}".as_bytes().to_vec(),
            vec![b'x'; 1 << 20],
            (0..=255u8).cycle().take(1 << 20).collect(),
        ];
        // And pseudo-random ones of every length up to 64 (a fixed seed: the same each run).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..=64 {
            names.push(
                (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect(),
            );
        }
        for name in names {
            let mut out = Vec::new();
            write_name(&name, &mut out);
            assert!(!out.contains(&b' ') && !out.contains(&b'\n'));
            assert_eq!(parse_name(&out).as_deref(), Some(&name[..]));
        }
    }

    #[test]
    fn words_it_never_writes_are_refused() {
        for word in [&b"%G0"[..], b"%4", b"%", b"a b", b"\xff"] {
            assert_eq!(parse_name(word), None, "{word:?}");
        }
    }
}

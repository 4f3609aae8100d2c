//! The lease witness file: how far each lease namespace went, as its coordinator acknowledged
//! it, and the fence grants start above. It makes a coordinator's restart safe without waiting:
//! a namespace found at or above its witness holds every grant and renewal a holder was told
//! of, so its records can be trusted at once; one found behind it (an older RDB or AOF, a crash
//! before the AOF was synced, a key lost with the server down) is reset as a namespace lost
//! while running is ([`crate::leases::pool::Pool::reset_if_behind`]).
//!
//! Lines, appended:
//! - `<version> <token> <namespace>`: the namespace's [`Seen`] after a write, its name as one
//!   word ([`crate::files::lines`]); a later line supersedes an earlier one only upward;
//! - `fence <ms>`: every grant starts above it. Written by a start that found no file (the
//!   namespaces it loaded may lack renewals no witness saw) and by a promotion (another primary
//!   acknowledged what this server's copy may lack), so that a restart within a horizon of
//!   either keeps the fence.
//!
//! A namespace stays in the file for as long as the file lives: one found behind must be reset
//! however long ago it was last used. A line cut short by a crash is skipped; any other line
//! this module would not write makes the file foreign, and it is refused.

use std::collections::BTreeMap;

use crate::files::lines::{self, number, Foreign};
use crate::leases::pool::Seen;

/// What a line of the file looks like, for [`Foreign`].
const FORMAT: &str = "`<version> <token> <namespace>` or `fence <ms>`";

/// What the file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witnessed {
    /// The highest fence: grants start above it.
    pub fence_ms: i64,
    /// The highest version and token acknowledged in each namespace.
    pub namespaces: BTreeMap<Vec<u8>, Seen>,
}

/// One line to append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A namespace's version and token after a write.
    Namespace(Vec<u8>, Seen),
    /// A fence grants start above.
    Fence(i64),
}

impl Line {
    /// Appends the line.
    pub fn write(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        match self {
            Line::Namespace(name, seen) => {
                let _ = write!(out, "{} {} ", seen.version, seen.token);
                lines::write_name(name, out);
            }
            Line::Fence(ms) => {
                let _ = write!(out, "fence {ms}");
            }
        }
        out.push(b'\n');
    }

    /// One line of the file (without its newline).
    fn parse(line: &[u8]) -> Option<Line> {
        let mut words = line.split(|&b| b == b' ');
        let first = words.next()?;
        let parsed = if first == b"fence" {
            Line::Fence(number(words.next())?)
        } else {
            let version = number(Some(first))?;
            let token = number(words.next())?;
            let name = lines::parse_name(words.next()?)?;
            Line::Namespace(name, Seen { version, token })
        };
        words.next().is_none().then_some(parsed)
    }
}

impl Witnessed {
    /// Takes in one line: fences and namespaces only ever go up.
    pub fn add(&mut self, line: Line) {
        match line {
            Line::Fence(ms) => self.fence_ms = self.fence_ms.max(ms),
            Line::Namespace(name, seen) => {
                let kept = self.namespaces.entry(name).or_default();
                *kept = kept.max(seen);
            }
        }
    }

    /// The whole file, one line a namespace, and the fence while it has not passed at `now_ms`.
    pub fn render(&self, now_ms: i64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.namespaces.len() * 48 + 32);
        if self.fence_ms > now_ms {
            Line::Fence(self.fence_ms).write(&mut out);
        }
        for (name, seen) in &self.namespaces {
            Line::Namespace(name.clone(), *seen).write(&mut out);
        }
        out
    }
}

/// Every whole line of `text`, the last one skipped if cut short by a crash.
///
/// # Errors
/// [`Foreign`] for the first whole line this module would not write.
pub fn parse(text: &[u8]) -> Result<Witnessed, Foreign> {
    let mut witnessed = Witnessed::default();
    for (i, line) in lines::whole(text) {
        witnessed.add(Line::parse(line).ok_or_else(|| Foreign::at(i, line, FORMAT))?);
    }
    Ok(witnessed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(version: u64, token: u64) -> Seen {
        Seen { version, token }
    }

    #[test]
    fn the_file_comes_back_as_written_with_each_namespace_at_its_highest() {
        let mut out = Vec::new();
        for line in [
            Line::Fence(500),
            Line::Namespace(b"fleet".to_vec(), seen(3, 9_000)),
            Line::Namespace(b"{a b}\n%".to_vec(), seen(1, 1_000)),
            // WORKERID.ACQUIRE takes the empty key as a namespace.
            Line::Namespace(Vec::new(), seen(2, 2_000)),
            Line::Namespace(b"fleet".to_vec(), seen(5, 8_000)),
            Line::Fence(400),
        ] {
            line.write(&mut out);
        }
        let witnessed = parse(&out).unwrap();
        assert_eq!(witnessed.fence_ms, 500);
        assert_eq!(witnessed.namespaces[&b"fleet"[..]], seen(5, 9_000));
        assert_eq!(witnessed.namespaces[&b"{a b}\n%"[..]], seen(1, 1_000));
        assert_eq!(witnessed.namespaces[&b""[..]], seen(2, 2_000));
        assert_eq!(parse(&witnessed.render(0)).unwrap(), witnessed);
        let later = parse(&witnessed.render(500)).unwrap();
        assert_eq!(later.fence_ms, 0, "a fence that passed is not kept");
        assert_eq!(later.namespaces, witnessed.namespaces);
    }

    #[test]
    fn a_line_cut_short_is_skipped_and_a_foreign_one_refused() {
        let mut text = b"3 9000 fleet\n".to_vec();
        text.extend_from_slice(b"7 99");
        assert_eq!(parse(&text).unwrap().namespaces.len(), 1);
        for foreign in [
            &b"hello\n"[..],
            b"3 9000\n",
            b"3 9000 a b\n",
            b"-3 9000 a\n",
            b"3 x a\n",
            b"3 9000 %G0\n",
            b"fence\n",
            b"fence x\n",
            b"fence 5 6\n",
            b"\n",
        ] {
            let mut text = b"3 9000 fleet\n".to_vec();
            text.extend_from_slice(foreign);
            let err = parse(&text).unwrap_err();
            assert_eq!(err.line, 2, "{foreign:?}");
            assert!(err.to_string().contains("fence <ms>"));
        }
    }
}

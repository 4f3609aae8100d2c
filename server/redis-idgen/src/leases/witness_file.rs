//! The lease witness file (`idgen.workerid-witness-file`): each lease namespace's version and
//! token after every write, and the fences grants start above ([`crate::leases::witness_line`]),
//! appended and synced by a [`Journal`] before a grant or renewal is acknowledged.
//!
//! At load it tells which namespaces to trust: one at or above its witness holds everything
//! its holders were told, one behind it is reset at its first use, and one that holds leases
//! but has no witness (restored from another server, or the file is new) is fenced for a
//! horizon. So a clean restart, or a crash with `appendfsync always`, grants usable leases at
//! once, where every start used to fence every namespace for `idgen.workerid-horizon-ms`.
//! A start that finds no file at all still fences every namespace: it cannot tell a first
//! start from a lost file.
//!
//! The file is locked while the module runs (`<file>.lock`): two coordinators on one file
//! would each trust namespaces the other wrote.

use std::path::PathBuf;

use crate::leases::witness_line::{self, Line, Witnessed};
use idgen_durable as durable;

use crate::files::journal::{Book, Journal};

/// The lease witness file: a journal of [`Line`]s.
pub type LeaseWitness = Journal<Line>;

/// What the lease witness file writes, and how it is rewritten.
struct Namespaces;

impl Book for Namespaces {
    type Line = Line;

    fn write(line: &Line, out: &mut Vec<u8>) {
        line.write(out);
    }

    /// Each namespace at its highest, and the highest fence.
    fn fold(lines: Vec<Line>) -> Vec<Line> {
        let mut folded = Witnessed::default();
        for line in lines {
            folded.add(line);
        }
        let fence = (folded.fence_ms > 0).then_some(Line::Fence(folded.fence_ms));
        fence
            .into_iter()
            .chain(
                folded
                    .namespaces
                    .into_iter()
                    .map(|(name, seen)| Line::Namespace(name, seen)),
            )
            .collect()
    }

    /// One line per namespace, and the fence while it holds.
    fn rewrite(&mut self, text: &[u8], now_ms: i64) -> Result<(Vec<u8>, u64), String> {
        let found = witness_line::parse(text).map_err(|e| e.to_string())?;
        let entries = found.namespaces.len() as u64 + 1;
        Ok((found.render(now_ms), entries))
    }
}

/// Takes the lock, reads what earlier runs acknowledged, rewrites the file with one line
/// per namespace, and starts the writer. A file not found is made with `fence_ms` (the load
/// plus the horizon): the namespaces this server loaded may lack renewals no witness saw.
///
/// # Errors
/// When another process holds the lock, or the file cannot be read, is not this module's,
/// or cannot be written: the module must not load then, and the file is left as it was.
pub fn open(
    path: PathBuf,
    (now_ms, fence_ms): (i64, i64),
) -> Result<(LeaseWitness, Witnessed), String> {
    let lock = durable::lock(
        &path,
        "two lease coordinators on one witness file would each trust namespaces the other \
         wrote",
    )?;
    let found = match durable::read(&path).map_err(|e| e.to_string())? {
        Some(text) => witness_line::parse(text.as_bytes()).map_err(|e| {
            format!(
                "{}: {e}; move it away only to have every lease namespace fenced for a \
                 horizon at the next start, as a first start does",
                path.display()
            )
        })?,
        None => Witnessed {
            fence_ms,
            ..Witnessed::default()
        },
    };
    let text = found.render(now_ms);
    durable::replace(&path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let size = (text.len() as u64, found.namespaces.len() as u64 + 1);
    let journal = Journal::start(path, lock, "the lease witness file", size, Namespaces)?;
    Ok((journal, found))
}

#[cfg(test)]
mod tests {
    use crate::leases::pool::Seen;

    use super::*;

    #[test]
    fn a_failed_writes_lines_fold_to_each_namespace_at_its_highest() {
        let seen = |version, token| Seen { version, token };
        let lines = vec![
            Line::Namespace(b"a".to_vec(), seen(1, 10)),
            Line::Fence(5),
            Line::Namespace(b"b".to_vec(), seen(2, 20)),
            Line::Namespace(b"a".to_vec(), seen(3, 30)),
            Line::Fence(9),
            Line::Namespace(b"a".to_vec(), seen(2, 40)),
        ];
        assert_eq!(
            Namespaces::fold(lines),
            [
                Line::Fence(9),
                Line::Namespace(b"a".to_vec(), seen(3, 40)),
                Line::Namespace(b"b".to_vec(), seen(2, 20)),
            ]
        );
        assert_eq!(Namespaces::fold(Vec::new()), []);
    }
}

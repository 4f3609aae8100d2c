//! The witness file of date-sequence counters: how far each counter is reserved on disk, so
//! that a restart from an older RDB or AOF, or a crash before the AOF was synced, carries each
//! counter on above every value handed out before.
//!
//! One line per reservation, appended: `<ends_ms> <reserved> <name>`, the period's end (ms
//! since 1970), the highest value reserved, and the counter key's name as one word
//! ([`crate::files::lines`]). A later line for a name supersedes an earlier one only upward ([`fold`]);
//! lines of periods over by more than the witness's grace are dropped when the file is
//! rewritten.
//!
//! While a server runs, the file starts with `every <n> <from_ms>`: any counter of a period
//! under way since `from_ms` (the run's load) may have handed out up to `n` at DIGITS the line
//! covers (the values new counters take before their own line is written,
//! [`super::witness::first_line_covers`]). A clean shutdown rewrites the file without
//! it, each counter at what it handed out; a file found with it at load means that run crashed,
//! and the next run keeps `crashed <n> <from_ms> <to_ms>` (`to_ms` its own load) for as long as a
//! period that overlapped the crashed run can be under way, clean stops included.
//!
//! A crash can leave the last line cut short: a line without its newline was never synced
//! whole, so no value waited on it, and it is skipped. Any other line this module would not
//! write makes the file foreign, and it is refused.

use std::collections::HashMap;

pub use crate::files::lines::Foreign;

use super::GRACE_MS;
use crate::files::lines::number;

/// One counter's reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The first ms after the counter's period.
    pub ends_ms: i64,
    /// The highest value reserved: none above it was handed out.
    pub reserved: u64,
    /// The counter key's name.
    pub name: Vec<u8>,
}

impl Entry {
    /// Appends the entry as one line of the file.
    pub fn write(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let _ = write!(out, "{} {} ", self.ends_ms, self.reserved);
        crate::files::lines::write_name(&self.name, out);
        out.push(b'\n');
    }

    /// One line of the file (without its newline).
    fn parse(line: &[u8]) -> Option<Entry> {
        let mut words = line.split(|&b| b == b' ');
        let ends_ms: i64 = number(words.next())?;
        let reserved: u64 = number(words.next())?;
        let word = words.next().filter(|w| !w.is_empty())?;
        if words.next().is_some() {
            return None;
        }
        let name = crate::files::lines::parse_name(word)?;
        Some(Entry {
            ends_ms,
            reserved,
            name,
        })
    }
}

/// A run that crashed, and the most any counter of a period overlapping it may have handed out
/// without a line of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crashed {
    pub floor: u64,
    pub from_ms: i64,
    pub to_ms: i64,
}

impl Crashed {
    /// Whether the period from `start_ms` to `ends_ms` overlapped the crashed run.
    pub fn overlaps(&self, start_ms: i64, ends_ms: i64) -> bool {
        ends_ms > self.from_ms && start_ms < self.to_ms
    }
}

/// What the file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// `every <n> <from_ms>`: present while a server runs, so after a crash.
    pub every: Option<(u64, i64)>,
    /// Crashed runs whose periods may still be under way.
    pub crashed: Vec<Crashed>,
    pub entries: Vec<Entry>,
}

/// Every whole line of `text`, the last one skipped if cut short by a crash.
///
/// # Errors
/// [`Foreign`] for the first whole line that is not an entry (or `every <n>` first).
pub fn parse(text: &[u8]) -> Result<Ledger, Foreign> {
    let mut ledger = Ledger::default();
    for (i, line) in crate::files::lines::whole(text) {
        let numbers = |rest: &[u8]| -> Option<Vec<i64>> {
            let text = std::str::from_utf8(rest).ok()?;
            text.split(' ').map(|w| w.parse().ok()).collect()
        };
        if let Some(rest) = line.strip_prefix(b"every ").filter(|_| i == 0) {
            if let Some([n, from @ ..]) = numbers(rest).as_deref() {
                if *n >= 0 && from.len() <= 1 {
                    ledger.every = Some((*n as u64, from.first().copied().unwrap_or(0)));
                    continue;
                }
            }
        }
        if let Some(rest) = line.strip_prefix(b"crashed ") {
            if let Some(&[floor, from_ms, to_ms]) = numbers(rest).as_deref() {
                if floor >= 0 {
                    let floor = floor as u64;
                    ledger.crashed.push(Crashed {
                        floor,
                        from_ms,
                        to_ms,
                    });
                    continue;
                }
            }
        }
        let entry = Entry::parse(line)
            .ok_or_else(|| Foreign::at(i, line, "`<ends_ms> <reserved> <name>`"))?;
        ledger.entries.push(entry);
    }
    Ok(ledger)
}

/// One entry per name, with its highest reservation, leaving out periods over by `now_ms`
/// (ended more than [`GRACE_MS`] before it).
pub fn fold(entries: impl IntoIterator<Item = Entry>, now_ms: i64) -> Vec<Entry> {
    let mut by_name: HashMap<Vec<u8>, Entry> = HashMap::new();
    for entry in entries {
        if now_ms >= entry.ends_ms.saturating_add(GRACE_MS) {
            continue;
        }
        match by_name.get_mut(&entry.name) {
            Some(kept) => {
                kept.reserved = kept.reserved.max(entry.reserved);
                kept.ends_ms = kept.ends_ms.max(entry.ends_ms);
            }
            None => {
                by_name.insert(entry.name.clone(), entry);
            }
        }
    }
    let mut entries: Vec<Entry> = by_name.into_values().collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// The whole file for `entries`, headed by `every <n> <from_ms>` while a server runs, and the
/// crashed runs still to be reckoned with.
pub fn render(every: Option<(u64, i64)>, crashed: &[Crashed], entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 48 + 32);
    if let Some((n, from_ms)) = every {
        out.extend_from_slice(format!("every {n} {from_ms}\n").as_bytes());
    }
    for c in crashed {
        let line = format!("crashed {} {} {}\n", c.floor, c.from_ms, c.to_ms);
        out.extend_from_slice(line.as_bytes());
    }
    for entry in entries {
        entry.write(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: i64 = 1_795_046_400_000;

    fn entry(name: &[u8], reserved: u64) -> Entry {
        Entry {
            ends_ms: END,
            reserved,
            name: name.to_vec(),
        }
    }

    #[test]
    fn any_name_comes_back_as_written() {
        let names: [&[u8]; 5] = [
            b"{inv}:20261126",
            b"{a b}:2026",
            b"{%\n\r\0\xff}:202611",
            b"{caf\xc3\xa9}:20261126",
            b"x",
        ];
        let entries: Vec<Entry> = names.iter().map(|n| entry(n, 7)).collect();
        let crashed = [Crashed {
            floor: 16,
            from_ms: 5,
            to_ms: 9,
        }];
        let text = render(Some((16, 7)), &crashed, &entries);
        assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 7);
        let ledger = parse(&text).unwrap();
        assert_eq!(ledger.every, Some((16, 7)));
        assert_eq!(
            (ledger.crashed, ledger.entries),
            (crashed.to_vec(), entries.clone())
        );
        assert_eq!(parse(&render(None, &[], &entries)).unwrap().every, None);
        assert_eq!(
            parse(b"every 16\n").unwrap().every,
            Some((16, 0)),
            "before from_ms"
        );
    }

    #[test]
    fn a_line_cut_short_is_skipped_and_a_foreign_one_refused() {
        let mut text = render(None, &[], &[entry(b"a", 1), entry(b"b", 2)]);
        text.extend_from_slice(b"1795046400000 9");
        assert_eq!(
            parse(&text).unwrap().entries,
            [entry(b"a", 1), entry(b"b", 2)]
        );
        for foreign in [
            &b"hello\n"[..],
            b"1 2\n",
            b"1 2 a b\n",
            b"x 2 a\n",
            b"1 -2 a\n",
            b"1 2 %G0\n",
            b"1 2 %4\n",
            b"\n",
            b"every 16 5\n",
            b"crashed 16 5\n",
            b"crashed -1 5 9\n",
        ] {
            let mut text = render(None, &[], &[entry(b"a", 1)]);
            text.extend_from_slice(foreign);
            assert_eq!(parse(&text).unwrap_err().line, 2, "{foreign:?}");
        }
    }

    #[test]
    fn folding_keeps_the_highest_reservation_of_each_live_period() {
        let ended = Entry {
            ends_ms: END - GRACE_MS - 1,
            ..entry(b"old", 9)
        };
        let folded = fold(
            [
                entry(b"a", 5),
                entry(b"b", 3),
                entry(b"a", 4),
                entry(b"a", 8),
                ended,
            ],
            END,
        );
        assert_eq!(folded, [entry(b"a", 8), entry(b"b", 3)]);
    }
}

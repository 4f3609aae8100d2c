//! The DATESEQ witness file (`idgen.dateseq-witness-file`): each counter's reservations
//! ([`crate::dateseq::ledger`]), appended and synced by a [`Journal`] before the values
//! below them are handed out.
//!
//! A value above its counter's reservation is replied to once the journal has written a block
//! above it (the client is blocked meanwhile, see `dateseq.rs`), and a counter in steady use has
//! its next block asked half a block ahead, so it never waits. Only inside MULTI or a script,
//! where a client cannot be blocked, does the command wait for the write itself, and then only
//! at a block's end.
//!
//! The file is rewritten whole at load and whenever its lines outnumber four times the
//! counters it holds, dropping periods long over. At a clean shutdown it is rewritten with what
//! each counter actually handed out, so a clean restart skips nothing.
//!
//! The file is locked while the module runs (`<file>.lock`): two servers on one witness file
//! would each take the other's reservations for their own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::dateseq::ledger::{self, Crashed, Entry, Ledger};
use crate::dateseq::witness::NEW_COUNTER_BLOCK;
use crate::dateseq::GRACE_MS;
use idgen_durable as durable;

use crate::files::journal::{Book, Journal};

/// The longest period a counter has (a leap year): a crashed run's window is kept this long.
const LONGEST_PERIOD_MS: i64 = 366 * 86_400_000;

/// A reservation to write: values of counter `name` up to `entry.reserved`.
pub struct Ask {
    /// The counter's witness name (its hash, `Witnesses::name`).
    pub name: u64,
    pub entry: Entry,
}

/// The outcome of one reservation, for the commands' witnesses: `(name, reserved, written)`.
pub type Confirmation = (u64, u64, bool);

/// The witness file and its writer.
pub struct WitnessFile {
    journal: Journal<Ask>,
    confirmed: Arc<Confirmed>,
}

/// The outcomes of the writes, from the writer's thread to the commands.
#[derive(Default)]
struct Confirmed {
    /// Whether `outcomes` holds any: the one load each DATESEQ.NEXT pays.
    news: AtomicBool,
    outcomes: Mutex<Vec<Confirmation>>,
}

/// What the DATESEQ witness file writes, and how it is rewritten.
struct Reservations {
    /// The file's `every` line, and the crashed runs it keeps.
    every: (u64, i64),
    crashed: Vec<Crashed>,
    confirmed: Arc<Confirmed>,
}

impl Book for Reservations {
    type Line = Ask;

    fn write(ask: &Ask, out: &mut Vec<u8>) {
        ask.entry.write(out);
    }

    fn appended(&mut self, asks: &[Ask], written: bool) {
        let mut outcomes = self
            .confirmed
            .outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        outcomes.extend(asks.iter().map(|a| (a.name, a.entry.reserved, written)));
        self.confirmed.news.store(true, Ordering::Release);
    }

    /// Each counter's highest reservation.
    fn fold(asks: Vec<Ask>) -> Vec<Ask> {
        let mut highest: HashMap<u64, Ask> = HashMap::with_capacity(asks.len());
        for ask in asks {
            match highest.get(&ask.name) {
                Some(kept) if kept.entry.reserved >= ask.entry.reserved => {}
                _ => {
                    highest.insert(ask.name, ask);
                }
            }
        }
        highest.into_values().collect()
    }

    /// One line per counter of a live period.
    fn rewrite(&mut self, text: &[u8], now_ms: i64) -> Result<(Vec<u8>, u64), String> {
        let found = ledger::parse(text).map_err(|e| e.to_string())?;
        let entries = ledger::fold(found.entries, now_ms);
        let text = ledger::render(Some(self.every), &self.crashed, &entries);
        Ok((text, entries.len() as u64))
    }
}

impl WitnessFile {
    /// Takes the lock, reads what earlier runs reserved (the periods not long over), rewrites
    /// the file with one line per counter, and starts the writer.
    ///
    /// # Errors
    /// When another process holds the lock, or the file cannot be read, is not this module's,
    /// or cannot be written: the module must not load then, and the file is left as it was.
    pub fn open(path: PathBuf, now: i64) -> Result<(WitnessFile, Ledger), String> {
        let lock_file = durable::lock(
            &path,
            "two servers on one DATESEQ witness file would take each other's reservations for \
             their own",
        )?;
        let text = durable::read(&path).map_err(|e| e.to_string())?;
        let found = ledger::parse(text.unwrap_or_default().as_bytes()).map_err(|e| {
            format!(
                "{}: {e}; move it away only if no DATESEQ counter of a live period must carry on \
                 above what it recorded",
                path.display()
            )
        })?;
        let entries = ledger::fold(found.entries, now);
        // A run that left its `every` line crashed: its window closes now, and is kept as long
        // as a period that overlapped it can be under way.
        let mut crashed = found.crashed;
        if let Some((floor, from_ms)) = found.every {
            crashed.push(Crashed {
                floor,
                from_ms,
                to_ms: now,
            });
        }
        crashed.retain(|c| now < c.to_ms.saturating_add(LONGEST_PERIOD_MS + GRACE_MS));
        let every = (NEW_COUNTER_BLOCK, now);
        let text = ledger::render(Some(every), &crashed, &entries);
        durable::replace(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let confirmed = Arc::new(Confirmed::default());
        let book = Reservations {
            every,
            crashed: crashed.clone(),
            confirmed: Arc::clone(&confirmed),
        };
        let size = (text.len() as u64, entries.len() as u64);
        let journal = Journal::start(path, lock_file, "the DATESEQ witness file", size, book)?;
        let file = WitnessFile { journal, confirmed };
        Ok((
            file,
            Ledger {
                every: None,
                crashed,
                entries,
            },
        ))
    }

    /// The journal its reservations go through: the witness file every book shares (queue,
    /// wait, counts, failure).
    pub fn journal(&self) -> &Journal<Ask> {
        &self.journal
    }

    /// Whether outcomes of writes wait for [`WitnessFile::confirmations`].
    #[inline]
    pub fn has_news(&self) -> bool {
        self.confirmed.news.load(Ordering::Acquire)
    }

    /// The outcomes of the writes since the last call.
    pub fn confirmations(&self) -> Vec<Confirmation> {
        let mut outcomes = self
            .confirmed
            .outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.confirmed.news.store(false, Ordering::Release);
        std::mem::take(&mut *outcomes)
    }

    /// At a clean shutdown: finishes the queued writes, stops the writer, and rewrites the file
    /// with `handed_out(name)` for each counter (what it actually handed out, never above its
    /// reservation), so the next start skips nothing; unless a write of blocks failed in this
    /// run, which the file then keeps as a crashed run.
    ///
    /// # Errors
    /// When the file cannot be read or written; it then keeps the reservations, which are safe.
    pub fn close_exact(
        &mut self,
        handed_out: impl Fn(&[u8]) -> Option<u64>,
        now_ms: i64,
    ) -> Result<(), String> {
        self.journal.stop();
        let path = self.journal.path().to_path_buf();
        let text = durable::read(&path).map_err(|e| e.to_string())?;
        let found = ledger::parse(text.unwrap_or_default().as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut entries = ledger::fold(found.entries, now_ms);
        for entry in &mut entries {
            if let Some(highest) = handed_out(&entry.name) {
                entry.reserved = entry.reserved.min(highest);
            }
        }
        // Every counter used is named (the writer wrote every block asked before it stopped),
        // so the line that covered new counters goes.
        // Blocks that could not be written leave counters that went out unnamed: this run then
        // stays reckoned with, as a crash would.
        let mut crashed = found.crashed;
        if let Some((floor, from_ms)) = found.every {
            if self.journal.failed_once() {
                crashed.push(Crashed {
                    floor,
                    from_ms,
                    to_ms: now_ms,
                });
            }
        }
        durable::replace(&path, &ledger::render(None, &crashed, &entries))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(name: u64, reserved: u64) -> Ask {
        Ask {
            name,
            entry: Entry {
                ends_ms: 1_000,
                reserved,
                name: format!("{{p{name}}}:20261127").into_bytes(),
            },
        }
    }

    #[test]
    fn a_failed_writes_asks_fold_to_each_counters_highest() {
        let asks = vec![
            ask(1, 100),
            ask(2, 50),
            ask(1, 300),
            ask(1, 200),
            ask(2, 40),
        ];
        let mut folded: Vec<(u64, u64)> = Reservations::fold(asks)
            .iter()
            .map(|a| (a.name, a.entry.reserved))
            .collect();
        folded.sort_unstable();
        assert_eq!(folded, [(1, 300), (2, 50)]);
    }
}

//! The failover gap: which counters must jump ahead before their next value.
//!
//! Replication is asynchronous, so a replica promoted to primary may lack the last values its
//! old primary acknowledged (and whole counters it created). Carrying on from what it holds
//! would hand those values out again. So each promotion starts a new *term*, and in a term each
//! counter skips `gap` values on its first use, before anything else is issued from it: the old
//! primary's unreplicated values are covered as long as there were at most `gap` of them.

use std::collections::HashMap;

/// The counters that have already taken their gap in the current term.
#[derive(Debug, Default)]
pub struct Fence {
    /// Promotions seen; 0 until the first, when no counter needs a gap.
    term: u64,
    /// Per prefix, the dates whose counter was used in this term. Only today's and yesterday's
    /// dates are kept: DATESEQ writes no other day's counter.
    passed: HashMap<Vec<u8>, Vec<u32>>,
    /// The latest date recorded, for dropping older entries.
    newest_date: u32,
}

impl Fence {
    /// A fence before any promotion: no counter needs a gap.
    pub fn new() -> Self {
        Fence::default()
    }

    /// Starts a new term (this node was just promoted): every counter, existing or not, takes
    /// the gap on its next use.
    pub fn new_term(&mut self) {
        self.term += 1;
        self.passed.clear();
    }

    /// Promotions seen since this fence was made.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// Whether the counter of `prefix` on `date` must skip the gap before its next value.
    pub fn needs_gap(&self, prefix: &[u8], date: u32) -> bool {
        // Checked without hashing on a node never promoted: the common case by far.
        self.term > 0 && !self.passed.get(prefix).is_some_and(|d| d.contains(&date))
    }

    /// Records that the counter of `prefix` on `date` took its gap in this term.
    pub fn pass(&mut self, prefix: &[u8], date: u32) {
        if self.term == 0 {
            return;
        }
        if date > self.newest_date {
            self.newest_date = date;
            // Dates are yyyyMMdd, so "older than yesterday" is approximate across month ends;
            // keeping a day too many costs a little memory, never a repeat.
            self.passed.retain(|_, dates| {
                dates.retain(|d| d + 1 >= date);
                !dates.is_empty()
            });
        }
        let dates = self.passed.entry(prefix.to_vec()).or_default();
        if !dates.contains(&date) {
            dates.push(date);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_gap_before_the_first_promotion() {
        let fence = Fence::new();
        assert!(!fence.needs_gap(b"order", 20261123));
    }

    #[test]
    fn each_counter_takes_the_gap_once_per_term() {
        let mut fence = Fence::new();
        fence.new_term();
        assert!(fence.needs_gap(b"order", 20261123));
        assert!(fence.needs_gap(b"invoice", 20261123));
        fence.pass(b"order", 20261123);
        assert!(!fence.needs_gap(b"order", 20261123));
        assert!(fence.needs_gap(b"invoice", 20261123));
        assert!(fence.needs_gap(b"order", 20261124), "another day's counter");

        fence.new_term();
        assert!(
            fence.needs_gap(b"order", 20261123),
            "a new term fences again"
        );
        assert_eq!(fence.term(), 2);
    }

    #[test]
    fn old_dates_are_dropped_but_yesterday_is_kept() {
        let mut fence = Fence::new();
        fence.new_term();
        fence.pass(b"a", 20261122);
        fence.pass(b"b", 20261123);
        fence.pass(b"c", 20261124);
        assert!(fence.needs_gap(b"a", 20261122), "two days old: dropped");
        assert!(!fence.needs_gap(b"b", 20261123));
        assert!(!fence.needs_gap(b"c", 20261124));
        assert_eq!(fence.passed.len(), 2);
    }
}

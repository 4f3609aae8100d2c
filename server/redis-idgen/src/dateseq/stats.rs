//! DATESEQ.NEXT's counts since load, for INFO: only ever counted up, through these methods.

/// What DATESEQ.NEXT did since load.
#[derive(Debug, Default)]
pub struct Stats {
    issued: u64,
    refused: u64,
    gaps: u64,
    lowered: u64,
    skipped: u64,
}

impl Stats {
    /// `n` values issued by one call.
    #[inline]
    pub fn issued(&mut self, n: u64) {
        self.issued += n;
    }

    /// A call refused.
    pub fn refused(&mut self) {
        self.refused += 1;
    }

    /// A counter took the failover gap of `skipped` values (once per counter per promotion).
    pub fn took_gap(&mut self, skipped: u64) {
        self.gaps += 1;
        self.skipped += skipped;
    }

    /// A counter was found below its witness (deleted, lowered, flushed, renamed, restored).
    pub fn found_lowered(&mut self) {
        self.lowered += 1;
    }

    /// Values issued, calls refused, gaps taken, values skipped by them, counters found below
    /// their witness.
    pub fn counts(&self) -> [u64; 5] {
        [
            self.issued,
            self.refused,
            self.gaps,
            self.skipped,
            self.lowered,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_counts_where_info_reads_it() {
        let mut stats = Stats::default();
        stats.issued(5);
        stats.issued(1);
        stats.refused();
        stats.took_gap(1_000);
        stats.took_gap(1_000);
        stats.found_lowered();
        assert_eq!(stats.counts(), [6, 1, 2, 2_000, 1]);
    }
}

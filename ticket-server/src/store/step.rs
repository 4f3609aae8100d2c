//! The arithmetic progression a server hands out: `offset, offset + increment, ...`.

/// The arithmetic progression this server hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// First ticket, 1 to `increment`.
    pub offset: u64,
    /// Distance between tickets: the number of servers.
    pub increment: u64,
}

impl Step {
    /// The `index`-th ticket.
    pub(crate) fn ticket(self, index: u64) -> Option<u64> {
        index
            .checked_mul(self.increment)?
            .checked_add(self.offset)
            .filter(|&t| t <= i64::MAX as u64)
    }

    /// The first index whose ticket is at least `bound`.
    pub(crate) fn index_at(self, bound: u64) -> u64 {
        bound.saturating_sub(self.offset).div_ceil(self.increment)
    }
}

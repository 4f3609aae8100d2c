//! How big the prefetching client's next block is: fixed, or sized from how long the last block
//! lasted (Meituan Leaf's dynamic segment step). A block that ran out before the target time
//! doubles the next one; a block that lasted more than twice the target shrinks the next one to
//! what would have lasted the target. So a busy service rarely calls the servers, and a quiet
//! one holds few tickets that a restart would throw away.

use std::time::Duration;

/// The bounds and target of the block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizing {
    /// The smallest block, and the first one.
    pub min: u64,
    /// The largest block.
    pub max: u64,
    /// How long a block should last (Leaf aims at 15 minutes).
    pub target: Duration,
}

impl Sizing {
    /// Every block of `block` tickets.
    pub fn fixed(block: u64) -> Sizing {
        let block = block.max(1);
        Sizing {
            min: block,
            max: block,
            target: Duration::ZERO,
        }
    }

    /// Blocks from `min` to `max` tickets, sized to last about `target`.
    pub fn adaptive(min: u64, max: u64, target: Duration) -> Sizing {
        let min = min.max(1);
        Sizing {
            min,
            max: max.max(min),
            target,
        }
    }

    /// The size after a block of `current` tickets lasted `lasted`.
    pub fn next(&self, current: u64, lasted: Duration) -> u64 {
        let current = current.clamp(self.min, self.max);
        if lasted < self.target {
            return current.saturating_mul(2).min(self.max);
        }
        if lasted > self.target.saturating_mul(2) {
            let fitting = current as u128 * self.target.as_nanos() / lasted.as_nanos().max(1);
            return (fitting as u64).clamp(self.min, self.max);
        }
        current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Duration = Duration::from_secs(60);

    #[test]
    fn a_fixed_size_never_moves() {
        let fixed = Sizing::fixed(1_000);
        for lasted in [Duration::ZERO, TARGET, TARGET * 100] {
            assert_eq!(fixed.next(1_000, lasted), 1_000);
        }
        assert_eq!(Sizing::fixed(0).next(0, TARGET), 1, "at least one ticket");
    }

    #[test]
    fn a_block_gone_too_soon_doubles_up_to_the_most() {
        let s = Sizing::adaptive(100, 1_000, TARGET);
        assert_eq!(s.next(100, TARGET / 3), 200);
        assert_eq!(s.next(800, Duration::ZERO), 1_000);
        assert_eq!(s.next(1_000, Duration::ZERO), 1_000);
    }

    #[test]
    fn a_block_that_lasted_far_longer_shrinks_to_what_lasts_the_target() {
        let s = Sizing::adaptive(100, 1_000_000, TARGET);
        assert_eq!(
            s.next(1_000_000, TARGET * 100),
            10_000,
            "1% of the load: 1% of the block"
        );
        assert_eq!(s.next(1_000, TARGET * 1_000), 100, "never below the least");
        assert_eq!(
            s.next(5_000, TARGET * 3 / 2),
            5_000,
            "near the target: kept"
        );
        assert_eq!(s.next(5_000, TARGET * 2), 5_000);
        let forever = Sizing::adaptive(100, 1_000, Duration::MAX);
        assert_eq!(forever.next(100, Duration::MAX), 100, "no overflow");
    }
}

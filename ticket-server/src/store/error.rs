//! Why a store refused to issue tickets.

use super::MAX_SEQUENCES;

/// Why tickets were not issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A sequence name outside `[A-Za-z0-9_.-]{1,64}`.
    BadName,
    /// More than [`MAX_SEQUENCES`] sequences.
    TooManySequences,
    /// The next ticket would not fit in a signed 64-bit integer.
    Exhausted,
    /// Writing the bound failed; nothing beyond the bound on disk is issued until a retry works.
    Failed(String),
    /// The server is shutting down: the exact next ticket is being recorded.
    Closed,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::BadName => write!(f, "sequence names are 1 to 64 of A-Z a-z 0-9 _ . -"),
            StoreError::TooManySequences => write!(f, "at most {MAX_SEQUENCES} sequences"),
            StoreError::Exhausted => {
                write!(f, "sequence exhausted: the next ticket exceeds 2^63-1")
            }
            StoreError::Closed => write!(f, "the ticket server is shutting down"),
            StoreError::Failed(why) => write!(
                f,
                "cannot write the ticket bound ({why}): no ticket is issued beyond the bound on \
                 disk until a write succeeds; retrying"
            ),
        }
    }
}

impl std::error::Error for StoreError {}

//! What a connection remembers between requests.

use bytes::Bytes;

use super::transaction::Queued;

/// Per-connection state.
#[derive(Debug, Default)]
pub struct Session {
    /// Replies in RESP3 (after `HELLO 3`).
    pub resp3: bool,
    /// AUTH succeeded, or no password is set.
    pub authenticated: bool,
    /// CLIENT SETNAME.
    pub name: Option<Bytes>,
    /// CLIENT ID.
    pub id: u64,
    /// QUIT was called: close after replying.
    pub quit: bool,
    /// Commands queued after MULTI, until EXEC or DISCARD.
    pub queued: Option<Queued>,
}

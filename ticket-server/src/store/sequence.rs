//! One named sequence: hands out tickets below the bound on disk and moves the bound a block
//! ahead in the background.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::Notify;

use super::bound_file::write_bound;
use super::ledger::Ledger;
use super::{Step, StoreError, RETRY_WRITE_EVERY};

struct State {
    /// Index of the next ticket.
    next: u64,
    /// Tickets with index below this are covered by the bound on disk.
    limit: u64,
    extending: bool,
    /// Set by [`Store::close`]: nothing more is issued.
    closed: bool,
    /// The last failed write of the bound, and when; cleared by a write that succeeds.
    failed: Option<(String, Instant)>,
}

/// Where a sequence's bound is written: its file, and its line in the store's marker.
pub(super) struct Place {
    pub path: PathBuf,
    pub name: String,
    pub ledger: Arc<Ledger>,
}

impl Place {
    /// Writes a higher `bound`: the sequence's file first, then the marker (see `ledger.rs`).
    fn raise(&self, step: Step, bound: u64) -> Result<(), String> {
        write_bound(&self.path, step, bound).map_err(|e| e.to_string())?;
        self.ledger
            .record(&self.name, bound)
            .map_err(|e| e.to_string())
    }

    /// Writes a lower `bound` (the exact next ticket, at close): the marker first, then the
    /// sequence's file, so that the file is never found behind the marker.
    fn lower(&self, step: Step, bound: u64) -> Result<(), String> {
        self.ledger
            .record(&self.name, bound)
            .map_err(|e| e.to_string())?;
        write_bound(&self.path, step, bound).map_err(|e| e.to_string())
    }
}

/// One named sequence.
pub struct Sequence {
    place: Arc<Place>,
    step: Step,
    block: u64,
    state: Mutex<State>,
    extended: Notify,
    /// Seconds each write of the bound took (the store's, shared by its sequences).
    bound_writes: Histogram,
}

impl Sequence {
    /// A sequence whose bound on disk covers tickets below index `next`.
    pub(super) fn new(
        place: Place,
        step: Step,
        block: u64,
        next: u64,
        bound_writes: Histogram,
    ) -> Sequence {
        Sequence {
            place: Arc::new(place),
            step,
            block,
            state: Mutex::new(State {
                next,
                limit: next,
                extending: false,
                closed: false,
                failed: None,
            }),
            extended: Notify::new(),
            bound_writes,
        }
    }

    /// The index of the next ticket and the index the bound on disk covers up to.
    pub(super) fn indexes(&self) -> (u64, u64) {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        (s.next, s.limit)
    }

    /// The first of `count` consecutive tickets (`first`, `first + increment`, ...).
    ///
    /// # Errors
    /// [`StoreError::Failed`] once a write of the bound has failed; [`StoreError::Exhausted`]
    /// at the end of the 63-bit range.
    pub async fn take(self: &Arc<Self>, count: u64) -> Result<u64, StoreError> {
        loop {
            let (notified, extend_now) = {
                let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if s.closed {
                    return Err(StoreError::Closed);
                }
                let end = s.next.checked_add(count).ok_or(StoreError::Exhausted)?;
                self.step.ticket(end - 1).ok_or(StoreError::Exhausted)?;
                // After a failed write, the next try waits a little: not a write per call.
                let retry_due = match &s.failed {
                    Some((_, at)) => at.elapsed() >= RETRY_WRITE_EVERY,
                    None => true,
                };
                if end <= s.limit {
                    let first = s.next;
                    s.next = end;
                    if !s.extending && retry_due && s.limit - s.next < self.block / 2 {
                        s.extending = true;
                        let target = s.limit.saturating_add(self.block);
                        let seq = Arc::clone(self);
                        tokio::spawn(async move { seq.extend(target).await });
                    }
                    return Ok(self.step.ticket(first).unwrap_or(u64::MAX));
                }
                if let Some((why, _)) = s.failed.as_ref().filter(|_| !retry_due) {
                    return Err(StoreError::Failed(why.clone()));
                }
                let extend_now = !s.extending;
                if extend_now {
                    s.extending = true;
                }
                (
                    self.extended.notified(),
                    extend_now.then(|| s.next.max(s.limit).saturating_add(self.block.max(count))),
                )
            };
            match extend_now {
                Some(target) => self.extend(target).await,
                None => notified.await,
            }
        }
    }

    /// Stops issuing and, once no write of the bound is in flight, writes the exact next ticket
    /// as the bound.
    pub(super) async fn close(self: &Arc<Self>) {
        let next = loop {
            let extended = self.extended.notified();
            {
                let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
                s.closed = true;
                if !s.extending {
                    break s.next;
                }
            }
            extended.await;
        };
        let Some(bound) = self.step.ticket(next) else {
            return;
        };
        let (place, step) = (Arc::clone(&self.place), self.step);
        match tokio::task::spawn_blocking(move || place.lower(step, bound)).await {
            Ok(Ok(())) => {}
            // The block's bound stays: a gap, never a repeat.
            _ => {
                tracing::warn!(path = %self.place.path.display(), "could not record the exact next ticket")
            }
        }
    }

    /// The last ticket handed out, if any.
    pub fn current(&self) -> Option<u64> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let start = self.step.index_at(0);
        (s.next > start)
            .then(|| self.step.ticket(s.next - 1))
            .flatten()
    }

    /// Makes tickets below index `target` durable, then lets callers have them.
    async fn extend(self: &Arc<Self>, target: u64) {
        let bound = self.step.ticket(target).unwrap_or(i64::MAX as u64);
        let (place, step) = (Arc::clone(&self.place), self.step);
        let started = Instant::now();
        let written = tokio::task::spawn_blocking(move || place.raise(step, bound))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
        self.bound_writes.observe(started.elapsed().as_secs_f64());
        {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            s.extending = false;
            match written {
                Ok(()) => {
                    s.limit = s.limit.max(target);
                    if s.failed.take().is_some() {
                        tracing::warn!(path = %self.place.path.display(), "ticket bound written again; issuing resumed");
                    }
                }
                Err(why) => {
                    if s.failed.is_none() {
                        tracing::error!(path = %self.place.path.display(), %why, "cannot write the ticket bound; retrying");
                    }
                    s.failed = Some((why, Instant::now()));
                }
            }
        }
        self.extended.notify_waiters();
    }
}

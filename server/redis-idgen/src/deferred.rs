//! Events that came while a command held the state, kept until the state is next entered.
//!
//! Redis can raise an event from inside one of this module's commands: another module's
//! keyspace-event handler, run by DATESEQ.NEXT's write, may `RM_Call` REPLICAOF or CONFIG SET.
//! The state is taken then (see `state.rs`). Skipping the event would be wrong: a node demoted
//! that way would go on issuing Snowflake IDs as a primary, beside the new primary that issues
//! the same ones. So the event waits here, and whatever enters the state next (a command, an
//! event, INFO) applies it first, before it reads anything.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::config::Effect;

/// An event the state must follow.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The server became a replica, or a primary.
    Role { replica: bool },
    /// A live setting changed: what it must redo.
    Setting(Effect),
    /// `maxmemory-policy` changed to `policy`; `accepted` is `idgen.accept-eviction`.
    Policy { policy: String, accepted: bool },
    /// `min-replicas-to-write` read (a replica came, or the setting changed), and whether a
    /// replica is online.
    Replication { min_replicas: i64, replicas: bool },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Role { replica: true } => f.write_str("the change to replica"),
            Event::Role { replica: false } => f.write_str("the change to primary"),
            Event::Setting(effect) => write!(f, "a setting's change ({effect:?})"),
            Event::Policy { policy, .. } => write!(f, "maxmemory-policy {policy}"),
            Event::Replication { min_replicas, .. } => {
                write!(f, "min-replicas-to-write {min_replicas}")
            }
        }
    }
}

/// The events waiting for the state, in the order they came.
#[derive(Default)]
pub struct Deferred {
    /// Whether `events` holds any.
    waiting: AtomicBool,
    events: Mutex<Vec<Event>>,
}

impl Deferred {
    /// Keeps `event` for the next entry.
    pub fn push(&self, event: Event) {
        let mut events = self.events.lock();
        events.push(event);
        self.waiting.store(true, Ordering::Release);
    }

    /// Whether any event is kept: the one load each entry pays.
    #[inline]
    pub fn waiting(&self) -> bool {
        self.waiting.load(Ordering::Acquire)
    }

    /// The events kept, oldest first, and none any more.
    pub fn take(&self) -> Vec<Event> {
        let mut events = self.events.lock();
        self.waiting.store(false, Ordering::Release);
        std::mem::take(&mut *events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_back_once_in_the_order_they_came() {
        let deferred = Deferred::default();
        assert!(!deferred.waiting());
        deferred.push(Event::Role { replica: true });
        deferred.push(Event::Setting(Effect::Sqids));
        assert!(deferred.waiting());
        assert_eq!(
            deferred.take(),
            [Event::Role { replica: true }, Event::Setting(Effect::Sqids)]
        );
        assert!(!deferred.waiting() && deferred.take().is_empty());
    }
}

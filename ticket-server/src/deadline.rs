//! The deadline of an incomplete request: a request must arrive whole within
//! [`REQUEST_DEADLINE`] of its first byte. The idle timer alone cannot catch a client that
//! trickles a byte a second: it looks active.

use std::time::Duration;

use tokio::time::Instant;

/// How long a request may take to arrive once its first byte has.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// When the request now in the buffer began to arrive.
#[derive(Debug, Default)]
pub struct RequestClock {
    since: Option<Instant>,
}

impl RequestClock {
    /// Notes the buffer's state after the complete requests were taken from it: whether bytes
    /// of another request remain, and whether any request completed. The clock starts at the
    /// first byte of a request, and a completed request restarts it.
    pub fn update(&mut self, bytes_left: bool, completed: bool) {
        self.since = match (bytes_left, self.since) {
            (false, _) => None,
            (true, Some(since)) if !completed => Some(since),
            (true, _) => Some(Instant::now()),
        };
    }

    /// When the connection must be closed unless the request completes, if one is pending.
    pub fn deadline(&self) -> Option<Instant> {
        self.since.map(|since| since + REQUEST_DEADLINE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_the_first_byte_and_restarts_with_each_completed_request() {
        let mut clock = RequestClock::default();
        clock.update(false, false);
        assert_eq!(clock.deadline(), None);
        clock.update(true, false);
        let first = clock.deadline().unwrap();
        clock.update(true, false);
        assert_eq!(
            clock.deadline(),
            Some(first),
            "more bytes of the same request"
        );
        std::thread::sleep(Duration::from_millis(2));
        clock.update(true, true);
        assert!(clock.deadline().unwrap() > first, "a new request began");
        clock.update(false, true);
        assert_eq!(clock.deadline(), None);
    }
}

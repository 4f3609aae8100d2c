//! Acknowledging a lease only once a failover keeps it.
//!
//! Replication is asynchronous: a primary that tells a holder of a grant or renewal before any
//! replica holds it can be replaced by a replica that never heard of it, which grants the
//! holder's worker ID again. Worse, a primary cut off from its replicas (but not from its
//! clients) goes on extending leases for as long as the split lasts. So on a primary with
//! replicas, ACQUIRE and RENEW reply once enough replicas acknowledged the replication offset
//! that holds their write (what `WAIT n` waits for), and are refused when they did not within
//! a bounded time: a primary cut off from its replicas stops extending leases at once.
//!
//! How many replicas (`idgen.workerid-ack-replicas`): a number, or [`AUTO`]: one once a replica
//! has been online since this node became a primary, none before. A primary cut off from its
//! replicas drops them after `repl-timeout`, while the promoted replica grants on: so losing
//! every replica does not end the wait. Grants and renewals are refused until a replica
//! returns, or until an operator who removed them on purpose sets the setting again.
//!
//! Plain logic: the module reads the offsets (INFO replication) and hands them in.

/// `idgen.workerid-ack-replicas` value meaning "one once a replica has been seen".
pub const AUTO: i64 = -1;

/// The replication offsets INFO shows: this primary's, and each online replica's acknowledged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replication {
    /// `master_repl_offset`: everything written so far.
    pub offset: u64,
    /// The offset each replica in state `online` acknowledged.
    pub acked: Vec<u64>,
}

impl Replication {
    /// Reads `INFO replication`'s text.
    pub fn parse(info: &str) -> Replication {
        let mut replication = Replication::default();
        for line in info.lines() {
            let Some((name, value)) = line.trim_end().split_once(':') else {
                continue;
            };
            if name == "master_repl_offset" {
                replication.offset = value.parse().unwrap_or(0);
            } else if name.starts_with("slave") && name[5..].bytes().all(|b| b.is_ascii_digit()) {
                let field = |wanted: &str| {
                    value
                        .split(',')
                        .find_map(|kv| kv.strip_prefix(wanted)?.strip_prefix('='))
                };
                if field("state") == Some("online") {
                    if let Some(offset) = field("offset").and_then(|o| o.parse().ok()) {
                        replication.acked.push(offset);
                    }
                }
            }
        }
        replication
    }

    /// How many replicas are online.
    pub fn online(&self) -> usize {
        self.acked.len()
    }

    /// How many replicas acknowledged `offset` or more.
    pub fn holding(&self, offset: u64) -> usize {
        self.acked.iter().filter(|&&acked| acked >= offset).count()
    }
}

/// Why a write was not acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotHeld {
    /// Replicas that had to hold it.
    pub needed: u32,
    /// Replicas that did.
    pub held: usize,
    /// How long it waited, in ms.
    pub waited_ms: i64,
}

/// One write waiting for replicas.
struct Waiter<T> {
    needed: u32,
    /// The offset that holds the write: unknown until the write is propagated, which happens
    /// after the command returns; the first poll after it reads it.
    target: Option<u64>,
    since_ms: i64,
    deadline_ms: i64,
    payload: T,
}

/// The writes waiting for replicas, and whether a replica has been seen.
pub struct ReplicaAcks<T> {
    /// Whether a replica has been online since this node last became a primary (or loaded, or
    /// the setting was last set).
    seen: bool,
    waiting: Vec<Waiter<T>>,
    /// The highest offset replicas were asked to acknowledge (`REPLCONF GETACK`).
    asked: u64,
    /// Whether a timer polls the offsets.
    polling: bool,
    /// Whether the log was told that writes are acknowledged without a replica.
    told_unreplicated: bool,
    /// Writes that waited, and those refused for want of replicas.
    pub waits: u64,
    pub refusals: u64,
}

impl<T> Default for ReplicaAcks<T> {
    fn default() -> Self {
        ReplicaAcks {
            seen: false,
            waiting: Vec::new(),
            asked: 0,
            polling: false,
            told_unreplicated: false,
            waits: 0,
            refusals: 0,
        }
    }
}

impl<T> ReplicaAcks<T> {
    /// How many replicas must hold a write before it is acknowledged, given the setting and
    /// how many are online now (which, under [`AUTO`], it remembers having seen).
    pub fn needed(&mut self, setting: i64, online: usize) -> u32 {
        self.seen |= online > 0;
        self.required(setting)
    }

    /// Whether [`ReplicaAcks::needed`] depends on how many replicas are online: only under
    /// [`AUTO`] until one has been seen (a number set is waited for whatever is online).
    pub fn counts_online(&self, setting: i64) -> bool {
        setting == AUTO && !self.seen
    }

    /// How many replicas the next write waits for, as far as the replicas seen tell.
    pub fn required(&self, setting: i64) -> u32 {
        if setting == AUTO {
            u32::from(self.seen)
        } else {
            u32::try_from(setting).unwrap_or(0)
        }
    }

    /// Forgets the replicas seen: this node became a primary, or the setting was set (an
    /// operator who removed the replicas on purpose says so).
    pub fn forget(&mut self) {
        self.seen = false;
        self.told_unreplicated = false;
    }

    /// Whether a write acknowledged without a replica is the first since the replicas were
    /// last forgotten (the log says so once).
    pub fn first_unreplicated(&mut self) -> bool {
        !std::mem::replace(&mut self.told_unreplicated, true)
    }

    /// Keeps `payload` until `needed` replicas hold what was just written, or `deadline_ms`.
    pub fn wait(&mut self, payload: T, needed: u32, now_ms: i64, deadline_ms: i64) {
        self.waits += 1;
        self.waiting.push(Waiter {
            needed,
            target: None,
            since_ms: now_ms,
            deadline_ms,
            payload,
        });
    }

    /// Whether writes wait.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Whether a timer must start polling: writes wait and none polls yet.
    pub fn start_polling(&mut self) -> bool {
        let start = !self.waiting.is_empty() && !self.polling;
        self.polling |= start;
        start
    }

    /// Whether the timer polls again: writes still wait.
    pub fn poll_again(&mut self) -> bool {
        self.polling = !self.waiting.is_empty();
        self.polling
    }

    /// The writes settled by `replication` at `now_ms`: held, or refused at their deadline
    /// (all of them when `demoted`: a replica's offsets say nothing of its old writes).
    pub fn poll(
        &mut self,
        replication: &Replication,
        now_ms: i64,
        demoted: bool,
    ) -> Vec<(T, Result<(), NotHeld>)> {
        let mut settled = Vec::new();
        let mut kept = Vec::with_capacity(self.waiting.len());
        for mut waiter in self.waiting.drain(..) {
            let target = *waiter.target.get_or_insert(replication.offset);
            let held = replication.holding(target);
            if held >= waiter.needed as usize && !demoted {
                settled.push((waiter.payload, Ok(())));
            } else if now_ms >= waiter.deadline_ms || demoted {
                let why = NotHeld {
                    needed: waiter.needed,
                    held,
                    waited_ms: now_ms - waiter.since_ms,
                };
                self.refusals += 1;
                settled.push((waiter.payload, Err(why)));
            } else {
                kept.push(waiter);
            }
        }
        self.waiting = kept;
        settled
    }

    /// Whether to ask the replicas for their offsets now: once per new offset waited for
    /// (they also tell it once a second by themselves).
    pub fn ask(&mut self) -> bool {
        let highest = self.waiting.iter().filter_map(|w| w.target).max();
        match highest {
            Some(target) if target > self.asked => {
                self.asked = target;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
        slave0:ip=127.0.0.1,port=7001,state=online,offset=120,lag=0\r\n\
        slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\n\
        slave_read_repl_offset:99\r\nmaster_repl_offset:150\r\n";

    fn replication(offset: u64, acked: &[u64]) -> Replication {
        Replication {
            offset,
            acked: acked.to_vec(),
        }
    }

    #[test]
    fn info_gives_the_offset_and_the_online_replicas_acknowledgements() {
        // Not slave_read_repl_offset, and not a replica still syncing.
        assert_eq!(Replication::parse(INFO), replication(150, &[120]));
        assert_eq!(Replication::parse("role:master\n"), replication(0, &[]));
    }

    #[test]
    fn auto_waits_once_a_replica_was_seen_and_until_forgotten() {
        let mut acks = ReplicaAcks::<()>::default();
        assert!(acks.counts_online(AUTO) && !acks.counts_online(0) && !acks.counts_online(2));
        assert_eq!(acks.needed(AUTO, 0), 0);
        assert_eq!(acks.needed(AUTO, 2), 1);
        // Seen: no reading changes it any more.
        assert!(!acks.counts_online(AUTO));
        // Cut off: the replicas are dropped, the wait stays.
        assert_eq!(acks.needed(AUTO, 0), 1);
        acks.forget();
        assert_eq!(acks.needed(AUTO, 0), 0);
        assert!(acks.first_unreplicated() && !acks.first_unreplicated());
        assert_eq!(acks.needed(0, 3), 0);
        assert_eq!(acks.needed(2, 0), 2);
    }

    #[test]
    fn a_write_is_held_once_enough_replicas_passed_the_offset_read_after_it() {
        let mut acks = ReplicaAcks::default();
        acks.wait("a", 1, 0, 100);
        acks.wait("b", 2, 0, 100);
        assert!(acks.start_polling() && !acks.start_polling());
        // The first poll learns the offset the writes reached: 200.
        assert!(acks
            .poll(&replication(200, &[150, 150]), 1, false)
            .is_empty());
        assert!(acks.ask() && !acks.ask());
        let settled = acks.poll(&replication(260, &[200, 150]), 2, false);
        assert_eq!(settled, [("a", Ok(()))]);
        let settled = acks.poll(&replication(260, &[260, 199]), 3, false);
        assert!(settled.is_empty() && acks.poll_again());
        assert_eq!(
            acks.poll(&replication(260, &[260, 200]), 4, false),
            [("b", Ok(()))]
        );
        assert!(!acks.poll_again() && acks.waiting() == 0);
        acks.wait("c", 1, 5, 100);
        assert!(acks.start_polling(), "polling again once a write waits");
    }

    #[test]
    fn a_write_no_replica_held_by_its_deadline_is_refused() {
        let mut acks = ReplicaAcks::default();
        acks.wait("a", 1, 10, 110);
        assert!(acks.poll(&replication(50, &[40]), 109, false).is_empty());
        let why = NotHeld {
            needed: 1,
            held: 0,
            waited_ms: 100,
        };
        assert_eq!(
            acks.poll(&replication(50, &[40]), 110, false),
            [("a", Err(why))]
        );
        assert_eq!((acks.waits, acks.refusals), (1, 1));
    }

    #[test]
    fn a_demoted_primary_refuses_what_waits() {
        let mut acks = ReplicaAcks::default();
        acks.wait("a", 1, 0, 100);
        let settled = acks.poll(&replication(50, &[50]), 1, true);
        assert!(matches!(settled[..], [("a", Err(_))]));
    }
}

//! Whether a primary with replicas bounds what a split brain can hand out.
//!
//! A primary cut off from its replicas, but not from its clients, goes on handing out DATESEQ
//! values for as long as the split lasts, and the promoted replica's failover gap covers only
//! what it was sized for. `min-replicas-to-write` (with `min-replicas-max-lag`) makes such a
//! primary stop within the lag; docs/module.md ("Failover") sizes the gap on it. A primary
//! with replicas that runs without it says so: a warning in the log when that starts, and
//! `INFO idgen` `replication_guard`. (Leases wait for a replica themselves: `replica_acks.rs`.)

/// What is known of this primary's replicas and `min-replicas-to-write`.
#[derive(Debug, Default)]
pub struct Guard {
    /// `min-replicas-to-write`, once read.
    min_replicas: Option<i64>,
    /// Whether a replica was online at the last reading.
    replicas: bool,
}

impl Guard {
    /// Follows a new reading; the warning to log when an unbounded primary with replicas
    /// starts (a replica came, or the setting went to 0).
    pub fn follow(&mut self, min_replicas: i64, replicas: bool) -> Option<String> {
        let was = self.unbounded();
        (self.min_replicas, self.replicas) = (Some(min_replicas), replicas);
        (self.unbounded() && !was).then(|| {
            "idgen: this primary has a replica and min-replicas-to-write 0: cut off from its \
             replicas it would go on handing out DATESEQ values for as long as the split lasts, \
             past what idgen.dateseq-failover-gap covers; set min-replicas-to-write 1 and \
             min-replicas-max-lag (docs/module.md, Failover)"
                .to_string()
        })
    }

    fn unbounded(&self) -> bool {
        self.replicas && self.min_replicas == Some(0)
    }

    /// INFO's word: `bounded` (min-replicas-to-write set), `unbounded` (replicas without it),
    /// `no-replicas`, or `unknown` before the first reading.
    pub fn word(&self) -> &'static str {
        match (self.min_replicas, self.replicas) {
            (None, _) => "unknown",
            (Some(n), _) if n > 0 => "bounded",
            (_, true) => "unbounded",
            (_, false) => "no-replicas",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_once_when_a_primary_with_replicas_runs_without_min_replicas() {
        let mut guard = Guard::default();
        assert_eq!(guard.word(), "unknown");
        assert_eq!(guard.follow(0, false), None);
        assert_eq!(guard.word(), "no-replicas");
        assert!(guard.follow(0, true).is_some(), "a replica came");
        assert_eq!(guard.follow(0, true), None, "said once");
        assert_eq!(guard.word(), "unbounded");
        assert_eq!(guard.follow(1, true), None);
        assert_eq!(guard.word(), "bounded");
        assert!(guard.follow(0, true).is_some(), "the setting went to 0");
    }
}

//! A node's identity: the datacenter and worker it puts into its Snowflake IDs, and who else
//! claims them. Two nodes issuing under one pair would issue the same IDs, so:
//!
//! - across replication, a primary sends its claim to each replica that comes online
//!   (`IDGEN.CLAIM datacenter worker` over the replication link, `crate::ffi::replicas`; a
//!   partial resynchronization is a coming online too, so a restarted replica and the replicas
//!   of a newly promoted one hear it again, `tests/identity.rs`), and a replica configured with
//!   the same pair (one templated configuration for both, say) says so at once, in its log and
//!   `INFO idgen`, and refuses SNOWFLAKE.NEXT after a promotion: promoted, it would issue the
//!   IDs its primary issued in the same milliseconds (the two clocks differ, and the primary
//!   may have borrowed ahead) ([`Identity::primary_claims`]);
//! - on Redis Cluster, nodes announce their claims over the bus ([`claims`]) and a primary
//!   that hears another primary claim its pair refuses SNOWFLAKE.NEXT, as does the other
//!   ([`watch`]).
//!
//! The handler of `IDGEN.CLAIM` is `crate::cmd::identity`; the announcements' timer and the
//! bus's receiver are in `lib.rs`.

pub mod claims;
pub mod watch;

use idgen_core::Clock;

use claims::Claim;
use watch::Watch;

/// The cluster message type of a claim ('I' for idgen).
pub const CLAIM_MESSAGE: u8 = b'I';

/// What this node knows of the others that claim its pair.
pub struct Identity {
    /// Why SNOWFLAKE.NEXT is refused: this node's primary claimed the same pair.
    primary_conflict: Option<String>,
    /// The other nodes' claims, on a Cluster node.
    cluster: Option<Watch>,
}

impl Identity {
    /// A node that heard no one yet; `cluster` on a Cluster node.
    pub fn new(cluster: Option<Watch>) -> Identity {
        Identity {
            primary_conflict: None,
            cluster,
        }
    }

    /// Why SNOWFLAKE.NEXT must be refused, if it must: the primary's claim, or (on a Cluster
    /// node, at `clock`'s time) another primary's or the listening after start.
    #[inline(always)]
    pub fn refusal(&self, clock: &impl Clock) -> Option<String> {
        if let Some(why) = &self.primary_conflict {
            return Some(why.clone());
        }
        self.cluster.as_ref()?.refusal(clock.now_ms())
    }

    /// This node's primary claims `datacenter` and `worker`, this node `me`: the line to log
    /// (level, text) when that starts or ends a conflict.
    pub fn primary_claims(
        &mut self,
        me: Claim,
        (datacenter, worker): (i64, i64),
    ) -> Option<(&'static str, String)> {
        let shared = (me.datacenter as i64, me.worker as i64) == (datacenter, worker);
        let verdict = shared.then(|| {
            format!(
                "worker-id conflict: this node's primary issues IDs as datacenter {datacenter} \
                 worker {worker} too (idgen.datacenter-id, idgen.worker-id): promoted, this \
                 node would issue the IDs its primary issued; SNOWFLAKE.NEXT is refused here \
                 until it is restarted with a pair of its own"
            )
        });
        let ended = "idgen: this node's primary issues IDs under another worker-id pair";
        settle(&mut self.primary_conflict, verdict, ended)
    }

    /// Another Cluster node's claim arrived (`payload`, from `node`, at `now_ms`), this node
    /// `me`: lines to log (level, text), for an unreadable claim or a conflict that starts or
    /// ends. Nothing outside a Cluster.
    pub fn heard(
        &mut self,
        node: &str,
        payload: &[u8],
        me: Claim,
        now_ms: i64,
    ) -> Vec<(&'static str, String)> {
        let Some(watch) = &mut self.cluster else {
            return Vec::new();
        };
        let unreadable = watch.hear(node, payload, now_ms).map(|w| ("warning", w));
        unreadable
            .into_iter()
            .chain(watch.judge(me, now_ms))
            .collect()
    }

    /// This node announced its claim `me` at `now_ms`: the line to log when a conflict ended
    /// with the silence of the other node.
    pub fn announced(&mut self, me: Claim, now_ms: i64) -> Option<(&'static str, String)> {
        self.cluster.as_mut()?.judge(me, now_ms)
    }

    /// For INFO: the conflict (empty if none), and on a Cluster node how many other nodes were
    /// heard lately.
    pub fn status(&self) -> (&str, Option<usize>) {
        let (cluster_conflict, heard) = match &self.cluster {
            Some(watch) => {
                let (conflict, heard) = watch.status();
                (conflict, Some(heard))
            }
            None => ("", None),
        };
        (
            self.primary_conflict.as_deref().unwrap_or(cluster_conflict),
            heard,
        )
    }

    /// Whether this node is in a Cluster.
    pub fn in_cluster(&self) -> bool {
        self.cluster.is_some()
    }
}

/// Sets `conflict` to `verdict`: the line to log (level, text) when that changes it, a warning
/// naming the conflict, or `ended` once it is over.
fn settle(
    conflict: &mut Option<String>,
    verdict: Option<String>,
    ended: &str,
) -> Option<(&'static str, String)> {
    if *conflict == verdict {
        return None;
    }
    let line = match &verdict {
        Some(why) => ("warning", format!("idgen: {why}")),
        None => ("notice", ended.to_string()),
    };
    *conflict = verdict;
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Claim = Claim {
        datacenter: 1,
        worker: 3,
        primary: false,
    };

    struct At(i64);

    impl Clock for At {
        fn now_ms(&self) -> i64 {
            self.0
        }
    }

    #[test]
    fn a_primary_with_this_nodes_pair_refuses_it_until_it_changes() {
        let mut identity = Identity::new(None);
        assert_eq!(identity.refusal(&At(0)), None);
        let (level, line) = identity.primary_claims(ME, (1, 3)).unwrap();
        assert_eq!(level, "warning");
        assert!(line.contains("datacenter 1 worker 3 too"), "{line}");
        assert!(identity
            .refusal(&At(0))
            .unwrap()
            .starts_with("worker-id conflict"));
        assert_eq!(identity.primary_claims(ME, (1, 3)), None, "said once");
        assert_eq!(
            identity.status(),
            (identity.refusal(&At(0)).unwrap().as_str(), None)
        );
        assert_eq!(identity.primary_claims(ME, (1, 4)).unwrap().0, "notice");
        assert_eq!(identity.refusal(&At(0)), None);
        assert_eq!(identity.status(), ("", None));
    }

    #[test]
    fn a_cluster_node_hears_its_peers_and_listens_first() {
        let mut identity = Identity::new(Some(Watch::new(0)));
        assert!(identity.refusal(&At(0)).unwrap().contains("listening"));
        let later = 10_000;
        assert_eq!(identity.refusal(&At(later)), None);
        let me = Claim {
            primary: true,
            ..ME
        };
        let lines = identity.heard("other", &me.encode(), me, later);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].1.contains("cluster node other"), "{lines:?}");
        assert!(identity.refusal(&At(later)).is_some());
        assert_eq!(identity.status().1, Some(1));
        let unreadable = identity.heard("third", b"?", me, later);
        assert!(
            unreadable[0].1.contains("unreadable claim"),
            "{unreadable:?}"
        );
        assert!(Identity::new(None)
            .heard("x", &me.encode(), me, later)
            .is_empty());
    }
}

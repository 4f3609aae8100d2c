//! A node's worker-ID watch on Redis Cluster: every node announces the datacenter and worker it
//! puts into its IDs over the cluster bus ([`super::claims`]), and a primary that hears another
//! primary claim the same pair refuses SNOWFLAKE.NEXT, as does the other, until one of them is
//! reconfigured. For a second after start, before it can have heard the others, a cluster node
//! refuses too. Outside cluster mode none of this runs.

use super::claims::{Claim, Claims, ANNOUNCE_EVERY_MS};

/// How long a starting node listens before it issues: two announcement rounds.
const LISTEN_FIRST_MS: i64 = 2 * ANNOUNCE_EVERY_MS;

/// What a cluster node knows of the other nodes' claims.
pub struct Watch {
    /// Until when a starting node refuses.
    listen_until_ms: i64,
    /// Why SNOWFLAKE.NEXT is refused, while another primary claims this node's pair.
    conflict: Option<String>,
    /// The claims heard from the other nodes.
    claims: Claims,
}

impl Watch {
    /// A node starting at `now_ms`, having heard no one yet.
    pub fn new(now_ms: i64) -> Watch {
        Watch {
            listen_until_ms: now_ms + LISTEN_FIRST_MS,
            conflict: None,
            claims: Claims::new(),
        }
    }

    /// Why SNOWFLAKE.NEXT must be refused at `now_ms`, if it must.
    pub fn refusal(&self, now_ms: i64) -> Option<String> {
        if let Some(conflict) = &self.conflict {
            return Some(conflict.clone());
        }
        (now_ms < self.listen_until_ms).then(|| {
            format!(
                "idgen is listening for the worker-ids of the other cluster nodes for {LISTEN_FIRST_MS} ms \
                 after start, so as not to issue IDs another primary issues too; retry shortly"
            )
        })
    }

    /// For INFO: the conflict (empty if none), and how many other nodes were heard lately.
    pub fn status(&self) -> (&str, usize) {
        (
            self.conflict.as_deref().unwrap_or_default(),
            self.claims.nodes_heard(),
        )
    }

    /// Takes a message from `node`; a warning to log if it cannot be read.
    pub fn hear(&mut self, node: &str, payload: &[u8], now_ms: i64) -> Option<String> {
        let Some(claim) = Claim::decode(payload) else {
            return Some(format!("idgen: unreadable claim from node {node}: ignored"));
        };
        self.claims.hear(node, claim, now_ms);
        None
    }

    /// Compares this node's claim with those heard; the line to log (level, text) when a
    /// conflict starts or ends.
    pub fn judge(&mut self, me: Claim, now_ms: i64) -> Option<(&'static str, String)> {
        let rivals = self.claims.rivals(me, now_ms);
        let verdict = (!rivals.is_empty()).then(|| {
            format!(
                "worker-id conflict: cluster node {} also issues IDs as datacenter {} worker {} \
                 (idgen.datacenter-id, idgen.worker-id): SNOWFLAKE.NEXT is refused on both until \
                 one is given another pair",
                rivals.join(", "),
                me.datacenter,
                me.worker
            )
        });
        let ended = "idgen: worker-id conflict over: SNOWFLAKE.NEXT issues again";
        super::settle(&mut self.conflict, verdict, ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Claim = Claim {
        datacenter: 1,
        worker: 3,
        primary: true,
    };

    #[test]
    fn a_starting_node_listens_first() {
        let watch = Watch::new(1_000);
        assert!(watch.refusal(1_000).unwrap().contains("listening"));
        assert_eq!(watch.refusal(1_000 + LISTEN_FIRST_MS), None);
    }

    #[test]
    fn another_primary_with_the_same_pair_is_a_conflict_until_it_changes() {
        let mut watch = Watch::new(0);
        let now = LISTEN_FIRST_MS;
        assert_eq!(watch.hear("other", &ME.encode(), now), None);
        let (level, line) = watch.judge(ME, now).unwrap();
        assert_eq!(level, "warning");
        assert!(line.contains("cluster node other also issues IDs as datacenter 1 worker 3"));
        assert!(watch
            .refusal(now)
            .unwrap()
            .starts_with("worker-id conflict"));
        assert_eq!(watch.judge(ME, now), None, "said once");
        let moved = Claim { worker: 4, ..ME };
        watch.hear("other", &moved.encode(), now + 1);
        assert_eq!(watch.judge(ME, now + 1).unwrap().0, "notice");
        assert_eq!(watch.refusal(now + 1), None);
    }

    #[test]
    fn an_unreadable_claim_is_ignored_with_a_warning() {
        let mut watch = Watch::new(0);
        assert!(watch
            .hear("n1", b"?", 5)
            .unwrap()
            .contains("unreadable claim from node n1"));
        assert_eq!(watch.status(), ("", 0));
    }
}

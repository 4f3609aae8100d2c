//! Worker-id claims heard from the other nodes of a cluster.
//!
//! Two primaries that put the same datacenter and worker ID into their IDs issue the same IDs
//! whenever they meet in one millisecond at one sequence: the commonest way a Snowflake fleet
//! makes duplicates. Each node announces its [`Claim`] to the others every
//! [`ANNOUNCE_EVERY_MS`]; a primary that hears another primary claim its pair stops issuing,
//! and so does the other, until one of them is reconfigured (or stops being heard).

use std::collections::HashMap;

/// How often a node announces its claim.
pub const ANNOUNCE_EVERY_MS: i64 = 500;
/// A claim not heard again for this long no longer counts: its node left, died or changed.
pub const CLAIM_TTL_MS: i64 = 3_000;

/// What one node puts into its IDs, and whether it issues them (a primary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Datacenter ID.
    pub datacenter: u64,
    /// Worker ID.
    pub worker: u64,
    /// Whether the node is a primary (replicas do not issue IDs).
    pub primary: bool,
}

/// The first byte of an encoded claim; a different version is ignored, not misread.
const VERSION: u8 = 1;
/// Length of an encoded claim: version, flags, datacenter and worker (little-endian u64s).
pub const CLAIM_LEN: usize = 18;

impl Claim {
    /// The claim as sent over the cluster bus.
    pub fn encode(&self) -> [u8; CLAIM_LEN] {
        let mut out = [0u8; CLAIM_LEN];
        out[0] = VERSION;
        out[1] = self.primary as u8;
        out[2..10].copy_from_slice(&self.datacenter.to_le_bytes());
        out[10..18].copy_from_slice(&self.worker.to_le_bytes());
        out
    }

    /// A claim received; `None` for anything that is not one of this version.
    pub fn decode(bytes: &[u8]) -> Option<Claim> {
        let bytes: &[u8; CLAIM_LEN] = bytes.try_into().ok()?;
        if bytes[0] != VERSION || bytes[1] > 1 {
            return None;
        }
        Some(Claim {
            primary: bytes[1] == 1,
            datacenter: u64::from_le_bytes(bytes[2..10].try_into().ok()?),
            worker: u64::from_le_bytes(bytes[10..18].try_into().ok()?),
        })
    }

    fn same_ids(&self, other: &Claim) -> bool {
        (self.datacenter, self.worker) == (other.datacenter, other.worker)
    }
}

/// The latest claim heard from each other node, with when it was heard.
#[derive(Debug, Default)]
pub struct Claims {
    heard: HashMap<String, (Claim, i64)>,
}

impl Claims {
    /// No claims heard yet.
    pub fn new() -> Self {
        Claims::default()
    }

    /// Records `claim` from `node`, heard at `now_ms`.
    pub fn hear(&mut self, node: &str, claim: Claim, now_ms: i64) {
        self.heard.insert(node.to_string(), (claim, now_ms));
    }

    /// The other primaries, sorted, that claim the same IDs as `mine`, a primary, heard within
    /// [`CLAIM_TTL_MS`] of `now_ms`. Empty when `mine` is a replica. Older claims are dropped.
    pub fn rivals(&mut self, mine: Claim, now_ms: i64) -> Vec<String> {
        self.heard.retain(|_, (_, at)| now_ms - *at <= CLAIM_TTL_MS);
        if !mine.primary {
            return Vec::new();
        }
        let mut rivals: Vec<String> = self
            .heard
            .iter()
            .filter(|(_, (claim, _))| claim.primary && claim.same_ids(&mine))
            .map(|(node, _)| node.clone())
            .collect();
        rivals.sort();
        rivals
    }

    /// Nodes heard within [`CLAIM_TTL_MS`] (as of the last [`Claims::rivals`]).
    pub fn nodes_heard(&self) -> usize {
        self.heard.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn claim(datacenter: u64, worker: u64, primary: bool) -> Claim {
        Claim {
            datacenter,
            worker,
            primary,
        }
    }

    #[test]
    fn claims_survive_the_wire_and_junk_is_refused() {
        let c = claim(31, 1 << 40, true);
        assert_eq!(Claim::decode(&c.encode()), Some(c));
        let r = claim(0, 7, false);
        assert_eq!(Claim::decode(&r.encode()), Some(r));
        assert_eq!(Claim::decode(&c.encode()[..17]), None);
        let mut other_version = c.encode();
        other_version[0] = 2;
        assert_eq!(Claim::decode(&other_version), None);
        let mut bad_flag = c.encode();
        bad_flag[1] = 9;
        assert_eq!(Claim::decode(&bad_flag), None);
    }

    #[test]
    fn two_primaries_with_one_pair_are_rivals() {
        let mut claims = Claims::new();
        claims.hear("b", claim(1, 7, true), 1_000);
        claims.hear("c", claim(1, 8, true), 1_000);
        claims.hear("d", claim(2, 7, true), 1_000);
        claims.hear("e", claim(1, 7, false), 1_000);
        assert_eq!(claims.rivals(claim(1, 7, true), 1_100), vec!["b"]);
        assert!(
            claims.rivals(claim(1, 7, false), 1_100).is_empty(),
            "a replica issues nothing"
        );
        claims.hear("a", claim(1, 7, true), 1_200);
        assert_eq!(claims.rivals(claim(1, 7, true), 1_300), vec!["a", "b"]);
    }

    #[test]
    fn a_claim_not_heard_again_expires_and_a_new_one_replaces_it() {
        let mut claims = Claims::new();
        claims.hear("b", claim(1, 7, true), 1_000);
        assert_eq!(
            claims.rivals(claim(1, 7, true), 1_000 + CLAIM_TTL_MS).len(),
            1
        );
        assert!(claims
            .rivals(claim(1, 7, true), 1_001 + CLAIM_TTL_MS)
            .is_empty());
        assert_eq!(claims.nodes_heard(), 0);

        claims.hear("b", claim(1, 7, true), 5_000);
        claims.hear("b", claim(1, 9, true), 5_100); // reconfigured
        assert!(claims.rivals(claim(1, 7, true), 5_200).is_empty());
    }
}

//! A DATESEQ counter whose Cluster slot is moving between nodes.
//!
//! `DATESEQ.NEXT prefix` declares the prefix as its key, but the counter lives at
//! `{prefix}:yyyymmdd`, a key named from the server's clock that the module API cannot declare
//! (a module reports its keys by their place among the arguments). Both hash to one slot, so
//! routing is right while the slot stays put. While it moves, Redis judges by the declared key,
//! which never exists: the source answers `-ASK`, and the target (after `ASKING`) runs the
//! command whether or not the counter came over yet. So a counter this node does not hold is
//! never created while its slot is `MIGRATING` or `IMPORTING` here: the call is answered
//! `-TRYAGAIN`, as Redis answers a multi-key command whose keys are split by a move, and
//! Cluster clients retry it until the counter has arrived or the move has ended. A counter
//! this node holds is moved on as usual: `MIGRATE` takes the key whole, at its latest value.
//!
//! Asked only when the counter key is missing (a new period, or a move), by `crate::ffi::key`
//! through `CLUSTER KEYSLOT` and `CLUSTER NODES`: the module API tells no slot's state.

use crate::error::CommandError;

/// How a slot is moving, as this node's line of `CLUSTER NODES` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moving {
    /// `[slot->-node]`: keys leave this node.
    Out,
    /// `[slot-<-node]`: keys come to this node.
    In,
}

/// Refuses with TRYAGAIN while the slot of the counter key `key` (missing on this node) is
/// moving to or from this node: `slot` is its `CLUSTER KEYSLOT`, `nodes` this node's
/// `CLUSTER NODES` (`None` where the node did not answer).
///
/// # Errors
/// [`CommandError::SlotMoving`] while it moves; [`CommandError::OutOfRange`] when Redis did
/// not answer (refused rather than risk a fresh counter).
pub fn check(key: &[u8], slot: Option<i64>, nodes: Option<&str>) -> Result<(), CommandError> {
    let asked = |what: &str| {
        CommandError::OutOfRange(format!(
            "could not ask this node {what} to check that the DATESEQ counter {} is not moving \
             between Cluster nodes",
            crate::error::shown(key)
        ))
    };
    let slot = slot.ok_or_else(|| asked("CLUSTER KEYSLOT"))?;
    let nodes = nodes.ok_or_else(|| asked("CLUSTER NODES"))?;
    match moving(nodes, slot) {
        None => Ok(()),
        Some(how) => Err(CommandError::SlotMoving(format!(
            "DATESEQ counter {} is not on this node and its slot {slot} is {} here: retry once \
             the slot has moved",
            crate::error::shown(key),
            match how {
                Moving::Out => "migrating away",
                Moving::In => "importing",
            }
        ))),
    }
}

/// How `slot` is moving on the node whose line of `nodes` (`CLUSTER NODES`) is flagged
/// `myself`, if it is.
pub fn moving(nodes: &str, slot: i64) -> Option<Moving> {
    let mine = nodes.lines().find(|line| {
        line.split(' ')
            .nth(2)
            .is_some_and(|flags| flags.split(',').any(|f| f == "myself"))
    })?;
    let out = format!("[{slot}->-");
    let into = format!("[{slot}-<-");
    mine.split(' ').skip(8).find_map(|word| {
        if word.starts_with(&out) {
            Some(Moving::Out)
        } else if word.starts_with(&into) {
            Some(Moving::In)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [93->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f] [77-<-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922 [930-<-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]
";

    #[test]
    fn only_this_nodes_moves_count() {
        assert_eq!(moving(NODES, 93), Some(Moving::Out));
        assert_eq!(moving(NODES, 77), Some(Moving::In));
        // Another node's import, and a slot whose number starts like one that moves.
        assert_eq!(moving(NODES, 930), None);
        assert_eq!(moving(NODES, 9), None);
        assert_eq!(moving(NODES, 7), None);
        assert_eq!(moving(NODES, 100), None);
    }

    #[test]
    fn a_moving_slot_or_no_answer_is_refused() {
        let key = b"{p}:20261129";
        assert!(check(key, Some(100), Some(NODES)).is_ok());
        let out = check(key, Some(93), Some(NODES)).unwrap_err().to_string();
        assert!(
            out.starts_with("TRYAGAIN") && out.contains("slot 93 is migrating away"),
            "{out}"
        );
        let into = check(key, Some(77), Some(NODES)).unwrap_err().to_string();
        assert!(into.contains("slot 77 is importing"), "{into}");
        let unasked = check(key, None, Some(NODES)).unwrap_err().to_string();
        assert!(unasked.contains("CLUSTER KEYSLOT"), "{unasked}");
        let unasked = check(key, Some(93), None).unwrap_err().to_string();
        assert!(unasked.contains("CLUSTER NODES"), "{unasked}");
    }

    #[test]
    fn no_line_of_its_own_is_no_move() {
        assert_eq!(moving("", 93), None);
        assert_eq!(moving(&NODES.replace("myself,", ""), 93), None);
    }
}

//! One namespace's decisions without a server: namespaces kept in a map ([`Hashes`]) behind the
//! key interface, the time given.

use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::leases::memory::Memory;
use crate::leases::pool::Grant;

/// Namespaces as hashes in a map, and how many writes each took.
#[derive(Default)]
struct Hashes {
    hashes: HashMap<Vec<u8>, BTreeMap<String, String>>,
    writes: usize,
}

impl NamespaceKeys for Hashes {
    fn read(&mut self, ns: &[u8]) -> Result<Vec<(String, String)>, CommandError> {
        let hash = self.hashes.get(ns).cloned().unwrap_or_default();
        Ok(hash.into_iter().collect())
    }

    fn write(&mut self, ns: &[u8], fields: &[(String, String)]) -> Result<(), CommandError> {
        let hash = self.hashes.entry(ns.to_vec()).or_default();
        hash.extend(fields.iter().cloned());
        self.writes += 1;
        Ok(())
    }
}

const NOW: i64 = 1_795_953_600_000;
const HORIZON: i64 = 60_000;
const TTL: i64 = 10_000;
const NS: &[u8] = b"fleet";

/// A coordinator loaded at NOW without a witness file: grants start above NOW + the horizon.
fn memory() -> Memory {
    Memory::new(None, NOW + HORIZON, HORIZON)
}

fn open<'a>(
    m: &'a mut Memory,
    keys: &'a mut Hashes,
    now: i64,
) -> Result<Namespace<'a, &'a mut Hashes>, CommandError> {
    Namespace::open(m, keys, NS, true, (now, HORIZON))
}

/// A coordinator that granted worker ID 0 of a pool of 4 at NOW.
fn granted() -> (Memory, Hashes, Grant) {
    let (mut m, mut keys) = (memory(), Hashes::default());
    let grant = open(&mut m, &mut keys, NOW)
        .unwrap()
        .acquire(4, TTL)
        .unwrap();
    (m, keys, grant)
}

#[test]
fn a_grant_starts_above_the_fence_and_writes_its_record() {
    let (mut m, mut keys, grant) = granted();
    assert_eq!((grant.worker_id, grant.start_above_ms), (0, NOW + HORIZON));
    let hash = &keys.hashes[NS];
    assert_eq!(hash["max"], "4");
    assert_eq!(hash["0"], grant.lease.to_field());
    assert_eq!(keys.writes, 1, "one write per grant");
    let second = open(&mut m, &mut keys, NOW)
        .unwrap()
        .acquire(4, TTL)
        .unwrap();
    assert_eq!(second.worker_id, 1);
    assert!(second.lease.token > grant.lease.token);
}

#[test]
fn renewal_and_release_write_the_holders_record() {
    let (mut m, mut keys, grant) = granted();
    let holder = (0, grant.lease.token);
    let until = NOW + HORIZON + 5;
    let renewed = open(&mut m, &mut keys, NOW + 1_000)
        .unwrap()
        .renew(holder, TTL, until)
        .unwrap();
    assert_eq!(
        (renewed.expires_ms, renewed.until_ms),
        (NOW + 1_000 + TTL, until)
    );
    assert_eq!(keys.hashes[NS]["0"], renewed.to_field());
    let far = open(&mut m, &mut keys, NOW + 1_000)
        .unwrap()
        .renew(holder, TTL, NOW + 1_000 + HORIZON + 1)
        .unwrap_err();
    assert!(
        far.to_string().contains("past the coordinator's clock"),
        "{far}"
    );
    open(&mut m, &mut keys, NOW + 2_000)
        .unwrap()
        .release(holder, None)
        .unwrap();
    assert!(open(&mut m, &mut keys, NOW + 2_000)
        .unwrap()
        .live()
        .is_empty());
    let gone = open(&mut m, &mut keys, NOW + 3_000)
        .unwrap()
        .renew(holder, TTL, 0)
        .unwrap_err();
    assert!(gone.to_string().contains("has expired"), "{gone}");
}

#[test]
fn a_namespace_that_went_back_voids_its_leases_and_grants_above_the_horizon() {
    let (mut m, mut keys, grant) = granted();
    keys.hashes.clear();
    let later = NOW + 5_000;
    let void = open(&mut m, &mut keys, later)
        .unwrap()
        .renew((0, grant.lease.token), TTL, 0)
        .unwrap_err();
    assert!(void.to_string().contains("is void"), "{void}");
    // The reset was written back at once, refused renewal or not.
    assert!(keys.hashes[NS]["grant_above"].parse::<i64>().unwrap() >= later + HORIZON);
    let regrant = open(&mut m, &mut keys, later)
        .unwrap()
        .acquire(4, TTL)
        .unwrap();
    assert!(regrant.start_above_ms >= later + HORIZON, "{regrant:?}");
    assert!(regrant.lease.token > grant.lease.token);
}

#[test]
fn a_live_record_changed_by_hand_is_refused_and_nothing_written() {
    let (mut m, mut keys, _) = granted();
    let writes = keys.writes;
    let record = keys.hashes.get_mut(NS).unwrap().get_mut("0").unwrap();
    *record = record.replacen(' ', " 1", 1);
    let refused = open(&mut m, &mut keys, NOW + 1).err().unwrap();
    assert!(refused.to_string().contains("changed by hand"), "{refused}");
    assert_eq!(keys.writes, writes);
}

#[test]
fn a_read_only_open_writes_nothing() {
    let (mut m, mut keys, _) = granted();
    let writes = keys.writes;
    let listed = Namespace::open(&mut m, &mut keys, NS, false, (NOW + 1, HORIZON))
        .unwrap()
        .live();
    assert_eq!(listed.len(), 1);
    assert_eq!(keys.writes, writes);
}

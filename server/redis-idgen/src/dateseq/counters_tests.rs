//! `Counters`' decisions without a server: counters kept in a map ([`Map`]) behind the key
//! interface, the time given.

use std::collections::HashMap;

use idgen_core::dateseq::{Calendar, Period};

use super::*;
use crate::dateseq::keys::{CounterKeys, OpenCounter, Step};

/// Counters in a map: value and expiry by key name, and every step written.
#[derive(Default)]
struct Map {
    keys: HashMap<Vec<u8>, (u64, i64)>,
    steps: Vec<Step>,
}

struct Open<'k> {
    map: &'k mut Map,
    name: Vec<u8>,
}

impl CounterKeys for Map {
    type Open<'k> = Open<'k>;

    fn read(&mut self, name: &[u8]) -> Result<Option<u64>, CommandError> {
        Ok(self.keys.get(name).map(|&(value, _)| value))
    }

    fn open(&mut self, name: &[u8]) -> Result<Open<'_>, CommandError> {
        let name = name.to_vec();
        Ok(Open { map: self, name })
    }
}

impl OpenCounter for Open<'_> {
    fn found(&self) -> Option<u64> {
        self.map.keys.get(&self.name).map(|&(value, _)| value)
    }

    fn advance(self, step: Step) -> Result<(), CommandError> {
        let entry = self
            .map
            .keys
            .entry(self.name)
            .or_insert((0, step.expire_at_ms));
        entry.0 += step.by;
        entry.1 = entry.1.max(step.expire_at_ms);
        self.map.steps.push(step);
        Ok(())
    }
}

/// 2026-11-29 12:00 UTC.
const NOON: i64 = 1_795_953_600_000;
/// 2026-11-30 00:00 UTC: the end of NOON's day.
const MIDNIGHT: i64 = NOON + 12 * 3_600_000;
const KEY: &[u8] = b"{p}:20261129";

fn counters() -> Counters {
    Counters::new(Calendar::new("UTC").unwrap(), 1_000, None)
}

fn at(prefix: &[u8], digits: u32, count: u64, now_ms: i64) -> At<'_> {
    At {
        prefix,
        period: Period::Day,
        digits,
        count,
        now_ms,
        failover_gap: 100,
        ttl_ms: 1_000,
    }
}

fn refusal(result: Result<Issued, CommandError>) -> String {
    match result {
        Err(e) => e.to_string(),
        Ok(issued) => panic!("expected a refusal, got {issued:?}"),
    }
}

#[test]
fn a_new_counter_starts_at_one_and_lives_past_its_period() {
    let (mut c, mut map) = (counters(), Map::default());
    let issued = c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap();
    let one = 20_261_129_001;
    assert_eq!(
        issued,
        Issued {
            first: one,
            last: one,
            wait: false
        }
    );
    assert_eq!(map.keys[KEY], (1, MIDNIGHT + 1_000));
    assert_eq!(
        c.current(b"p", Period::Day, NOON, &mut map).unwrap(),
        (20_261_129, 1)
    );
}

#[test]
fn count_moves_the_counter_by_its_values_in_one_step() {
    let (mut c, mut map) = (counters(), Map::default());
    c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap();
    let issued = c.next(&at(b"p", 3, 5, NOON), &mut map).unwrap();
    assert_eq!(
        (issued.first, issued.last),
        (20_261_129_002, 20_261_129_006)
    );
    assert_eq!(map.steps.last().unwrap().by, 5);
    assert_eq!(map.keys[KEY].0, 6);
}

#[test]
fn the_period_is_the_one_of_the_time_given() {
    let (mut c, mut map) = (counters(), Map::default());
    c.next(&at(b"p", 3, 1, MIDNIGHT - 1), &mut map).unwrap();
    let next_day = c.next(&at(b"p", 3, 1, MIDNIGHT), &mut map).unwrap();
    assert_eq!(next_day.first, 20_261_130_001);
    assert_eq!(map.keys.len(), 2);
    let mut month = at(b"p", 3, 1, NOON);
    month.period = Period::Month;
    assert_eq!(c.next(&month, &mut map).unwrap().first, 202_611_001);
}

#[test]
fn after_a_promotion_each_counter_skips_the_gap_once() {
    let (mut c, mut map) = (counters(), Map::default());
    c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap();
    c.promoted();
    assert_eq!(
        c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap().first,
        20_261_129_102
    );
    assert_eq!(
        c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap().first,
        20_261_129_103
    );
    // A counter first used in the term skips it too: the old primary may have used it.
    assert_eq!(
        c.next(&at(b"q", 3, 1, NOON), &mut map).unwrap().first,
        20_261_129_101
    );
    assert_eq!(c.stats().counts()[2..4], [2, 200]);
}

#[test]
fn a_counter_found_below_its_witness_continues_above_it() {
    let (mut c, mut map) = (counters(), Map::default());
    for _ in 0..3 {
        c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap();
    }
    map.keys.remove(KEY);
    assert_eq!(c.current(b"p", Period::Day, NOON, &mut map).unwrap().1, 3);
    assert_eq!(
        c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap().first,
        20_261_129_004
    );
    assert_eq!(map.keys[KEY].0, 4, "written where it continued");
    map.keys.insert(KEY.to_vec(), (2, 0));
    assert_eq!(
        c.next(&at(b"p", 3, 1, NOON), &mut map).unwrap().first,
        20_261_129_005
    );
    assert_eq!(
        map.steps.last().unwrap().by,
        3,
        "from 2, past the witness's 4"
    );
    assert_eq!(c.stats().counts()[4], 2);
}

#[test]
fn a_refused_call_writes_nothing_and_leaves_no_witness() {
    let (mut c, mut map) = (counters(), Map::default());
    map.keys.insert(KEY.to_vec(), (9, 0));
    let spent = refusal(c.next(&at(b"p", 1, 1, NOON), &mut map));
    assert!(spent.contains("is spent"), "{spent}");
    let count = refusal(c.next(&at(b"p", 2, 91, NOON), &mut map));
    assert!(
        count.contains("COUNT 91 does not fit: 90 values are left"),
        "{count}"
    );
    assert!(map.steps.is_empty());
    assert_eq!(map.keys[KEY].0, 9);
    // A new counter refused for its gap leaves no witness behind.
    c.promoted();
    let gap = refusal(c.next(&at(b"new", 1, 1, NOON), &mut map));
    assert!(gap.contains("failover gap of 100"), "{gap}");
    assert_eq!(c.current(b"new", Period::Day, NOON, &mut map).unwrap().1, 0);
    assert!(map.steps.is_empty());
    // Nor does it hold a place among the witnesses: with room for one, a refusal leaves it.
    let mut one = Counters::new(Calendar::new("UTC").unwrap(), 1, None);
    one.promoted();
    refusal(one.next(&at(b"new", 1, 1, NOON), &mut map));
    assert!(one.next(&at(b"other", 3, 1, NOON), &mut map).is_ok());
    let full = refusal(one.next(&at(b"third", 3, 1, NOON), &mut map));
    assert!(full.contains("idgen.dateseq-witness-max"), "{full}");
}

#[test]
fn a_prefix_that_cannot_name_a_key_is_refused() {
    let (mut c, mut map) = (counters(), Map::default());
    let unbalanced = refusal(c.next(&at(b"a}b", 3, 1, NOON), &mut map));
    assert!(unbalanced.starts_with("ERR"), "{unbalanced}");
    assert!(map.keys.is_empty());
}

#[test]
fn with_a_witness_file_a_value_above_its_reservation_waits() {
    let dir = std::env::temp_dir().join(format!("idgen-counters-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("witness");
    let _ = std::fs::remove_file(&path);
    let now = idgen_core::Clock::now_ms(&idgen_core::SystemClock);
    let file = WitnessFile::open(path, now).unwrap();
    let mut c = Counters::new(Calendar::new("UTC").unwrap(), 1_000, Some(file));
    let mut map = Map::default();
    // DIGITS 3: the file's first line already holds a new counter's first values.
    assert!(!c.next(&at(b"wide", 3, 1, now), &mut map).unwrap().wait);
    // DIGITS 1: its first value waits for a line of its own.
    assert!(c.next(&at(b"narrow", 1, 1, now), &mut map).unwrap().wait);
    let _ = std::fs::remove_dir_all(&dir);
}

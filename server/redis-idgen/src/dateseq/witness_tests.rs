//! The witnesses' unit tests (`witness.rs`).

use super::*;
use idgen_core::dateseq::most_in;

const DAY_END: i64 = 1_795_046_400_000;
const NOW: i64 = DAY_END - 1_000;

#[test]
fn a_counter_below_its_witness_continues_above_it() {
    let mut w = Witnesses::new(10, false);
    let mark = w.slot(w.name(b"inv:20261126"), DAY_END, NOW).unwrap();
    assert_eq!(mark.resume(0, 0), (0, None));
    mark.note(5);
    // Raised by a client: carried on from.
    assert_eq!(mark.resume(9, 0), (9, None));
    mark.note(10);
    // Deleted (found at 0) or lowered.
    for found in [0, 3, 9] {
        let lowered = Lowered { found, highest: 10 };
        let mark = w.slot(w.name(b"inv:20261126"), DAY_END, NOW).unwrap();
        assert_eq!(mark.resume(found, 0), (10, Some(lowered)));
    }
    // Another counter is not confused with it.
    let other = w.slot(w.name(b"inv:20261127"), DAY_END, NOW).unwrap();
    assert_eq!(other.resume(0, 0), (0, None));
    // Counters named in turn each keep their own witness.
    w.slot(w.name(b"a"), DAY_END, NOW).unwrap().note(5);
    w.slot(w.name(b"b"), DAY_END, NOW).unwrap().note(7);
    assert_eq!(w.slot(w.name(b"a"), DAY_END, NOW).unwrap().highest, 5);
    assert_eq!(w.mark(w.name(b"b")).unwrap().highest, 7);
    assert_eq!(w.mark(w.name(b"a")).unwrap().highest, 5);
    // A note never lowers the witness.
    w.slot(w.name(b"inv:20261126"), DAY_END, NOW)
        .unwrap()
        .note(2);
    assert_eq!(w.mark(w.name(b"inv:20261126")).unwrap().highest, 10);
}

#[test]
fn the_cap_refuses_new_counters_until_a_period_is_over() {
    let mut w = Witnesses::new(2, false);
    w.slot(w.name(b"a"), DAY_END, NOW).unwrap();
    w.slot(w.name(b"b"), DAY_END + 86_400_000, NOW).unwrap();
    assert_eq!(w.slot(w.name(b"c"), DAY_END, NOW), Err(Full { max: 2 }));
    assert!(
        w.slot(w.name(b"a"), DAY_END, NOW).is_ok(),
        "a kept counter is not new"
    );
    // The day is over, and the grace: its counter's witness goes, the other stays.
    let later = DAY_END + GRACE_MS;
    assert!(w.slot(w.name(b"c"), DAY_END + 86_400_000, later).is_ok());
    assert_eq!(w.len(), 2);
    assert!(w.mark(w.name(b"a")).is_none() && w.mark(w.name(b"b")).is_some());
}

#[test]
fn the_memory_shown_grows_with_the_counters_and_falls_when_they_go() {
    let mut w = Witnesses::new(usize::MAX, false);
    let empty = w.bytes();
    for i in 0..10_000u32 {
        let key = format!("customer-{i}:20261126");
        w.slot(w.name(key.as_bytes()), DAY_END, NOW).unwrap();
    }
    let full = w.bytes();
    assert!(full > empty + 10_000 * 25, "{full}");
    w.slot(
        w.name(b"tomorrow"),
        DAY_END + 86_400_000,
        DAY_END + GRACE_MS,
    )
    .unwrap();
    assert!(w.bytes() < full / 100, "{}", w.bytes());
}

#[test]
fn with_a_witness_file_values_above_the_reservation_wait_and_blocks_follow_the_rate() {
    let block = MIN_BLOCK as u64;
    let mut w = Witnesses::new(10, true);
    let name = w.name(b"{inv}:20261126");
    let mark = w.slot(name, DAY_END, NOW).unwrap();
    // A new counter's first values are covered by the file's first line: its own block is
    // asked at once, and nothing waits.
    let first = mark.reserve(1, NOW, u64::MAX, true);
    assert_eq!(
        first,
        Reserve {
            wait: false,
            ask: Some(1 + block)
        }
    );
    assert_eq!(
        mark.reserve(2, NOW, u64::MAX, true),
        Reserve {
            wait: false,
            ask: None
        }
    );
    // Past the new counters' block, its own unwritten yet: the value waits.
    assert!(!mark.reserve(NEW_COUNTER_BLOCK, NOW, u64::MAX, true).wait);
    assert!(
        mark.reserve(NEW_COUNTER_BLOCK + 1, NOW, u64::MAX, true)
            .wait
    );
    w.confirm(name, 1 + block, true);
    let mark = w.slot(name, DAY_END, NOW).unwrap();
    assert_eq!(mark.durable, 1 + block);
    // Within half a block of what was asked, the next block is asked ahead; used up fast,
    // it doubles.
    let (asked, before) = (mark.asked, mark.block);
    let value = asked - u64::from(before / 2) + 1;
    let ahead = mark.reserve(value, NOW + 10, u64::MAX, true);
    assert_eq!(mark.block, before * 2);
    assert_eq!(ahead.ask, Some(value + u64::from(mark.block)));
    // A failed write asks again on the next value.
    w.confirm(name, ahead.ask.unwrap(), false);
    let mark = w.slot(name, DAY_END, NOW).unwrap();
    assert_eq!(mark.asked, mark.durable);
    assert!(mark.reserve(asked, NOW + 20, u64::MAX, true).ask.is_some());
    // A block that lasted long halves the next one, down to the smallest.
    let before = mark.block;
    mark.reserve(mark.asked, NOW + 60_000, u64::MAX, true);
    assert_eq!(mark.block, (before / 2).max(MIN_BLOCK));
    // Never past the largest.
    for i in 0..40 {
        let asked = mark.asked;
        mark.reserve(asked, NOW + 60_001 + i, u64::MAX, true);
    }
    assert_eq!(mark.block, MAX_BLOCK);
    // Blocks stop at the most the counter's digits hold, and are not asked again there.
    let mut w = Witnesses::new(10, true);
    let mark = w.slot(w.name(b"small"), DAY_END, NOW).unwrap();
    for value in 1..=999 {
        if let Some(asked) = mark.reserve(value, NOW + value as i64, 999, true).ask {
            assert!(asked <= 999, "{asked}");
            assert!(asked - value <= 999 / SKIP_SHARE, "{value}: {asked}");
        }
    }
    assert_eq!(mark.reserve(999, NOW + 1000, 999, true).ask, None);
}

#[test]
fn a_counter_of_few_digits_waits_for_its_own_line_and_a_crash_skips_a_sixteenth_of_it() {
    assert!(!first_line_covers(most_in(1)) && !first_line_covers(most_in(2)));
    assert!(first_line_covers(most_in(3)));
    for digits in 1..=2 {
        let most = most_in(digits);
        let mut w = Witnesses::new(10, true);
        let name = w.name(b"d1c:20261126");
        let mut reserved = 0;
        for value in 1..=most {
            let mark = w.slot(name, DAY_END, NOW).unwrap();
            let reserve = mark.reserve(value, NOW + value as i64, most, false);
            // Nothing goes out that its own lines do not hold.
            assert_eq!(
                reserve.wait,
                value > reserved,
                "DIGITS {digits}, value {value}"
            );
            if let Some(upto) = reserve.ask {
                assert!(
                    upto - value <= (most / SKIP_SHARE).max(1),
                    "{value}: {upto}"
                );
                w.confirm(name, upto, true);
                reserved = upto;
            }
            assert!(
                reserved >= value,
                "DIGITS {digits}: {value} above {reserved}"
            );
        }
    }
}

#[test]
fn after_a_crash_counters_of_periods_under_way_start_above_the_new_counters_block() {
    let mut w = Witnesses::new(10, true);
    let load = NOW - 1_000;
    let crashed = Crashed {
        floor: NEW_COUNTER_BLOCK,
        from_ms: load - 60_000,
        to_ms: load,
    };
    assert_eq!(w.crash_floor(load - 5, DAY_END), 0, "no crash, no floor");
    w.after_crashes(&[crashed]);
    w.seed(w.name(b"named"), DAY_END, 3);
    // Begun before the load: lifted, quietly when the counter holds nothing.
    let floor = w.crash_floor(load - 5, DAY_END);
    assert_eq!(floor, NEW_COUNTER_BLOCK);
    let mark = w.slot(w.name(b"today"), DAY_END, NOW).unwrap();
    assert_eq!(mark.resume(0, floor), (NEW_COUNTER_BLOCK, None));
    // The floor is not a value given: the mark holds nothing (DATESEQ.CURRENT shows none),
    // and a call at DIGITS the first line does not cover resumes at the start.
    assert_eq!(mark.highest, 0);
    assert_eq!(mark.resume(0, 0), (0, None));
    // Named in the file with less: the floor still holds, quietly.
    let mark = w.slot(w.name(b"named"), DAY_END, NOW).unwrap();
    assert_eq!(mark.resume(0, floor).0, NEW_COUNTER_BLOCK);
    assert_eq!(mark.resume(0, 0).0, 3);
    // Begun after the load: starts at the start.
    assert_eq!(w.crash_floor(load + 1, DAY_END), 0);
    // A counter lowered from above the floor is worth a word.
    w.seed(w.name(b"busy"), DAY_END, 40);
    let mark = w.slot(w.name(b"busy"), DAY_END, NOW).unwrap();
    let lowered = Lowered {
        found: 2,
        highest: 40,
    };
    assert_eq!(mark.resume(2, floor), (40, Some(lowered)));
}

#[test]
fn a_seeded_reservation_is_where_the_counter_carries_on() {
    let mut w = Witnesses::new(1, true);
    let name = w.name(b"{inv}:20261126");
    w.seed(name, DAY_END, 40);
    w.seed(w.name(b"other"), DAY_END, 7);
    assert_eq!(w.len(), 2, "kept past the cap");
    let mark = w.slot(name, DAY_END, NOW).unwrap();
    assert_eq!(
        mark.resume(0, 0),
        (
            40,
            Some(Lowered {
                found: 0,
                highest: 40
            })
        )
    );
    assert!(mark.reserve(41, NOW, u64::MAX, true).wait);
    // Seeding never lowers a mark.
    w.seed(name, DAY_END, 3);
    assert_eq!(w.mark(name).unwrap().highest, 40);
    // Without a witness file nothing waits or is asked.
    let mut off = Witnesses::new(10, false);
    let mark = off.slot(off.name(b"a"), DAY_END, NOW).unwrap();
    assert_eq!(
        mark.reserve(1_000_000, NOW, u64::MAX, true),
        Reserve {
            wait: false,
            ask: None
        }
    );
}

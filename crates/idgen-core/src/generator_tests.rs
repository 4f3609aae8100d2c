use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::*;
use crate::clock::ManualClock;
use crate::settings::TWITTER_EPOCH_MS;

const NOW: i64 = 1_795_000_000_000;

fn generator(settings: Settings) -> (Generator<ManualClock>, ManualClock) {
    let clock = ManualClock::new(NOW);
    (Generator::new(settings, clock.clone()).unwrap(), clock)
}

fn twitter() -> Settings {
    Settings {
        worker_id: 3,
        datacenter_id: 1,
        ..Settings::default()
    }
}

#[test]
fn ids_carry_time_node_and_sequence() {
    let (mut g, _) = generator(twitter());
    let a = g.next_id().unwrap();
    let b = g.next_id().unwrap();
    assert_eq!(b, a + 1, "same ms: sequence + 1");
    let d = g.decode(b);
    assert_eq!(
        d,
        DecodedId {
            unix_ms: NOW,
            datacenter: 1,
            worker: 3,
            sequence: 1
        }
    );
    assert_eq!(a >> 22, (NOW - TWITTER_EPOCH_MS) as u64);
}

#[test]
fn new_tick_restarts_the_sequence() {
    let (mut g, clock) = generator(twitter());
    g.next_id().unwrap();
    g.next_id().unwrap();
    clock.advance(1);
    let id = g.next_id().unwrap();
    assert_eq!(g.decode(id).sequence, 0);
}

#[test]
fn clock_step_back_never_repeats_and_counts_the_event() {
    let (mut g, clock) = generator(twitter());
    let mut seen = HashSet::new();
    let mut last = 0;
    for step in [0, 5, -3, -100, 1, 2, 200] {
        clock.advance(step);
        for _ in 0..50 {
            let id = g.next_id().unwrap();
            assert!(id > last, "went backwards after a step of {step} ms");
            assert!(seen.insert(id));
            last = id;
        }
    }
    assert_eq!(g.stats().clock_backwards, 2);
    assert_eq!(g.stats().issued, 350);
}

#[test]
fn clock_far_behind_is_refused_until_it_catches_up() {
    let (mut g, clock) = generator(Settings {
        max_drift_ms: 10,
        ..twitter()
    });
    let before = g.next_id().unwrap();
    clock.advance(-11);
    let err = g.next_id().unwrap_err();
    assert_eq!(
        err,
        GenerateError::DriftExceeded {
            ahead_ms: 11,
            max_ms: 10
        }
    );
    assert_eq!(g.stats().refused, 1);
    clock.advance(1);
    let after = g.next_id().unwrap();
    assert_eq!(after, before + 1, "resumes from the high-water mark");
}

#[test]
fn spent_sequence_borrows_the_next_tick_then_refuses() {
    let (mut g, _) = generator(Settings {
        max_drift_ms: 2,
        ..twitter()
    });
    // 4096 per tick, ticks now, now+1, now+2 allowed: 3 * 4096 IDs, then a refusal.
    let mut ids = Vec::new();
    g.next_ids(3 * 4096, &mut ids).unwrap();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(g.decode(ids[4096]).unix_ms, NOW + 1);
    assert_eq!(g.stats().ticks_borrowed, 2);
    assert_eq!(g.drift_ms(), 2);
    assert!(matches!(
        g.next_id(),
        Err(GenerateError::DriftExceeded {
            ahead_ms: 3,
            max_ms: 2
        })
    ));
}

#[test]
fn zero_drift_refuses_instead_of_waiting() {
    let (mut g, clock) = generator(Settings {
        max_drift_ms: 0,
        ..twitter()
    });
    let mut ids = Vec::new();
    g.next_ids(4096, &mut ids).unwrap();
    assert!(g.next_id().is_err());
    clock.advance(1);
    assert!(g.next_id().is_ok());
}

#[test]
fn refused_batch_consumes_nothing() {
    let (mut g, _) = generator(Settings {
        max_drift_ms: 0,
        ..twitter()
    });
    let mut ids = vec![7];
    assert!(g.next_ids(5000, &mut ids).is_err());
    assert_eq!(ids, vec![7]);
    assert_eq!(g.stats().issued, 0);
    let id = g.next_id().unwrap();
    assert_eq!(g.decode(id).sequence, 0);
}

#[test]
fn every_layout_issues_increasing_unique_ids_that_decode() {
    let layouts = [
        Layout::twitter(),
        Layout::instagram(),
        Layout::sonyflake(),
        Layout::parse("time:43,worker:8,sequence:12").unwrap(),
    ];
    for layout in layouts {
        let worker = layout.max(crate::layout::Field::Worker);
        let settings = Settings {
            layout: layout.clone(),
            worker_id: worker,
            max_drift_ms: 60_000,
            ..Settings::default()
        };
        let (mut g, clock) = generator(settings);
        let mut ids = Vec::new();
        for round in 0..20 {
            clock.advance(if round % 5 == 4 { -7 } else { 3 });
            g.next_ids(1000, &mut ids).unwrap();
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{layout}");
        assert!(ids.iter().all(|&id| id <= i64::MAX as u64), "{layout}");
        let d = g.decode(ids[0]);
        assert_eq!(d.worker, worker, "{layout}");
        let tick = layout.tick_ms() as i64;
        assert_eq!(
            d.unix_ms,
            NOW + 3 - (NOW + 3 - TWITTER_EPOCH_MS) % tick,
            "{layout}"
        );
    }
}

#[test]
fn time_field_runs_out_with_an_error() {
    let epoch = NOW - (1 << 20) + 2; // 20 bits of ms: two ticks left
    let layout = Layout::parse("time:20,sequence:1").unwrap();
    let (mut g, _) = generator(Settings {
        layout,
        epoch_ms: epoch,
        max_drift_ms: 100,
        ..Settings::default()
    });
    let mut ids = Vec::new();
    g.next_ids(4, &mut ids).unwrap();
    assert_eq!(g.next_id(), Err(GenerateError::TimeExhausted));
}

#[test]
fn random_start_spreads_parity_at_low_traffic() {
    let (mut g, clock) = generator(Settings {
        random_start: true,
        ..twitter()
    });
    let mut odd = 0;
    for _ in 0..2000 {
        clock.advance(1);
        let id = g.next_id().unwrap();
        assert!(g.decode(id).sequence < 256);
        odd += id & 1;
    }
    assert!((700..1300).contains(&odd), "{odd} odd of 2000");
    let (mut plain, clock) = generator(twitter());
    for _ in 0..100 {
        clock.advance(1);
        assert_eq!(
            plain.next_id().unwrap() & 1,
            0,
            "without it, low traffic gives even IDs"
        );
    }
}

#[test]
fn random_start_never_repeats_within_a_busy_tick() {
    let (mut g, _) = generator(Settings {
        random_start: true,
        max_drift_ms: 100,
        ..twitter()
    });
    let mut ids = Vec::new();
    g.next_ids(50_000, &mut ids).unwrap();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn threads_sharing_one_generator_get_unique_ids() {
    let g = Arc::new(Mutex::new(
        Generator::new(twitter(), crate::clock::SystemClock).unwrap(),
    ));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                while mine.len() < 50_000 {
                    if let Ok(id) = g.lock().unwrap().next_id() {
                        mine.push(id);
                    }
                }
                mine
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        for id in h.join().unwrap() {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    assert_eq!(all.len(), 200_000);
}

#[test]
fn resuming_after_a_reservation_starts_above_it() {
    let (mut g, _) = generator(Settings {
        max_drift_ms: 50,
        ..twitter()
    });
    let mut before = Vec::new();
    g.next_ids(40 * 4096, &mut before).unwrap(); // borrows 39 ms ahead of the clock
    let reserved = NOW + 45;
    // A restart a moment later, the clock where it was: a naive generator repeats IDs.
    let (mut naive, _) = generator(Settings {
        max_drift_ms: 50,
        ..twitter()
    });
    assert!(
        before.contains(&naive.next_id().unwrap()),
        "the hazard this guards against"
    );
    let (mut restarted, _) = generator(Settings {
        max_drift_ms: 50,
        ..twitter()
    });
    restarted.resume_after(reserved);
    let first = restarted.next_id().unwrap();
    assert!(first > *before.last().unwrap());
    assert_eq!(restarted.decode(first).unix_ms, reserved + 1);
}

#[test]
fn resuming_too_far_ahead_refuses_until_the_clock_arrives() {
    let (mut g, clock) = generator(Settings {
        max_drift_ms: 10,
        ..twitter()
    });
    g.resume_after(NOW + 60_000);
    assert!(matches!(
        g.next_id(),
        Err(GenerateError::StartFence { above_ms, ahead_ms: 60_001, max_ms: 10 })
            if above_ms == NOW + 60_000
    ));
    clock.advance(60_000);
    let id = g.next_id().unwrap();
    assert_eq!(g.decode(id).unix_ms, NOW + 60_001);
}

/// A start at the drift limit (the load time plus the limit, a module's start without its
/// state file) leaves no room for a burst until the clock moves: the refusal names the start
/// and when to retry, not a clock step; once the clock stepped back it names the step.
#[test]
fn a_burst_at_the_start_fence_is_refused_as_such() {
    let (mut g, clock) = generator(Settings {
        max_drift_ms: 1_000,
        ..twitter()
    });
    g.resume_after(NOW + 1_000);
    let mut ids = Vec::new();
    let refused = g.next_ids(100_000, &mut ids).unwrap_err();
    assert!(ids.is_empty(), "a refused batch issues nothing");
    let text = refused.to_string();
    assert!(
        matches!(refused, GenerateError::StartFence { ahead_ms, max_ms: 1_000, .. } if ahead_ms > 1_000),
        "{text}"
    );
    assert!(
        text.contains("IDs start above") && text.contains("retry in"),
        "{text}"
    );
    clock.advance(25);
    g.next_ids(100_000, &mut ids).unwrap();
    // A step back below where IDs resumed: a clock fault, said as one.
    clock.set(NOW - 5_000);
    let refused = g.next_ids(100_000, &mut ids).unwrap_err();
    assert!(
        matches!(refused, GenerateError::DriftExceeded { .. }),
        "{refused}"
    );
}

#[test]
fn ids_never_reach_the_ceiling() {
    let (mut g, clock) = generator(Settings {
        max_drift_ms: 1000,
        ..twitter()
    });
    g.set_ceiling(NOW + 100);
    let mut ids = Vec::new();
    g.next_ids(100 * 4096, &mut ids).unwrap();
    assert_eq!(
        g.decode(ids[0]).unix_ms,
        NOW,
        "the clock is far enough below the ceiling"
    );
    let err = g.next_id().unwrap_err();
    assert_eq!(
        err,
        GenerateError::NotReserved {
            reserved_until_ms: NOW + 100,
            ahead_ms: 100,
        }
    );
    clock.advance(500);
    assert!(
        g.next_id().is_err(),
        "the clock alone does not lift the ceiling"
    );
    g.set_ceiling(NOW + 1000);
    assert!(g.next_id().is_ok());
}

#[test]
fn a_clock_that_jumps_past_the_ceiling_lags_instead_of_refusing() {
    let (mut g, clock) = generator(twitter());
    g.set_ceiling(NOW + 500);
    let before = g.next_id().unwrap();
    clock.advance(10_000); // an NTP step, a VM resumed
    let mut ids = Vec::new();
    let room = CEILING_HEADROOM_MS as usize * 4096;
    g.next_ids(room, &mut ids).unwrap();
    assert!(ids[0] > before && ids.windows(2).all(|w| w[0] < w[1]));
    let lagging = NOW + 500 - CEILING_HEADROOM_MS as i64;
    assert_eq!(
        g.decode(ids[0]).unix_ms,
        lagging,
        "read as the headroom below the ceiling"
    );
    assert!(ids.iter().all(|&id| g.decode(id).unix_ms < NOW + 500));
    assert!(
        matches!(g.next_id(), Err(GenerateError::NotReserved { .. })),
        "all room spent"
    );
    g.set_ceiling(NOW + 10_500);
    let after = g.next_id().unwrap();
    assert_eq!(g.decode(after).unix_ms, NOW + 10_000, "back on the clock");
}

#[test]
fn ticks_count_from_any_epoch_and_stop_at_zero_before_it() {
    // The epoch may lie before 1970; the clock may step back past the epoch.
    let settings = |epoch_ms| Settings {
        epoch_ms,
        ..twitter()
    };
    let (mut g, clock) = generator(settings(-5_000));
    assert_eq!(g.next_id().unwrap() >> 22, (NOW + 5_000) as u64);
    clock.set(-6_000);
    g.set_max_drift_ms(u64::MAX / 2);
    let behind = g.next_id().unwrap();
    assert_eq!(
        behind >> 22,
        (NOW + 5_000) as u64,
        "a clock before the epoch reads as tick 0"
    );
    assert_eq!(g.drift_ms(), (NOW + 5_000) as u64);

    // A gap wider than i64 holds: exact (past the time field), not wrapped to before the epoch.
    clock.set(i64::MAX);
    assert_eq!(g.next_id(), Err(GenerateError::TimeExhausted));
}

#[test]
fn a_tick_longer_than_a_ms_divides_the_clock() {
    let (mut g, clock) = generator(Settings {
        layout: Layout::sonyflake(),
        epoch_ms: NOW - 1_000,
        worker_id: 3,
        ..Settings::default()
    });
    let a = g.next_id().unwrap();
    clock.advance(9);
    let b = g.next_id().unwrap();
    clock.advance(1);
    let c = g.next_id().unwrap();
    let tick = |id: u64| g.decode(id).unix_ms;
    assert_eq!(tick(a), NOW);
    assert_eq!(tick(b), NOW, "9 ms later is still the same 10 ms tick");
    assert_eq!(tick(c), NOW + 10);
}

#[test]
fn on_the_clock_until_a_tick_is_borrowed_or_held_below_the_ceiling() {
    let (mut g, clock) = generator(Settings {
        max_drift_ms: 10,
        ..twitter()
    });
    g.next_id().unwrap();
    assert!(g.on_the_clock());
    for _ in 0..4096 {
        g.next_id().unwrap();
    }
    assert!(
        !g.on_the_clock(),
        "the tick's sequence is spent: the next tick is borrowed"
    );
    clock.advance(1);
    g.next_id().unwrap();
    assert!(g.on_the_clock(), "the clock reached the borrowed tick");
    g.set_ceiling(NOW);
    g.next_id().unwrap_err();
    g.set_ceiling(NOW + 1_000);
    clock.advance(10_000);
    g.next_id().unwrap();
    assert!(
        !g.on_the_clock(),
        "held below the ceiling the clock has passed"
    );
}

use super::*;

/// A minute's horizon and no fence: a coordinator long past its load.
const TERMS: Terms = Terms {
    horizon_ms: 60_000,
    fence_horizon_ms: 60_000,
    fence_ms: 0,
};

/// The token a grant at `now_ms` in a pool whose last token is `last` takes.
fn token_at(last: u64, now_ms: i64) -> u64 {
    (last + 1).max(token_floor(now_ms))
}

#[test]
fn grants_the_lowest_free_id_with_rising_tokens_until_exhausted() {
    let mut pool = Pool::default();
    let a = pool.acquire(3, 1_000, 500, &TERMS).unwrap();
    let b = pool.acquire(3, 1_000, 500, &TERMS).unwrap();
    let c = pool.acquire(3, 1_000, 500, &TERMS).unwrap();
    assert_eq!((a.worker_id, b.worker_id, c.worker_id), (0, 1, 2));
    assert_eq!(a.lease.token, token_floor(1_000));
    assert_eq!(
        (b.lease.token, c.lease.token),
        (a.lease.token + 1, a.lease.token + 2)
    );
    assert_eq!(a.lease.expires_ms, 1_500);
    assert_eq!(
        pool.acquire(3, 1_000, 500, &TERMS),
        Err(LeaseError::Exhausted(3))
    );
    assert_eq!(
        pool.acquire(4, 1_000, 500, &TERMS),
        Err(LeaseError::OtherMax { given: 4, max: 3 })
    );
    assert_eq!(
        pool.acquire(3, 1_000, 50, &TERMS),
        Err(LeaseError::BadTtl {
            ttl_ms: 50,
            horizon_ms: 60_000
        })
    );
    assert_eq!(
        pool.acquire(3, 1_000, 60_001, &TERMS),
        Err(LeaseError::BadTtl {
            ttl_ms: 60_001,
            horizon_ms: 60_000
        })
    );
    assert_eq!(
        Pool::default().acquire(0, 1_000, 500, &TERMS),
        Err(LeaseError::BadMax(0))
    );
}

#[test]
fn a_recycled_id_starts_above_every_earlier_holders_record() {
    let mut pool = Pool::default();
    let a = pool.acquire(1, 1_000, 500, &TERMS).unwrap();
    pool.renew(0, a.lease.token, 1_200, 500, 1_900, &TERMS)
        .unwrap();
    // The record never goes down.
    pool.renew(0, a.lease.token, 1_300, 500, 1_700, &TERMS)
        .unwrap();
    // Expired at 1_800: the ID is free again, and its next holder starts above 1_900.
    let b = pool.acquire(1, 1_800, 500, &TERMS).unwrap();
    assert_eq!(b.worker_id, 0);
    assert_eq!(b.start_above_ms, 1_900);
    assert_eq!(b.lease.token, token_at(a.lease.token, 1_800));
    // The old holder is fenced off by its token.
    let err = pool
        .renew(0, a.lease.token, 1_850, 500, 2_000, &TERMS)
        .unwrap_err();
    assert_eq!(
        err,
        LeaseError::NotHolder {
            worker_id: 0,
            token: a.lease.token,
            expired: false
        }
    );
}

#[test]
fn release_frees_at_once_and_expiry_is_told_apart() {
    let mut pool = Pool::default();
    let a = pool.acquire(1, 1_000, 500, &TERMS).unwrap();
    assert!(pool.release(0, a.lease.token + 1, 1_100, None).is_err());
    pool.release(0, a.lease.token, 1_100, None).unwrap();
    assert_eq!(pool.live(1_100).count(), 0);
    let b = pool.acquire(1, 1_100, 500, &TERMS).unwrap();
    assert_eq!(
        pool.renew(0, b.lease.token, 1_600, 500, 0, &TERMS),
        Err(LeaseError::NotHolder {
            worker_id: 0,
            token: b.lease.token,
            expired: true
        })
    );
    for worker_id in [5, -1] {
        assert_eq!(
            pool.renew(worker_id, b.lease.token, 1_100, 500, 0, &TERMS),
            Err(LeaseError::NoSuchWorker { worker_id, max: 1 })
        );
    }
}

#[test]
fn a_release_lowers_the_record_to_what_was_used_but_never_below_the_floor() {
    let mut pool = Pool::default();
    let a = pool.acquire(2, 1_000, 500, &TERMS).unwrap();
    pool.renew(0, a.lease.token, 1_000, 500, 1_500, &TERMS)
        .unwrap();
    let released = pool.release(0, a.lease.token, 1_100, Some(1_090)).unwrap();
    assert_eq!(released.until_ms, 1_090);
    let b = pool.acquire(2, 1_100, 500, &TERMS).unwrap();
    assert_eq!((b.worker_id, b.start_above_ms), (0, 1_090));
    let released = pool.release(0, b.lease.token, 1_200, Some(5)).unwrap();
    assert_eq!(
        released.until_ms, 1_090,
        "not below where the holder started"
    );
    let c = pool.acquire(2, 1_200, 500, &TERMS).unwrap();
    pool.renew(0, c.lease.token, 1_200, 500, 1_800, &TERMS)
        .unwrap();
    let kept = pool.release(0, c.lease.token, 1_300, Some(9_999)).unwrap();
    assert_eq!(kept.until_ms, 1_800, "a release never raises the record");
}

#[test]
fn prefers_ids_whose_record_is_past_then_the_soonest() {
    let mut pool = Pool::default();
    let a = pool.acquire(3, 1_000, 500, &TERMS).unwrap();
    let b = pool.acquire(3, 1_000, 500, &TERMS).unwrap();
    pool.renew(0, a.lease.token, 1_000, 500, 9_000, &TERMS)
        .unwrap();
    pool.renew(1, b.lease.token, 1_000, 500, 8_000, &TERMS)
        .unwrap();
    pool.release(0, a.lease.token, 1_100, None).unwrap();
    pool.release(1, b.lease.token, 1_100, None).unwrap();
    // Worker 2 was never used: its record (0) is past.
    assert_eq!(pool.acquire(3, 1_200, 500, &TERMS).unwrap().worker_id, 2);
    // Then the one whose record ends first.
    let next = pool.acquire(3, 1_200, 500, &TERMS).unwrap();
    assert_eq!((next.worker_id, next.start_above_ms), (1, 8_000));
}

#[test]
fn an_until_beyond_the_horizon_is_refused() {
    let mut pool = Pool::default();
    let a = pool.acquire(1, 1_000, 500, &TERMS).unwrap();
    assert_eq!(
        pool.renew(0, a.lease.token, 1_000, 500, 61_001, &TERMS),
        Err(LeaseError::UntilTooFar {
            until_ms: 61_001,
            now_ms: 1_000,
            horizon_ms: 60_000
        })
    );
    assert!(pool
        .renew(0, a.lease.token, 1_000, 500, 61_000, &TERMS)
        .is_ok());
}

#[test]
fn grants_start_above_the_coordinators_fence() {
    let fenced = Terms {
        fence_ms: 70_000,
        ..TERMS
    };
    let mut pool = Pool::default();
    let g = pool.acquire(2, 10_000, 500, &fenced).unwrap();
    assert_eq!(g.start_above_ms, 70_000);
    assert_eq!(g.lease.floor_ms, 70_000);
}

#[test]
fn a_recreated_namespace_never_repeats_a_token_and_voids_the_old_leases() {
    // The hash vanishes while worker 0 is held; the coordinator remembers the token it granted.
    let mut pool = Pool::default();
    let old = pool.acquire(4, 1_000, 5_000, &TERMS).unwrap();
    pool.renew(0, old.lease.token, 2_000, 5_000, 7_000, &TERMS)
        .unwrap();
    let seen = pool.seen();

    let mut recreated = Pool::default();
    assert!(recreated.reset_if_behind(seen, 3_000, &TERMS));
    assert!(!recreated.reset_if_behind(seen, 3_000, &TERMS), "once");
    // The old holder's next RENEW fails, so it stops issuing.
    assert_eq!(
        recreated.renew(0, old.lease.token, 3_100, 5_000, 8_100, &TERMS),
        Err(LeaseError::Void { worker_id: 0 })
    );
    // A new grant takes a new token and starts above anything the old holder may issue.
    let new = recreated.acquire(4, 3_200, 5_000, &TERMS).unwrap();
    assert_eq!(new.worker_id, 0);
    assert!(new.lease.token > old.lease.token);
    assert_eq!(new.start_above_ms, 3_000 + 60_000);
    // New holders renew as usual.
    recreated
        .renew(0, new.lease.token, 3_300, 5_000, 8_300, &TERMS)
        .unwrap();
}

#[test]
fn a_namespace_restored_from_an_older_copy_voids_leases_granted_before() {
    let mut pool = Pool::default();
    let a = pool.acquire(2, 1_000, 5_000, &TERMS).unwrap();
    let copy = pool.clone();
    let b = pool.acquire(2, 1_100, 5_000, &TERMS).unwrap();
    // Restored: the copy shows `a` live under its own token; the coordinator saw `b`'s.
    let mut restored = copy;
    assert!(restored.reset_if_behind(pool.seen(), 1_200, &TERMS));
    assert_eq!(
        restored.renew(0, a.lease.token, 1_300, 5_000, 6_300, &TERMS),
        Err(LeaseError::Void { worker_id: 0 })
    );
    let c = restored.acquire(2, 1_300, 5_000, &TERMS).unwrap();
    assert!(c.lease.token > b.lease.token);
    assert_eq!(c.start_above_ms, 1_200 + 60_000);
}

#[test]
fn a_copy_taken_during_a_lease_and_restored_voids_it_too() {
    // The copy shows the holder live under its own token, but older: its renewals are missing.
    let mut pool = Pool::default();
    let a = pool.acquire(1, 1_000, 5_000, &TERMS).unwrap();
    let copy = pool.clone();
    pool.renew(0, a.lease.token, 3_000, 5_000, 8_000, &TERMS)
        .unwrap();
    let mut restored = copy;
    assert!(restored.reset_if_behind(pool.seen(), 3_500, &TERMS));
    assert_eq!(
        restored.renew(0, a.lease.token, 3_600, 5_000, 8_600, &TERMS),
        Err(LeaseError::Void { worker_id: 0 })
    );
    // Its record expires at 6_000 in the copy; a grant then still starts above the horizon.
    let b = restored.acquire(1, 6_100, 5_000, &TERMS).unwrap();
    assert_eq!(b.start_above_ms, 3_500 + 60_000);
}

#[test]
fn tokens_follow_the_clock_across_a_loss_nobody_saw() {
    // A namespace made from nothing later grants tokens above any made earlier.
    let mut first = Pool::default();
    let early: Vec<u64> = (0..50)
        .map(|i| {
            first
                .acquire(64, 1_000 + i / 10, 500, &TERMS)
                .unwrap()
                .lease
                .token
        })
        .collect();
    let mut later = Pool::default();
    let t = later.acquire(64, 1_005, 500, &TERMS).unwrap().lease.token;
    assert!(early.iter().all(|e| *e < t), "{early:?} vs {t}");
}

#[test]
fn a_renew_on_a_vanished_namespace_says_so() {
    let mut pool = Pool::default();
    assert_eq!(
        pool.renew(3, 7, 1_000, 500, 0, &TERMS),
        Err(LeaseError::Vanished)
    );
    assert_eq!(pool.release(3, 7, 1_000, None), Err(LeaseError::Vanished));
}

#[test]
fn the_hash_fields_read_back() {
    let mut pool = Pool::default();
    pool.acquire(8, 1_000, 500, &TERMS).unwrap();
    pool.acquire(8, 1_000, 500, &TERMS).unwrap();
    pool.reset_if_behind(
        Seen {
            version: 99,
            token: u64::MAX / 2,
        },
        1_000,
        &TERMS,
    );
    let fields = pool.fields();
    let read = Pool::from_fields(fields.iter().map(|(f, v)| (f.as_str(), v.as_str()))).unwrap();
    assert_eq!(read, pool);
    // The Functions library's mark of the process that wrote it last is read past.
    let marked = fields
        .iter()
        .map(|(f, v)| (f.as_str(), v.as_str()))
        .chain([("owner", "9f51fb83:0")]);
    assert_eq!(Pool::from_fields(marked).unwrap(), pool);
}

#[test]
fn data_idgen_did_not_write_is_refused() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("unknown field", &[("x", "1")]),
        (
            "three parts",
            &[("max", "8"), ("token", "9"), ("3", "1 2 3")],
        ),
        (
            "five parts",
            &[("max", "8"), ("token", "9"), ("3", "1 2 3 4 5")],
        ),
        (
            "too few parts",
            &[("max", "8"), ("token", "9"), ("3", "1 2")],
        ),
        (
            "a token above the namespace's",
            &[("max", "8"), ("token", "5"), ("3", "6 1 1 1")],
        ),
        (
            "a worker ID at max",
            &[("max", "8"), ("token", "9"), ("8", "1 1 1 1")],
        ),
        ("max 0", &[("max", "0"), ("token", "9")]),
        ("max above the largest pool", &[("max", "65537")]),
        ("a negative max", &[("max", "-7")]),
        ("a negative token", &[("token", "-1")]),
        (
            "a negative time",
            &[("max", "8"), ("token", "9"), ("3", "1 -5 1 1")],
        ),
        (
            "a floor above the record",
            &[("max", "8"), ("token", "9"), ("3", "1 5 1 2")],
        ),
        (
            "a worker ID with a sign",
            &[("max", "8"), ("token", "9"), ("+3", "1 1 1 1")],
        ),
        (
            "a worker ID with a leading zero",
            &[("max", "8"), ("token", "9"), ("03", "1 1 1 1")],
        ),
        ("leases without max", &[("token", "9"), ("3", "1 1 1 1")]),
        ("a non-numeric token", &[("token", "nine")]),
    ];
    for (name, fields) in cases {
        match Pool::from_fields(fields.iter().copied()) {
            Err(LeaseError::Corrupt(_)) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_namespace_fenced_as_unknown_keeps_its_leases_and_grants_above_the_horizon() {
    let mut pool = Pool::default();
    let held = pool.acquire(4, 1_000, 500, &TERMS).unwrap();
    let version = pool.version;
    pool.fence_unknown(2_000, &TERMS);
    assert_eq!(pool.version, version + 1, "a write others can see");
    assert_eq!(pool.grant_above_ms, 2_000 + TERMS.horizon_ms);
    // The holder renews as before: nothing says its lease is behind.
    assert!(pool
        .renew(
            held.worker_id.into(),
            held.lease.token,
            1_200,
            500,
            0,
            &TERMS
        )
        .is_ok());
    let next = pool.acquire(4, 1_300, 500, &TERMS).unwrap();
    assert_eq!(next.start_above_ms, 2_000 + TERMS.horizon_ms);
    // The fence is a field of the hash, so it holds after a restart too.
    let fields = pool.fields();
    let read = Pool::from_fields(fields.iter().map(|(f, v)| (f.as_str(), v.as_str()))).unwrap();
    assert_eq!(read.grant_above_ms, pool.grant_above_ms);
}

#[test]
fn only_canonical_numbers_are_read() {
    for good in ["0", "7", "18446744073709551615"] {
        assert_eq!(super::canonical(good), good.parse().ok(), "{good}");
    }
    for bad in [
        "",
        "+5",
        "007",
        "-0",
        "-1",
        " 5",
        "5 ",
        "5.0",
        "1e3",
        "0x1",
        "18446744073709551616",
    ] {
        assert_eq!(super::canonical(bad), None, "{bad:?}");
    }
}

//! The Functions library's installer's unit tests (`lib.rs`).

use super::*;

/// Every numeric constant `server/idgen-functions/idgen.lua` declares (`local NAME = n`, `2 ^ b`,
/// `2 ^ b - 1`), by name.
fn declared_numbers() -> Vec<(String, i128)> {
    SOURCE
        .lines()
        .filter_map(|line| {
            let (name, value) = line.strip_prefix("local ")?.split_once(" = ")?;
            if !name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                return None;
            }
            let value = value.split(" --").next()?.trim();
            let number = match value.split(' ').collect::<Vec<_>>()[..] {
                [n] => n.parse().ok()?,
                ["2", "^", b] => 1i128 << b.parse::<u32>().ok()?,
                ["2", "^", b, "-", "1"] => (1i128 << b.parse::<u32>().ok()?) - 1,
                _ => return None,
            };
            Some((name.to_string(), number))
        })
        .collect()
}

#[test]
fn the_library_declares_every_shared_constant_as_the_module_does() {
    use idgen_core::lease::{MAX_POOL, MIN_TTL_MS, TOKENS_PER_MS};
    use idgen_core::limits::*;
    let twitter = idgen_core::Layout::twitter();
    let shared: &[(&str, i128)] = &[
        ("EPOCH_MS", idgen_core::TWITTER_EPOCH_MS.into()),
        ("TIME_MAX", twitter.max_ticks().into()),
        (
            "SEQUENCE_MAX",
            ((1u64 << twitter.bits(idgen_core::Field::Sequence)) - 1).into(),
        ),
        (
            "NODE_MAX",
            ((1u64 << twitter.bits(idgen_core::Field::Worker)) - 1).into(),
        ),
        ("MAX_DRIFT_MS", idgen_core::DEFAULT_MAX_DRIFT_MS.into()),
        ("MAX_DRIFT_RANGE_MS", MAX_DRIFT_RANGE_MS.1.into()),
        ("COUNT_MAX", MAX_COUNT.into()),
        ("SQIDS_COUNT_MAX", MAX_SQIDS.into()),
        ("FAILOVER_GAP", DEFAULT_FAILOVER_GAP.into()),
        ("DATESEQ_COUNT_MAX", MAX_DATESEQ_COUNT.into()),
        ("HORIZON_MS", DEFAULT_HORIZON_MS.into()),
        ("MIN_TTL_MS", MIN_TTL_MS.into()),
        ("MAX_POOL", MAX_POOL.into()),
        ("DEFAULT_POOL", DEFAULT_POOL.into()),
        ("TOKENS_PER_MS", TOKENS_PER_MS.into()),
    ];
    // The library's own: no counterpart in the module (each says why).
    let own = [
        "RESERVE_MS",       // how far a state key's reservation runs ahead (the module's file)
        "FAILOVER_LAG_MS",  // a state key's failover fence (the module's lineage)
        "ROLE_CHUNK",       // IDs between readings of INFO (the module hears role events)
        "KEPT_PERIODS",     // counters kept in a hash (the module's are keys)
        "POLICY_CHECK_MS",  // readings of maxmemory-policy (the module hears CONFIG SET)
        "EARLIER_UNTIL_MS", // written by the installer (earlier_until_ms)
        "SQIDS_MIN_LENGTH", // written by the installer (sqids_lines)
        "ZONE_FIRST_MS",    // written by the installer (zone_lines)
        "ZONE_END_MS",      // written by the installer (zone_lines)
    ];
    let declared = declared_numbers();
    for (name, value) in &declared {
        match shared.iter().find(|(n, _)| n == name) {
            Some((_, module)) => {
                assert_eq!(
                    value, module,
                    "idgen.lua's {name} differs from the module's"
                )
            }
            None => assert!(
                own.contains(&name.as_str()),
                "idgen.lua declares {name} = {value}: add it to the shared constants \
                 (with the module's source) or to the library's own (saying why)"
            ),
        }
    }
    for (name, _) in shared {
        assert!(
            declared.iter().any(|(n, _)| n == name),
            "idgen.lua no longer declares {name}"
        );
    }
    let digits = format!("digits = {}", idgen_core::dateseq::DEFAULT_DIGITS);
    assert!(SOURCE.contains(&format!("local DATESEQ_DEFAULTS = {{ {digits},")));
}

#[test]
fn a_shorter_horizon_fences_past_what_the_longer_one_told() {
    let now = 1_800_000_000_000;
    let long = |horizon_ms| {
        source_with(&Settings {
            horizon_ms,
            ..Settings::default()
        })
        .unwrap()
    };
    // 30 s, then 2 s: fences reach 30 s past the reinstall, and the source says so.
    let earlier = earlier_until_ms(Some(&long(30_000)), 2_000, now);
    assert_eq!(earlier, now + 30_000);
    let short = source_after(
        &Settings {
            horizon_ms: 2_000,
            ..Settings::default()
        },
        earlier,
    )
    .unwrap();
    assert!(short.contains(&format!("local EARLIER_UNTIL_MS = {earlier}\n")));
    // Reinstalled again at 2 s within those 30 s: the earlier UNTIL is carried on; at 1 s
    // past it, nothing is.
    assert_eq!(earlier_until_ms(Some(&short), 2_000, now + 10_000), earlier);
    assert_eq!(earlier_until_ms(Some(&short), 2_000, earlier + 1_000), 0);
    // The same or a longer horizon, or no library before: nothing to carry.
    assert_eq!(earlier_until_ms(Some(&long(30_000)), 30_000, now), 0);
    assert_eq!(earlier_until_ms(Some(&long(2_000)), 30_000, now), 0);
    assert_eq!(earlier_until_ms(None, 100, now), 0);
    // A library older than the setting (no EARLIER_UNTIL_MS) carries its horizon.
    let older = long(30_000).replace(NO_EARLIER, "");
    assert_eq!(earlier_until_ms(Some(&older), 2_000, now), now + 30_000);
}

#[test]
fn the_version_is_the_sources_and_the_crates() {
    assert_eq!(version(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn settings_are_fixed_in_the_source_and_checked() {
    let installed = source_with(&Settings::default()).unwrap();
    let unwritten = installed.replace(sqids_block(&installed), sqids_block(SOURCE));
    assert_eq!(unwritten, SOURCE);
    let short = source_with(&Settings {
        horizon_ms: 2_000,
        ..Settings::default()
    })
    .unwrap();
    assert!(short.contains("local HORIZON_MS = 2000\n"), "{short}");
    assert!(!short.contains("local HORIZON_MS = 30000"));
    for bad in [99, 86_400_001] {
        let e = source_with(&Settings {
            horizon_ms: bad,
            ..Settings::default()
        })
        .unwrap_err();
        assert!(
            e.to_string().contains(&format!("horizon_ms {bad} must be")),
            "{e}"
        );
    }
}

#[test]
fn a_time_zone_is_written_in_as_its_offsets() {
    let zone = |name: &str| {
        source_with(&Settings {
            time_zone: name.to_string(),
            ..Settings::default()
        })
    };
    let new_york = zone("America/New_York").unwrap();
    assert!(new_york.contains("local ZONE = 'America/New_York'\n"));
    assert!(new_york.contains("local ZONE_FIRST_MS = -18000000\n"));
    // 2026's changes, among some 260 from 1970 to 2100.
    assert!(new_york.contains("1772953200000,-14400000,1793512800000,-18000000,"));
    assert!(new_york.contains(&format!("local ZONE_END_MS = {ZONE_END_MS}\n")));
    let tokyo = zone("+09:00").unwrap();
    assert!(tokyo.contains("local ZONE_FIRST_MS = 32400000\nlocal ZONE_CHANGES = {}\n"));
    assert!(tokyo.contains("local ZONE_END_MS = 2 ^ 53\n"));
    let e = zone("Mars/Olympus").unwrap_err();
    assert!(
        e.to_string().contains("unknown time zone 'Mars/Olympus'"),
        "{e}"
    );
}

#[test]
fn the_source_leaves_its_sqids_to_the_installer() {
    assert!(sqids_block(SOURCE).contains("local SQIDS_ALPHABET = nil\n"));
    let installed = source_with(&Settings::default()).unwrap();
    let written = sqids_block(&installed);
    // The module's default alphabet, as the encoder shuffles it, and its blocklist.
    let parts = idgen_core::SqidCodec::default().parts();
    let shuffled = String::from_utf8(parts.shuffled).unwrap();
    assert!(written.contains(&format!("local SQIDS_ALPHABET = '{shuffled}'\n")));
    assert!(written.contains(" zoccola\n]]\n"), "{written}");
    assert!(written.lines().all(|l| l.len() <= 100));
}

#[test]
fn sqids_settings_are_written_in_and_checked() {
    let with = |alphabet: &str, min_length| {
        source_with(&Settings {
            sqids_alphabet: alphabet.to_string(),
            sqids_min_length: min_length,
            ..Settings::default()
        })
    };
    let odd = with("ab'\\c", 20).unwrap();
    assert!(odd.contains("local SQIDS_MIN_LENGTH = 20\n"), "{odd}");
    let alphabet_line = odd
        .lines()
        .find(|l| l.starts_with("local SQIDS_ALPHABET = "))
        .unwrap();
    assert!(alphabet_line.contains("\\39") && alphabet_line.contains("\\92"));
    let e = with("aab", 0).unwrap_err();
    assert!(e.to_string().contains("repeats 'a'"), "{e}");
}

#[test]
fn versions_compare_as_numbers_and_bad_ones_are_refused() {
    assert!(parse("0.10.0").unwrap() > parse("0.9.9").unwrap());
    for bad in ["", "1", "1.2", "1.2.3.4", "1.x.3", "-1.2.3"] {
        assert!(
            matches!(parse(bad), Err(LibraryError::BadVersion(_))),
            "{bad}"
        );
    }
}

use super::*;

/// The refusal of `value` for the setting `name`; panics if it was accepted.
fn refusal(name: &str, value: &[u8]) -> String {
    let setting = Setting::find(name.as_bytes()).expect("a setting");
    setting
        .set_from_bytes(&Config::with_defaults(), value)
        .expect_err("a bad value was accepted")
}

#[test]
fn every_setting_is_found_by_its_name_and_only_so() {
    for s in SETTINGS {
        assert!(std::ptr::eq(Setting::find(s.name.as_bytes()).unwrap(), s));
    }
    assert!(Setting::find(b"workerid").is_none());
    assert!(
        Setting::find(b"idgen.worker-id").is_none(),
        "load arguments drop the prefix"
    );
}

#[test]
fn settings_whose_change_could_repeat_ids_are_immutable() {
    for name in [
        "worker-id",
        "datacenter-id",
        "epoch",
        "layout",
        "state-file",
        "accept-id-overlap",
    ] {
        assert!(!Setting::find(name.as_bytes()).unwrap().live, "{name}");
    }
    for name in [
        "max-drift-ms",
        "workerid-horizon-ms",
        "accept-eviction",
        "dateseq-ttl",
    ] {
        assert!(Setting::find(name.as_bytes()).unwrap().live, "{name}");
    }
}

#[test]
fn every_default_passes_its_own_checks() {
    let config = Config::with_defaults();
    for s in SETTINGS {
        match &s.kind {
            Kind::Int {
                default, min, max, ..
            } => assert!((*min..=*max).contains(default), "{}", s.name),
            Kind::Str { default, check, .. } => {
                assert_eq!(check(&config, default), Ok(()), "{}", s.name)
            }
            Kind::Bool { .. } => {}
        }
    }
}

#[test]
fn each_row_stores_into_its_own_cell() {
    let config = Config::with_defaults();
    Setting::find(b"dateseq-ttl")
        .unwrap()
        .set_from_bytes(&config, b"7200")
        .unwrap();
    Setting::find(b"accept-eviction")
        .unwrap()
        .set_from_bytes(&config, b"YES")
        .unwrap();
    Setting::find(b"layout")
        .unwrap()
        .set_from_bytes(&config, b"sonyflake")
        .unwrap();
    assert_eq!(config.int(|c| &c.dateseq_ttl), 7200);
    assert!(config.flag(|c| &c.accept_eviction));
    assert_eq!(config.text(|c| &c.layout), "sonyflake");
    assert_eq!(
        config.int(|c| &c.dateseq_digits),
        6,
        "the others keep theirs"
    );
    assert!(!config.flag(|c| &c.random_ids_on_replica));
}

#[test]
fn load_arguments_come_in_known_pairs() {
    let config = Config::with_defaults();
    config
        .apply_load_args(&[b"worker-id", b"3", b"datacenter-id", b"2"])
        .unwrap();
    assert_eq!(config.int(|c| &c.worker_id), 3);
    assert_eq!(config.int(|c| &c.datacenter_id), 2);
    let odd = config.apply_load_args(&[b"worker-id"]).unwrap_err();
    assert!(odd.contains("pairs"), "{odd}");
    let typo = config.apply_load_args(&[b"workerid", b"3"]).unwrap_err();
    assert!(
        typo.starts_with("unknown load argument 'workerid'; known: worker-id,"),
        "{typo}"
    );
}

#[test]
fn the_epoch_follows_the_layout_unless_set() {
    let config = Config::with_defaults();
    config.set_text(|c| &c.layout, "sonyflake".into());
    let sonyflake = config.settings().unwrap();
    assert_ne!(sonyflake.epoch_ms, TWITTER_EPOCH_MS);
    assert_eq!(config.int(|c| &c.epoch), sonyflake.epoch_ms, "stored back");
    assert!(!config.epoch_set.load(Ordering::Relaxed));
    let config = Config::with_defaults();
    config.epoch.store(1_000, Ordering::Relaxed);
    assert_eq!(config.settings().unwrap().epoch_ms, 1_000);
    assert!(config.epoch_set.load(Ordering::Relaxed));
}

#[test]
fn a_worker_id_out_of_range_is_quoted_with_its_range() {
    let err = refusal("worker-id", b"-1");
    assert_eq!(
        err,
        format!("idgen.worker-id '-1': must be between 0 and {MAX_NODE_ID}")
    );
}

#[test]
fn a_number_that_is_not_one_is_quoted() {
    assert_eq!(
        refusal("max-drift-ms", b"soon"),
        "idgen.max-drift-ms 'soon': not an integer"
    );
    assert!(refusal("dateseq-digits", b"1.5").contains("'1.5'"));
    assert!(refusal("dateseq-ttl", b"").contains("''"));
}

#[test]
fn the_dateseq_ttl_keeps_its_bounds() {
    assert!(refusal("dateseq-ttl", b"3599").contains("between 3600 and"));
    let too_long = (MAX_TTL_S + 1).to_string();
    assert!(refusal("dateseq-ttl", too_long.as_bytes()).contains(&too_long));
}

#[test]
fn the_lease_horizon_keeps_its_bounds() {
    assert!(refusal("workerid-horizon-ms", b"99").contains("between 100 and 86400000"));
    assert!(refusal("workerid-horizon-ms", b"86400001").contains("'86400001'"));
}

#[test]
fn booleans_are_yes_or_no() {
    for value in [&b"true"[..], b"1", b"", b"y"] {
        assert!(
            refusal("accept-eviction", value).ends_with("must be yes or no"),
            "{value:?}"
        );
    }
}

#[test]
fn a_layout_that_does_not_fit_is_refused_with_its_bits() {
    let err = refusal("layout", b"time:37,worker:20,sequence:16");
    assert!(err.contains("73 bits"), "{err}");
    assert!(refusal("layout", b"nonsense").starts_with("idgen.layout 'nonsense'"));
}

#[test]
fn an_unknown_time_zone_is_refused() {
    assert!(refusal("dateseq-timezone", b"Mars/Olympus").contains("Mars/Olympus"));
}

#[test]
fn a_short_or_repeating_alphabet_is_refused() {
    assert!(refusal("sqids-alphabet", b"ab").starts_with("idgen.sqids-alphabet 'ab'"));
    assert!(refusal("sqids-alphabet", b"aabbcc").starts_with("idgen.sqids-alphabet"));
}

#[test]
fn strings_must_be_short_utf8_without_nul() {
    assert_eq!(text_of(b"ok"), Ok("ok"));
    assert!(text_of(b"a\0b").unwrap_err().contains("NUL"));
    assert!(text_of(b"\xff").unwrap_err().contains("UTF-8"));
    let long = vec![b'a'; MAX_STRING_LEN + 1];
    assert!(text_of(&long).unwrap_err().contains("longer than 4096"));
    assert_eq!(
        text_of(&long[..MAX_STRING_LEN]).map(str::len),
        Ok(MAX_STRING_LEN)
    );
}

#[test]
fn values_are_shown_quoted_escaped_and_cut_short() {
    assert_eq!(shown(b"abc"), "'abc'");
    assert_eq!(shown(b"a\nb\xff"), "'a\\nb\\xff'");
    let long = shown(&[b'x'; 100]);
    assert!(long.ends_with("...'") && long.len() == 64 + 5, "{long}");
}

#[test]
fn every_integer_setting_refuses_one_past_each_end_and_names_both() {
    for s in SETTINGS {
        if let Kind::Int { min, max, .. } = s.kind {
            for value in [min.checked_sub(1), max.checked_add(1)]
                .into_iter()
                .flatten()
            {
                let err = refusal(s.name, value.to_string().as_bytes());
                assert!(
                    err.contains(&format!("'{value}'"))
                        && err.contains(&format!("between {min} and {max}")),
                    "{}: {err}",
                    s.name
                );
            }
        }
    }
}

#[test]
fn every_string_setting_refuses_a_nul_byte() {
    for s in SETTINGS
        .iter()
        .filter(|s| matches!(s.kind, Kind::Str { .. }))
    {
        assert!(
            refusal(s.name, b"a\0b").ends_with("holds a NUL byte"),
            "{}",
            s.name
        );
    }
}

#[test]
fn every_boolean_setting_refuses_anything_but_yes_or_no() {
    for s in SETTINGS
        .iter()
        .filter(|s| matches!(s.kind, Kind::Bool { .. }))
    {
        let err = refusal(s.name, b"maybe");
        assert_eq!(err, format!("idgen.{} 'maybe': must be yes or no", s.name));
    }
}

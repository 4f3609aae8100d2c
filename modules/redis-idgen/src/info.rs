//! The `INFO idgen` section.

use std::sync::atomic::Ordering;

use crate::ffi::module::Info;
use crate::{cluster, config, dateseq, eviction, reservation, state};

/// Writes the section. Also called for crash reports, so it never waits for the state lock.
pub fn write(info: &Info) {
    info.section();
    if let Some(s) = state::try_lock() {
        let settings = s.ids.settings();
        let stats = s.ids.stats();
        info.text("layout", &settings.layout.to_string());
        info.int("epoch_ms", settings.epoch_ms);
        info.int("datacenter_id", settings.datacenter_id as i64);
        info.int("worker_id", settings.worker_id as i64);
        info.int("sequence_random_start", settings.random_start as i64);
        info.int("max_drift_ms", settings.max_drift_ms as i64);
        info.int("ids_issued", stats.issued as i64);
        info.int("ids_refused", stats.refused as i64);
        info.int("clock_backwards_events", stats.clock_backwards as i64);
        info.int("ticks_borrowed", stats.ticks_borrowed as i64);
        info.int("drift_borrowed_ms", s.ids.drift_ms() as i64);
        info.int("drift_borrowed_max_ms", stats.max_drift_ms as i64);
        info.int("last_tick_ms", s.ids.last_tick_unix_ms());
        for (name, ids) in [("uuid7", &s.uuid7), ("ulid", &s.ulid)] {
            let stats = ids.stats();
            info.int(&format!("{name}_issued"), stats.issued as i64);
            info.int(&format!("{name}_refused"), stats.refused as i64);
            info.int(
                &format!("{name}_clock_backwards_events"),
                stats.clock_backwards as i64,
            );
            info.int(&format!("{name}_ms_borrowed"), stats.ms_borrowed as i64);
        }
        info.text("dateseq_timezone", s.days.calendar().name());
        info.int("dateseq_promotions", s.fence.term() as i64);
        info.int("workerid_fence_ms", s.lease_fence_ms);
        info.int("workerid_namespaces_known", s.lease_seen.len() as i64);
    }
    info.int("reserved_until_ms", reservation::durable_until());
    info.text("maxmemory_policy", &eviction::policy());
    info.text("eviction_can_evict", eviction::at_risk());
    info.int(
        "eviction_accepted",
        config::ACCEPT_EVICTION.load(Ordering::Relaxed) as i64,
    );
    info.int(
        "eviction_refusals",
        eviction::REFUSED.load(Ordering::Relaxed) as i64,
    );
    info.int(
        "workerid_horizon_ms",
        config::WORKERID_HORIZON_MS.load(Ordering::Relaxed),
    );
    if let Some((conflict, heard)) = cluster::status() {
        info.text("worker_id_conflict", &conflict);
        info.int("cluster_nodes_heard", heard as i64);
    }
    info.text(
        "state_file",
        &config::STATE_FILE
            .try_lock()
            .map(|s| s.clone())
            .unwrap_or_default(),
    );
    info.text(
        "state_file_error",
        &reservation::failure().unwrap_or_default(),
    );
    info.int(
        "dateseq_issued",
        dateseq::ISSUED.load(Ordering::Relaxed) as i64,
    );
    info.int(
        "dateseq_refused",
        dateseq::REFUSED.load(Ordering::Relaxed) as i64,
    );
    info.int(
        "dateseq_failover_gap",
        config::DATESEQ_FAILOVER_GAP.load(Ordering::Relaxed),
    );
    info.int(
        "dateseq_failover_gaps_taken",
        dateseq::GAPS.load(Ordering::Relaxed) as i64,
    );
    info.int(
        "dateseq_failover_values_skipped",
        dateseq::SKIPPED.load(Ordering::Relaxed) as i64,
    );
    info.int("dateseq_ttl_s", config::DATESEQ_TTL.load(Ordering::Relaxed));
    info.int(
        "dateseq_digits",
        config::DATESEQ_DIGITS.load(Ordering::Relaxed),
    );
    // Whether the alphabet was changed, not the alphabet: its order is the operator's secret.
    let custom = config::SQIDS_ALPHABET
        .try_lock()
        .is_ok_and(|a| a.as_str() != idgen_core::sqid::DEFAULT_ALPHABET);
    info.text("sqids_alphabet", if custom { "custom" } else { "default" });
    info.int(
        "sqids_min_length",
        config::SQIDS_MIN_LENGTH.load(Ordering::Relaxed),
    );
}

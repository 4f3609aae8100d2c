//! The `INFO idgen` section.

use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;

use redis_module::raw;

use crate::{config, dateseq, state};

/// Registered with RedisModule_RegisterInfoFunc; also called for crash reports, so it never
/// waits for the state lock.
pub extern "C" fn add_info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let (Some(section), Some(int), Some(text)) = (unsafe {
        (
            raw::RedisModule_InfoAddSection,
            raw::RedisModule_InfoAddFieldLongLong,
            raw::RedisModule_InfoAddFieldCString,
        )
    }) else {
        return;
    };
    let add_int = |name: &str, value: i64| {
        if let Ok(name) = CString::new(name) {
            unsafe { int(ctx, name.as_ptr(), value) };
        }
    };
    let add_text = |name: &str, value: &str| {
        if let (Ok(name), Ok(value)) = (CString::new(name), CString::new(value)) {
            unsafe { text(ctx, name.as_ptr(), value.as_ptr()) };
        }
    };
    unsafe { section(ctx, c"".as_ptr()) };
    if let Some(s) = state::try_lock() {
        let settings = s.ids.settings();
        let stats = s.ids.stats();
        add_text("layout", &settings.layout.to_string());
        add_int("epoch_ms", settings.epoch_ms);
        add_int("datacenter_id", settings.datacenter_id as i64);
        add_int("worker_id", settings.worker_id as i64);
        add_int("sequence_random_start", settings.random_start as i64);
        add_int("max_drift_ms", settings.max_drift_ms as i64);
        add_int("ids_issued", stats.issued as i64);
        add_int("ids_refused", stats.refused as i64);
        add_int("clock_backwards_events", stats.clock_backwards as i64);
        add_int("ticks_borrowed", stats.ticks_borrowed as i64);
        add_int("drift_borrowed_ms", s.ids.drift_ms() as i64);
        add_int("drift_borrowed_max_ms", stats.max_drift_ms as i64);
        add_int("last_tick_ms", s.ids.last_tick_unix_ms());
        add_int("reserved_until_ms", crate::reservation::durable_until());
        add_text("dateseq_timezone", s.days.calendar().name());
    }
    add_int(
        "dateseq_issued",
        dateseq::ISSUED.load(Ordering::Relaxed) as i64,
    );
    add_int(
        "dateseq_refused",
        dateseq::REFUSED.load(Ordering::Relaxed) as i64,
    );
    add_int("dateseq_ttl_s", config::DATESEQ_TTL.load(Ordering::Relaxed));
    add_int(
        "dateseq_digits",
        config::DATESEQ_DIGITS.load(Ordering::Relaxed),
    );
}

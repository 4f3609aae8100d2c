//! The `INFO idgen` section, written through redis-module's INFO builder. Redis prefixes every
//! field with `idgen_`.

use idgen_core::sqid::DEFAULT_ALPHABET;
use idgen_core::Form128;
use redis_module::{InfoContext, InfoContextBuilderFieldTopLevelValue as Value, RedisResult};

use crate::config::Config;
use crate::state::{Module, State};
use crate::version;

/// Writes the section. Also called for crash reports, so it never waits for the state lock:
/// when a command holds it, only the configuration is shown.
pub fn write(ctx: &InfoContext, module: &Module) -> RedisResult<()> {
    let mut fields = Fields(Vec::new());
    fields
        .field("version", version::SEMVER)
        .field("git_revision", version::GIT_REVISION);
    if let Some(s) = module.enter() {
        state(&mut fields, &s);
    }
    config(&mut fields, module.config);
    let mut section = ctx.builder().add_section("");
    for (name, value) in fields.0 {
        section = section.field(&name, value)?;
    }
    section.build_section()?.build_info()?;
    Ok(())
}

/// The section's fields, in order.
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn field(&mut self, name: &str, value: impl Into<Value>) -> &mut Self {
        self.0.push((name.to_string(), value.into()));
        self
    }
}

fn state(f: &mut Fields, s: &State) {
    let ids = s.snowflakes().generator();
    let settings = ids.settings();
    let stats = ids.stats();
    f.field("layout", settings.layout.to_string())
        .field("epoch_ms", settings.epoch_ms)
        .field("datacenter_id", settings.datacenter_id)
        .field("worker_id", settings.worker_id)
        .field("sequence_random_start", settings.random_start as i64)
        .field("max_drift_ms", settings.max_drift_ms)
        .field("ids_issued", stats.issued)
        .field("ids_refused", stats.refused)
        .field("clock_backwards_events", stats.clock_backwards)
        .field("ticks_borrowed", stats.ticks_borrowed)
        .field("drift_borrowed_ms", ids.drift_ms())
        .field("drift_borrowed_max_ms", stats.max_drift_ms)
        .field("last_tick_ms", ids.last_tick_unix_ms());
    for (name, form) in [("uuid7", Form128::Uuid7), ("ulid", Form128::Ulid)] {
        let stats = s.time128().generator(form).stats();
        f.field(&format!("{name}_issued"), stats.issued)
            .field(&format!("{name}_refused"), stats.refused)
            .field(
                &format!("{name}_clock_backwards_events"),
                stats.clock_backwards,
            )
            .field(&format!("{name}_ms_borrowed"), stats.ms_borrowed);
    }
    let reserved_until = s
        .snowflakes()
        .reservation()
        .map_or(i64::MAX, |r| r.durable_until());
    let state_file_error = s.snowflakes().reservation().and_then(|r| r.failure());
    let resumed = s.snowflakes().resumed();
    let (known, witnessed, fenced) = s.leases().counts();
    let ack_setting = s.config().int(|c| &c.workerid_ack_replicas);
    f.field("dateseq_timezone", s.dateseq().calendar().name())
        .field("dateseq_promotions", s.dateseq().term())
        .field("workerid_fence_ms", s.leases().fence_ms())
        .field("workerid_namespaces_known", known)
        .field("workerid_leases_witnessed", witnessed)
        .field("workerid_namespaces_fenced", fenced)
        .field(
            "workerid_ack_replicas",
            u64::from(s.acks().required(ack_setting)),
        )
        .field("workerid_ack_waits", s.acks().waits)
        .field("workerid_ack_refusals", s.acks().refusals)
        .field("workerid_acks_waiting", s.acks().waiting() as u64)
        .field("reserved_until_ms", reserved_until)
        .field("state_file_found", resumed.state_file)
        .field("resumed_above_ms", resumed.above_ms)
        .field("resumed_from", resumed.witness())
        .field("maxmemory_policy", s.eviction().policy())
        .field("eviction_can_evict", s.eviction().at_risk())
        .field("eviction_refusals", s.eviction().refusals())
        .field("replication_guard", s.guard().word());
    f.field("arrivals_witnessed", u64::from(s.arrivals_witnessed()));
    let (conflict, heard) = s.identity().status();
    f.field("worker_id_conflict", conflict);
    if let Some(heard) = heard {
        f.field("cluster_nodes_heard", heard as u64);
    }
    let dateseq = s.dateseq();
    let [issued, refused, gaps, skipped, lowered] = dateseq.stats().counts();
    f.field("state_file_error", state_file_error.unwrap_or_default())
        .field("dateseq_issued", issued)
        .field("dateseq_refused", refused)
        .field("dateseq_failover_gaps_taken", gaps)
        .field("dateseq_failover_values_skipped", skipped)
        .field("dateseq_witness_counters", dateseq.witnesses().len() as u64)
        .field("dateseq_witness_bytes", dateseq.witnesses().bytes() as u64)
        .field("dateseq_witness_lowered", lowered);
    let (writes, lines, waits) = dateseq.file().map_or((0, 0, 0), |f| f.counts());
    let failure = dateseq.file().and_then(|f| f.failure());
    f.field("dateseq_witness_file_writes", writes)
        .field("dateseq_witness_file_lines", lines)
        .field("dateseq_witness_file_waits", waits)
        .field("dateseq_witness_file_error", failure.unwrap_or_default());
    let (writes, lines, waits) = s.leases().witness().map_or((0, 0, 0), |f| f.counts());
    let failure = s.leases().witness().and_then(|f| f.failure());
    f.field("workerid_witness_file_writes", writes)
        .field("workerid_witness_file_lines", lines)
        .field("workerid_witness_file_waits", waits)
        .field("workerid_witness_file_error", failure.unwrap_or_default())
        // The key's check value, never the key: which key seals, to compare servers by.
        .field("seal_key_id", s.sealer().map_or("", |k| k.key_id()));
}

fn config(f: &mut Fields, c: &Config) {
    // Whether the alphabet was changed, not the alphabet: its order is the operator's secret.
    let custom = c
        .try_text(|c| &c.sqids_alphabet)
        .is_some_and(|a| a != DEFAULT_ALPHABET);
    f.field("eviction_accepted", c.flag(|c| &c.accept_eviction) as i64)
        .field("workerid_horizon_ms", c.int(|c| &c.workerid_horizon_ms))
        .field(
            "state_file",
            c.try_text(|c| &c.state_file).unwrap_or_default(),
        )
        .field("dateseq_failover_gap", c.int(|c| &c.dateseq_failover_gap))
        .field("dateseq_witness_max", c.int(|c| &c.dateseq_witness_max))
        .field(
            "dateseq_witness_file",
            c.try_text(|c| &c.dateseq_witness_file).unwrap_or_default(),
        )
        .field(
            "workerid_witness_file",
            c.try_text(|c| &c.workerid_witness_file).unwrap_or_default(),
        )
        .field("dateseq_ttl_s", c.int(|c| &c.dateseq_ttl))
        .field("dateseq_digits", c.int(|c| &c.dateseq_digits))
        .field("sqids_alphabet", if custom { "custom" } else { "default" })
        .field("sqids_min_length", c.int(|c| &c.sqids_min_length));
}

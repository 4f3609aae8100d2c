//! Whether Redis's `maxmemory-policy` can evict the module's keys, followed at load and on every
//! `CONFIG SET`. An evicted DATESEQ counter restarts today's sequence at 1 and hands every value
//! out again; an evicted lease namespace grants live holders' worker IDs again. So DATESEQ and
//! WORKERID commands are refused while the policy can evict their keys, unless the operator
//! accepts the risk (`idgen.accept-eviction yes`). Job queues that keep state in Redis (BullMQ,
//! Sidekiq) check the same setting for the same reason.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use redis_module::{Context, RedisValue};

use crate::config::ACCEPT_EVICTION;
use crate::error::CommandError;

/// The policy in force, as Redis names it.
static POLICY: Mutex<String> = Mutex::new(String::new());
/// Whether it evicts keys that have an expiry (`volatile-*`, `allkeys-*`).
static EVICTS_EXPIRING: AtomicBool = AtomicBool::new(false);
/// Whether it evicts keys without one (`allkeys-*`).
static EVICTS_ALL: AtomicBool = AtomicBool::new(false);
/// Calls refused because of it, since load.
pub static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Which of the module's keys a command depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// DATESEQ counters: they carry an expiry, so `volatile-*` policies evict them too.
    Counters,
    /// Lease namespaces: they never keep an expiry, so only `allkeys-*` policies evict them.
    Namespaces,
}

/// What a policy can evict: (keys with an expiry, every key).
fn reach(policy: &str) -> (bool, bool) {
    let all = policy.starts_with("allkeys-");
    (all || policy.starts_with("volatile-"), all)
}

/// Reads the policy now (at load, and after any configuration change).
pub fn follow(ctx: &Context) {
    let policy = match ctx.call("CONFIG", &["GET", "maxmemory-policy"]) {
        Ok(RedisValue::Array(pair)) => match pair.get(1) {
            Some(RedisValue::BulkString(p) | RedisValue::SimpleString(p)) => p.clone(),
            Some(RedisValue::StringBuffer(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    // Unknown (an API that failed): assume the worst rather than risk a repeat.
    let (expiring, all) = if policy.is_empty() {
        (true, true)
    } else {
        reach(&policy)
    };
    let was = (
        EVICTS_EXPIRING.swap(expiring, Ordering::Relaxed),
        EVICTS_ALL.swap(all, Ordering::Relaxed),
    );
    if was != (expiring, all) && expiring {
        ctx.log_warning(&format!(
            "idgen: maxmemory-policy {policy} can evict {}; {}",
            at_risk(),
            if ACCEPT_EVICTION.load(Ordering::Relaxed) {
                "idgen.accept-eviction is yes: they are served anyway"
            } else {
                "those commands are refused until it is noeviction (or idgen.accept-eviction yes)"
            }
        ));
    }
    *POLICY.lock().unwrap_or_else(|p| p.into_inner()) = policy;
}

/// The policy, as Redis names it.
pub fn policy() -> String {
    POLICY.lock().map(|p| p.clone()).unwrap_or_default()
}

/// The keys the policy in force can evict, for INFO and messages: `none`, `dateseq` or
/// `dateseq,workerid`.
pub fn at_risk() -> &'static str {
    match (
        EVICTS_EXPIRING.load(Ordering::Relaxed),
        EVICTS_ALL.load(Ordering::Relaxed),
    ) {
        (_, true) => "dateseq,workerid",
        (true, false) => "dateseq",
        _ => "none",
    }
}

/// Refuses a command whose keys the policy can evict, unless the operator accepted it.
///
/// # Errors
/// An `ERR` naming the policy, what it can do, and the two fixes.
pub fn check(keys: Keys) -> Result<(), CommandError> {
    let evicts = match keys {
        Keys::Counters => EVICTS_EXPIRING.load(Ordering::Relaxed),
        Keys::Namespaces => EVICTS_ALL.load(Ordering::Relaxed),
    };
    if !evicts || ACCEPT_EVICTION.load(Ordering::Relaxed) {
        return Ok(());
    }
    REFUSED.fetch_add(1, Ordering::Relaxed);
    let what = match keys {
        Keys::Counters => {
            "DATESEQ counters: an evicted counter restarts today's sequence and repeats its values"
        }
        Keys::Namespaces => {
            "lease namespaces: an evicted namespace grants live holders' worker IDs again"
        }
    };
    Err(CommandError::OutOfRange(format!(
        "maxmemory-policy is {}, which can evict {what}; set CONFIG SET maxmemory-policy \
         noeviction, or accept the risk with CONFIG SET idgen.accept-eviction yes",
        policy()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test that sets the policy's statics.
    #[test]
    fn each_command_is_refused_exactly_where_its_keys_can_go_unless_accepted() {
        let set = |policy: &str| {
            let (expiring, all) = reach(policy);
            EVICTS_EXPIRING.store(expiring, Ordering::Relaxed);
            EVICTS_ALL.store(all, Ordering::Relaxed);
            *POLICY.lock().unwrap() = policy.to_string();
        };
        set("noeviction");
        assert_eq!(at_risk(), "none");
        assert!(check(Keys::Counters).is_ok() && check(Keys::Namespaces).is_ok());
        set("volatile-lru");
        assert_eq!(at_risk(), "dateseq");
        let err = check(Keys::Counters).unwrap_err().text();
        assert!(err.starts_with("ERR maxmemory-policy is volatile-lru, which can evict DATESEQ"));
        assert!(check(Keys::Namespaces).is_ok());
        set("allkeys-lfu");
        assert_eq!(at_risk(), "dateseq,workerid");
        let err = check(Keys::Namespaces).unwrap_err().text();
        assert!(err.contains("idgen.accept-eviction yes"), "{err}");
        ACCEPT_EVICTION.store(true, Ordering::Relaxed);
        assert!(check(Keys::Counters).is_ok() && check(Keys::Namespaces).is_ok());
        ACCEPT_EVICTION.store(false, Ordering::Relaxed);
        set("noeviction");
    }

    #[test]
    fn each_policy_reaches_what_redis_evicts() {
        let cases = [
            ("noeviction", (false, false)),
            ("allkeys-lru", (true, true)),
            ("allkeys-lfu", (true, true)),
            ("allkeys-random", (true, true)),
            ("volatile-lru", (true, false)),
            ("volatile-lfu", (true, false)),
            ("volatile-random", (true, false)),
            ("volatile-ttl", (true, false)),
        ];
        for (policy, want) in cases {
            assert_eq!(reach(policy), want, "{policy}");
        }
    }
}

//! Whether Redis's `maxmemory-policy` can evict the module's keys, followed at load and on every
//! `CONFIG SET` of it. An evicted DATESEQ counter restarts today's sequence at 1 and hands every
//! value out again; an evicted lease namespace grants live holders' worker IDs again. So DATESEQ
//! and WORKERID commands are refused while the policy can evict their keys, unless the operator
//! accepts the risk (`idgen.accept-eviction yes`). Job queues that keep state in Redis (BullMQ,
//! Sidekiq) check the same setting for the same reason.

use redis_module::{Context, RedisValue};

use crate::error::CommandError;

/// Which of the module's keys a command depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// DATESEQ counters: they carry an expiry, so `volatile-*` policies evict them too.
    Counters,
    /// Lease namespaces: they never keep an expiry, so only `allkeys-*` policies evict them.
    Namespaces,
}

/// The policy in force and what it can evict.
#[derive(Debug, Default)]
pub struct Eviction {
    /// As Redis names it; empty when it could not be read.
    policy: String,
    /// Whether it evicts keys that have an expiry (`volatile-*`, `allkeys-*`).
    evicts_expiring: bool,
    /// Whether it evicts keys without one (`allkeys-*`).
    evicts_all: bool,
    /// Calls refused because of it, since load.
    refused: u64,
}

/// The policy as Redis reports it now; empty if it cannot be read.
pub fn read_policy(ctx: &Context) -> String {
    match ctx.call("CONFIG", &["GET", "maxmemory-policy"]) {
        Ok(RedisValue::Array(pair)) => match pair.get(1) {
            Some(RedisValue::BulkString(p) | RedisValue::SimpleString(p)) => p.clone(),
            Some(RedisValue::StringBuffer(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

impl Eviction {
    /// Follows `policy` (empty: unknown, which is taken as the worst rather than risk a
    /// repeat); a warning to log when what is at risk changed to something.
    pub fn follow(&mut self, policy: String, accepted: bool) -> Option<String> {
        let all = policy.is_empty() || policy.starts_with("allkeys-");
        let expiring = all || policy.starts_with("volatile-");
        let warn = (expiring, all) != (self.evicts_expiring, self.evicts_all) && expiring;
        (self.evicts_expiring, self.evicts_all, self.policy) = (expiring, all, policy);
        warn.then(|| {
            format!(
                "idgen: maxmemory-policy {} can evict {}; {}",
                self.policy,
                self.at_risk(),
                if accepted {
                    "idgen.accept-eviction is yes: they are served anyway"
                } else {
                    "those commands are refused until it is noeviction (or idgen.accept-eviction yes)"
                }
            )
        })
    }

    /// The policy, as Redis names it.
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// The keys the policy in force can evict, for INFO and messages: `none`, `dateseq` or
    /// `dateseq,workerid`.
    pub fn at_risk(&self) -> &'static str {
        match (self.evicts_expiring, self.evicts_all) {
            (_, true) => "dateseq,workerid",
            (true, false) => "dateseq",
            _ => "none",
        }
    }

    /// Calls refused because of the policy, since load.
    pub fn refusals(&self) -> u64 {
        self.refused
    }

    /// Refuses a command whose keys the policy can evict, unless the operator `accepted` it.
    ///
    /// # Errors
    /// An `ERR` naming the policy, what it can do, and the two fixes.
    pub fn check(&mut self, keys: Keys, accepted: bool) -> Result<(), CommandError> {
        let evicts = match keys {
            Keys::Counters => self.evicts_expiring,
            Keys::Namespaces => self.evicts_all,
        };
        if !evicts || accepted {
            return Ok(());
        }
        self.refused += 1;
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
            self.policy
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under(policy: &str) -> Eviction {
        let mut eviction = Eviction::default();
        eviction.follow(policy.into(), false);
        eviction
    }

    #[test]
    fn each_command_is_refused_exactly_where_its_keys_can_go_unless_accepted() {
        let mut e = under("noeviction");
        assert_eq!(e.at_risk(), "none");
        assert!(e.check(Keys::Counters, false).is_ok() && e.check(Keys::Namespaces, false).is_ok());
        let mut e = under("volatile-lru");
        assert_eq!(e.at_risk(), "dateseq");
        let err = e.check(Keys::Counters, false).unwrap_err().to_string();
        assert!(err.starts_with("ERR maxmemory-policy is volatile-lru, which can evict DATESEQ"));
        assert!(e.check(Keys::Namespaces, false).is_ok());
        let mut e = under("allkeys-lfu");
        assert_eq!(e.at_risk(), "dateseq,workerid");
        let err = e.check(Keys::Namespaces, false).unwrap_err().to_string();
        assert!(err.contains("idgen.accept-eviction yes"), "{err}");
        assert!(e.check(Keys::Counters, true).is_ok() && e.check(Keys::Namespaces, true).is_ok());
        assert_eq!(e.refused, 1, "only refusals count");
    }

    #[test]
    fn each_policy_reaches_what_redis_evicts() {
        let cases = [
            ("noeviction", "none"),
            ("allkeys-lru", "dateseq,workerid"),
            ("allkeys-lfu", "dateseq,workerid"),
            ("allkeys-random", "dateseq,workerid"),
            ("volatile-lru", "dateseq"),
            ("volatile-lfu", "dateseq"),
            ("volatile-random", "dateseq"),
            ("volatile-ttl", "dateseq"),
            ("", "dateseq,workerid"),
        ];
        for (policy, want) in cases {
            assert_eq!(under(policy).at_risk(), want, "{policy:?}");
        }
    }

    #[test]
    fn a_warning_comes_when_what_is_at_risk_changes_to_something() {
        let mut e = Eviction::default();
        assert_eq!(e.follow("noeviction".into(), false), None);
        let warning = e.follow("allkeys-lru".into(), false).unwrap();
        assert!(warning.contains("can evict dateseq,workerid"), "{warning}");
        assert_eq!(e.follow("allkeys-lfu".into(), false), None, "no change");
        assert_eq!(e.follow("noeviction".into(), false), None);
    }
}

//! The oldest server the module runs on, checked before anything is registered. The module
//! needs Redis 7.0 (module configuration, the config-change event; Valkey reports itself as
//! 7.2 or later). On Redis 6 the binding library's subscription to server events fails with a
//! line that does not say why, then the server exits: this check runs first and names both
//! versions.

use redis_module::{raw, Context};

/// The oldest Redis the module loads on: major, minor, patch.
pub const OLDEST: (i32, i32, i32) = (7, 0, 0);

/// The version check, in the one place `redis_module!` runs the module's code before it
/// subscribes to server events: its list of data types, whose entries it asks to
/// `create_data_type`. Registers nothing.
pub struct Gate;

impl Gate {
    /// Ok on a server at or above [`OLDEST`]; otherwise one warning in the server's log and a
    /// refusal, so that the module is not loaded.
    pub fn create_data_type(&self, ctx: *mut raw::RedisModuleCtx) -> Result<(), &'static str> {
        let context = Context::new(ctx);
        let refusal = match context.get_redis_version() {
            Ok(v) if (v.major, v.minor, v.patch) >= OLDEST => return Ok(()),
            Ok(v) => refusal(&format!("{}.{}.{}", v.major, v.minor, v.patch)),
            Err(_) => refusal("of a version it does not tell"),
        };
        context.log_warning(&refusal);
        Err("server too old")
    }
}

/// The log line for a server of `version`.
fn refusal(version: &str) -> String {
    let (major, minor, patch) = OLDEST;
    format!(
        "this server is Redis {version}; the module needs Redis {major}.{minor}.{patch} or \
         later (Valkey 7.2 or later); module not loaded. Where it cannot load, the idgen Functions \
         library runs as scripts (idgen-lease-worker install-library)"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_refusal_names_both_versions() {
        let line = super::refusal("6.0.16");
        assert!(line.contains("Redis 6.0.16") && line.contains("Redis 7.0.0 or later"));
        assert!(line.contains("module not loaded"));
    }
}

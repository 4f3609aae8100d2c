//! Hands [`crate::config::SETTINGS`] to Redis through redis-module's configuration API. Redis
//! then serves CONFIG GET and CONFIG SET, and applies the `idgen.*` lines of redis.conf, through
//! the [`ConfigurationValue`] implementation below. Every value goes through the table's checks;
//! a refusal reaches the client as an error, never a crash.

use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::configuration::{
    register_bool_configuration, register_i64_configuration, register_string_configuration,
    ConfigurationContext, ConfigurationFlags,
};
use redis_module::{ConfigurationValue, Context, RedisError, RedisString};

use crate::config::{Config, Effect, Kind, Setting, SETTINGS};

/// One setting as Redis sees it: the row, where its value lives, and whom to tell of a change.
struct Bound {
    setting: &'static Setting,
    config: &'static Config,
    changed: fn(Effect),
    /// The string last shown by CONFIG GET: Redis copies it but never frees it, and the crate
    /// hands it over as is, so it is freed here on the next get.
    shown: AtomicPtr<redis_module::raw::RedisModuleString>,
}

/// Registers every setting with its current value (the defaults and load arguments) as its
/// default; `changed` hears of each value set from then on.
pub fn register(ctx: &Context, config: &'static Config, changed: fn(Effect)) {
    for setting in SETTINGS {
        // Lives as long as the process: Redis keeps the pointer, and the module cannot be
        // unloaded.
        let bound: &'static Bound = Box::leak(Box::new(Bound {
            setting,
            config,
            changed,
            shown: AtomicPtr::new(std::ptr::null_mut()),
        }));
        let flags = if setting.live {
            ConfigurationFlags::DEFAULT
        } else {
            ConfigurationFlags::IMMUTABLE
        };
        match &setting.kind {
            Kind::Int { min, max, cell, .. } => {
                let value = config.int(*cell);
                register_i64_configuration(ctx, setting.name, bound, value, *min, *max, flags, None)
            }
            Kind::Bool { cell, .. } => {
                let value = config.flag(*cell);
                register_bool_configuration(ctx, setting.name, bound, value, flags, None)
            }
            Kind::Str { cell, .. } => {
                // Checked values hold no NUL byte, which the crate would refuse.
                let value = config.text(*cell);
                register_string_configuration(ctx, setting.name, bound, &value, flags, None)
            }
        }
    }
}

impl ConfigurationValue<i64> for Bound {
    fn get(&self, _: &ConfigurationContext) -> i64 {
        match &self.setting.kind {
            Kind::Int { cell, .. } => self.config.int(*cell),
            _ => 0,
        }
    }

    /// Redis has parsed the number and checked it against min and max.
    fn set(&self, _: &ConfigurationContext, value: i64) -> Result<(), RedisError> {
        if let Kind::Int { cell, .. } = &self.setting.kind {
            cell(self.config).store(value, Ordering::Relaxed);
            (self.changed)(self.setting.effect);
        }
        Ok(())
    }
}

impl ConfigurationValue<bool> for Bound {
    fn get(&self, _: &ConfigurationContext) -> bool {
        match &self.setting.kind {
            Kind::Bool { cell, .. } => self.config.flag(*cell),
            _ => false,
        }
    }

    fn set(&self, _: &ConfigurationContext, value: bool) -> Result<(), RedisError> {
        if let Kind::Bool { cell, .. } = &self.setting.kind {
            cell(self.config).store(value, Ordering::Relaxed);
            (self.changed)(self.setting.effect);
        }
        Ok(())
    }
}

impl ConfigurationValue<RedisString> for Bound {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        let text = match &self.setting.kind {
            Kind::Str { cell, .. } => self.config.text(*cell),
            _ => String::new(),
        };
        let shown = RedisString::create_from_slice(std::ptr::null_mut(), text.as_bytes());
        let last = self.shown.swap(shown.inner, Ordering::AcqRel);
        if !last.is_null() {
            // The one reference to the string shown before: Redis has long copied it.
            drop(RedisString::from_redis_module_string(
                std::ptr::null_mut(),
                last,
            ));
        }
        shown
    }

    fn set(&self, _: &ConfigurationContext, value: RedisString) -> Result<(), RedisError> {
        self.setting
            .set_str(self.config, value.as_slice())
            .map_err(RedisError::String)?;
        (self.changed)(self.setting.effect);
        Ok(())
    }
}

//! Date sequences: `yyyyMMdd * 10^digits + seq`, from a per-day counter.
//!
//! The counter itself lives elsewhere (a Redis string key); this module decides which day it
//! is in a time zone ([`calendar`]), what the counter key is called ([`key`]), how a counter
//! value becomes an ID ([`value`]), which counters must skip ahead after a promotion
//! ([`fence`]), how far each counter went ([`witness`]), and how far it is reserved on disk ([`ledger`]).

pub mod calendar;
pub mod fence;
pub mod key;
pub mod ledger;
pub mod value;
pub mod witness;

pub use calendar::{Calendar, Day, DayCache, Period, ZoneError};
pub use fence::Fence;
pub use key::{counter_key, counter_label, parse_counter, KeyError};
pub use value::{check_digits, compose, most_in, ValueError, DEFAULT_DIGITS, MAX_DIGITS};
pub use witness::{Lowered, Mark, Reserve, Witnesses};

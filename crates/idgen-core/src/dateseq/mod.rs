//! Date sequences: `yyyyMMdd * 10^digits + seq`, from a per-day counter.
//!
//! The counter itself lives elsewhere (a Redis string key); this module decides which day it
//! is in a time zone ([`calendar`]), what the counter key is called ([`key`]), and how a counter
//! value becomes an ID ([`value`]).

pub mod calendar;
pub mod key;
pub mod value;

pub use calendar::{Calendar, Day, DayCache, Offsets, Period, ZoneError};
pub use key::{counter_key, counter_label, parse_counter, KeyError};
pub use value::{check_digits, compose, most_in, ValueError, DEFAULT_DIGITS, MAX_DIGITS};

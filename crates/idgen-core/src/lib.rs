//! Pure logic for unique 64-bit IDs: no Redis, no network, time injected.
//!
//! # Snowflake IDs
//!
//! The default layout is Twitter's:
//!
//! ```text
//!  63  62                                    22 21     17 16     12 11          0
//! +---+----------------------------------------+---------+---------+-------------+
//! | 0 | 41 bits: ms since the epoch            | 5: dc   | 5: wkr  | 12: sequence|
//! +---+----------------------------------------+---------+---------+-------------+
//! ```
//!
//! The sign bit stays 0; time is always the highest field, so IDs sort by time. Other layouts
//! ([`Layout::instagram`], [`Layout::sonyflake`], or any spec that fits 63 bits) reorder and
//! resize the fields below it. [`Generator`] issues IDs over an injected [`Clock`] and never
//! repeats or goes back: see its module docs for the clock policy.
//!
//! # Date sequences
//!
//! [`dateseq`] turns a per-day counter into `yyyyMMdd * 10^digits + seq` in a chosen time zone.
//!
//! # 128-bit IDs
//!
//! [`time128`] makes UUIDv7 and ULID values, strictly increasing on one node, with the same
//! clock policy as the Snowflake generator.
//!
//! # IDs shown outside
//!
//! [`sqid`] encodes IDs as Sqids (short strings in an alphabet the operator shuffles), so that
//! sequential values do not tell outsiders how many were issued.
//!
//! ```
//! use idgen_core::{Generator, ManualClock, Settings};
//!
//! let clock = ManualClock::new(1_795_000_000_000);
//! let mut ids = Generator::new(Settings { worker_id: 3, ..Settings::default() }, clock).unwrap();
//! let id = ids.next_id().unwrap();
//! assert_eq!(ids.decode(id).worker, 3);
//! ```

pub mod at_time;
pub mod clock;
pub mod dateseq;
pub mod ff1_binary;
pub mod generator;
pub mod layout;
pub mod lease;
pub mod limits;
pub mod seal;
pub mod settings;
pub mod sqid;
mod sqid_decoder;
mod sqid_encoder;
pub mod time128;
pub mod utc_text;

pub use at_time::{parse_time, snowflake_at, time128_at, End, TimeError};
pub use clock::{Clock, ManualClock, SystemClock};
pub use generator::{DecodedId, GenerateError, Generator, Stats, CEILING_HEADROOM_MS};
pub use layout::{Field, Layout, LayoutError, Profile};
pub use seal::{SealError, Sealer};
pub use settings::{Settings, SettingsError, DEFAULT_MAX_DRIFT_MS, TWITTER_EPOCH_MS};
pub use sqid::{SqidCodec, SqidError};
pub use time128::{Form128, Generator128, Stats128};
pub use utc_text::with_utc_text;

//! Bit layouts: how a 63-bit ID is split into time, node and sequence fields.

use std::fmt;

/// Bits available below the sign bit, which always stays 0.
pub const MAX_BITS: u32 = 63;

/// One field below the time field. Time is always the highest field so IDs sort by time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The datacenter ID (Twitter's 5 bits).
    Datacenter,
    /// The worker, shard or machine ID.
    Worker,
    /// The per-tick counter.
    Sequence,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Datacenter => "datacenter",
            Field::Worker => "worker",
            Field::Sequence => "sequence",
        }
    }
}

/// Why a layout was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The fields add up to more than 63 bits.
    TooWide { bits: u32 },
    /// The time field has no bits.
    NoTimeBits,
    /// The sequence field has no bits.
    NoSequenceBits,
    /// A tick of 0 ms.
    ZeroTick,
    /// The spec names something other than a profile or `field:width` pairs.
    Malformed(String),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::TooWide { bits } => write!(
                f,
                "layout needs {bits} bits but only {MAX_BITS} fit in a signed 64-bit ID"
            ),
            LayoutError::NoTimeBits => write!(f, "layout needs at least 1 time bit"),
            LayoutError::NoSequenceBits => write!(f, "layout needs at least 1 sequence bit"),
            LayoutError::ZeroTick => write!(f, "layout tick-ms must be at least 1"),
            LayoutError::Malformed(why) => write!(
                f,
                "{why}; expected twitter, instagram, sonyflake, js53 or \
                 'time:41,datacenter:5,worker:5,sequence:12[,tick-ms:1]' (fields high to low)"
            ),
        }
    }
}

impl std::error::Error for LayoutError {}

/// Twitter's epoch, 2010-11-04T01:42:54.657Z: its layout's, and the default for every layout.
pub const TWITTER_EPOCH_MS: i64 = 1_288_834_974_657;
/// Instagram's epoch, 2011-08-24T21:07:01.721Z, from its published PL/pgSQL `next_id()`.
pub const INSTAGRAM_EPOCH_MS: i64 = 1_314_220_021_721;
/// Sonyflake's default start time, 2014-09-01T00:00:00Z.
pub const SONYFLAKE_EPOCH_MS: i64 = 1_409_529_600_000;

/// A named layout and the epoch its original uses, the default when none is configured: an ID
/// made under a profile means what the original's own tools say it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The name `Layout::parse` knows it by.
    pub name: &'static str,
    /// Its bit layout.
    pub layout: Layout,
    /// Its original's epoch, ms since 1970 (js53, ours, keeps Twitter's).
    pub epoch_ms: i64,
}

/// A validated bit layout. Fields are stored high to low below the time field, absent ones last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    time_bits: u32,
    tick_ms: u64,
    /// Fields below time, highest first, each with its width.
    fields: [(Field, u32); 3],
}

/// The fields of an ID, as [`Layout::decode`] returns them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Ticks since the epoch.
    pub ticks: u64,
    /// Datacenter ID (0 when the layout has none).
    pub datacenter: u64,
    /// Worker, shard or machine ID.
    pub worker: u64,
    /// Sequence within the tick.
    pub sequence: u64,
}

impl Layout {
    /// Builds a layout from widths given high to low below the time field.
    ///
    /// # Errors
    /// One [`LayoutError`] per broken rule: too wide, no time bits, no sequence bits, zero tick.
    pub fn new(
        time_bits: u32,
        mut fields: [(Field, u32); 3],
        tick_ms: u64,
    ) -> Result<Self, LayoutError> {
        // Absent fields last, so equal layouts compare equal whatever order they were named in.
        fields.sort_by_key(|f| f.1 == 0);
        let bits = time_bits + fields.iter().map(|f| f.1).sum::<u32>();
        if time_bits == 0 {
            return Err(LayoutError::NoTimeBits);
        }
        if bits > MAX_BITS {
            return Err(LayoutError::TooWide { bits });
        }
        if fields.iter().any(|&(f, w)| f == Field::Sequence && w == 0) {
            return Err(LayoutError::NoSequenceBits);
        }
        if tick_ms == 0 {
            return Err(LayoutError::ZeroTick);
        }
        Ok(Layout {
            time_bits,
            tick_ms,
            fields,
        })
    }

    /// Twitter Snowflake: 41 bits of ms, 5 datacenter, 5 worker, 12 sequence.
    pub fn twitter() -> Self {
        use Field::*;
        Layout {
            time_bits: 41,
            tick_ms: 1,
            fields: [(Datacenter, 5), (Worker, 5), (Sequence, 12)],
        }
    }

    /// Instagram: ms, 13 bits of shard (the worker field), 10 sequence.
    ///
    /// Instagram's published layout has 41 bits of time, 64 bits in all: its top time bit is the
    /// sign bit. We keep 40 bits of time so the ID stays a positive `i64`; IDs are the same as
    /// Instagram's until that bit would be set, 34.8 years after the epoch.
    pub fn instagram() -> Self {
        use Field::*;
        Layout {
            time_bits: 40,
            tick_ms: 1,
            fields: [(Worker, 13), (Sequence, 10), (Datacenter, 0)],
        }
    }

    /// Sonyflake: 39 bits of 10 ms units, 8 sequence, 16 machine (the worker field), lowest.
    pub fn sonyflake() -> Self {
        use Field::*;
        Layout {
            time_bits: 39,
            tick_ms: 10,
            fields: [(Sequence, 8), (Worker, 16), (Datacenter, 0)],
        }
    }

    /// IDs that JavaScript can hold: 53 bits, so every ID is at most 2^53 - 1
    /// (`Number.MAX_SAFE_INTEGER`) and survives `JSON.parse` and Lua's doubles. 41 bits of ms
    /// (69.7 years from the epoch: until 2080-07 with Twitter's), 5 bits of worker (32 nodes),
    /// 7 bits of sequence (128 IDs a ms per node, 128,000 a second).
    pub fn js53() -> Self {
        use Field::*;
        Layout {
            time_bits: 41,
            tick_ms: 1,
            fields: [(Worker, 5), (Sequence, 7), (Datacenter, 0)],
        }
    }

    /// The named profiles, each with its original's epoch.
    pub fn profiles() -> [Profile; 4] {
        [
            Profile {
                name: "twitter",
                layout: Self::twitter(),
                epoch_ms: TWITTER_EPOCH_MS,
            },
            Profile {
                name: "instagram",
                layout: Self::instagram(),
                epoch_ms: INSTAGRAM_EPOCH_MS,
            },
            Profile {
                name: "sonyflake",
                layout: Self::sonyflake(),
                epoch_ms: SONYFLAKE_EPOCH_MS,
            },
            Profile {
                name: "js53",
                layout: Self::js53(),
                epoch_ms: TWITTER_EPOCH_MS,
            },
        ]
    }

    /// The profile `spec` names (any case), if it names one rather than spelling out fields.
    pub fn profile(spec: &str) -> Option<Profile> {
        let name = spec.trim().to_ascii_lowercase();
        Self::profiles().into_iter().find(|p| p.name == name)
    }

    /// Parses a profile name or a spec such as `time:41,datacenter:5,worker:5,sequence:12,tick-ms:1`.
    ///
    /// Fields are listed high to low; `time` must come first; absent fields have 0 bits.
    ///
    /// # Errors
    /// [`LayoutError::Malformed`] for an unknown name or field, plus every rule of [`Layout::new`].
    pub fn parse(spec: &str) -> Result<Self, LayoutError> {
        if let Some(profile) = Self::profile(spec) {
            return Ok(profile.layout);
        }
        let malformed = |why: String| LayoutError::Malformed(why);
        let mut time_bits = None;
        let mut tick_ms = 1;
        let mut fields: Vec<(Field, u32)> = Vec::with_capacity(3);
        for part in spec.split(',') {
            let (name, value) = part
                .split_once(':')
                .ok_or_else(|| malformed(format!("'{}' is not name:value", part.trim())))?;
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            let number: u64 = value
                .parse()
                .map_err(|_| malformed(format!("'{value}' is not a number")))?;
            let width = u32::try_from(number).unwrap_or(u32::MAX).min(1000);
            let field = match name.as_str() {
                "time" if time_bits.is_none() && fields.is_empty() => {
                    time_bits = Some(width);
                    continue;
                }
                "time" => return Err(malformed("time must be the first field, once".into())),
                "tick-ms" => {
                    tick_ms = number;
                    continue;
                }
                "datacenter" => Field::Datacenter,
                "worker" | "shard" | "machine" => Field::Worker,
                "sequence" => Field::Sequence,
                other => return Err(malformed(format!("unknown field '{other}'"))),
            };
            if time_bits.is_none() {
                return Err(malformed("time must be the first field".into()));
            }
            if fields.iter().any(|f| f.0 == field) {
                return Err(malformed(format!("field '{}' given twice", field.name())));
            }
            fields.push((field, width));
        }
        let time_bits = time_bits.ok_or_else(|| malformed("no time field".into()))?;
        for field in [Field::Datacenter, Field::Worker, Field::Sequence] {
            if !fields.iter().any(|f| f.0 == field) {
                fields.push((field, 0));
            }
        }
        Layout::new(time_bits, [fields[0], fields[1], fields[2]], tick_ms)
    }

    /// Width of the time field in bits.
    pub fn time_bits(&self) -> u32 {
        self.time_bits
    }

    /// Length of one tick in milliseconds.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// Whole ticks from `epoch_ms` to `unix_ms`; 0 before the epoch. Exact for any two i64
    /// (fewer instructions than `saturating_sub` and `max`), and no division
    /// (tens of cycles) for the usual 1 ms tick: the Snowflake generator asks for every ID.
    #[inline]
    pub fn ticks_between(&self, epoch_ms: i64, unix_ms: i64) -> u64 {
        let ms = if unix_ms > epoch_ms {
            (unix_ms as u64).wrapping_sub(epoch_ms as u64)
        } else {
            0
        };
        match self.tick_ms {
            1 => ms,
            tick_ms => ms / tick_ms,
        }
    }

    /// Width of `field` in bits.
    pub fn bits(&self, field: Field) -> u32 {
        self.fields.iter().find(|f| f.0 == field).map_or(0, |f| f.1)
    }

    /// Largest value `field` can hold.
    pub fn max(&self, field: Field) -> u64 {
        mask(self.bits(field))
    }

    /// Largest tick count the time field can hold.
    pub fn max_ticks(&self) -> u64 {
        mask(self.time_bits)
    }

    /// Position of `field`'s lowest bit.
    pub fn shift(&self, field: Field) -> u32 {
        let mut shift = 0;
        for &(f, w) in self.fields.iter().rev() {
            if f == field {
                return shift;
            }
            shift += w;
        }
        shift
    }

    /// Position of the time field's lowest bit.
    pub fn time_shift(&self) -> u32 {
        self.fields.iter().map(|f| f.1).sum()
    }

    /// Puts the fields together. Values must already fit their fields.
    pub fn compose(&self, ticks: u64, datacenter: u64, worker: u64, sequence: u64) -> u64 {
        (ticks << self.time_shift())
            | (datacenter << self.shift(Field::Datacenter))
            | (worker << self.shift(Field::Worker))
            | (sequence << self.shift(Field::Sequence))
    }

    /// Splits an ID into its fields.
    pub fn decode(&self, id: u64) -> Decoded {
        let get = |field| (id >> self.shift(field)) & self.max(field);
        Decoded {
            ticks: (id >> self.time_shift()) & self.max_ticks(),
            datacenter: get(Field::Datacenter),
            worker: get(Field::Worker),
            sequence: get(Field::Sequence),
        }
    }
}

impl fmt::Display for Layout {
    /// The canonical spec, which [`Layout::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "time:{}", self.time_bits)?;
        for &(field, width) in &self.fields {
            if width > 0 {
                write!(f, ",{}:{width}", field.name())?;
            }
        }
        write!(f, ",tick-ms:{}", self.tick_ms)
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_match_their_published_layouts() {
        let t = Layout::twitter();
        assert_eq!(
            (
                t.time_shift(),
                t.shift(Field::Datacenter),
                t.shift(Field::Worker)
            ),
            (22, 17, 12)
        );
        let i = Layout::instagram();
        assert_eq!(
            (
                i.time_bits(),
                i.time_shift(),
                i.shift(Field::Worker),
                i.max(Field::Sequence)
            ),
            (40, 23, 10, 1023)
        );
        let s = Layout::sonyflake();
        assert_eq!(
            (
                s.time_shift(),
                s.shift(Field::Sequence),
                s.shift(Field::Worker)
            ),
            (24, 16, 0)
        );
        assert_eq!(s.tick_ms(), 10);
    }

    #[test]
    fn profiles_carry_their_originals_epochs() {
        let epoch = |name: &str| Layout::profile(name).unwrap().epoch_ms;
        assert_eq!(epoch("twitter"), 1_288_834_974_657);
        assert_eq!(epoch("Instagram"), 1_314_220_021_721);
        // 2014-09-01T00:00:00Z: 16,314 days after 1970-01-01.
        assert_eq!(epoch("sonyflake"), 16_314 * 86_400_000);
        assert_eq!(epoch("js53"), TWITTER_EPOCH_MS);
        assert_eq!(Layout::profile("time:41,worker:10,sequence:12"), None);
    }

    #[test]
    fn js53_ids_stay_within_javascripts_safe_integers() {
        let j = Layout::parse("js53").unwrap();
        assert_eq!(j, Layout::js53());
        let largest = j.compose(
            j.max_ticks(),
            j.max(Field::Datacenter),
            j.max(Field::Worker),
            j.max(Field::Sequence),
        );
        assert_eq!(largest, (1 << 53) - 1, "Number.MAX_SAFE_INTEGER");
        assert_eq!(
            (j.max(Field::Worker), j.max(Field::Sequence) + 1),
            (31, 128)
        );
        // 2^41 ms from Twitter's epoch: 2080-07-10.
        let end_ms = TWITTER_EPOCH_MS + (1i64 << 41);
        assert_eq!(end_ms / 86_400_000, 40_368, "2080-07-10 in days since 1970");
        assert_eq!(j.to_string(), "time:41,worker:5,sequence:7,tick-ms:1");
    }

    #[test]
    fn decode_inverts_compose_for_every_profile() {
        for Profile { layout, .. } in Layout::profiles() {
            let (ticks, dc, worker, seq) = (
                layout.max_ticks() - 7,
                layout.max(Field::Datacenter),
                layout.max(Field::Worker) / 3,
                layout.max(Field::Sequence) - 1,
            );
            let id = layout.compose(ticks, dc, worker, seq);
            assert!(id <= i64::MAX as u64, "{layout}: sign bit set");
            let d = layout.decode(id);
            assert_eq!(
                (d.ticks, d.datacenter, d.worker, d.sequence),
                (ticks, dc, worker, seq)
            );
        }
    }

    #[test]
    fn spec_round_trips_through_display() {
        for Profile { layout, .. } in Layout::profiles() {
            assert_eq!(Layout::parse(&layout.to_string()), Ok(layout));
        }
        let custom = Layout::parse("time:40, worker:10, sequence:13, tick-ms:2").unwrap();
        assert_eq!(
            custom.to_string(),
            "time:40,worker:10,sequence:13,tick-ms:2"
        );
        assert_eq!(custom.shift(Field::Worker), 13);
    }

    #[test]
    fn refuses_each_broken_rule() {
        let cases = [
            (
                "game server 37+20+16",
                "time:37,worker:20,sequence:16",
                LayoutError::TooWide { bits: 73 },
            ),
            (
                "64 bits",
                "time:42,datacenter:5,worker:5,sequence:12",
                LayoutError::TooWide { bits: 64 },
            ),
            ("no time", "time:0,sequence:12", LayoutError::NoTimeBits),
            (
                "no sequence",
                "time:41,worker:10",
                LayoutError::NoSequenceBits,
            ),
            (
                "zero tick",
                "time:41,sequence:12,tick-ms:0",
                LayoutError::ZeroTick,
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(Layout::parse(spec), Err(want), "{name}");
        }
        for bad in [
            "",
            "snowflake",
            "time:41,color:3",
            "sequence:12,time:41",
            "time:x",
            "time:41,worker:1,worker:2",
        ] {
            assert!(
                matches!(Layout::parse(bad), Err(LayoutError::Malformed(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn too_wide_message_says_why() {
        let err = Layout::parse("time:37,worker:20,sequence:16")
            .unwrap_err()
            .to_string();
        assert!(err.contains("73 bits") && err.contains("63"), "{err}");
    }
}

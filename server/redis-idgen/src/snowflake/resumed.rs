//! Where Snowflake IDs start when the module loads: above every witness of how far an earlier
//! run went. The state file's reservation is one; the load time plus `idgen.max-drift-ms` is the
//! other, and the only one left when the file is lost, emptied or put back from an older copy.

use crate::snowflake::reservation;

/// Where Snowflake IDs start at load, and which witness set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resumed {
    /// IDs start in ticks after this time (ms since 1970).
    pub above_ms: i64,
    /// What the state file held: `missing`, `empty` or `reserved`; `off` without one.
    pub state_file: &'static str,
    /// Whether the state file's reservation was the higher witness (else the load time plus
    /// `idgen.max-drift-ms`).
    pub from_state_file: bool,
}

impl Resumed {
    /// IDs start above both what the state file reserved (if it held a reservation) and
    /// `drift_floor_ms`, the load time plus `idgen.max-drift-ms`: the furthest ahead of this
    /// clock any earlier run could have issued, so a file lost, emptied or put back from an
    /// older copy repeats nothing (on a clock that did not step back across the restart).
    pub fn decide(found: Option<&reservation::Found>, drift_floor_ms: i64) -> Resumed {
        let reserved = found.and_then(|f| f.reserved_ms());
        Resumed {
            above_ms: reserved.unwrap_or(0).max(drift_floor_ms),
            state_file: found.map_or("off", |f| f.word()),
            from_state_file: reserved.is_some_and(|r| r > drift_floor_ms),
        }
    }

    /// `from_state_file`'s word for INFO.
    pub fn witness(&self) -> &'static str {
        if self.from_state_file {
            "state-file"
        } else {
            "load-time+max-drift"
        }
    }

    /// Whether the log line is a warning: a state file set but holding no reservation.
    pub fn warns(&self) -> bool {
        matches!(self.state_file, "missing" | "empty")
    }

    /// The log line: which witness applied, and what the state file held.
    pub fn describe(&self, path: &str) -> String {
        let file = match self.state_file {
            "off" => "no state file".to_string(),
            "reserved" => format!("state file {path} reserved"),
            held => format!(
                "state file {path} {held} (lost, emptied or never written): IDs start above the \
                 furthest an earlier run on this clock could have gone"
            ),
        };
        format!(
            "idgen: {file}; Snowflake IDs start above {} ms ({})",
            self.above_ms,
            self.witness()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snowflake::reservation::Found;

    const LOAD_PLUS_DRIFT: i64 = 1_795_000_001_000;

    #[test]
    fn ids_start_above_the_higher_witness_whatever_the_file_held() {
        let cases = [
            (None, LOAD_PLUS_DRIFT, "off", false),
            (Some(Found::Missing), LOAD_PLUS_DRIFT, "missing", false),
            (Some(Found::Empty), LOAD_PLUS_DRIFT, "empty", false),
            // An older copy of the file: below the load time plus the drift limit.
            (
                Some(Found::Reserved(LOAD_PLUS_DRIFT - 5_000, None)),
                LOAD_PLUS_DRIFT,
                "reserved",
                false,
            ),
            // A reservation ahead of the clock: a burst that borrowed, or a clock behind.
            (
                Some(Found::Reserved(LOAD_PLUS_DRIFT + 7, None)),
                LOAD_PLUS_DRIFT + 7,
                "reserved",
                true,
            ),
        ];
        for (found, above_ms, word, from_file) in cases {
            let r = Resumed::decide(found.as_ref(), LOAD_PLUS_DRIFT);
            assert_eq!(
                (r.above_ms, r.state_file, r.from_state_file),
                (above_ms, word, from_file),
                "{found:?}"
            );
            assert_eq!(r.warns(), matches!(word, "missing" | "empty"), "{found:?}");
            assert!(r.describe("/d/idgen.state").contains(&above_ms.to_string()));
        }
    }
}

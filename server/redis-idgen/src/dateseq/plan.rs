//! One DATESEQ.NEXT call's arithmetic: from where its counter resumes, past the failover gap,
//! `n` values of the period's date, or the refusal that says why they do not fit. Checked
//! before anything is written: a spent period is an error, never a wrap.

use idgen_core::dateseq::{compose, ValueError};

use crate::error::CommandError;

/// A call's counter, as found and resumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    /// The period's date (`yyyyMMdd`, `yyyyMM` or `yyyy`).
    pub date: u32,
    pub digits: u32,
    /// The counter's value as found (0 when missing).
    pub found: u64,
    /// Where it resumes: `found`, or above its witness or a crash's floor.
    pub base: u64,
    /// Values skipped before the call's own: the failover gap, or 0.
    pub gap: u64,
}

/// What the call issues: the counter moves to `highest`, by `highest - found`, and the values
/// `first..=last` go out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub highest: u64,
    pub first: u64,
    pub last: u64,
}

/// The `n` values after `at`'s base and gap.
///
/// # Errors
/// [`CommandError::OutOfRange`] naming what spent the period: the failover gap, this COUNT,
/// or where the counter resumes; `compose`'s own for a counter that gave its last value.
pub fn plan(at: Counted, n: u64) -> Result<Planned, CommandError> {
    let Counted {
        date,
        digits,
        found,
        base,
        gap,
    } = at;
    let highest = base + gap + n;
    let last = compose(date, digits, highest).map_err(|e| match e {
        ValueError::SequenceOverflow { .. } if gap > 0 => CommandError::OutOfRange(format!(
            "{e} after the failover gap of {gap} this counter skips once after a promotion \
             (idgen.dateseq-failover-gap): lower the gap or use more DIGITS"
        )),
        // Spent only when not one more value fits; else it is this COUNT that does not.
        ValueError::SequenceOverflow { .. } if compose(date, digits, base + 1).is_ok() => {
            let left = 10u64.pow(digits) - 1 - base;
            CommandError::OutOfRange(format!(
                "COUNT {n} does not fit: {left} values are left for {date} in {digits} DIGITS"
            ))
        }
        // Spent by where the counter resumes, not by values this counter gave here.
        ValueError::SequenceOverflow { .. } if base > found => CommandError::OutOfRange(format!(
            "{e}: the counter resumes above {base}, where its witness stands (values a crash \
             of an earlier run may have handed out before the witness file named the counter, \
             or a lost or older key held), not at {found}; use more DIGITS"
        )),
        e => e.into(),
    })? as u64;
    Ok(Planned {
        highest,
        first: last - (n - 1),
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(found: u64, base: u64, gap: u64) -> Counted {
        Counted {
            date: 20_261_129,
            digits: 3,
            found,
            base,
            gap,
        }
    }

    fn refusal(at: Counted, n: u64) -> String {
        match plan(at, n) {
            Err(CommandError::OutOfRange(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn values_follow_the_base_and_the_gap() {
        let p = plan(at(5, 5, 0), 1).unwrap();
        assert_eq!(
            p,
            Planned {
                highest: 6,
                first: 20_261_129_006,
                last: 20_261_129_006
            }
        );
        let p = plan(at(5, 40, 10), 3).unwrap();
        assert_eq!(p.highest, 53);
        assert_eq!((p.first, p.last), (20_261_129_051, 20_261_129_053));
        // The last value of the DIGITS still fits.
        assert_eq!(plan(at(998, 998, 0), 1).unwrap().last, 20_261_129_999);
    }

    #[test]
    fn each_refusal_names_what_spent_the_period() {
        let gap = refusal(at(0, 0, 1_000), 1);
        assert!(gap.contains("failover gap of 1000"), "{gap}");
        let count = refusal(at(990, 990, 0), 10);
        assert!(
            count.contains("COUNT 10 does not fit: 9 values are left"),
            "{count}"
        );
        let resumed = refusal(at(3, 999, 0), 1);
        assert!(
            resumed.contains("resumes above 999") && resumed.contains("not at 3"),
            "{resumed}"
        );
        // Spent by its own values: the plain overflow.
        assert!(matches!(
            plan(at(999, 999, 0), 1),
            Err(CommandError::Value(_))
        ));
    }
}

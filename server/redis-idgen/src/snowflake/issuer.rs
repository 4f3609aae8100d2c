//! SNOWFLAKE.NEXT's state: the generator, the restart reservation it is held below, where IDs
//! started at load, and the buffer `COUNT` fills. Handlers reach it through these methods.

use idgen_core::{GenerateError, Generator, SystemClock};

use super::reservation::Reservation;
use super::resumed::Resumed;
use crate::error::CommandError;

/// A node's Snowflake IDs.
pub struct Snowflakes {
    ids: Generator<SystemClock>,
    /// `None` when `idgen.state-file` is empty.
    reservation: Option<Reservation>,
    resumed: Resumed,
    /// Reused for `COUNT`, so it does not allocate.
    buf: Vec<u64>,
}

/// What one call issued.
pub enum Issued<'a> {
    One(u64),
    Many(&'a mut [u64]),
}

impl Snowflakes {
    pub fn new(
        ids: Generator<SystemClock>,
        reservation: Option<Reservation>,
        resumed: Resumed,
    ) -> Snowflakes {
        Snowflakes {
            ids,
            reservation,
            resumed,
            buf: Vec::new(),
        }
    }

    /// One ID, or (`count`) that many, below the durable reservation.
    ///
    /// # Errors
    /// The reservation's file cannot be written, or the generator refuses (the clock behind
    /// by more than the drift limit, or the reservation spent).
    #[inline(always)]
    pub fn issue(&mut self, count: Option<usize>) -> Result<Issued<'_>, CommandError> {
        let Snowflakes {
            ids,
            reservation,
            buf,
            ..
        } = self;
        if let Some(reservation) = reservation {
            if let Some(why) = reservation.refusal() {
                return Err(CommandError::StateFile(why));
            }
            ids.set_ceiling(reservation.durable_until());
        }
        // Generated, the reservation told how far IDs went (a refusal at its end wakes its
        // thread), then the reply.
        let generated = match count {
            None => ids.next_id().map(Some),
            Some(n) => {
                buf.clear();
                ids.next_ids(n, buf).map(|()| None)
            }
        };
        // The reservation's thread reads the clock itself: it needs telling only where the IDs
        // left the clock.
        if let Some(reservation) = reservation {
            if generated.is_err() || !ids.on_the_clock() {
                reservation.note_issued(ids.last_tick_unix_ms());
            }
        }
        match generated {
            Ok(Some(id)) => Ok(Issued::One(id)),
            Ok(None) => Ok(Issued::Many(buf)),
            Err(e) => Err(refusal(e, reservation.as_ref())),
        }
    }

    /// The generator, to read: its settings, counts and decoding.
    pub fn generator(&self) -> &Generator<SystemClock> {
        &self.ids
    }

    /// `idgen.max-drift-ms` changed.
    pub fn set_max_drift_ms(&mut self, ms: u64) {
        self.ids.set_max_drift_ms(ms);
    }

    /// `idgen.sequence-random-start` changed.
    pub fn set_random_start(&mut self, on: bool) {
        self.ids.set_random_start(on);
    }

    /// Where IDs started at load, and why.
    pub fn resumed(&self) -> &Resumed {
        &self.resumed
    }

    /// The restart reservation, when `idgen.state-file` is set.
    pub fn reservation(&self) -> Option<&Reservation> {
        self.reservation.as_ref()
    }
}

/// The generator's refusal, told as what really happened: a reservation that ran out because
/// its file cannot be written is a disk problem, not a burst.
fn refusal(e: GenerateError, reservation: Option<&Reservation>) -> CommandError {
    match (&e, reservation.and_then(Reservation::failure)) {
        (GenerateError::NotReserved { .. }, Some(why)) => CommandError::StateFile(why),
        _ => CommandError::Generate(e),
    }
}

//! The reply of a lease grant or renewal, sent once what it wrote is kept: held by the replicas
//! a failover could promote (`crate::replica_acks`, settled by [`settle`]), then in the lease
//! witness file a restart reads (`crate::leases::witness_file`). A holder never learns of a
//! grant or renewal that a failover or a restart could forget.

use crate::cmd::durable_reply::{finish_once_written, once_written, Kept, Reply};
use crate::error::CommandError;
use crate::ffi::blocked::Blocked;
use crate::ffi::ctx::Ctx;
use crate::leases::pool::{Grant, Lease};
use crate::leases::witness_file::LeaseWitness;
use crate::replica_acks::NotHeld;

/// What ACQUIRE and RENEW acknowledge: the holder may issue IDs under it once told.
pub enum Ack {
    Grant(Grant),
    Renewal(Lease),
}

impl Ack {
    pub fn command(&self) -> &'static str {
        match self {
            Ack::Grant(_) => "WORKERID.ACQUIRE",
            Ack::Renewal(_) => "WORKERID.RENEW",
        }
    }
}

impl Reply for Ack {
    fn send(self, ctx: &Ctx) -> Result<(), CommandError> {
        match self {
            Ack::Grant(grant) => {
                ctx.reply_array(4)?;
                ctx.reply_i64(grant.worker_id as i64)?;
                ctx.reply_i64(grant.lease.token as i64)?;
                ctx.reply_i64(grant.lease.expires_ms)?;
                ctx.reply_i64(grant.start_above_ms)
            }
            Ack::Renewal(lease) => {
                ctx.reply_array(2)?;
                ctx.reply_i64(lease.expires_ms)?;
                ctx.reply_i64(lease.until_ms)
            }
        }
    }
}

/// How long a write waits for replicas before it is refused: the renewal period of a holder
/// following the protocol (a third of the TTL, its call timeout), at least 100 ms.
pub fn replica_wait_ms(ttl_ms: i64) -> i64 {
    (ttl_ms / 3).max(100)
}

/// A grant or renewal written, its client blocked until replicas hold it.
pub struct Unacknowledged {
    client: Blocked<Kept<Ack>>,
    ack: Ack,
}

impl Unacknowledged {
    /// Blocks the client of the command `ctx` runs until [`settle`] ends its wait.
    ///
    /// # Errors
    /// Where the client cannot be blocked (inside MULTI or a script).
    pub fn block(ctx: &Ctx, ack: Ack) -> Result<Unacknowledged, CommandError> {
        match Blocked::<Kept<Ack>>::block(ctx) {
            Some(client) => Ok(Unacknowledged { client, ack }),
            None => Err(CommandError::CannotWaitForReplicas(ack.command())),
        }
    }
}

/// Ends the wait of `waiting`: held by the replicas (then on to the witness file, if there is
/// one), or not.
pub fn settle(waiting: Unacknowledged, held: Result<(), NotHeld>, witness: Option<&LeaseWitness>) {
    let Unacknowledged { client, ack } = waiting;
    match held {
        Ok(()) => match witness {
            Some(file) => finish_once_written(client, file, ack, CommandError::LeaseWitnessFile),
            None => client.finish(Kept {
                reply: ack,
                refused: None,
            }),
        },
        Err(why) => {
            let refused = CommandError::NotReplicated {
                command: ack.command(),
                needed: why.needed,
                held: why.held,
                waited_ms: why.waited_ms,
            };
            client.finish(Kept {
                reply: ack,
                refused: Some(refused),
            })
        }
    }
}

/// Replies once the witness file (if any) holds the namespace as this command left it.
pub fn when_witnessed(
    ctx: &Ctx,
    ack: Ack,
    witness: Option<&LeaseWitness>,
) -> Result<(), CommandError> {
    match witness {
        Some(file) => once_written(ctx, file, ack, CommandError::LeaseWitnessFile),
        None => ack.send(ctx),
    }
}

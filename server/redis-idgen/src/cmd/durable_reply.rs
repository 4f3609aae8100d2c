//! "Reply once durable", for every command whose reply must not go out before a witness file
//! holds what it wrote (DATESEQ.NEXT's reservations, a lease's grant or renewal): with the
//! client blocked meanwhile, or, inside MULTI or a script (where no client can be blocked),
//! after waiting here. A write that fails refuses the reply, naming the file.

use crate::error::CommandError;
use crate::ffi::blocked::{Answer, Blocked};
use crate::ffi::ctx::Ctx;
use crate::files::journal::Durable;

/// A reply that can wait: sent later, from a blocked client's callback.
pub trait Reply: Send + 'static {
    /// Sends the reply.
    ///
    /// # Errors
    /// What to reply instead.
    fn send(self, ctx: &Ctx) -> Result<(), CommandError>;
}

/// A reply kept until what it depends on is kept, and why it is refused, if it is.
pub struct Kept<R> {
    pub reply: R,
    pub refused: Option<CommandError>,
}

impl<R: Reply> Answer for Kept<R> {
    fn answer(self, ctx: &Ctx) {
        let sent = match self.refused {
            None => self.reply.send(ctx),
            Some(why) => Err(why),
        };
        if let Err(e) = sent {
            ctx.reply_error(&e);
        }
    }
}

/// Sends `reply` once `file` holds every line asked so far; a failed write is refused as
/// `refusal` of its reason.
///
/// # Errors
/// Inside MULTI or a script: the write's failure.
pub fn once_written<R: Reply>(
    ctx: &Ctx,
    file: &dyn Durable,
    reply: R,
    refusal: fn(String) -> CommandError,
) -> Result<(), CommandError> {
    match Blocked::<Kept<R>>::block(ctx) {
        Some(client) => {
            finish_once_written(client, file, reply, refusal);
            Ok(())
        }
        None => {
            file.wait_here().map_err(refusal)?;
            reply.send(ctx)
        }
    }
}

/// Has the blocked `client` answered with `reply` once `file` holds every line asked so far.
pub fn finish_once_written<R: Reply>(
    client: Blocked<Kept<R>>,
    file: &dyn Durable,
    reply: R,
    refusal: fn(String) -> CommandError,
) {
    file.wait(Box::new(move |written| {
        let refused = written.err().map(refusal);
        client.finish(Kept { reply, refused })
    }));
}

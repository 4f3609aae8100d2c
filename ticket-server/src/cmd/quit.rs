//! `QUIT`: OK, then the connection closes.

use bytes::Bytes;

use super::{CmdResult, Session};
use crate::frame::Reply;

pub fn run(_args: &[Bytes], session: &mut Session, reply: &mut Reply<'_>) -> CmdResult {
    session.quit = true;
    reply.simple("OK");
    Ok(())
}

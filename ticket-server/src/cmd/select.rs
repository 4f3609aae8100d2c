//! `SELECT 0`: there is one database; clients that select it explicitly get OK.

use bytes::Bytes;

use super::{parse_u64, CmdError, Command};

pub fn parse(args: &[Bytes]) -> Result<Command, CmdError> {
    if parse_u64(&args[1])? != 0 {
        return Err(CmdError::Refused("DB index is out of range"));
    }
    Ok(Command::Select)
}

//! Whether a call comes from a script, remembered per client connection.
//!
//! A script's Lua numbers are doubles, so an ID above 2^53 must reach it as a string. Redis
//! tells a module that a script is calling through `RM_GetContextFlags`, which computes every
//! flag it has (memory, persistence, replication): more than SNOWFLAKE.NEXT's own work. Its
//! client ID costs a small fraction of that (docs/benchmarks.md, "Measurements behind the code").
//!
//! The answer for a connection never changes, so it is asked once per connection:
//! - a client ID is never reused (Redis counts them up for the life of the process);
//! - scripts run their commands on clients with no connection of their own (the Lua and
//!   function engines' clients), never on the connection that sent EVAL or FCALL;
//! - while a script runs, a connection's command only reaches a module command flagged
//!   `allow-busy`, and none of this module's is.
//!
//! So once a connection's call was seen not to come from a script, none of its calls ever
//! will. Clients with no connection (scripts, `RM_Call` from another module, whose pooled
//! clients serve scripts and others alike) are never remembered: Redis is asked every time.

/// How many connections are remembered (by client ID modulo this): 2 KiB, and a miss costs
/// only the question that the cache saves.
const SLOTS: usize = 256;

/// Client IDs of connections seen calling outside a script.
pub struct Callers {
    /// Slot `id % SLOTS` holds the last such connection's ID there; 0 (no client's ID) when
    /// empty.
    connections: Box<[u64; SLOTS]>,
}

/// What Redis says of a caller that is not remembered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The call comes from a script (`REDISMODULE_CTX_FLAGS_LUA`).
    pub script: bool,
    /// The client is a connection (Redis finds it by ID among its connected clients).
    pub connection: bool,
}

impl Default for Callers {
    fn default() -> Self {
        Callers {
            connections: Box::new([0; SLOTS]),
        }
    }
}

impl Callers {
    /// Whether the call of client `id` comes from a script; `ask` asks Redis, only when `id` is
    /// not a connection already seen.
    pub fn is_script(&mut self, id: u64, ask: impl FnOnce() -> Asked) -> bool {
        let slot = &mut self.connections[id as usize % SLOTS];
        if *slot == id && id != 0 {
            return false;
        }
        let asked = ask();
        if asked.connection && !asked.script && id != 0 {
            *slot = id;
        }
        asked.script
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::{Asked, Callers, SLOTS};

    const CONNECTION: Asked = Asked {
        script: false,
        connection: true,
    };
    const SCRIPT: Asked = Asked {
        script: true,
        connection: false,
    };
    /// A client with no connection outside a script: `RM_Call` from another module's command.
    const POOLED: Asked = Asked {
        script: false,
        connection: false,
    };

    /// `callers.is_script(id)`, and whether Redis was asked.
    fn check(callers: &mut Callers, id: u64, answer: Asked) -> (bool, bool) {
        let asked = Cell::new(false);
        let script = callers.is_script(id, || {
            asked.set(true);
            answer
        });
        (script, asked.get())
    }

    #[test]
    fn a_connection_is_asked_about_once() {
        let mut callers = Callers::default();
        assert_eq!(check(&mut callers, 7, CONNECTION), (false, true));
        assert_eq!(check(&mut callers, 7, CONNECTION), (false, false));
    }

    #[test]
    fn a_script_client_is_asked_about_every_time() {
        let mut callers = Callers::default();
        assert_eq!(check(&mut callers, 9, SCRIPT), (true, true));
        assert_eq!(check(&mut callers, 9, SCRIPT), (true, true));
    }

    #[test]
    fn a_client_without_a_connection_is_never_remembered() {
        // The same pooled client may next serve a script.
        let mut callers = Callers::default();
        assert_eq!(check(&mut callers, 11, POOLED), (false, true));
        assert_eq!(check(&mut callers, 11, SCRIPT), (true, true));
    }

    #[test]
    fn a_connection_sharing_a_slot_replaces_the_one_before() {
        let mut callers = Callers::default();
        let (a, b) = (5, 5 + SLOTS as u64);
        check(&mut callers, a, CONNECTION);
        assert_eq!(check(&mut callers, b, CONNECTION), (false, true));
        assert_eq!(check(&mut callers, a, CONNECTION), (false, true));
        // The script client in the slot of a remembered connection is still asked about.
        assert_eq!(
            check(&mut callers, a + 2 * SLOTS as u64, SCRIPT),
            (true, true)
        );
    }

    #[test]
    fn client_id_zero_is_never_taken_for_a_connection() {
        // An empty slot holds 0; a context without a client reports ID 0.
        let mut callers = Callers::default();
        assert_eq!(check(&mut callers, 0, SCRIPT), (true, true));
        assert_eq!(check(&mut callers, 0, CONNECTION), (false, true));
        assert_eq!(check(&mut callers, 0, CONNECTION), (false, true));
    }
}

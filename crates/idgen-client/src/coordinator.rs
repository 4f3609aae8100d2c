//! The lease protocol on the wire: `WORKERID.ACQUIRE` / `RENEW` / `RELEASE` against the idgen
//! module, or `workerid_acquire` / `_renew` / `_release` of its Functions library on a server
//! that cannot load the module (the same arguments and replies; `FCALL`, or `EVALSHA` of the
//! library's scripts where the server has no `FUNCTION`), each optionally confirmed by `WAIT`
//! so that a grant survives the coordinator's failover.

use std::time::Duration;

use redis::{Connection, FromRedisValue, RedisError};

use idgen_functions::scripts::Library;

/// A lease as granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The worker ID.
    pub worker_id: u32,
    /// Fencing token: renewals and the release must quote it.
    pub token: u64,
    /// The holder's IDs must carry times above this (the last holder's record).
    pub start_above_ms: i64,
}

/// Why a lease call failed.
#[derive(Debug)]
pub enum LeaseCallError {
    /// The coordinator refused (e.g. the lease is lost, or all IDs are taken): its error text.
    Refused(String),
    /// The call did not get through (connection, timeout).
    Unreachable(String),
    /// Fewer replicas than required acknowledged the write in time.
    NotReplicated { wanted: usize, got: i64 },
}

impl std::fmt::Display for LeaseCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaseCallError::Refused(why) => write!(f, "coordinator refused: {why}"),
            LeaseCallError::Unreachable(why) => write!(f, "coordinator unreachable: {why}"),
            LeaseCallError::NotReplicated { wanted, got } => {
                write!(
                    f,
                    "only {got} of {wanted} replicas acknowledged the lease write"
                )
            }
        }
    }
}

impl std::error::Error for LeaseCallError {}

impl From<RedisError> for LeaseCallError {
    fn from(e: RedisError) -> Self {
        // LOADING (a restarted coordinator reading its AOF), TRYAGAIN, MASTERDOWN: not yet.
        // NOREPLICAS: no replica held the write in time (the module's
        // idgen.workerid-ack-replicas): the lease stands as last acknowledged, and a replica,
        // or the failover that follows a lost one, may come.
        // UNBLOCKED: the coordinator changed role while the call waited for a replica (a
        // failover): not acknowledged either.
        let not_yet = matches!(e.retry_method(), redis::RetryMethod::WaitAndRetry)
            || matches!(e.code(), Some("NOREPLICAS" | "UNBLOCKED"));
        if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || not_yet {
            LeaseCallError::Unreachable(e.to_string())
        } else {
            LeaseCallError::Refused(e.to_string())
        }
    }
}

/// What serves the leases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// The module if the server has it, else the Functions library: found on connect.
    #[default]
    Auto,
    /// The idgen module's `WORKERID.*` commands.
    Module,
    /// The Functions library's `workerid_*` functions (docs/library.md), at least
    /// [`LIBRARY_NEEDED`].
    Library,
}

/// The oldest Functions library whose leases this client can use.
pub const LIBRARY_NEEDED: &str = "0.1.0";

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "module" => Ok(Backend::Module),
            "library" => Ok(Backend::Library),
            _ => Err(format!("backend '{text}' must be auto, module or library")),
        }
    }
}

/// One connection to the coordinator, and how sure a write must be before it is used.
pub struct Coordinator {
    con: Connection,
    /// Module or Library, never Auto once connected.
    backend: Backend,
    /// How the server runs the library, for [`Backend::Library`].
    library: Option<Library>,
    namespace: String,
    /// Replicas that must acknowledge each grant and renewal (`WAIT n`); 0 trusts the primary.
    replicas: usize,
    wait: Duration,
}

impl Coordinator {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/`) with `timeout` on every call; `WAIT`
    /// waits half of it. With [`Backend::Auto`], the module is used if the server has its
    /// commands, else the library.
    ///
    /// # Errors
    /// When the coordinator cannot be reached; refused when it has neither the module nor a
    /// library at least [`LIBRARY_NEEDED`] (naming both versions).
    pub fn connect(
        url: &str,
        namespace: &str,
        backend: Backend,
        replicas: usize,
        timeout: Duration,
    ) -> Result<Self, LeaseCallError> {
        let client = redis::Client::open(url)?;
        let mut con = client.get_connection_with_timeout(timeout)?;
        con.set_read_timeout(Some(timeout))?;
        con.set_write_timeout(Some(timeout))?;
        let (backend, library) = match backend {
            Backend::Auto if has_module(&mut con)? => (Backend::Module, None),
            Backend::Module => (Backend::Module, None),
            Backend::Auto | Backend::Library => {
                let library =
                    Library::require(url, &mut con, LIBRARY_NEEDED).map_err(|e| match e {
                        idgen_functions::LibraryError::Redis(e) => LeaseCallError::from(e),
                        e if backend == Backend::Auto => LeaseCallError::Refused(format!(
                        "the server has neither the idgen module nor a library to lease from: {e}"
                    )),
                        e => LeaseCallError::Refused(e.to_string()),
                    })?;
                (Backend::Library, Some(library))
            }
        };
        Ok(Coordinator {
            con,
            backend,
            library,
            namespace: namespace.to_string(),
            replicas,
            // WAIT must answer (with its count) before the read gives up on it.
            wait: timeout / 2,
        })
    }

    /// `WORKERID.ACQUIRE ns TTL ttl MAX max`.
    ///
    /// # Errors
    /// Refused (e.g. every ID leased), unreachable, or not replicated.
    pub fn acquire(&mut self, ttl: Duration, max: u32) -> Result<Grant, LeaseCallError> {
        let reply: Vec<i64> = self.call(
            "ACQUIRE",
            &["TTL", &ttl.as_millis().to_string(), "MAX", &max.to_string()],
        )?;
        let [worker_id, token, _expires, start_above_ms] = reply[..] else {
            return Err(LeaseCallError::Refused(format!(
                "unexpected reply {reply:?}"
            )));
        };
        let grant = Grant {
            worker_id: worker_id as u32,
            token: token as u64,
            start_above_ms,
        };
        if let Err(e) = self.confirm() {
            // Unused, and not to be held until it expires: a client retrying through a replica
            // outage would otherwise drain the pool one TTL at a time.
            let _ = self.release(&grant, start_above_ms);
            return Err(e);
        }
        Ok(grant)
    }

    /// `WORKERID.RENEW ns worker token TTL ttl UNTIL until_ms`: the lease runs `ttl` from now
    /// on the coordinator, and the holder may put times up to `until_ms` into IDs.
    ///
    /// # Errors
    /// Refused (the lease is lost: stop issuing), unreachable, or not replicated.
    pub fn renew(
        &mut self,
        grant: &Grant,
        ttl: Duration,
        until_ms: i64,
    ) -> Result<(), LeaseCallError> {
        let _: Vec<i64> = self.call(
            "RENEW",
            &[
                &grant.worker_id.to_string(),
                &grant.token.to_string(),
                "TTL",
                &ttl.as_millis().to_string(),
                "UNTIL",
                &until_ms.to_string(),
            ],
        )?;
        self.confirm()
    }

    /// `WORKERID.RELEASE ns worker token UNTIL used_until_ms`: the last time this holder put
    /// into an ID, so the next holder need not wait for the rest of the recorded time.
    ///
    /// # Errors
    /// Refused or unreachable; the lease then simply expires.
    pub fn release(&mut self, grant: &Grant, used_until_ms: i64) -> Result<(), LeaseCallError> {
        let _: () = self.call(
            "RELEASE",
            &[
                &grant.worker_id.to_string(),
                &grant.token.to_string(),
                "UNTIL",
                &used_until_ms.to_string(),
            ],
        )?;
        Ok(())
    }

    /// Which backend serves the leases.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// How the leases are called: `WORKERID.*` (the module), `FCALL` or `EVALSHA` (the
    /// library, as functions or as scripts).
    pub fn form(&self) -> &'static str {
        self.library.as_ref().map_or("WORKERID.*", Library::form)
    }

    /// `WORKERID.<verb> ns args...` of the module, or `workerid_<verb>` of the library with the
    /// key `ns` and `args`.
    fn call<T: FromRedisValue>(&mut self, verb: &str, args: &[&str]) -> redis::RedisResult<T> {
        match &self.library {
            Some(library) => {
                let function = format!("workerid_{}", verb.to_ascii_lowercase());
                library.call(&mut self.con, &function, &[&self.namespace], args)
            }
            None => redis::cmd(&format!("WORKERID.{verb}"))
                .arg(&self.namespace)
                .arg(args)
                .query(&mut self.con),
        }
    }

    /// `WAIT replicas timeout` after a write, when replicas are required.
    fn confirm(&mut self) -> Result<(), LeaseCallError> {
        if self.replicas == 0 {
            return Ok(());
        }
        let got: i64 = redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(self.wait.as_millis() as u64)
            .query(&mut self.con)?;
        if got < self.replicas as i64 {
            return Err(LeaseCallError::NotReplicated {
                wanted: self.replicas,
                got,
            });
        }
        Ok(())
    }
}

/// Whether the server has the module's lease commands (`COMMAND INFO` answers nil for a
/// command it does not know). A user denied `COMMAND` is told no: the library is tried, and
/// refused in its own words if it is missing too.
fn has_module(con: &mut Connection) -> Result<bool, LeaseCallError> {
    let info: Vec<redis::Value> = match redis::cmd("COMMAND")
        .arg("INFO")
        .arg("WORKERID.ACQUIRE")
        .query(con)
    {
        Ok(info) => info,
        Err(e) if e.code() == Some("NOPERM") => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    Ok(!matches!(info.first(), None | Some(redis::Value::Nil)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error a server's reply line makes, as a call would return it.
    fn reply_error(line: &str) -> RedisError {
        redis::parse_redis_value(format!("-{line}\r\n").as_bytes())
            .and_then(|value| value.extract_error())
            .expect_err("an error reply")
    }

    #[test]
    fn a_coordinator_not_ready_yet_is_unreachable_and_a_refusal_is_not() {
        for line in [
            "LOADING Redis is loading the dataset in memory",
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            "TRYAGAIN Multiple keys request during rehashing of slot",
            "NOREPLICAS WORKERID.RENEW not acknowledged: 0 of 1 replicas held it within 333 ms",
            "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
        ] {
            let e = LeaseCallError::from(reply_error(line));
            assert!(matches!(e, LeaseCallError::Unreachable(_)), "{line}: {e}");
        }
        let e = LeaseCallError::from(reply_error(
            "ERR all 1024 worker IDs of this namespace are leased",
        ));
        assert!(matches!(e, LeaseCallError::Refused(_)), "{e}");
    }
}

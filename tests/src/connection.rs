//! A client connection as the suites hold one: a `redis::Connection` that calls idgen's
//! Functions library in whichever form its server has it. `FCALL` and `FCALL_RO` go as
//! written; on a server without them (Redis 6, or one that offers scripts alone, where the
//! library is installed as scripts: `idgen_functions::scripts`), the same call goes as
//! `EVALSHA` of that function's script, made from the library's text in its key and loaded
//! again after `NOSCRIPT`, as `idgen_functions::scripts::Library` calls it. So each suite of the
//! library runs unchanged on both forms, and its assertions hold the scripts to the
//! functions' keys, arguments, replies and errors.

use idgen_functions::scripts;
use redis::{Cmd, ConnectionLike, RedisResult, Value};

/// A connection that turns the library's `FCALL`s into `EVALSHA`s where the server has no
/// `FCALL`; everything else passes through.
pub struct Connection {
    inner: redis::Connection,
    /// Whether the server lacks `FCALL`: unknown until the first call of the library.
    scripts: Option<bool>,
    /// The server's port, where known: the library's text as last read from its key is kept
    /// per server, as a running client keeps it (a flush takes the key, not the scripts).
    port: Option<u16>,
}

/// The library's text per server port, as last read from its key, and the last one each
/// thread read anywhere: what a client that called before a flush, or before a failover to a
/// node whose key was flushed since, still holds. By thread, as the suites share one process
/// (tests/tests/suites.rs) and run side by side: another test's library, installed with other
/// settings, is not this one's.
static TEXTS: std::sync::Mutex<Vec<(Option<u16>, std::thread::ThreadId, String)>> =
    std::sync::Mutex::new(Vec::new());

/// Keeps `text` as the library's on the server at `port`, and as the last one this thread read.
fn keep(port: Option<u16>, text: &str) {
    let me = std::thread::current().id();
    let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    texts.retain(|(p, thread, _)| {
        if p.is_some() {
            *p != port
        } else {
            *thread != me
        }
    });
    texts.insert(0, (None, me, text.to_string()));
    if port.is_some() {
        texts.push((port, me, text.to_string()));
    }
}

/// The library's text last read on the server at `port`, else the last this thread read
/// anywhere, else the last any thread read (a test's load thread).
fn known(port: Option<u16>) -> Option<String> {
    let me = std::thread::current().id();
    let texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    let at_port = texts.iter().find(|(p, _, _)| p.is_some() && *p == port);
    let mine = || {
        texts
            .iter()
            .find(|(p, thread, _)| p.is_none() && *thread == me)
    };
    let any = || texts.iter().find(|(p, _, _)| p.is_none());
    at_port
        .or_else(mine)
        .or_else(any)
        .map(|(_, _, text)| text.clone())
}

impl Connection {
    /// Wraps a connection.
    pub fn new(inner: redis::Connection) -> Connection {
        Connection {
            inner,
            scripts: None,
            port: None,
        }
    }

    /// Wraps a connection to the server on `port`.
    pub fn to_port(inner: redis::Connection, port: u16) -> Connection {
        Connection {
            port: Some(port),
            ..Connection::new(inner)
        }
    }

    /// The plain connection, for what must reach the server as written (timeouts, pub/sub,
    /// replies read by hand). Not a `Deref`: redis-rs would take that for its own
    /// `ConnectionLike`, and the library's calls would pass by this one's.
    pub fn raw(&mut self) -> &mut redis::Connection {
        &mut self.inner
    }

    /// Whether the server behind this connection calls the library through its scripts.
    pub fn uses_scripts(&mut self) -> bool {
        if let Some(known) = self.scripts {
            return known;
        }
        // COMMAND INFO names each command the server has, and answers nil for one it lacks.
        let found: RedisResult<Vec<Value>> = redis::cmd("COMMAND")
            .arg("INFO")
            .arg("FCALL")
            .query(&mut self.inner);
        let scripts = matches!(found.as_deref(), Ok([Value::Nil]));
        self.scripts = Some(scripts);
        scripts
    }

    /// The library's text in its key, if there, kept for this server (the installer's helper
    /// calls it after installing the scripts).
    pub fn learn_library(&mut self) -> RedisResult<Option<String>> {
        // In a Cluster the key lives on one primary; the others answer MOVED, and the text is
        // read where it points, as a Cluster client would.
        let read: Option<String> = match redis::cmd("GET").arg(scripts::KEY).query(&mut self.inner)
        {
            Err(e) if e.redirect_node().is_some() => {
                let (node, _) = e.redirect_node().unwrap_or_default();
                let moved = redis::Client::open(format!("redis://{node}/"))
                    .and_then(|client| client.get_connection())
                    .and_then(|mut con| redis::cmd("GET").arg(scripts::KEY).query(&mut con));
                moved.unwrap_or(None)
            }
            read => read?,
        };
        if let Some(text) = &read {
            keep(self.port, text);
        }
        Ok(read)
    }

    /// `FCALL[_RO] function numkeys key... arg...` as `EVALSHA` of the function's script.
    fn call_script(&mut self, words: &[Vec<u8>]) -> RedisResult<Value> {
        let function = String::from_utf8_lossy(&words[1]).into_owned();
        let text = match self.learn_library()? {
            Some(text) => Some(text),
            None => known(self.port),
        };
        let text = text.ok_or_else(|| {
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "the idgen library is not installed as scripts",
                format!("no key {}", scripts::KEY),
            ))
        })?;
        let script = scripts::script(&text, &function);
        let sha = redis::Script::new(&script).get_hash().to_string();
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&sha).arg(&words[2..]);
        let reply = self.inner.req_command(&evalsha)?;
        match reply.clone().extract_error() {
            Err(e) if e.code() == Some("NOSCRIPT") => {
                let _: String = redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(&script)
                    .query(&mut self.inner)?;
                self.inner.req_command(&evalsha)
            }
            _ => Ok(reply),
        }
    }
}

/// Whether `words` call the library (`FCALL`, `FCALL_RO`).
fn is_fcall(words: &[Vec<u8>]) -> bool {
    words
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case(b"FCALL") || w.eq_ignore_ascii_case(b"FCALL_RO"))
        && words.len() >= 3
}

/// The commands in `packed` (RESP arrays of bulk strings, as redis-rs packs them), or None
/// for anything else.
fn unpack(mut packed: &[u8]) -> Option<Vec<Vec<Vec<u8>>>> {
    fn line(bytes: &mut &[u8], mark: u8) -> Option<usize> {
        let end = bytes.windows(2).position(|w| w == b"\r\n")?;
        let (head, rest) = bytes.split_at(end);
        *bytes = &rest[2..];
        (head.first() == Some(&mark))
            .then(|| std::str::from_utf8(&head[1..]).ok()?.parse().ok())
            .flatten()
    }
    let mut commands = Vec::new();
    while !packed.is_empty() {
        let n = line(&mut packed, b'*')?;
        let mut words = Vec::with_capacity(n);
        for _ in 0..n {
            let len = line(&mut packed, b'$')?;
            words.push(packed.get(..len)?.to_vec());
            packed = packed.get(len + 2..)?;
        }
        commands.push(words);
    }
    Some(commands)
}

impl ConnectionLike for Connection {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        match unpack(cmd).as_deref() {
            Some([words]) if is_fcall(words) && self.uses_scripts() => self.call_script(words),
            _ => self.inner.req_packed_command(cmd),
        }
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        let first = cmd.args_iter().next();
        let fcall = matches!(first, Some(redis::Arg::Simple(w))
            if w.eq_ignore_ascii_case(b"FCALL") || w.eq_ignore_ascii_case(b"FCALL_RO"));
        if fcall && self.uses_scripts() {
            self.req_packed_command(&cmd.get_packed_command())
        } else {
            self.inner.req_command(cmd)
        }
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let commands = match unpack(cmd) {
            // Not a transaction's: its commands cannot be sent one by one.
            Some(c)
                if c.iter().any(|w| is_fcall(w))
                    && !c.iter().any(|w| w[0].eq_ignore_ascii_case(b"MULTI"))
                    && self.uses_scripts() =>
            {
                c
            }
            _ => return self.inner.req_packed_commands(cmd, offset, count),
        };
        // One by one: the pipeline's replies in order, as the server would have sent them.
        let mut replies = Vec::with_capacity(count);
        for (i, words) in commands.iter().enumerate() {
            let reply = if is_fcall(words) {
                self.call_script(words)?
            } else {
                let mut one = redis::cmd(std::str::from_utf8(&words[0]).unwrap_or("?"));
                one.arg(&words[1..]);
                self.inner.req_command(&one)?
            };
            if i >= offset && replies.len() < count {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.inner.check_connection()
    }

    fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpacks_what_redis_rs_packs() {
        let mut pipe = redis::pipe();
        pipe.cmd("FCALL")
            .arg("dateseq_next")
            .arg(1)
            .arg(b"k\r\n".as_slice());
        pipe.cmd("GET").arg("x");
        let commands = unpack(&pipe.get_packed_pipeline()).unwrap();
        assert_eq!(commands.len(), 2);
        assert!(is_fcall(&commands[0]));
        assert_eq!(commands[0][3], b"k\r\n");
        assert_eq!(commands[1], vec![b"GET".to_vec(), b"x".to_vec()]);
        assert!(unpack(b"PING\r\n").is_none());
    }
}

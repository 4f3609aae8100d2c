//! Reading what the servers answer: decoded IDs, error texts, Prometheus samples, and commands
//! built from words.

use std::time::{Duration, Instant};

/// What `SNOWFLAKE.DECODE` says of an ID, field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub time_ms: i64,
    /// ISO-8601, ms precision.
    pub time: String,
    pub datacenter: i64,
    pub worker: i64,
    pub sequence: i64,
    pub epoch_ms: i64,
}

/// `SNOWFLAKE.DECODE id` on `con`, read by field name (RESP2's flat array or RESP3's map); panics
/// on an error or a field missing.
pub fn decode(con: &mut dyn redis::ConnectionLike, id: i64) -> Decoded {
    let reply: redis::Value = cmd(&["SNOWFLAKE.DECODE", &id.to_string()])
        .query(con)
        .unwrap_or_else(|e| panic!("SNOWFLAKE.DECODE {id}: {e}"));
    let pairs = pairs(&reply).unwrap_or_else(|| panic!("SNOWFLAKE.DECODE {id} replied {reply:?}"));
    let mut d = Decoded::default();
    for (name, value) in pairs {
        let name: String = redis::from_redis_value(name).expect("a field name");
        match (name.as_str(), value) {
            ("time", v) => d.time = redis::from_redis_value(v).expect("time as text"),
            (field, redis::Value::Int(n)) => match field {
                "time_ms" => d.time_ms = n,
                "datacenter" => d.datacenter = n,
                "worker" => d.worker = n,
                "sequence" => d.sequence = n,
                "epoch_ms" => d.epoch_ms = n,
                other => panic!("SNOWFLAKE.DECODE: unknown field {other}"),
            },
            (field, v) => panic!("SNOWFLAKE.DECODE: {field} is {v:?}"),
        }
    }
    d
}

/// Runs `cmd` and returns its error text; panics if it succeeded.
pub fn error_of(con: &mut dyn redis::ConnectionLike, cmd: &redis::Cmd) -> String {
    match cmd.query::<redis::Value>(con) {
        Err(e) => error_text(&e),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// An error as Redis sent it: code, then message.
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// `command`'s reply, retried for up to 3 s while a Snowflake command is refused because the
/// node resumed ahead of its clock: a node starts above its load time plus
/// `idgen.max-drift-ms`, at the drift limit, so right after a start it issues no more than one
/// tick's sequence per tick of the clock, and may wait for the clock's next tick first. The
/// Functions library says so in its own words: the fence it set at its first use of a key.
pub fn when_caught_up<T: redis::FromRedisValue>(
    con: &mut dyn redis::ConnectionLike,
    command: &redis::Cmd,
) -> T {
    try_when_caught_up(con, command).unwrap_or_else(|e| panic!("{e}"))
}

/// [`when_caught_up`]'s reply, or the first error that is not the node running ahead of its
/// clock (panics if that refusal lasts 3 s).
pub fn try_when_caught_up<T: redis::FromRedisValue>(
    con: &mut dyn redis::ConnectionLike,
    command: &redis::Cmd,
) -> redis::RedisResult<T> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match command.query(con) {
            Err(e)
                if e.to_string().contains("behind the last issued ID")
                    || e.to_string().contains("IDs start above")
                    || e.to_string().contains("the fence this process set") =>
            {
                assert!(Instant::now() < deadline, "still refused after 3 s: {e}");
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// A reply of named fields as pairs: RESP3's map, or RESP2's flat array of name, value, ...
pub fn pairs(reply: &redis::Value) -> Option<Vec<(redis::Value, redis::Value)>> {
    match reply {
        redis::Value::Map(pairs) => Some(pairs.clone()),
        redis::Value::Array(flat) if flat.len() % 2 == 0 => Some(
            flat.chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect(),
        ),
        _ => None,
    }
}

/// `MODULE LIST` on `con`: each module's name and `ver` (Redis 8 lists its built-in modules
/// too, when built with them).
pub fn modules_listed(con: &mut dyn redis::ConnectionLike) -> Vec<(String, i64)> {
    let modules: Vec<redis::Value> = cmd(&["MODULE", "LIST"]).query(con).expect("MODULE LIST");
    modules
        .iter()
        .map(|module| {
            let fields = pairs(module).unwrap_or_else(|| panic!("MODULE LIST: {module:?}"));
            let field = |key: &str| {
                let found = fields.iter().find(|(k, _)| {
                    redis::from_redis_value_ref::<String>(k).is_ok_and(|k| k == key)
                });
                found.map(|(_, v)| v.clone())
            };
            let name = field("name").and_then(|v| redis::from_redis_value(v).ok());
            let version = field("ver").and_then(|v| redis::from_redis_value(v).ok());
            match (name, version) {
                (Some(name), Some(version)) => (name, version),
                _ => panic!("MODULE LIST: a module without a name or ver: {module:?}"),
            }
        })
        .collect()
}

/// Builds a command from words.
pub fn cmd(words: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(words[0]);
    for w in &words[1..] {
        c.arg(*w);
    }
    c
}

/// The value of the sample `name` (no labels) in a page of Prometheus text.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// Whether `err` names `arg` as given: as a word of its own, or quoted and escaped the way the
/// module shows a value (`'\xef\xbc\x91'`); an empty argument as `''`.
pub fn quotes(err: &str, arg: &str) -> bool {
    if arg.is_empty() {
        return err.contains("''");
    }
    let escaped: String = arg.bytes().map(|b| b.escape_ascii().to_string()).collect();
    [arg, escaped.as_str()].iter().any(|a| {
        err.match_indices(a).any(|(i, _)| {
            let edge = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
            edge(err[..i].chars().last()) && edge(err[i + a.len()..].chars().next())
        })
    })
}

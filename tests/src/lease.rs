//! Worker-ID lease calls the tests make again and again.

use crate::{cmd, now_ms};

/// `WORKERID.RENEW ns worker token TTL 2000 UNTIL now+1.5s` for `grant`
/// (`[worker_id, token, ...]`, as ACQUIRE replies): `[expires_at_ms, until_ms]`.
pub fn renew(con: &mut redis::Connection, ns: &str, grant: &[i64]) -> redis::RedisResult<Vec<i64>> {
    let until = (now_ms() + 1_500).to_string();
    let (w, t) = (grant[0].to_string(), grant[1].to_string());
    cmd(&["WORKERID.RENEW", ns, &w, &t, "TTL", "2000", "UNTIL", &until]).query(con)
}

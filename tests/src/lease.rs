//! Worker-ID lease calls the tests make again and again.

use crate::{cmd, now_ms, Options, Server};

/// A coordinator past the fence of its first start (which finds no lease witness file, so
/// fences every grant for a horizon): started with a 2 s horizon, waited past its fence, and
/// given the default horizon (30 s) back, so leases may outlive a restart.
pub fn coordinator_past_its_first_fence(options: Options) -> Server {
    let mut module_args = vec!["workerid-horizon-ms".to_string(), "2000".to_string()];
    module_args.extend(options.module_args.iter().cloned());
    let server = Server::start_with(Options {
        module_args,
        ..options
    });
    server.wait_past_lease_fence();
    let default = idgen_core::lease::DEFAULT_HORIZON_MS.to_string();
    let _: () = cmd(&["CONFIG", "SET", "idgen.workerid-horizon-ms", &default])
        .query(&mut server.connection())
        .unwrap();
    server
}

/// `WORKERID.RENEW ns worker token TTL 2000 UNTIL now+1.5s` for `grant`
/// (`[worker_id, token, ...]`, as ACQUIRE replies): `[expires_at_ms, until_ms]`.
pub fn renew(
    con: &mut dyn redis::ConnectionLike,
    ns: &str,
    grant: &[i64],
) -> redis::RedisResult<Vec<i64>> {
    renew_for(con, ns, grant, 2_000)
}

/// [`renew`] with a lease of `ttl_ms`.
pub fn renew_for(
    con: &mut dyn redis::ConnectionLike,
    ns: &str,
    grant: &[i64],
    ttl_ms: u64,
) -> redis::RedisResult<Vec<i64>> {
    let until = (now_ms() + 1_500).to_string();
    let (w, t, ttl) = (
        grant[0].to_string(),
        grant[1].to_string(),
        ttl_ms.to_string(),
    );
    cmd(&["WORKERID.RENEW", ns, &w, &t, "TTL", &ttl, "UNTIL", &until]).query(con)
}

/// Grants the one worker ID of each pool-of-one namespace in `told` (namespace, the end of a
/// lease told on it) again, asserting each new holder starts above that end: nothing granted
/// over a holder that was told, whatever was lost since. `case` names the test case.
pub fn assert_granted_above(
    con: &mut dyn redis::ConnectionLike,
    told: &[(String, i64)],
    case: &str,
) {
    for (ns, until) in told {
        let g: Vec<i64> = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "1000", "MAX", "1"])
            .query(con)
            .unwrap();
        assert!(
            g[3] >= *until,
            "{case}: {ns}'s worker ID 0 granted to start above {} over a holder told it until \
             {until}",
            g[3]
        );
    }
}

//! Putting the library on servers: as functions where the server has `FUNCTION`, else as
//! scripts, and on every primary of a Cluster.

use crate::urls::{address, with_address};
use crate::{install_with, source_with, Installed, LibraryError, Settings};

/// [`install_with`], or on a server without `FUNCTION` (Redis 6, servers that offer scripts
/// alone) the library as scripts ([`Installed::Scripts`]).
///
/// # Errors
/// As [`install_with`] and [`crate::scripts::install`].
pub fn install_on(
    con: &mut impl redis::ConnectionLike,
    settings: &Settings,
) -> Result<Installed, LibraryError> {
    match install_with(con, settings) {
        Err(LibraryError::Redis(e)) if crate::scripts::no_functions(&e) => {
            crate::scripts::install(con, settings).map(Installed::Scripts)
        }
        done => done,
    }
}

/// Installs the library on the server at `url`, or, when it is a Cluster node, on every
/// primary the node knows (each reached with `url`'s scheme, user and password): each
/// primary's address and what [`install_on`] did there, in `CLUSTER NODES`' order.
///
/// # Errors
/// The first primary's refusal, naming it: the ones before it are installed.
pub fn install_everywhere(
    url: &str,
    settings: &Settings,
) -> Result<Vec<(String, Installed)>, LibraryError> {
    source_with(settings)?;
    let mut con = redis::Client::open(url)?.get_connection()?;
    let info: String = redis::cmd("INFO").arg("cluster").query(&mut con)?;
    if !info.contains("cluster_enabled:1") {
        let installed = install_on(&mut con, settings)?;
        return Ok(vec![(address(url).to_string(), installed)]);
    }
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con)?;
    let mut done = Vec::new();
    for primary in primaries(&nodes) {
        let at = with_address(url, &primary);
        let installed = redis::Client::open(at.as_str())
            .and_then(|client| client.get_connection())
            .map_err(LibraryError::from)
            .and_then(|mut con| install_on(&mut con, settings))
            .map_err(|e| {
                LibraryError::Redis(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "on a Cluster primary",
                    format!("{primary}: {e}"),
                )))
            })?;
        done.push((primary, installed));
    }
    Ok(done)
}

/// The `host:port` of every live primary in a `CLUSTER NODES` reply.
fn primaries(nodes: &str) -> Vec<String> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?;
            let live = flags.split(',').any(|f| f == "master")
                && !flags.split(',').any(|f| f == "fail" || f == "noaddr");
            // `ip:port@cport[,hostname]`
            let addr = fields.get(1)?.split(['@', ',']).next()?;
            live.then(|| addr.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_primaries_of_a_cluster() {
        let nodes = "a 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n\
                     b 127.0.0.1:7002@17002,host master - 0 0 2 connected 5461-10922\n\
                     c 127.0.0.1:7003@17003 slave a 0 0 1 connected\n\
                     d 127.0.0.1:7004@17004 master,fail - 0 0 3 disconnected\n";
        assert_eq!(primaries(nodes), ["127.0.0.1:7001", "127.0.0.1:7002"]);
    }
}

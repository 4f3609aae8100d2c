//! Leaf's segments on plain Redis: the prefetching client takes its blocks from two stock
//! redis-servers (no module, no ticket server) with `INCRBY`, under a user as a managed service
//! gives one. The two hand out odd and even tickets as an odd/even ticket pair does; clients in
//! several processes' stead repeat nothing; a server killed and restarted from its AOF carries
//! on; a list of servers given in another order or size is refused, naming why.

use std::collections::HashSet;
use std::sync::Arc;

use idgen_tests::library::{managed_url, managed_user};
use idgen_tests::{cmd, data_dir, Options, Server};
use ticket_client::prefetch::Prefetch;
use ticket_client::RoundRobin;

/// A plain server that writes every command to its AOF before replying, in `dir`.
fn durable_plain(dir: &std::path::Path, port: Option<u16>) -> Server {
    Server::start_with(
        Options {
            no_module: true,
            dir: Some(dir.to_path_buf()),
            port,
            ..Options::default()
        }
        .server(&["--appendonly", "yes", "--appendfsync", "always"]),
    )
}

/// `n` tickets of `sequence` from a prefetching client over `urls` as segments.
fn tickets(urls: &[String], sequence: &str, block: u64, n: usize) -> Vec<u64> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Arc::new(RoundRobin::segments(urls, None).unwrap());
    let pool = Prefetch::start(client, sequence, block, runtime.handle());
    let mut handle = pool.handle();
    (0..n).map(|_| handle.ticket().unwrap()).collect()
}

#[test]
fn two_plain_servers_hand_out_odd_and_even_segments_and_repeat_nothing() {
    let dirs = [data_dir("segments-a"), data_dir("segments-b")];
    let mut servers: Vec<Server> = dirs.iter().map(|d| durable_plain(d, None)).collect();
    for server in &servers {
        managed_user(server);
    }
    let urls: Vec<String> = servers.iter().map(managed_url).collect();

    // Four clients one after another, as four processes would be: each takes its own blocks.
    let mut all = Vec::new();
    for _ in 0..4 {
        all.extend(tickets(&urls, "orders", 1_000, 50_000));
    }
    let distinct: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "a ticket repeated");
    let odd = all.iter().filter(|t| *t % 2 == 1).count();
    assert!(odd > 0 && odd < all.len(), "both servers served: {odd} odd");
    // What each server counted, and nothing above it: every ticket below 2 * the count + 2.
    for (i, server) in servers.iter().enumerate() {
        let counted: u64 = cmd(&["GET", "idgen:tickets:orders"])
            .query(&mut server.connection())
            .unwrap();
        let mine = all.iter().filter(|t| (*t % 2) as usize == (i + 1) % 2);
        assert!(mine.clone().all(|t| *t < 2 * counted + 2), "server {i}");
        let layout: String = cmd(&["GET", "idgen:tickets-layout"])
            .query(&mut server.connection())
            .unwrap();
        assert_eq!(layout, format!("{} 2", i + 1));
    }

    // kill -9 and a restart from the AOF: the counters come back; nothing repeats.
    let port = servers[0].port;
    servers[0].kill9();
    servers[0] = durable_plain(&dirs[0], Some(port));
    managed_user(&servers[0]);
    let after = tickets(&urls, "orders", 1_000, 50_000);
    assert!(
        after.iter().all(|t| !distinct.contains(t)),
        "a ticket repeated"
    );

    // A count past what a ticket server allows is refused before the server is asked: a list
    // of a billion tickets would be built here.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = RoundRobin::segments(&urls, None).unwrap();
    for (count, range) in [(0, false), (100_001, false), (0, true), (100_000_001, true)] {
        let err = runtime
            .block_on(async {
                if range {
                    client.range("orders", count).await.map(|_| ())
                } else {
                    client.next_many("orders", count).await.map(|_| ())
                }
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("COUNT must be between 1 and"),
            "{count}: {err}"
        );
    }

    // The list in another order, or one server fewer: refused by the servers' records.
    for wrong in [
        vec![urls[1].clone(), urls[0].clone()],
        vec![urls[1].clone()],
    ] {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = RoundRobin::segments(&wrong, None).unwrap();
        let err = runtime
            .block_on(client.next("orders"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("holds tickets as offset/increment \"2 2\"")
                && err.contains("changed order or size"),
            "{err}"
        );
    }
}

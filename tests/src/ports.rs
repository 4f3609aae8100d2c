//! Loopback ports for the servers the tests start.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A TCP port on 127.0.0.1 that nothing listens on right now, from [`TEST_PORTS`]: below the
/// kernel's ephemeral range, so no client socket of another test can take it between now and
/// the server's bind (a port from `bind(0)` could be, and a server once failed to start so).
pub fn free_port() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let span = usize::from(TEST_PORTS.end - TEST_PORTS.start);
    // Each process starts elsewhere in the range, so two test binaries rarely meet.
    let start = std::process::id() as usize * 7919;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = TEST_PORTS.start + ((start + n) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {TEST_PORTS:?}");
}

/// Ports the tests listen on: under Linux's default ephemeral range (32768-60999).
pub const TEST_PORTS: std::ops::Range<u16> = 20000..32000;

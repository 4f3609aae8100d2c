//! A burst of Snowflake IDs that runs the generator ahead of its clock: the set-up of every test
//! of what a restart does after IDs borrowed ticks.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::{wait_for, Server};

/// A layout of 256 IDs per ms, so that a burst of 200,000 IDs spends 781 ms of ticks (under the
/// 1 s of `max-drift-ms`) on any machine that issues faster than 256,000 IDs a second. With
/// Twitter's 4096 per ms the burst must outrun 4 million a second, and a busy machine did not get
/// 100 ms ahead.
pub const BURST_LAYOUT: &str = "time:41,datacenter:5,worker:5,sequence:8";

/// Issues 200,000 IDs as fast as `server` can, without reading the replies (a client parsing
/// them would give the clock time to catch up). Returns the stream (keep it open) and the tick
/// of the last ID issued, in ms since 1970.
pub fn burst(server: &Server) -> (TcpStream, i64) {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let command = b"*3\r\n$14\r\nSNOWFLAKE.NEXT\r\n$5\r\nCOUNT\r\n$5\r\n10000\r\n";
    for _ in 0..20 {
        stream.write_all(command).unwrap();
    }
    let done = wait_for(Duration::from_secs(20), || {
        let issued: u64 = server.info_field("ids_issued").parse().unwrap();
        let refused: u64 = server.info_field("ids_refused").parse().unwrap();
        issued / 10_000 + refused >= 20
    });
    assert!(done, "the burst did not finish");
    (stream, server.info_field("last_tick_ms").parse().unwrap())
}

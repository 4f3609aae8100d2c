//! A Redis Sentinel (the server program in sentinel mode) watching one primary, with the
//! shortest timings Sentinel takes, so a test sees a promotion within seconds.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{cmd, data_dir, free_port, server_program, wait_for, KillOnDrop, Server, TempDir};

/// The name the Sentinel knows its primary by.
pub const MASTER: &str = "idgen";

/// A running Sentinel; killed, and its directory removed, on drop.
pub struct Sentinel {
    _process: KillOnDrop,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: TempDir,
}

impl Sentinel {
    /// Starts a Sentinel, the only one (quorum 1), watching `primary`: it calls the primary down
    /// after `down_after_ms` without a reply and then promotes one of its replicas.
    pub fn watch(primary: &Server, down_after_ms: u64) -> Sentinel {
        let dir = data_dir("sentinel");
        let port = free_port();
        // Sentinel rewrites its configuration file as it learns: it must be its own.
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                 sentinel monitor {MASTER} 127.0.0.1 {primary} 1\n\
                 sentinel down-after-milliseconds {MASTER} {down_after_ms}\n\
                 sentinel failover-timeout {MASTER} 10000\n",
                dir = dir.display(),
                primary = primary.port,
            ),
        )
        .expect("write sentinel.conf");
        let program = server_program();
        let child = Command::new(&program)
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {program} --sentinel: {e}"));
        let sentinel = Sentinel {
            _process: KillOnDrop(child),
            port,
            dir,
        };
        let up = wait_for(Duration::from_secs(20), || {
            sentinel.try_master_port() == Some(primary.port)
        });
        assert!(up, "the Sentinel did not come up:\n{}", sentinel.log());
        sentinel
    }

    /// Waits (up to 20 s) until the Sentinel knows `replica` as one of its primary's replicas,
    /// so a promotion may pick it.
    pub fn wait_to_know(&self, replica: &Server) {
        let known = wait_for(Duration::from_secs(20), || {
            let replicas: redis::RedisResult<Vec<Vec<String>>> =
                cmd(&["SENTINEL", "REPLICAS", MASTER]).query(&mut self.connection());
            replicas.is_ok_and(|list| {
                list.iter().any(|fields| {
                    fields
                        .windows(2)
                        .any(|pair| pair[0] == "port" && pair[1] == replica.port.to_string())
                })
            })
        });
        assert!(
            known,
            "the Sentinel never learned of the replica:\n{}",
            self.log()
        );
    }

    /// The port of the primary the Sentinel names now, if it answers.
    pub fn try_master_port(&self) -> Option<u16> {
        Sentinel::master_port_at(self.port)
    }

    /// The port of the primary the Sentinel on `port` names now, if it answers (for a client
    /// thread that holds only the Sentinel's port).
    pub fn master_port_at(port: u16) -> Option<u16> {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .ok()?
            .get_connection_with_timeout(Duration::from_secs(5))
            .ok()?;
        let addr: Vec<String> = cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER])
            .query(&mut con)
            .ok()?;
        addr.get(1)?.parse().ok()
    }

    /// Its log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sentinel.log")).unwrap_or_default()
    }

    fn connection(&self) -> redis::Connection {
        self.try_connection().expect("connect to the Sentinel")
    }

    fn try_connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?
            .get_connection_with_timeout(Duration::from_secs(5))
    }
}

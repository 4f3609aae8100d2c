//! Flickr's original ticket servers, for comparison: MariaDB instances started by the harness
//! from Debian's packages, each with `auto-increment-increment = N` and its own offset, durable
//! commits, and the `Tickets64` table; a ticket is `REPLACE INTO Tickets64 (stub) VALUES ('a')`
//! and the insert ID of that statement (what `SELECT LAST_INSERT_ID()` returns).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

/// One mariadbd, killed and its data removed on drop.
pub struct MariaDb {
    child: Child,
    dir: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

const SCHEMA: &str = "CREATE DATABASE IF NOT EXISTS tickets; \
    CREATE TABLE IF NOT EXISTS tickets.Tickets64 (id bigint unsigned NOT NULL auto_increment, \
    stub char(1) NOT NULL default '', PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB";

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .collect();
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

impl MariaDb {
    /// Starts server `offset` of `increment` in a fresh directory under `base`.
    ///
    /// # Errors
    /// Why MariaDB is not available or did not start, in words for the report.
    pub async fn start(base: &Path, offset: u64, increment: u64) -> Result<MariaDb, String> {
        let server = which(&["mariadbd", "mysqld"]).ok_or(
            "mariadb-server is not installed (make bench installs it with apt-get as root)",
        )?;
        let install = which(&["mariadb-install-db", "mysql_install_db"])
            .ok_or("mariadb-install-db is missing")?;
        let dir = base.join(format!("mariadb-{offset}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let data = dir.join("data");
        let as_root = is_root(); // mariadbd refuses to run as root unless told to
        let mut init = Command::new(install);
        init.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--skip-test-db");
        if as_root {
            init.arg("--user=root");
        }
        let out = init
            .output()
            .map_err(|e| format!("mariadb-install-db: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mariadb-install-db failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let port = idgen_tests::free_port();
        let mut command = Command::new(server);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--pid-file={}", dir.join("pid").display()))
            .arg(format!("--log-error={}", dir.join("error.log").display()))
            .arg("--skip-grant-tables")
            .arg(format!("--auto-increment-increment={increment}"))
            .arg(format!("--auto-increment-offset={offset}"))
            .arg("--innodb-flush-log-at-trx-commit=1")
            .arg("--max-connections=500")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if as_root {
            command.arg("--user=root");
        }
        let child = command.spawn().map_err(|e| format!("mariadbd: {e}"))?;
        let db = MariaDb { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            // The database does not exist yet: connect without one to create it.
            let server_url = format!("mysql://root@127.0.0.1:{}/", db.port);
            if let Ok(mut conn) = mysql_async::Conn::from_url(server_url).await {
                conn.query_drop(SCHEMA)
                    .await
                    .map_err(|e| format!("schema: {e}"))?;
                let _ = conn.disconnect().await;
                return Ok(db);
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(db.dir.join("error.log")).unwrap_or_default();
                return Err(format!(
                    "mariadbd did not start: {}",
                    log.lines().last().unwrap_or("")
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `mysql://root@127.0.0.1:PORT/tickets`.
    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/tickets", self.port)
    }
}

pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One client of the Flickr set: a connection to every server, used in turn.
pub struct FlickrClient {
    connections: Vec<mysql_async::Conn>,
    next: usize,
}

impl FlickrClient {
    /// Connects to every server in `urls`.
    ///
    /// # Errors
    /// The first connection that fails.
    pub async fn connect(urls: &[String]) -> mysql_async::Result<Self> {
        let mut connections = Vec::new();
        for url in urls {
            connections.push(mysql_async::Conn::from_url(url.as_str()).await?);
        }
        Ok(FlickrClient {
            connections,
            next: 0,
        })
    }

    /// One ticket, from the next server in turn.
    ///
    /// # Errors
    /// The server's error: with many clients, InnoDB deadlocks on the one `stub` row.
    pub async fn ticket(&mut self) -> mysql_async::Result<u64> {
        let i = self.next % self.connections.len();
        self.next += 1;
        let conn = &mut self.connections[i];
        conn.query_drop("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            .await?;
        Ok(conn.last_insert_id().unwrap_or(0))
    }
}

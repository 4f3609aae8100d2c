//! Instagram's scheme, for comparison: a PostgreSQL server started by the harness from Debian's
//! packages, with a PL/pgSQL function per logical shard that makes a 64-bit ID from 41 bits of
//! ms since a custom epoch, 13 bits of shard ID and 10 bits of a sequence taken modulo 1024, as
//! Instagram's engineering blog described it (written here from that description).
//!
//! The sequence's 10 bits allow 1,024 IDs per ms per shard; past that the scheme repeats IDs,
//! and the comparison counts them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Instagram's epoch, 2011-08-24T21:07:01.721Z (ms since 1970).
pub const INSTAGRAM_EPOCH_MS: i64 = 1_314_220_021_721;

/// The shard this server holds.
pub const SHARD: i64 = 5;

/// One postgres, killed and its data removed on drop.
pub struct Postgres {
    child: Child,
    dir: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

/// The schema: a sequence and `next_id()` in the shard's schema.
fn schema() -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS shard_{SHARD};
         CREATE SEQUENCE IF NOT EXISTS shard_{SHARD}.id_seq;
         CREATE OR REPLACE FUNCTION shard_{SHARD}.next_id(OUT id bigint) AS $$
         DECLARE
             seq bigint;
             ms bigint;
         BEGIN
             SELECT nextval('shard_{SHARD}.id_seq') % 1024 INTO seq;
             SELECT floor(extract(epoch FROM clock_timestamp()) * 1000) INTO ms;
             id := ((ms - {INSTAGRAM_EPOCH_MS}) << 23) | ({SHARD} << 10) | seq;
         END;
         $$ LANGUAGE plpgsql;"
    )
}

/// `initdb` and `postgres` of the newest PostgreSQL Debian installed.
fn binaries() -> Option<(PathBuf, PathBuf)> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path()))
        .collect();
    versions.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    let bin = versions.pop()?.join("bin");
    Some((bin.join("initdb"), bin.join("postgres"))).filter(|(i, p)| i.is_file() && p.is_file())
}

/// A command run as the `postgres` user when this process is root (PostgreSQL refuses root).
fn as_server_user(program: &Path) -> Command {
    if super::mariadb::is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

impl Postgres {
    /// Starts a server in a fresh directory under `base` and creates the shard's function.
    ///
    /// # Errors
    /// Why PostgreSQL is not available or did not start, in words for the report.
    pub async fn start(base: &Path) -> Result<Postgres, String> {
        let (initdb, postgres) = binaries()
            .ok_or("postgresql is not installed (make bench installs it with apt-get as root)")?;
        let dir = base.join("postgres");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        if super::mariadb::is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !status.success() {
                return Err("cannot hand the data directory to the postgres user".into());
            }
        }
        let data = dir.join("data");
        let out = as_server_user(&initdb)
            .arg("-D")
            .arg(&data)
            .args(["--auth=trust", "--username=postgres", "--no-sync"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let port = idgen_tests::free_port();
        let child = as_server_user(&postgres)
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", dir.display()))
            .args(["-c", "max_connections=200", "-c", "fsync=on"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        let server = Postgres { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(client) = connect(&server.url()).await {
                client
                    .batch_execute(&schema())
                    .await
                    .map_err(|e| format!("schema: {e}"))?;
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err("postgres did not accept connections within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The connection string.
    pub fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A client connection, its connection task spawned on the current runtime.
///
/// # Errors
/// When the server does not accept the connection.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// One ID from the shard's `next_id()`.
///
/// # Errors
/// The server's error.
pub async fn next_id(client: &tokio_postgres::Client) -> Result<u64, tokio_postgres::Error> {
    let row = client
        .query_one(&format!("SELECT shard_{SHARD}.next_id()"), &[])
        .await?;
    Ok(row.get::<_, i64>(0) as u64)
}

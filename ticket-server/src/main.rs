//! `ticket-server`: serve tickets, start a k-of-N set for demos, or fetch tickets round robin.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use tokio::net::TcpListener;

use idgen_core::SqidCodec;
use ticket_client::RoundRobin;
use ticket_server::config::{
    check_step, Config, DEFAULT_BLOCK, DEFAULT_MAX_CLIENTS, DEFAULT_TIMEOUT_S,
};
use ticket_server::shared::Shared;
use ticket_server::store::{highest_handed_out, Start, Step, Store};

#[derive(Parser)]
#[command(version, about = "Flickr-style stepped ticket servers that speak RESP")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve tickets offset, offset+increment, ... (one server of a set).
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:7001")]
        listen: SocketAddr,
        /// This server's first ticket, 1 to --increment.
        #[arg(long, default_value_t = 1)]
        offset: u64,
        /// Number of servers in the set: tickets step by this much.
        #[arg(long, default_value_t = 1)]
        increment: u64,
        /// Serve Prometheus metrics on this address (GET /metrics), e.g. 127.0.0.1:9101.
        #[arg(long)]
        metrics_listen: Option<SocketAddr>,
        #[command(flatten)]
        common: Common,
    },
    /// Serve a whole set of --servers in one process, on consecutive ports (for demos).
    Pair {
        /// Port of the first server; server k listens on base + k - 1.
        #[arg(long, default_value_t = 7001)]
        base_port: u16,
        /// Number of servers (2: odd and even).
        #[arg(long, default_value_t = 2)]
        servers: u64,
        #[command(flatten)]
        common: Common,
    },
    /// Make a new ticket store in a blank data directory, once, before the first `serve`
    /// (`serve` refuses a blank directory: after a lost disk it would hand out every ticket
    /// again). With --start-above, continue above that ticket instead (after a lost disk).
    Init {
        /// The directory (empty, or a store of this same server, which is left as it is).
        #[arg(long)]
        data_dir: PathBuf,
        /// The server's first ticket, 1 to --increment.
        #[arg(long)]
        offset: u64,
        /// Number of servers in the set.
        #[arg(long)]
        increment: u64,
        /// Every sequence continues above this ticket.
        #[arg(long)]
        start_above: Option<u64>,
    },
    /// Print the highest ticket the stopped servers of these data directories may have handed
    /// out: what a new generation (a grown set) must start above.
    Highest {
        /// Data directories of every server of the set (stopped).
        #[arg(long = "data-dir", required = true)]
        data_dirs: Vec<PathBuf>,
    },
    /// Print tickets from a set of servers, one a line, round robin.
    Next {
        /// Comma-separated servers: host:port, or redis:// and rediss:// (TLS) URLs.
        #[arg(long, value_delimiter = ',', required = true)]
        servers: Vec<String>,
        /// How many tickets.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// The sequence.
        #[arg(long, default_value = "default")]
        sequence: String,
        /// The servers are plain Redis servers (no ticket server: a managed service's) that
        /// hand out segments with INCRBY, the i-th of k giving i, i+k, ...
        #[arg(long)]
        plain_redis: bool,
        #[command(flatten)]
        password: Password,
    },
    /// Check that a server answers (PING): exit 0 if it does, for container health checks.
    Ping {
        /// host:port of the server.
        #[arg(long, default_value = "127.0.0.1:7001")]
        server: String,
    },
}

/// The servers' password, for `serve` (clients must AUTH with it) and `next` (it AUTHs).
#[derive(clap::Args)]
struct Password {
    /// The password. On the command line it shows in `ps`: prefer `--requirepass-file` or the
    /// environment variable.
    #[arg(long, env = "TICKET_SERVER_REQUIREPASS", hide_env_values = true)]
    requirepass: Option<String>,
    /// A file whose first line is the password.
    #[arg(long, conflicts_with = "requirepass")]
    requirepass_file: Option<PathBuf>,
}

impl Password {
    /// The password, from the flag, the environment or the file; an empty one is refused (it
    /// would be no password at all, or one nobody can send).
    fn get(&self) -> Result<Option<String>> {
        let Some(path) = &self.requirepass_file else {
            if self.requirepass.as_deref() == Some("") {
                anyhow::bail!(
                    "the password is empty (TICKET_SERVER_REQUIREPASS or --requirepass): set one, \
                     or unset the variable for no password"
                );
            }
            return Ok(self.requirepass.clone());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --requirepass-file {}", path.display()))?;
        let password = text.lines().next().unwrap_or("").to_string();
        anyhow::ensure!(!password.is_empty(), "{} holds no password", path.display());
        Ok(Some(password))
    }
}

#[derive(clap::Args)]
struct Common {
    /// Directory of the durable bounds (one per server; `pair` makes subdirectories).
    #[arg(long)]
    data_dir: PathBuf,
    #[command(flatten)]
    password: Password,
    /// Tickets reserved on disk at a time (the most a crash can skip).
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    block: u64,
    /// Most connections at once.
    #[arg(long, default_value_t = DEFAULT_MAX_CLIENTS)]
    max_clients: usize,
    /// Close connections idle this many seconds (0: never).
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_S)]
    timeout: u64,
    /// First start: make a new store in a blank data directory (a blank directory is refused
    /// otherwise, since it would hand out every ticket again). Drop it after the first start.
    #[arg(long)]
    init: bool,
    /// After losing or restoring this server's data directory: continue every sequence above
    /// this ticket (at least the highest ticket the server may have handed out).
    #[arg(long, conflicts_with = "init")]
    start_above: Option<u64>,
    /// Letters of `TICKET.NEXT ... SQIDS` replies, in the order that makes them: shuffle it, the
    /// order is the secret (3 or more distinct printable ASCII characters).
    #[arg(long, env = "TICKET_SERVER_SQIDS_ALPHABET", hide_env_values = true,
          default_value = idgen_core::sqid::DEFAULT_ALPHABET, hide_default_value = true)]
    sqids_alphabet: String,
    /// Pad Sqids to at least this many characters (0 to 255).
    #[arg(long, default_value_t = 0)]
    sqids_min_length: u8,
    /// A file whose first line is the key of `TICKET.NEXT ... SEALED`: 64 hex digits
    /// (`openssl rand -hex 32`). The same key as the module's `idgen.seal-key-file` seals alike.
    #[arg(long, env = "TICKET_SERVER_SEAL_KEY_FILE")]
    seal_key_file: Option<PathBuf>,
    /// Serve TLS (only) on the listening port with this certificate chain (PEM).
    #[arg(long, requires = "tls_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The private key of --tls-cert-file (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_key_file: Option<PathBuf>,
    /// Require client certificates signed by these CA certificates (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_ca_cert_file: Option<PathBuf>,
}

impl Common {
    /// TLS for the listening port, when --tls-cert-file is given.
    fn tls(&self) -> Result<Option<std::sync::Arc<rustls::ServerConfig>>> {
        let (Some(cert), Some(key)) = (&self.tls_cert_file, &self.tls_key_file) else {
            return Ok(None);
        };
        let files = ticket_server::tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: self.tls_ca_cert_file.clone(),
        };
        Ok(Some(ticket_server::tls::server_config(&files)?))
    }

    /// The key of `--seal-key-file`, if given; the error names the file, never the key.
    fn sealer(&self) -> Result<Option<std::sync::Arc<idgen_core::Sealer>>> {
        let Some(path) = &self.seal_key_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --seal-key-file {}", path.display()))?;
        let sealer = idgen_core::Sealer::from_hex(text.lines().next().unwrap_or(""))
            .with_context(|| format!("--seal-key-file {}", path.display()))?;
        tracing::info!(
            key_id = sealer.key_id(),
            "TICKET.NEXT ... SEALED seals under this key"
        );
        Ok(Some(std::sync::Arc::new(sealer)))
    }

    fn config(
        &self,
        listen: SocketAddr,
        offset: u64,
        increment: u64,
        data_dir: PathBuf,
    ) -> Result<Config> {
        Ok(Config {
            listen,
            offset,
            increment,
            data_dir,
            requirepass: self.password.get()?,
            block: self.block,
            max_clients: self.max_clients,
            idle_timeout: (self.timeout > 0).then(|| Duration::from_secs(self.timeout)),
            start: match (self.init, self.start_above) {
                (_, Some(n)) => Start::Above(n),
                (true, None) => Start::Init,
                (false, None) => Start::Existing,
            },
            sqids: SqidCodec::new(&self.sqids_alphabet, self.sqids_min_length)
                .context("--sqids-alphabet")?,
            sealer: self.sealer()?,
            tls: self.tls()?,
        }
        .validate()?)
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match Cli::parse().command {
        Command::Serve {
            listen,
            offset,
            increment,
            metrics_listen,
            common,
        } => {
            let config = common.config(listen, offset, increment, common.data_dir.clone())?;
            let (listener, shared) = bind(config).await?;
            if let Some(addr) = metrics_listen {
                ticket_server::metrics_server::serve(addr, shared.clone())
                    .await
                    .with_context(|| format!("cannot serve metrics on --metrics-listen {addr}"))?;
            }
            ticket_server::server::run(listener, shared, shutdown_signal()).await;
        }
        Command::Pair {
            base_port,
            servers,
            common,
        } => {
            let mut tasks = Vec::new();
            let (tx, _) = tokio::sync::broadcast::channel::<()>(1);
            for k in 1..=servers {
                let port = base_port
                    .checked_add((k - 1) as u16)
                    .context("port out of range")?;
                let listen = SocketAddr::from(([127, 0, 0, 1], port));
                let config = common.config(
                    listen,
                    k,
                    servers,
                    common.data_dir.join(format!("server-{k}")),
                )?;
                let (listener, shared) = bind(config).await?;
                let mut stop = tx.subscribe();
                tasks.push(tokio::spawn(ticket_server::server::run(
                    listener,
                    shared,
                    async move {
                        let _ = stop.recv().await;
                    },
                )));
            }
            shutdown_signal().await;
            let _ = tx.send(());
            for task in tasks {
                let _ = task.await;
            }
        }
        Command::Init {
            data_dir,
            offset,
            increment,
            start_above,
        } => {
            check_step(offset, increment)?;
            let step = Step { offset, increment };
            let start = start_above.map_or(Start::Init, Start::Above);
            let store = Store::open(&data_dir, step, DEFAULT_BLOCK, start)
                .with_context(|| format!("cannot make a ticket store in {}", data_dir.display()))?;
            println!(
                "{} is the ticket store of offset {offset} of increment {increment}; every ticket \
                 is at least {}",
                data_dir.display(),
                store.floor().max(offset)
            );
        }
        Command::Highest { data_dirs } => {
            println!("{}", highest_handed_out(&data_dirs)?);
        }
        Command::Next {
            servers,
            count,
            sequence,
            plain_redis,
            password,
        } => {
            let client = if plain_redis {
                RoundRobin::segments(&servers, password.get()?)?
            } else {
                RoundRobin::with_password(&servers, password.get()?)?
            };
            for _ in 0..count {
                println!("{}", client.next(&sequence).await?);
            }
        }
        Command::Ping { server } => {
            println!("{}", ticket_client::ping::ping(&server).await?)
        }
    }
    Ok(())
}

/// Binds, opens the store and logs the server's shape.
async fn bind(mut config: Config) -> Result<(TcpListener, Shared)> {
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    config.listen = listener.local_addr()?;
    let step = Step {
        offset: config.offset,
        increment: config.increment,
    };
    let store =
        Store::open(&config.data_dir, step, config.block, config.start).with_context(|| {
            format!(
                "cannot open the data directory {}",
                config.data_dir.display()
            )
        })?;
    if !config.listen.ip().is_loopback() && config.requirepass.is_none() {
        tracing::warn!(listen = %config.listen,
            "listening beyond loopback without a password: anyone who can reach this port can take tickets; set --requirepass-file");
    }
    tracing::info!(listen = %config.listen, offset = config.offset, increment = config.increment,
        data_dir = %config.data_dir.display(), "ticket server ready");
    Ok((listener, Shared::new(config, store)))
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}

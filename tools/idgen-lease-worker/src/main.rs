//! A process that makes Snowflake IDs under a worker-ID lease for a while and prints them:
//! `L <token> <worker_id>` when it starts using a lease, then `I <id> <token>` per ID.
//! The churn test runs many of these; `make demo` runs three. And `install-library`, which
//! puts idgen's Functions library on a Redis without the module (docs/library.md).

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use idgen_client::metrics;
use idgen_client::{Backend, LeaseOptions, LeasedGenerator};
use idgen_functions::scripts;
use idgen_functions::{self as library, Installed};

#[derive(Parser)]
#[command(about = "Make Snowflake IDs under a worker-ID lease and print them")]
#[command(args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The coordinator (a Redis primary with the idgen module or its Functions library).
    #[arg(long, default_value = "redis://127.0.0.1:6379/")]
    url: String,
    /// What serves the leases: auto (the module if the server has it, else the library),
    /// module or library.
    #[arg(long, default_value = "auto")]
    backend: Backend,
    /// The lease namespace.
    #[arg(long, default_value = "fleet")]
    namespace: String,
    /// Lease TTL in ms.
    #[arg(long, default_value_t = 2000)]
    ttl_ms: u64,
    /// How long to run, in ms.
    #[arg(long, default_value_t = 1000)]
    run_ms: u64,
    /// IDs made per millisecond.
    #[arg(long, default_value_t = 5)]
    per_ms: usize,
    /// Replicas that must acknowledge each lease write (WAIT).
    #[arg(long, default_value_t = 0)]
    replicas: usize,
    /// How long to keep trying for a first lease, in ms (default: one TTL).
    #[arg(long)]
    start_within_ms: Option<u64>,
    /// Serve the lease's Prometheus metrics on this address (GET /metrics).
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Install idgen's Functions library on a Redis (one without the module, a managed
    /// service's), or upgrade it; a newer one already there is left alone. On a Cluster node,
    /// on every primary it knows.
    InstallLibrary {
        /// The server (a primary), or any node of a Cluster.
        #[arg(long, default_value = "redis://127.0.0.1:6379/")]
        url: String,
        /// The lease horizon in ms (the module's idgen.workerid-horizon-ms), fixed in the
        /// installed library.
        #[arg(long, default_value_t = library::Settings::default().horizon_ms)]
        horizon_ms: u64,
        /// The time zone of date sequences' labels (the module's idgen.dateseq-timezone): UTC,
        /// an IANA name such as America/New_York (its offsets from this machine's time-zone
        /// database, written into the library up to 2100), or an offset such as +09:00.
        #[arg(long, default_value = "UTC")]
        time_zone: String,
        /// The letters of SQIDS replies (the module's idgen.sqids-alphabet).
        #[arg(long, default_value_t = library::Settings::default().sqids_alphabet)]
        sqids_alphabet: String,
        /// The shortest Sqid (the module's idgen.sqids-min-length).
        #[arg(long, default_value_t = 0)]
        sqids_min_length: u8,
    },
}

/// `install-library`: what it did, on stdout; why not, on stderr and in the exit status.
fn install_library(url: &str, settings: &library::Settings) -> i32 {
    let ours = library::version();
    match idgen_functions::install::install_everywhere(url, settings) {
        Ok(done) => {
            for (at, installed) in done {
                match installed {
                    Installed::Fresh => println!("{at}: installed idgen library {ours}"),
                    Installed::Upgraded(from) => {
                        println!("{at}: upgraded idgen library {from} to {ours}")
                    }
                    Installed::Same => {
                        println!("{at}: idgen library {ours} was there already; loaded again")
                    }
                    Installed::Scripts(loaded) => {
                        println!(
                            "{at}: no FUNCTION on this server: installed idgen library {ours} as \
                             {} scripts (EVALSHA), its text in key {} (clients load the \
                             scripts from it again after NOSCRIPT)",
                            loaded.len(),
                            scripts::KEY
                        );
                        for (function, sha) in loaded {
                            println!("  {function} {sha}");
                        }
                    }
                }
            }
            0
        }
        Err(e) => {
            eprintln!("idgen-lease-worker: {e}");
            1
        }
    }
}

/// Serves the lease's metrics on `addr` from a thread of its own, for as long as the process runs.
fn serve_metrics(addr: SocketAddr, ids: Arc<LeasedGenerator>) -> std::io::Result<()> {
    let server = tiny_http::Server::http(addr).map_err(std::io::Error::other)?;
    let content_type = tiny_http::Header::from_bytes(
        "Content-Type",
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
    )
    .map_err(|()| std::io::Error::other("bad header"))?;
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let text = metrics::render(&ids.stats());
            let response = tiny_http::Response::from_string(text).with_header(content_type.clone());
            let _ = request.respond(response);
        }
    });
    Ok(())
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    if let Some(Command::InstallLibrary {
        url,
        horizon_ms,
        time_zone,
        sqids_alphabet,
        sqids_min_length,
    }) = &args.command
    {
        let settings = library::Settings {
            horizon_ms: *horizon_ms,
            time_zone: time_zone.clone(),
            sqids_alphabet: sqids_alphabet.clone(),
            sqids_min_length: *sqids_min_length,
        };
        std::process::exit(install_library(url, &settings));
    }
    let mut options =
        LeaseOptions::new(&args.url, &args.namespace).ttl(Duration::from_millis(args.ttl_ms));
    options.replicas = args.replicas;
    options.backend = args.backend;
    if let Some(ms) = args.start_within_ms {
        options.start_within = Duration::from_millis(ms);
    }
    let ids = match LeasedGenerator::start(options) {
        Ok(ids) => Arc::new(ids),
        Err(e) => {
            eprintln!("idgen-lease-worker: {e}");
            std::process::exit(1);
        }
    };
    if let Some(addr) = args.metrics_listen {
        if let Err(e) = serve_metrics(addr, Arc::clone(&ids)) {
            eprintln!("idgen-lease-worker: cannot serve metrics on {addr}: {e}");
            std::process::exit(1);
        }
    }
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let end = Instant::now() + Duration::from_millis(args.run_ms);
    let mut token = 0;
    while Instant::now() < end {
        for _ in 0..args.per_ms {
            let Ok((id, lease)) = ids.next_id_leased() else {
                break;
            };
            if lease.token != token {
                token = lease.token;
                let _ = writeln!(out, "L {token} {}", lease.worker_id);
            }
            let _ = writeln!(out, "I {id} {token}");
        }
        // An ID counts as handed out once it is written out of the process.
        let _ = out.flush();
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = out.flush();
    // The metrics thread holds a handle too: close releases the lease whoever holds one.
    ids.close();
}

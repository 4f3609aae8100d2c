//! An approach to compare: how it is reached, and what is known of it beforehand. The
//! comparison is a table of these; one function measures any of them in one scenario.

use std::sync::Arc;

use anyhow::Result;
use redis::aio::MultiplexedConnection;
use redis::Value;
use ticket_client::RoundRobin;

use super::drive::{self, Factory};
#[cfg(feature = "comparison")]
use super::mariadb::FlickrClient;
use super::peers::ReplyShape;
#[cfg(feature = "comparison")]
use super::postgres;
use super::{properties, Budget, Measurement};

/// How an approach is reached.
pub enum Target {
    /// A command sent to a RESP server, its reply read as `reply` says.
    Resp {
        url: String,
        command: Vec<String>,
        reply: ReplyShape,
    },
    /// The date sequence done by the client: it formats yyyyMMdd, INCRs `prefix:date` and sets
    /// the key's expiry, pipelined (what DATESEQ.NEXT replaces).
    DateSeqByClient { url: String, prefix: String },
    /// The round-robin client over the ticket pair.
    RoundRobin(Arc<RoundRobin>),
    /// A generator called in this process.
    InProcess(Factory),
    #[cfg(feature = "comparison")]
    /// Flickr's MariaDB ticket servers, used in turn by each client.
    Flickr(Vec<String>),
    #[cfg(feature = "comparison")]
    /// Instagram's `next_id()` on PostgreSQL (its connection string); pipelined requests are
    /// concurrent queries on one connection, which tokio-postgres pipelines.
    Postgres(String),
    /// Not available here, and why.
    Missing(String),
}

impl Target {
    /// Requests in flight per connection this target is run with: MySQL's protocol has no
    /// pipelining and in-process calls have nothing to pipeline.
    pub fn pipelines(&self) -> &'static [usize] {
        match self {
            Target::InProcess(_) => &[1],
            #[cfg(feature = "comparison")]
            Target::Flickr(_) => &[1],
            _ => &super::PIPELINES,
        }
    }
}

/// One row of the comparison.
pub struct Approach {
    pub name: String,
    /// Where it makes its IDs: how the report groups it.
    pub kind: Kind,
    pub target: Target,
    /// Bits per ID.
    pub bits: u32,
    /// The most IDs per second it can issue by design, in words.
    pub cap: &'static str,
    pub node_death: String,
    pub coordination: &'static str,
}

/// Where an approach makes its IDs, for the report's questions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// INCR on a plain redis-server: what every ratio is measured against.
    Baseline,
    /// One ID per request, over the network.
    Network,
    /// Many IDs per request, over the network (COUNT).
    Batched,
    /// Made in this process: no network.
    InProcess,
}

impl Kind {
    /// Whether its IDs come over the network.
    pub fn over_network(self) -> bool {
        self != Kind::InProcess
    }
}

/// The digits DATESEQ.NEXT's counter gets in the comparison (as `idgen.dateseq-digits`).
pub const DATESEQ_DIGITS: u32 = 10;

/// One scenario: its measurement, its IDs in arrival order as 64-bit numbers (the top 64 bits
/// of wider IDs, which hold their time), and how many IDs repeated (compared whole).
/// `ids` are 128-bit, left-aligned when wider than 64 bits.
fn narrowed(ids: Vec<u128>, wide: bool) -> (Vec<u64>, usize) {
    let repeated = properties::duplicates(&ids);
    let ids = ids
        .into_iter()
        .map(|id| if wide { (id >> 64) as u64 } else { id as u64 })
        .collect();
    (ids, repeated)
}

pub fn measure(
    runtime: &tokio::runtime::Runtime,
    approach: &Approach,
    connections: usize,
    pipeline: usize,
    budget: Budget,
) -> Result<(Measurement, Vec<u64>, usize)> {
    let with_repeats = |(m, ids): (Measurement, Vec<u64>)| {
        let repeated = properties::duplicates(&ids);
        (m, ids, repeated)
    };
    let redis_connect = |url: &String| {
        let url = url.clone();
        move || {
            let url = url.clone();
            async move {
                Ok(redis::Client::open(url)?
                    .get_multiplexed_async_connection()
                    .await?)
            }
        }
    };
    match &approach.target {
        Target::Resp {
            url,
            command,
            reply,
        } => {
            let (command, shape) = (command.clone(), reply.clone());
            let call = move |conn: &mut MultiplexedConnection, p| {
                let mut pipe = redis::pipe();
                for _ in 0..p {
                    pipe.cmd(&command[0]);
                    for arg in &command[1..] {
                        pipe.arg(arg);
                    }
                }
                let mut conn = conn.clone();
                let shape = shape.clone();
                async move {
                    let replies: Vec<Value> = pipe.query_async(&mut conn).await?;
                    ids_of(replies, &shape)
                }
            };
            let run = drive::run(connections, pipeline, budget, redis_connect(url), call);
            let (m, ids) = runtime.block_on(run)?;
            let (ids, repeated) = narrowed(ids, approach.bits > 64);
            Ok((m, ids, repeated))
        }
        Target::DateSeqByClient { url, prefix } => {
            let prefix = prefix.clone();
            let utc =
                idgen_core::dateseq::Calendar::new("UTC").map_err(|e| anyhow::anyhow!("{e}"))?;
            let call = move |conn: &mut MultiplexedConnection, p| {
                let date = utc.day_of(idgen_tests::now_ms()).date;
                let key = format!("{prefix}:{date}");
                let mut pipe = redis::pipe();
                for _ in 0..p {
                    pipe.cmd("INCR").arg(&key);
                    pipe.cmd("EXPIRE").arg(&key).arg(2 * 86_400).ignore();
                }
                let mut conn = conn.clone();
                async move {
                    let counters: Vec<u64> = pipe.query_async(&mut conn).await?;
                    let scale = 10u64.pow(DATESEQ_DIGITS);
                    Ok(counters
                        .into_iter()
                        .map(|n| date as u64 * scale + n)
                        .collect())
                }
            };
            let run = drive::run(connections, pipeline, budget, redis_connect(url), call);
            runtime.block_on(run).map(with_repeats)
        }
        Target::RoundRobin(client) => {
            let client = Arc::clone(client);
            let run = drive::run(
                connections,
                pipeline,
                budget,
                || {
                    let client = Arc::clone(&client);
                    async move { Ok(client) }
                },
                |client: &mut Arc<RoundRobin>, p| {
                    let client = Arc::clone(client);
                    async move { in_flight(p, || client.next("default")).await }
                },
            );
            runtime.block_on(run).map(with_repeats)
        }
        #[cfg(feature = "comparison")]
        Target::Flickr(urls) => {
            let urls = urls.clone();
            let run = drive::run(
                connections,
                pipeline,
                budget,
                || {
                    let urls = urls.clone();
                    async move {
                        Ok(Arc::new(tokio::sync::Mutex::new(
                            FlickrClient::connect(&urls).await?,
                        )))
                    }
                },
                |client: &mut Arc<tokio::sync::Mutex<FlickrClient>>, _| {
                    let client = Arc::clone(client);
                    async move { Ok(vec![client.lock().await.ticket().await?]) }
                },
            );
            runtime.block_on(run).map(with_repeats)
        }
        Target::InProcess(factory) => {
            let (m, ids) = drive::in_process(connections, budget, factory);
            let (ids, repeated) = narrowed(ids, approach.bits > 64);
            Ok((m, ids, repeated))
        }
        #[cfg(feature = "comparison")]
        Target::Postgres(url) => {
            let url = url.clone();
            let run = drive::run(
                connections,
                pipeline,
                budget,
                || {
                    let url = url.clone();
                    async move { Ok(Arc::new(postgres::connect(&url).await?)) }
                },
                |client: &mut Arc<tokio_postgres::Client>, p| {
                    let client = Arc::clone(client);
                    async move { in_flight(p, || postgres::next_id(&client)).await }
                },
            );
            runtime.block_on(run).map(with_repeats)
        }
        Target::Missing(why) => anyhow::bail!("{why}"),
    }
}

/// `p` calls made at once on one client (pipelined by it), their IDs in order.
async fn in_flight<F, E>(p: usize, call: impl Fn() -> F) -> Result<Vec<u64>>
where
    F: std::future::Future<Output = Result<u64, E>>,
    E: Into<anyhow::Error>,
{
    let ids = futures::future::join_all((0..p).map(|_| call())).await;
    ids.into_iter().map(|id| id.map_err(Into::into)).collect()
}

/// The IDs of a pipeline's replies, read as `shape` says.
///
/// # Errors
/// A reply of another shape: a peer file that misdescribes its peer is an error, not a run of
/// zeros.
/// The IDs in a batch of replies of `shape`, as numbers (128-bit ones whole).
fn ids_of(replies: Vec<Value>, shape: &ReplyShape) -> Result<Vec<u128>> {
    let number = |v: &Value| match v {
        Value::Int(n) => u64::try_from(*n).ok(),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    };
    let mut ids = Vec::with_capacity(replies.len());
    for reply in replies {
        let items = match &reply {
            Value::Array(items) => Some(items.as_slice()),
            _ => None,
        };
        let numbers = || -> Option<Vec<u64>> { items?.iter().map(number).collect() };
        let widen = |ids: Vec<u64>| ids.into_iter().map(u128::from).collect::<Vec<u128>>();
        let got = match shape {
            ReplyShape::Text128 => match items {
                Some(items) => items.iter().map(text128).collect(),
                None => text128(&reply).map(|id| vec![id]),
            },
            ReplyShape::Ids => match items {
                Some(_) => numbers().map(widen),
                None => number(&reply).map(|id| vec![u128::from(id)]),
            },
            ReplyShape::Range => match numbers().as_deref() {
                Some(&[first, last]) if first <= last => {
                    Some((first..=last).map(u128::from).collect())
                }
                _ => None,
            },
            ReplyShape::First => items
                .and_then(|i| i.first())
                .and_then(number)
                .map(|id| vec![u128::from(id)]),
            ReplyShape::Parts(widths) => numbers()
                .and_then(|parts| ReplyShape::join(widths, &parts))
                .map(|id| vec![u128::from(id)]),
        };
        ids.extend(
            got.ok_or_else(|| anyhow::anyhow!("reply {reply:?} is not of the shape {shape:?}"))?,
        );
    }
    Ok(ids)
}

/// A UUID (36 characters) or a ULID (26) in text, as a number.
fn text128(v: &Value) -> Option<u128> {
    let Value::BulkString(b) = v else {
        return None;
    };
    let text = std::str::from_utf8(b).ok()?;
    match text.len() {
        26 => ulid::Ulid::from_string(text).ok().map(|u| u.0),
        _ => uuid::Uuid::try_parse(text).ok().map(|u| u.as_u128()),
    }
}

//! The Redis layout, and writing/reading it.
//!
//! Everything of chain `C` lives under `feth:C:`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `feth:chains` | set | chain ids with data |
//! | `feth:C:block:H` | hash | facts of block `H`, the same on every node: `txs`, `valid`, `invalid`, `time_ns` (header time, Unix ns), `time_src` (`rpc`/`abcid`) |
//! | `feth:C:heights` | sorted set | every height with a block hash (score = height) |
//! | `feth:C:nodes` | set | node names |
//! | `feth:C:node:N:heights` | sorted set | heights node `N` applied (consensus or block sync) |
//! | `feth:C:node:N:commit` | sorted set | member height, score = Unix µs at which `N` logged the consensus commit (`finalizing commit of block`); block-synced and replayed heights have none |
//! | `feth:C:node:N:meta` | hash | `log_tz`, `version`, `format` of the node's last ingested log |
//! | `feth:C:runs` | sorted set | ingest run ids by start time (ms) |
//! | `feth:C:run:ID` | hash | what one ingest run read and found (JSON `report`) |
//!
//! Idempotence: every write sets absolute values (`HSET`, `ZADD`, `SADD`);
//! commit times use `ZADD LT`, so the earliest observation wins whatever the
//! order of the logs. Nothing is ever incremented and totals are derived at
//! query time, so the same log twice, overlapping logs, replayed and
//! block-synced heights never count twice. Each batch is one `MULTI`/`EXEC`
//! transaction: it lands whole or not at all.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use feth_comet::facts::{BlockFacts, TimeSource};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Pipeline, RedisError};

/// Redis failures, with what to do about them.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not a Redis URL.
    #[error("bad Redis URL {url:?}: {source} (expected e.g. redis://127.0.0.1:6379/0)")]
    Url {
        /// As given.
        url: String,
        /// Why.
        source: RedisError,
    },
    /// Could not connect, even after retrying.
    #[error(
        "cannot reach Redis at {url}: {source} (retried for {secs} s). Start redis-server or fix \
         --redis; nothing was written"
    )]
    Unreachable {
        /// Where.
        url: String,
        /// Last error.
        source: RedisError,
        /// How long we retried.
        secs: u64,
    },
    /// A write was refused or failed, even after retrying.
    #[error(
        "Redis at {url} did not take the write of {what}: {source} (retried for {secs} s). The \
         batch is one MULTI/EXEC transaction, so none of it was applied; ingest is idempotent: \
         re-run the same command once Redis accepts writes"
    )]
    Write {
        /// Where.
        url: String,
        /// Which batch.
        what: String,
        /// Last error.
        source: RedisError,
        /// How long we retried.
        secs: u64,
    },
    /// A read failed.
    #[error("reading {what} from Redis at {url} failed: {source}")]
    Read {
        /// Where.
        url: String,
        /// What.
        what: String,
        /// Why.
        source: RedisError,
    },
}

/// One transaction's worth of writes.
#[derive(Debug, Default)]
pub struct WriteBatch {
    /// Chain-wide facts by height.
    pub blocks: BTreeMap<u64, BlockFacts>,
    /// (node, height) → earliest consensus commit time seen (Unix ns), if any.
    pub node_heights: BTreeMap<(Arc<str>, u64), Option<i64>>,
}

impl WriteBatch {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.node_heights.is_empty()
    }

    /// Lowest and highest height in the batch.
    pub fn height_range(&self) -> Option<(u64, u64)> {
        let lo = self
            .blocks
            .keys()
            .next()
            .copied()
            .into_iter()
            .chain(self.node_heights.keys().map(|k| k.1))
            .min()?;
        let hi = self
            .blocks
            .keys()
            .next_back()
            .copied()
            .into_iter()
            .chain(self.node_heights.keys().map(|k| k.1))
            .max()?;
        Some((lo, hi))
    }
}

/// Key names of one chain.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys of chain `chain`.
    pub fn new(chain: &str) -> Self {
        Self {
            prefix: format!("feth:{chain}:"),
        }
    }
    /// `feth:chains`.
    pub fn chains() -> &'static str {
        "feth:chains"
    }
    /// `feth:C:block:H`.
    pub fn block(&self, h: u64) -> String {
        format!("{}block:{h}", self.prefix)
    }
    /// `feth:C:heights`.
    pub fn heights(&self) -> String {
        format!("{}heights", self.prefix)
    }
    /// `feth:C:nodes`.
    pub fn nodes(&self) -> String {
        format!("{}nodes", self.prefix)
    }
    /// `feth:C:node:N:heights`.
    pub fn node_heights(&self, node: &str) -> String {
        format!("{}node:{node}:heights", self.prefix)
    }
    /// `feth:C:node:N:commit`.
    pub fn node_commit(&self, node: &str) -> String {
        format!("{}node:{node}:commit", self.prefix)
    }
    /// `feth:C:node:N:meta`.
    pub fn node_meta(&self, node: &str) -> String {
        format!("{}node:{node}:meta", self.prefix)
    }
    /// `feth:C:runs`.
    pub fn runs(&self) -> String {
        format!("{}runs", self.prefix)
    }
    /// `feth:C:run:ID`.
    pub fn run(&self, id: &str) -> String {
        format!("{}run:{id}", self.prefix)
    }
}

/// A block as read back for stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredBlock {
    /// Height.
    pub height: u64,
    /// Chain-wide facts.
    pub facts: BlockFacts,
}

/// A node as read back for stats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNode {
    /// Name.
    pub name: String,
    /// Heights with a consensus commit time.
    pub commits: u64,
    /// Heights applied (consensus or sync).
    pub heights: u64,
    /// `log_tz` of its last ingest.
    pub log_tz: Option<String>,
}

/// A connection to Redis, bound to one chain.
#[derive(Clone)]
pub struct Store {
    con: ConnectionManager,
    keys: Keys,
    chain: String,
    url: String,
    retry_for: Duration,
}

/// Pairs per ZADD/SADD command.
const PAIRS_PER_CMD: usize = 1000;

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis((100u64 << attempt.min(6)).min(5000))
}

/// Hides a password in a Redis URL.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

impl Store {
    /// Connects, retrying with back-off for up to `retry_for`.
    pub async fn connect(url: &str, chain: &str, retry_for: Duration) -> Result<Self, StoreError> {
        let shown = redact(url);
        let client = redis::Client::open(url).map_err(|source| StoreError::Url {
            url: shown.clone(),
            source,
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(3)))
            .set_response_timeout(Some(Duration::from_secs(60)))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let start = Instant::now();
        let mut attempt = 0;
        let con = loop {
            let r = match ConnectionManager::new_with_config(client.clone(), config.clone()).await {
                Ok(mut con) => redis::cmd("PING")
                    .query_async::<String>(&mut con)
                    .await
                    .map(|_| con),
                Err(e) => Err(e),
            };
            match r {
                Ok(con) => break con,
                Err(source)
                    if start.elapsed() >= retry_for
                        || source.kind() == redis::ErrorKind::InvalidClientConfig =>
                {
                    return Err(StoreError::Unreachable {
                        url: shown,
                        source,
                        secs: start.elapsed().as_secs(),
                    })
                }
                Err(e) => {
                    tracing::warn!("Redis at {shown} not reachable yet ({e}); retrying");
                    tokio::time::sleep(
                        backoff(attempt).min(retry_for.saturating_sub(start.elapsed())),
                    )
                    .await;
                    attempt += 1;
                }
            }
        };
        Ok(Self {
            con,
            keys: Keys::new(chain),
            chain: chain.to_string(),
            url: shown,
            retry_for,
        })
    }

    /// The chain this store writes.
    pub fn chain(&self) -> &str {
        &self.chain
    }

    /// Key names.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Runs a MULTI/EXEC pipeline, retrying with back-off.
    async fn exec(&self, pipe: &Pipeline, what: impl FnOnce() -> String) -> Result<(), StoreError> {
        let start = Instant::now();
        let mut attempt = 0;
        let mut con = self.con.clone();
        loop {
            match pipe.query_async::<()>(&mut con).await {
                Ok(()) => return Ok(()),
                Err(source) if start.elapsed() >= self.retry_for => {
                    return Err(StoreError::Write {
                        url: self.url.clone(),
                        what: what(),
                        source,
                        secs: start.elapsed().as_secs(),
                    })
                }
                Err(e) => {
                    tracing::warn!("Redis write failed ({e}); retrying");
                    tokio::time::sleep(
                        backoff(attempt).min(self.retry_for.saturating_sub(start.elapsed())),
                    )
                    .await;
                    attempt += 1;
                }
            }
        }
    }

    /// Writes a batch as one transaction.
    pub async fn write(&self, batch: &WriteBatch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut p = redis::pipe();
        p.atomic();
        p.sadd(Keys::chains(), &self.chain).ignore();
        self.add_blocks(&mut p, &batch.blocks);
        self.add_node_heights(&mut p, &batch.node_heights);
        self.exec(&p, || match batch.height_range() {
            Some((lo, hi)) => format!("heights {lo}–{hi}"),
            None => "a batch".to_string(),
        })
        .await
    }

    /// Each block's hash (the fields known) and its place in the height set.
    fn add_blocks(&self, p: &mut Pipeline, blocks: &BTreeMap<u64, BlockFacts>) {
        for (h, f) in blocks {
            p.cmd("HSET")
                .arg(self.keys.block(*h))
                .arg(block_fields(*h, f))
                .ignore();
        }
        let heights: Vec<u64> = blocks.keys().copied().collect();
        for chunk in heights.chunks(PAIRS_PER_CMD) {
            let pairs: Vec<(u64, u64)> = chunk.iter().map(|h| (*h, *h)).collect();
            p.zadd_multiple(self.keys.heights(), &pairs).ignore();
        }
    }

    /// Per node: its membership, heights seen and earliest commit times
    /// (`ZADD LT` keeps the earliest across batches and reruns).
    fn add_node_heights(
        &self,
        p: &mut Pipeline,
        node_heights: &BTreeMap<(Arc<str>, u64), Option<i64>>,
    ) {
        let k = &self.keys;
        for (node, (heights, commits)) in &pairs_by_node(node_heights) {
            p.sadd(k.nodes(), *node).ignore();
            for chunk in heights.chunks(PAIRS_PER_CMD) {
                p.zadd_multiple(k.node_heights(node), chunk).ignore();
            }
            for chunk in commits.chunks(PAIRS_PER_CMD) {
                let mut cmd = redis::cmd("ZADD");
                cmd.arg(k.node_commit(node)).arg("LT");
                for (score, member) in chunk {
                    cmd.arg(*score).arg(*member);
                }
                p.add_command(cmd).ignore();
            }
        }
    }

    /// Records node metadata (absolute values).
    pub async fn write_node_meta(
        &self,
        node: &str,
        fields: &[(&str, String)],
    ) -> Result<(), StoreError> {
        let mut p = redis::pipe();
        p.atomic().sadd(self.keys.nodes(), node).ignore();
        p.cmd("HSET")
            .arg(self.keys.node_meta(node))
            .arg(fields)
            .ignore();
        self.exec(&p, || format!("metadata of node {node}")).await
    }

    /// Records an ingest run (metadata only; stats never read it).
    pub async fn write_run(
        &self,
        id: &str,
        started_ms: i64,
        fields: &[(&str, String)],
    ) -> Result<(), StoreError> {
        let mut p = redis::pipe();
        p.atomic().sadd(Keys::chains(), &self.chain).ignore();
        p.zadd(self.keys.runs(), id, started_ms).ignore();
        p.cmd("HSET").arg(self.keys.run(id)).arg(fields).ignore();
        self.exec(&p, || format!("run record {id}")).await
    }

    fn read_err(&self, what: &str) -> impl FnOnce(RedisError) -> StoreError + '_ {
        let what = what.to_string();
        move |source| StoreError::Read {
            url: self.url.clone(),
            what,
            source,
        }
    }

    /// Chain ids with data in this Redis.
    pub async fn chains(&self) -> Result<Vec<String>, StoreError> {
        let mut con = self.con.clone();
        let mut v: Vec<String> = redis::cmd("SMEMBERS")
            .arg(Keys::chains())
            .query_async(&mut con)
            .await
            .map_err(self.read_err("chain ids"))?;
        v.sort();
        Ok(v)
    }

    /// Heights of the chain in `[from, to]`, ascending.
    pub async fn heights(&self, from: u64, to: u64) -> Result<Vec<u64>, StoreError> {
        let mut con = self.con.clone();
        redis::cmd("ZRANGE")
            .arg(self.keys.heights())
            .arg(from)
            .arg(to)
            .arg("BYSCORE")
            .query_async(&mut con)
            .await
            .map_err(self.read_err("heights"))
    }

    /// Block facts of `heights`.
    pub async fn blocks(&self, heights: &[u64]) -> Result<Vec<StoredBlock>, StoreError> {
        let mut out = Vec::with_capacity(heights.len());
        let mut con = self.con.clone();
        for chunk in heights.chunks(2000) {
            let mut p = redis::pipe();
            for h in chunk {
                p.cmd("HMGET")
                    .arg(self.keys.block(*h))
                    .arg(&["txs", "valid", "invalid", "time_ns", "time_src"]);
            }
            type Row = (
                Option<u64>,
                Option<u64>,
                Option<u64>,
                Option<i64>,
                Option<String>,
            );
            let rows: Vec<Row> = p
                .query_async(&mut con)
                .await
                .map_err(self.read_err("block hashes"))?;
            for (h, (txs, valid, invalid, time_ns, src)) in chunk.iter().zip(rows) {
                let time_src = src.as_deref().and_then(TimeSource::parse);
                out.push(StoredBlock {
                    height: *h,
                    facts: BlockFacts {
                        txs,
                        valid,
                        invalid,
                        time_ns: time_ns.filter(|_| time_src.is_some()),
                        time_src,
                    },
                });
            }
        }
        Ok(out)
    }

    /// Nodes of the chain with their counts, most commit times first.
    pub async fn nodes(&self) -> Result<Vec<StoredNode>, StoreError> {
        let mut con = self.con.clone();
        let names: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.keys.nodes())
            .query_async(&mut con)
            .await
            .map_err(self.read_err("node names"))?;
        let mut p = redis::pipe();
        for n in &names {
            p.zcard(self.keys.node_commit(n))
                .zcard(self.keys.node_heights(n))
                .hget(self.keys.node_meta(n), "log_tz");
        }
        let counts: Vec<(u64, u64, Option<String>)> = if names.is_empty() {
            Vec::new()
        } else {
            let flat: Vec<redis::Value> = p
                .query_async(&mut con)
                .await
                .map_err(self.read_err("node counts"))?;
            flat.chunks(3)
                .map(|c| {
                    let num = |v: &redis::Value| redis::from_redis_value_ref::<u64>(v).unwrap_or(0);
                    let tz = c.get(2).and_then(|v| {
                        redis::from_redis_value_ref::<Option<String>>(v)
                            .ok()
                            .flatten()
                    });
                    (c.first().map_or(0, num), c.get(1).map_or(0, num), tz)
                })
                .collect()
        };
        let mut nodes: Vec<StoredNode> = names
            .into_iter()
            .zip(counts)
            .map(|(name, (commits, heights, log_tz))| StoredNode {
                name,
                commits,
                heights,
                log_tz,
            })
            .collect();
        nodes.sort_by(|a, b| b.commits.cmp(&a.commits).then_with(|| a.name.cmp(&b.name)));
        Ok(nodes)
    }

    /// Consensus commit times (Unix ns) of `node` at `heights`.
    pub async fn commit_times(
        &self,
        node: &str,
        heights: &[u64],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        let mut out = Vec::with_capacity(heights.len());
        let mut con = self.con.clone();
        let key = self.keys.node_commit(node);
        for chunk in heights.chunks(5000) {
            let scores: Vec<Option<f64>> = redis::cmd("ZMSCORE")
                .arg(&key)
                .arg(chunk)
                .query_async(&mut con)
                .await
                .map_err(self.read_err("commit times"))?;
            #[allow(clippy::cast_possible_truncation)]
            out.extend(
                scores
                    .into_iter()
                    .map(|s| s.map(|us| (us as i64).saturating_mul(1000))),
            );
        }
        Ok(out)
    }
}

/// A block hash's fields: its height and every fact known.
fn block_fields(h: u64, f: &BlockFacts) -> Vec<(&'static str, String)> {
    let mut items: Vec<(&str, String)> = vec![("height", h.to_string())];
    if let Some(v) = f.txs {
        items.push(("txs", v.to_string()));
    }
    if let Some(v) = f.valid {
        items.push(("valid", v.to_string()));
    }
    if let Some(v) = f.invalid {
        items.push(("invalid", v.to_string()));
    }
    if let (Some(t), Some(src)) = (f.time_ns, f.time_src) {
        items.push(("time_ns", t.to_string()));
        items.push(("time_src", src.as_str().to_string()));
    }
    items
}

/// Per node: (height, height) pairs and (commit µs, height) pairs.
type NodePairs = (Vec<(u64, u64)>, Vec<(f64, u64)>);

/// A batch's (node, height) → commit time entries grouped by node as
/// sorted-set pairs.
fn pairs_by_node(
    node_heights: &BTreeMap<(Arc<str>, u64), Option<i64>>,
) -> BTreeMap<&str, NodePairs> {
    let mut by_node: BTreeMap<&str, NodePairs> = BTreeMap::new();
    for ((node, h), commit) in node_heights {
        let e = by_node.entry(node).or_default();
        e.0.push((*h, *h));
        if let Some(ns) = commit {
            // Unix µs is exact in an f64 until the year 2255.
            #[allow(clippy::cast_precision_loss)]
            e.1.push(((*ns / 1000) as f64, *h));
        }
    }
    by_node
}

//! The node's RPC (`--comet-rpc`): chain id (`/status`), header times and tx counts
//! (`/blockchain`, 20 headers a call) and valid/invalid counts
//! (`/block_results`, many heights per JSON-RPC batch request), with several
//! requests in flight at once; the mempool's size (`/num_unconfirmed_txs`).
//! Works with Tendermint 0.34 to CometBFT 1.0.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::facts::{BlockFacts, TimeSource};
use crate::retry::{is_transient, retry, Backoff, RetryCounter, POOL_IDLE};
use crate::time;

/// Headers per `/blockchain` call (the node's own limit).
const HEADERS_PER_CALL: u64 = 20;

/// RPC failures.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// Not a usable URL.
    #[error("bad --comet-rpc URL {0:?}: expected e.g. http://127.0.0.1:26657")]
    Url(String),
    /// The request failed (after retries).
    #[error("RPC request {what} to {url} failed: {source}. Is the node running and its RPC listening there?")]
    Http {
        /// Node URL.
        url: String,
        /// Which request.
        what: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The answer was not what a Tendermint/CometBFT node sends.
    #[error("unexpected RPC answer to {what} from {url}: {detail}")]
    Answer {
        /// Node URL.
        url: String,
        /// Which request.
        what: String,
        /// What was wrong.
        detail: String,
    },
}

/// `/status` essentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Chain id.
    pub network: String,
    /// The node's CometBFT (or Tendermint) version (`node_info.version`).
    pub version: String,
    /// Latest height.
    pub latest_height: u64,
    /// Earliest height still stored (pruning).
    pub earliest_height: u64,
    /// Whether the node is still catching up with its peers.
    pub catching_up: bool,
}

/// `/consensus_params`: the block limits in force at the latest height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockParams {
    /// `block.max_gas`: gas a block may hold; -1 for no limit.
    pub max_gas: i64,
    /// `block.max_bytes`: bytes a block may hold; -1 for no limit (CometBFT 1.0).
    pub max_bytes: i64,
}

/// `/abci_info`: what the application says of itself (each part empty when
/// it says nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbciInfo {
    /// Free text (`data`), e.g. the application's name.
    pub data: String,
    /// Its software version (`version`).
    pub version: String,
    /// Its protocol version (`app_version`).
    pub app_version: u64,
}

/// `/num_unconfirmed_txs`: what waits in the node's mempool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mempool {
    /// Transactions waiting.
    pub txs: u64,
    /// Their total size, bytes.
    pub bytes: u64,
}

/// Heights the node could not answer for, with its reason.
pub type Missing = Vec<(u64, String)>;

/// What one request task found.
type Found = Result<(Vec<(u64, BlockFacts)>, Missing), RpcError>;

/// A node RPC client.
#[derive(Clone)]
pub struct Rpc {
    http: reqwest::Client,
    base: String,
    /// The most heights a `/block_results` batch may ask for now: the
    /// `batch` given, lowered when the node cut off the answer to a larger
    /// one.
    batch_cap: Arc<AtomicUsize>,
    concurrency: Arc<Semaphore>,
    retries: Arc<RetryCounter>,
}

#[derive(Deserialize)]
struct Envelope<T> {
    result: Option<T>,
    error: Option<serde_json::Value>,
    #[serde(default)]
    id: serde_json::Value,
}

#[derive(Deserialize)]
struct StatusResult {
    node_info: NodeInfo,
    sync_info: SyncInfo,
}
#[derive(Deserialize)]
struct NodeInfo {
    network: String,
    #[serde(default)]
    version: String,
}
#[derive(Deserialize)]
struct SyncInfo {
    latest_block_height: Num,
    #[serde(default)]
    earliest_block_height: Option<Num>,
    #[serde(default)]
    catching_up: bool,
}

#[derive(Deserialize)]
struct ConsensusParamsResult {
    consensus_params: ConsensusParams,
}
#[derive(Deserialize)]
struct ConsensusParams {
    block: BlockLimits,
}
#[derive(Deserialize)]
struct BlockLimits {
    max_bytes: SignedNum,
    max_gas: SignedNum,
}

#[derive(Deserialize)]
struct AbciInfoResult {
    response: AbciInfoResponse,
}
#[derive(Deserialize)]
struct AbciInfoResponse {
    #[serde(default)]
    data: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    app_version: Option<Num>,
}

/// A signed number as CometBFT writes one (`"-1"`), or a bare number.
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum SignedNum {
    Str(#[serde(deserialize_with = "de_i64_str")] i64),
    Int(i64),
}

impl SignedNum {
    fn get(self) -> i64 {
        match self {
            SignedNum::Str(v) | SignedNum::Int(v) => v,
        }
    }
}

fn de_i64_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map_err(serde::de::Error::custom)
}

/// Heights and counts come as JSON strings ("12"); accept numbers too.
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Num {
    Str(#[serde(deserialize_with = "de_u64_str")] u64),
    Int(u64),
}

impl Num {
    fn get(self) -> u64 {
        match self {
            Num::Str(v) | Num::Int(v) => v,
        }
    }
}

fn de_u64_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map_err(serde::de::Error::custom)
}

#[derive(Deserialize)]
struct UnconfirmedResult {
    total: Num,
    total_bytes: Num,
}

#[derive(Deserialize)]
struct BlockchainResult {
    block_metas: Vec<BlockMeta>,
}
#[derive(Deserialize)]
struct BlockMeta {
    header: Header,
    num_txs: Num,
}
#[derive(Deserialize)]
struct Header {
    height: Num,
    time: String,
}

#[derive(Deserialize)]
struct BlockResults {
    height: Num,
    #[serde(default)]
    txs_results: Option<Vec<TxResult>>,
}
#[derive(Deserialize)]
struct TxResult {
    #[serde(default)]
    code: u32,
}

impl Rpc {
    /// A client for the node at `url` (`http://host:port`; `tcp://` is read
    /// as `http://`), sending `batch` heights per `/block_results` batch and
    /// at most `concurrency` requests at once.
    pub fn new(url: &str, batch: usize, concurrency: usize) -> Result<Self, RpcError> {
        let url = url.trim().trim_end_matches('/');
        let base = if let Some(rest) = url.strip_prefix("tcp://") {
            format!("http://{rest}")
        } else if url.starts_with("http://") || url.starts_with("https://") {
            url.to_string()
        } else if !url.is_empty() && !url.contains("://") {
            format!("http://{url}")
        } else {
            return Err(RpcError::Url(url.to_string()));
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(POOL_IDLE)
            .build()
            .map_err(|source| RpcError::Http {
                url: base.clone(),
                what: "client setup".into(),
                source,
            })?;
        Ok(Self {
            http,
            base,
            batch_cap: Arc::new(AtomicUsize::new(batch.max(1))),
            concurrency: Arc::new(Semaphore::new(concurrency.max(1))),
            retries: Arc::new(RetryCounter::default()),
        })
    }

    /// Requests sent again after a transient transport error so far (this
    /// client and its clones).
    pub fn retries(&self) -> u64 {
        self.retries.get()
    }

    /// The node URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn answer_err(&self, what: &str, detail: impl Into<String>) -> RpcError {
        RpcError::Answer {
            url: self.base.clone(),
            what: what.to_string(),
            detail: detail.into(),
        }
    }

    /// Sends the request `send` makes (an idempotent read), again after a
    /// pause when a transient transport error ends it (see [`crate::retry`]).
    async fn with_retries<T, F, Fut>(&self, what: &str, send: F) -> Result<T, RpcError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, reqwest::Error>>,
    {
        retry(Backoff::default(), Some(&self.retries), is_transient, send)
            .await
            .map_err(|source| RpcError::Http {
                url: self.base.clone(),
                what: what.to_string(),
                source,
            })
    }

    /// GET with a few retries on connection errors.
    async fn get_json<T: for<'de> Deserialize<'de>>(&self, path: &str) -> Result<T, RpcError> {
        let url = format!("{}/{path}", self.base);
        let env: Envelope<T> = self
            .with_retries(path, || async {
                self.http
                    .get(&url)
                    .send()
                    .await?
                    .error_for_status()?
                    .json::<Envelope<T>>()
                    .await
            })
            .await?;
        match (env.result, env.error) {
            (Some(r), _) => Ok(r),
            (None, e) => Err(self.answer_err(path, format!("error {}", e.unwrap_or_default()))),
        }
    }

    /// Chain id and height range of the node.
    pub async fn status(&self) -> Result<Status, RpcError> {
        let s: StatusResult = self.get_json("status").await?;
        let latest = s.sync_info.latest_block_height.get();
        Ok(Status {
            network: s.node_info.network,
            version: s.node_info.version,
            latest_height: latest,
            earliest_height: s.sync_info.earliest_block_height.map_or(1, Num::get),
            catching_up: s.sync_info.catching_up,
        })
    }

    /// The block's gas and byte limits (`/consensus_params`) at `height`,
    /// the latest stored height as `/status` gives it (0: none, the node's
    /// own choice). Without a height CometBFT reads the params of the
    /// height after the latest, which it stores only once that block's
    /// FinalizeBlock and Commit are done: asked in between, it answers 500.
    /// A stored block's own params are always there.
    pub async fn block_params(&self, height: u64) -> Result<BlockParams, RpcError> {
        let path = match height {
            0 => "consensus_params".to_string(),
            height => format!("consensus_params?height={height}"),
        };
        let p: ConsensusParamsResult = self.get_json(&path).await?;
        Ok(BlockParams {
            max_gas: p.consensus_params.block.max_gas.get(),
            max_bytes: p.consensus_params.block.max_bytes.get(),
        })
    }

    /// What the application says of itself (`/abci_info`).
    pub async fn abci_info(&self) -> Result<AbciInfo, RpcError> {
        let i: AbciInfoResult = self.get_json("abci_info").await?;
        Ok(AbciInfo {
            data: i.response.data,
            version: i.response.version,
            app_version: i.response.app_version.map_or(0, Num::get),
        })
    }

    /// Transactions waiting in the node's mempool (`/num_unconfirmed_txs`).
    pub async fn mempool(&self) -> Result<Mempool, RpcError> {
        let m: UnconfirmedResult = self.get_json("num_unconfirmed_txs").await?;
        Ok(Mempool {
            txs: m.total.get(),
            bytes: m.total_bytes.get(),
        })
    }

    /// Header time and tx count of heights `lo..=hi` (at most 20).
    async fn headers(&self, lo: u64, hi: u64) -> Result<Vec<(u64, BlockFacts)>, RpcError> {
        let what = format!("blockchain?minHeight={lo}&maxHeight={hi}");
        let r: BlockchainResult = self.get_json(&what).await?;
        let mut out = Vec::with_capacity(r.block_metas.len());
        for m in r.block_metas {
            let t = time::parse_rfc3339(m.header.time.as_bytes())
                .and_then(|c| time::Clock::utc().unix_nanos(&c).ok())
                .ok_or_else(|| {
                    self.answer_err(&what, format!("header time {:?}", m.header.time))
                })?;
            out.push((
                m.header.height.get(),
                BlockFacts {
                    txs: Some(m.num_txs.get()),
                    time_ns: Some(t),
                    time_src: Some(TimeSource::Rpc),
                    ..BlockFacts::default()
                },
            ));
        }
        Ok(out)
    }

    /// Valid/invalid counts of `heights` in one JSON-RPC batch request (split
    /// further if the node allows fewer requests per batch, or cut off the
    /// answer to this many).
    async fn results(
        &self,
        heights: &[u64],
    ) -> Result<(Vec<(u64, BlockFacts)>, Missing), RpcError> {
        if heights.len() > self.batch_cap.load(Ordering::Relaxed) {
            return self.results_in_halves(heights).await;
        }
        let body: Vec<serde_json::Value> = heights
            .iter()
            .map(|h| serde_json::json!({"jsonrpc": "2.0", "id": h, "method": "block_results", "params": {"height": h.to_string()}}))
            .collect();
        let what = format!(
            "block_results batch of {} heights from {}",
            heights.len(),
            heights.first().copied().unwrap_or(0)
        );
        let answer = self
            .with_retries(&what, || async {
                self.http
                    .post(&self.base)
                    .json(&body)
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await
            })
            .await;
        let answer: serde_json::Value = match answer {
            Ok(answer) => answer,
            // A node cuts off an answer it cannot write in time (CometBFT's
            // RPC write timeout, `timeout_broadcast_tx_commit` + 1 s: blocks
            // of thousands of transactions on a slow machine): asked again
            // in halves, and no later batch is larger.
            Err(RpcError::Http { source, .. }) if heights.len() > 1 && !source.is_connect() => {
                self.batch_cap
                    .fetch_min(heights.len() / 2, Ordering::Relaxed);
                return self.results_in_halves(heights).await;
            }
            Err(e) => return Err(e),
        };
        match self.batch_answers(answer, heights.len(), &what)? {
            Some(answers) => self.read_results(answers, &what),
            None => self.results_in_halves(heights).await,
        }
    }

    /// The answers to a batch of `asked` requests, or `None` when the node
    /// refused the batch as too large.
    fn batch_answers(
        &self,
        answer: serde_json::Value,
        asked: usize,
        what: &str,
    ) -> Result<Option<Vec<serde_json::Value>>, RpcError> {
        match answer {
            serde_json::Value::Array(a) => Ok(Some(a)),
            // A batch of one is answered with a single object…
            single
                if asked == 1
                    && single
                        .get("id")
                        .and_then(serde_json::Value::as_u64)
                        .is_some() =>
            {
                Ok(Some(vec![single]))
            }
            // …and a batch over the node's limit (`max_request_batch_size`,
            // 10 by default since 0.38) with one error.
            other if asked > 1 => {
                let detail = other
                    .get("error")
                    .map_or_else(|| other.to_string(), ToString::to_string);
                if detail.contains("batch") {
                    Ok(None)
                } else {
                    Err(self.answer_err(what, detail))
                }
            }
            other => Err(self.answer_err(what, other.to_string())),
        }
    }

    /// [`Self::results`] of each half of `heights` (a batch the node refused
    /// or could not answer whole).
    async fn results_in_halves(
        &self,
        heights: &[u64],
    ) -> Result<(Vec<(u64, BlockFacts)>, Missing), RpcError> {
        let (a, b) = heights.split_at(heights.len() / 2);
        let (mut found, mut missing) = Box::pin(self.results(a)).await?;
        let (f2, m2) = Box::pin(self.results(b)).await?;
        found.extend(f2);
        missing.extend(m2);
        Ok((found, missing))
    }

    /// Valid/invalid counts from a batch's answers; heights answered with
    /// an error are missing, with the node's reason.
    fn read_results(
        &self,
        answers: Vec<serde_json::Value>,
        what: &str,
    ) -> Result<(Vec<(u64, BlockFacts)>, Missing), RpcError> {
        let mut found = Vec::with_capacity(answers.len());
        let mut missing = Vec::new();
        for a in answers {
            let a: Envelope<BlockResults> =
                serde_json::from_value(a).map_err(|e| self.answer_err(what, e.to_string()))?;
            match (a.result, a.error) {
                (Some(r), _) => found.push(result_facts(r)),
                (None, e) => {
                    let h = a.id.as_u64().ok_or_else(|| {
                        self.answer_err(what, "an error answer without a numeric id")
                    })?;
                    missing.push((h, missing_reason(e)));
                }
            }
        }
        Ok((found, missing))
    }

    /// Header times and tx counts of `heights`, plus valid/invalid counts of
    /// those in `need_results`; concurrent and batched.
    pub async fn fetch(
        &self,
        heights: &[u64],
        need_results: &[u64],
    ) -> Result<(BTreeMap<u64, BlockFacts>, Missing), RpcError> {
        let mut set: JoinSet<Found> = JoinSet::new();
        for wanted in header_runs(heights) {
            let me = self.clone();
            set.spawn(async move { me.headers_of(wanted).await });
        }
        for chunk in need_results.chunks(self.batch_cap.load(Ordering::Relaxed)) {
            let (me, chunk) = (self.clone(), chunk.to_vec());
            set.spawn(async move {
                let _permit = me.permit("block_results").await?;
                me.results(&chunk).await
            });
        }
        let mut facts: BTreeMap<u64, BlockFacts> = BTreeMap::new();
        let mut missing = Missing::new();
        while let Some(joined) = set.join_next().await {
            let (found, miss) =
                joined.map_err(|e| self.answer_err("fetch", format!("task failed: {e}")))??;
            for (h, f) in found {
                facts.entry(h).or_default().merge(&f);
            }
            missing.extend(miss);
        }
        missing.sort();
        missing.dedup_by_key(|m| m.0);
        Ok((facts, missing))
    }

    /// A slot among the requests in flight.
    async fn permit(&self, what: &str) -> Result<OwnedSemaphorePermit, RpcError> {
        self.concurrency
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| self.answer_err(what, "client shut down"))
    }

    /// Header facts of `wanted` (one run from [`header_runs`]) from one
    /// `/blockchain` call; heights without a header are missing.
    async fn headers_of(&self, wanted: Vec<u64>) -> Found {
        let _permit = self.permit("blockchain").await?;
        let (Some(&lo), Some(&hi)) = (wanted.first(), wanted.last()) else {
            return Ok((Vec::new(), Missing::new()));
        };
        let got = self.headers(lo, hi).await?;
        let missing = wanted
            .iter()
            .filter(|h| !got.iter().any(|(g, _)| g == *h))
            .map(|h| {
                (
                    *h,
                    "no header (pruned, or not yet committed on this node)".to_string(),
                )
            })
            .collect();
        Ok((
            got.into_iter()
                .filter(|(h, _)| wanted.contains(h))
                .collect(),
            missing,
        ))
    }
}

/// `heights`, sorted and deduplicated, in runs spanning fewer than
/// [`HEADERS_PER_CALL`] heights: one `/blockchain` call each.
fn header_runs(heights: &[u64]) -> Vec<Vec<u64>> {
    let mut sorted = heights.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let lo = sorted[i];
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] < lo.saturating_add(HEADERS_PER_CALL) {
            j += 1;
        }
        runs.push(sorted[i..=j].to_vec());
        i = j + 1;
    }
    runs
}

/// A block's valid (code 0) and invalid transaction counts.
fn result_facts(r: BlockResults) -> (u64, BlockFacts) {
    let (mut valid, mut invalid) = (0u64, 0u64);
    for t in r.txs_results.unwrap_or_default() {
        if t.code == 0 {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    (
        r.height.get(),
        BlockFacts {
            txs: Some(valid + invalid),
            valid: Some(valid),
            invalid: Some(invalid),
            ..BlockFacts::default()
        },
    )
}

/// The node's reason for an error answer: its `data`, else its `message`.
fn missing_reason(error: Option<serde_json::Value>) -> String {
    let reason = error.map(|e| {
        e.get("data")
            .or(e.get("message"))
            .map_or_else(|| e.to_string(), ToString::to_string)
    });
    reason.unwrap_or_else(|| "no result".into())
}

#[cfg(test)]
mod tests;

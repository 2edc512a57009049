//! `feth bench rpc`: how fast abcid answers the web3 queries that indexers and
//! wallets make of a long chain — `eth_getLogs` over thousands of blocks and
//! `eth_getBlockReceipts` of a full block — idle and under load, on a devnet of
//! its own.
//!
//! 1. **Chain.** A closed-loop ERC-20 load (`--workload erc20`) runs until the
//!    chain is `blocks` high; its `Transfer` events are what the queries find.
//! 2. **Big block.** The node restarts with a long `timeout_commit`; right
//!    after a commit, `big_block_txs` pre-signed ERC-20 transfers are sent, so
//!    the next block holds them all. The node then restarts with fast blocks.
//! 3. **Measurement.** Pairs of windows, in ABBA order (under load then idle,
//!    idle then under load, …): in each, `calls` calls of every query, one at a
//!    time, round robin. Per query: pooled p50/p90/p99 of each mode, and the
//!    loaded/idle ratio of the window medians per pair, with a 95 % interval.
//!
//! The queries: `eth_getLogs` over the whole built range with a selective
//! filter (one holder's sent transfers: topic0 `Transfer`, topic1 the
//! holder); `eth_getLogs` over the last blocks of the range that hold about
//! `wide_logs` transfers (every `Transfer` of the token); `eth_getBlockReceipts`
//! of the big block. Answers are read whole and their items counted (not
//! decoded into values): every call of a query must return the same count.

use std::time::{Duration, Instant};

use alloy_primitives::{keccak256, Address, U256};
use anyhow::{bail, ensure, Context, Result};
use futures::stream::{self, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::background::{fund_senders, BackgroundLoad};
use super::stats::RatioEstimate;
use crate::accounts::KeySet;
use crate::devnet::{self, Devnet};
use crate::eth::EthClient;
use crate::load::erc20;
use crate::load::plan::{token_of, WorkloadKind};
use crate::load::report::{percentiles, Latency};
use crate::progress;
use crate::sign::{self, TxRequest};

/// abcid's cap on the blocks of one `eth_getLogs` (its default
/// `--rpc-max-log-blocks`).
pub const MAX_LOG_BLOCKS: u64 = 10_000;
/// abcid's cap on the logs of one answer (its default `--rpc-max-logs`).
pub const MAX_LOGS: usize = 10_000;
/// `timeout_commit` while the big block is gathered: longer than sending it takes.
const BIG_BLOCK_COMMIT: devnet::GoDuration = devnet::GoDuration::from_millis(10_000);
/// Load before a loaded window is measured.
const WARM_UP: Duration = Duration::from_secs(3);
/// Accounts per JSON-RPC batch when reading nonces and sending the big block.
const BATCH: usize = 50;

/// What `feth bench rpc` runs.
#[derive(Debug, Clone, Serialize)]
pub struct RpcBenchPlan {
    /// Height of the chain built by the ERC-20 load (at most [`MAX_LOG_BLOCKS`]
    /// are queried).
    pub blocks: u64,
    /// Funded senders of the load and of the big block.
    pub accounts: usize,
    /// ERC-20 transfers sent for the one big block.
    pub big_block_txs: usize,
    /// About how many logs the wide `eth_getLogs` returns (under [`MAX_LOGS`]).
    pub wide_logs: usize,
    /// Calls of every query per window.
    pub calls: usize,
    /// Loaded/idle pairs of windows.
    pub pairs: usize,
    /// CometBFT `timeout_commit` of the devnet (outside the big block).
    pub timeout_commit: devnet::GoDuration,
    /// Block gas limit of the devnet (the big block needs
    /// `big_block_txs` × 80,000 gas of room: CometBFT counts gas limits).
    pub block_gas_limit: u64,
}

/// A measured query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Query {
    /// `eth_getLogs`, whole range, one holder's `Transfer`s.
    SelectiveLogs,
    /// `eth_getLogs`, the range's last blocks, every `Transfer`.
    WideLogs,
    /// `eth_getBlockReceipts` of the big block.
    BigBlockReceipts,
}

/// Whether a window ran under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Nothing sent.
    Idle,
    /// A closed-loop ERC-20 load.
    Loaded,
}

/// One query's call, its meaning and its answer's size.
#[derive(Debug, Clone, Serialize)]
pub struct QuerySpec {
    /// Which query.
    pub query: Query,
    /// Method.
    pub method: String,
    /// Parameters, as sent.
    pub params: Value,
    /// Blocks the query spans.
    pub blocks: u64,
    /// Items (logs or receipts) of every answer.
    pub results: usize,
}

/// One window: the median latency of every query, ms.
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// Idle or loaded.
    pub mode: Mode,
    /// Median per query, in the order of [`RpcBench::queries`].
    pub p50_ms: Vec<f64>,
    /// Committed tx/s of the load (loaded windows).
    pub load_tps: Option<f64>,
}

/// A query's figures.
#[derive(Debug, Clone, Serialize)]
pub struct QueryFigures {
    /// The query.
    pub spec: QuerySpec,
    /// Latency of all idle calls, ms.
    pub idle_ms: Latency,
    /// Latency of all loaded calls, ms.
    pub loaded_ms: Latency,
    /// Loaded/idle ratio of window medians, per pair.
    pub p50_ratio: RatioEstimate,
}

/// Figures of `feth bench rpc`.
#[derive(Debug, Clone, Serialize)]
pub struct RpcBench {
    /// What was run.
    pub plan: RpcBenchPlan,
    /// abcid's `web3_clientVersion` (names its patches).
    pub client_version: String,
    /// Whether the devnet ran on tmpfs.
    pub on_tmpfs: bool,
    /// Logical CPUs of the machine.
    pub cpus: usize,
    /// The token whose `Transfer`s are queried.
    pub token: Address,
    /// First block of the queried range.
    pub range_from: u64,
    /// Last block of the queried range.
    pub range_to: u64,
    /// Transactions in the queried range.
    pub range_txs: u64,
    /// Seconds the chain took to build.
    pub build_seconds: f64,
    /// The big block's height.
    pub big_block: u64,
    /// Transactions it holds.
    pub big_block_txs: usize,
    /// Every query's figures.
    pub queries: Vec<QueryFigures>,
    /// Windows in the order run.
    pub windows: Vec<Window>,
}

/// Starts a devnet of its own (on tmpfs when there is one), builds the chain
/// and the big block, and measures (see the module docs).
pub async fn rpc(plan: RpcBenchPlan) -> Result<RpcBench> {
    ensure!(
        plan.wide_logs < MAX_LOGS,
        "--wide-logs must stay under abcid's {MAX_LOGS}-log cap"
    );
    let (dir, on_tmpfs) = devnet::scratch_dir()?;
    let mut net = Devnet::start_private(dir.path(), |o| {
        o.timeout_commit = plan.timeout_commit;
        o.block_gas_limit = plan.block_gas_limit;
    })
    .await
    .context("starting the devnet")?;
    let client = web3(&net)?;
    let keys_file = dir.path().join("keys.txt");
    let keys = fund_senders(&net, &client, 13, plan.accounts.max(2), &keys_file).await?;

    let bar = ProgressBar::new(plan.blocks);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let started = Instant::now();
    let (token, range_to) = build_chain(&net, &keys, &plan, &bar).await?;
    let build_seconds = started.elapsed().as_secs_f64();
    let range_from = range_to.saturating_sub(plan.blocks.min(MAX_LOG_BLOCKS)) + 1;
    progress::println(
        &bar,
        format!("chain built: blocks {range_from}..={range_to} in {build_seconds:.0} s"),
    );
    let (big_block, big_block_txs) = big_block(&mut net, &keys, token, &plan, &bar).await?;
    progress::println(
        &bar,
        format!("big block {big_block}: {big_block_txs} transactions"),
    );
    let client = web3(&net)?;
    let (wide_from, range_txs) = wide_range(&client, range_from, range_to, plan.wide_logs).await?;
    let specs = specs(
        &client,
        token,
        keys.addresses[1],
        (range_from, wide_from, range_to),
        big_block,
    )
    .await?;
    let windows = measure(&net, &keys, &specs, &plan, &bar).await?;
    bar.finish_and_clear();
    Ok(RpcBench {
        client_version: client.call("web3_clientVersion", json!([])).await?,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        queries: figures(&specs, &windows)?,
        windows: windows.into_iter().map(|w| w.summary).collect(),
        plan,
        on_tmpfs,
        token,
        range_from,
        range_to,
        range_txs,
        build_seconds,
        big_block,
        big_block_txs,
    })
}

fn web3(net: &Devnet) -> Result<EthClient> {
    EthClient::new(&net.state.web3_url(), Duration::from_secs(120))
}

/// Runs the ERC-20 load until the chain is `plan.blocks` high; returns the
/// token and the last block of the built chain.
async fn build_chain(
    net: &Devnet,
    keys: &KeySet,
    plan: &RpcBenchPlan,
    bar: &ProgressBar,
) -> Result<(Address, u64)> {
    bar.set_message("blocks of ERC-20 load");
    let client = web3(net)?;
    let load = BackgroundLoad::start(net, keys, WorkloadKind::Erc20, Duration::from_secs(60));
    loop {
        let height = client.block_number().await?;
        bar.set_position(height.min(plan.blocks));
        if height >= plan.blocks || load.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let report = load.finish().await.context("the chain-building load")?;
    let Some(token) = token_of(&report.config.writes) else {
        bail!("the load ran no ERC-20 workload");
    };
    let last = client.block_number().await?;
    ensure!(last >= plan.blocks, "the chain stopped at {last} blocks");
    Ok((token, last))
}

/// Gathers `plan.big_block_txs` ERC-20 transfers into one block (see the
/// module docs); returns its height and transaction count, fast blocks back.
async fn big_block(
    net: &mut Devnet,
    keys: &KeySet,
    token: Address,
    plan: &RpcBenchPlan,
    bar: &ProgressBar,
) -> Result<(u64, usize)> {
    bar.set_message(format!(
        "gathering {} transfers into one block",
        plan.big_block_txs
    ));
    net.state.options.timeout_commit = BIG_BLOCK_COMMIT;
    net.restart().await.context("restarting with slow blocks")?;
    let client = web3(net)?;
    let rounds = sign_transfers(&client, keys, token, plan.big_block_txs).await?;
    let h0 = client.block_number().await?;
    let after =
        crate::blocks::wait_above(h0, || async { Ok(client.block_number().await?) }).await?;
    for round in &rounds {
        send_round(&client, round).await?;
    }
    let end =
        crate::blocks::wait_above(after + 1, || async { Ok(client.block_number().await?) }).await?;
    let mut best = (0, 0);
    for n in after + 1..=end {
        let block = client.block(n).await?.context("a block is missing")?;
        if block.transactions.len() > best.1 {
            best = (n, block.transactions.len());
        }
    }
    ensure!(
        best.1 >= plan.big_block_txs,
        "the transfers spread over blocks {}..={end} (the fullest, {}, holds {}): lower --big-block-txs",
        after + 1,
        best.0,
        best.1
    );
    net.state.options.timeout_commit = plan.timeout_commit;
    net.restart().await.context("restarting with fast blocks")?;
    Ok(best)
}

/// `count` signed `transfer(next account, 1)` calls, in rounds: round `k`
/// holds every account's `k`-th transaction (a round is sent after the last).
async fn sign_transfers(
    client: &EthClient,
    keys: &KeySet,
    token: Address,
    count: usize,
) -> Result<Vec<Vec<sign::SignedTx>>> {
    let chain_id = client.chain_id().await?;
    let fee = crate::fees::detect(client).await?;
    let mut nonces = Vec::with_capacity(keys.len());
    for chunk in keys.addresses.chunks(BATCH) {
        for n in client.nonces(chunk, true).await {
            nonces.push(n?);
        }
    }
    let n = keys.len();
    let mut rounds: Vec<Vec<sign::SignedTx>> = Vec::new();
    for i in 0..count {
        let (a, k) = (i % n, i / n);
        if k == rounds.len() {
            rounds.push(Vec::with_capacity(n));
        }
        let request = TxRequest {
            chain_id,
            nonce: nonces[a] + k as u64,
            to: Some(token),
            value: U256::ZERO,
            gas_limit: erc20::TRANSFER_GAS,
            fee,
            input: erc20::transfer_call(keys.addresses[(a + 1) % n], U256::from(1u64)),
        };
        rounds[k].push(sign::sign(&keys.keys[a], &request));
    }
    Ok(rounds)
}

/// Sends one round in JSON-RPC batches, 8 at a time; every transaction must
/// be accepted.
async fn send_round(client: &EthClient, round: &[sign::SignedTx]) -> Result<()> {
    let answers: Vec<_> = stream::iter(round.chunks(BATCH))
        .map(|chunk| async move {
            let raws: Vec<&[u8]> = chunk.iter().map(|t| t.raw.as_ref()).collect();
            client.send_raw_batch(&raws).await
        })
        .buffer_unordered(8)
        .collect()
        .await;
    for result in answers.into_iter().flatten() {
        result.context("a big-block transfer was refused")?;
    }
    Ok(())
}

/// The first block of the wide range: the last blocks of `from..=to` whose
/// transactions add up to at most `wanted`. Also returns the transactions of
/// the whole range.
async fn wide_range(client: &EthClient, from: u64, to: u64, wanted: usize) -> Result<(u64, u64)> {
    let counts: Vec<usize> = stream::iter(from..=to)
        .map(|n| async move {
            let block = client.block(n).await?;
            Ok::<_, anyhow::Error>(block.map_or(0, |b| b.transactions.len()))
        })
        .buffered(32)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    let total = counts.iter().map(|&c| c as u64).sum();
    let (mut start, mut sum) = (to, 0);
    for (n, c) in (from..=to).rev().zip(counts.iter().rev()) {
        if sum + c > wanted {
            break;
        }
        (start, sum) = (n, sum + c);
    }
    Ok((start, total))
}

/// The three queries, each called once to learn its answer's size.
async fn specs(
    client: &EthClient,
    token: Address,
    holder: Address,
    (from, wide_from, to): (u64, u64, u64),
    big_block: u64,
) -> Result<Vec<QuerySpec>> {
    let transfer = keccak256("Transfer(address,address,uint256)");
    let hex = |n: u64| format!("0x{n:x}");
    let logs = |from: u64, topics: Value| json!([{ "fromBlock": hex(from), "toBlock": hex(to), "address": token, "topics": topics }]);
    let calls = [
        (
            Query::SelectiveLogs,
            "eth_getLogs",
            logs(from, json!([transfer, holder.into_word()])),
            to - from + 1,
        ),
        (
            Query::WideLogs,
            "eth_getLogs",
            logs(wide_from, json!([transfer])),
            to - wide_from + 1,
        ),
        (
            Query::BigBlockReceipts,
            "eth_getBlockReceipts",
            json!([hex(big_block)]),
            1,
        ),
    ];
    let http = reqwest::Client::new();
    let mut specs = Vec::new();
    for (query, method, params, blocks) in calls {
        let mut spec = QuerySpec {
            query,
            method: method.to_string(),
            params,
            blocks,
            results: 0,
        };
        spec.results = call_counted(&http, client.url(), &spec).await?;
        ensure!(spec.results > 0, "{query:?} found nothing: {}", spec.params);
        specs.push(spec);
    }
    Ok(specs)
}

/// An answer whose result is a list, read without building its items.
#[derive(Deserialize)]
struct Counted {
    result: Option<Vec<serde::de::IgnoredAny>>,
    error: Option<Value>,
}

/// Calls `spec` and counts the items of its answer.
async fn call_counted(http: &reqwest::Client, url: &str, spec: &QuerySpec) -> Result<usize> {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": spec.method, "params": spec.params });
    let bytes = http.post(url).json(&body).send().await?.bytes().await?;
    let answer: Counted = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} answered something else than a list", spec.method))?;
    match (answer.result, answer.error) {
        (Some(items), None) => Ok(items.len()),
        (_, error) => bail!("{} failed: {error:?}", spec.method),
    }
}

/// A window's raw latencies, per query.
struct Measured {
    summary: Window,
    latencies_ms: Vec<Vec<f64>>,
}

/// The ABBA windows.
async fn measure(
    net: &Devnet,
    keys: &KeySet,
    specs: &[QuerySpec],
    plan: &RpcBenchPlan,
    bar: &ProgressBar,
) -> Result<Vec<Measured>> {
    bar.set_length((2 * plan.pairs) as u64);
    bar.set_position(0);
    let mut windows = Vec::with_capacity(2 * plan.pairs);
    for i in 0..plan.pairs {
        let order = if i % 2 == 0 {
            [Mode::Loaded, Mode::Idle]
        } else {
            [Mode::Idle, Mode::Loaded]
        };
        for mode in order {
            bar.set_message(format!("window {:?}", mode));
            let w = window(net, keys, specs, plan.calls, mode).await?;
            let line = format!(
                "{:<7} p50 ms: {}{}",
                format!("{mode:?}").to_lowercase(),
                w.summary
                    .p50_ms
                    .iter()
                    .zip(specs)
                    .map(|(ms, s)| format!("{:?} {ms:.1}", s.query))
                    .collect::<Vec<_>>()
                    .join("  "),
                w.summary
                    .load_tps
                    .map_or(String::new(), |t| format!("  (load {t:.0} tx/s)"))
            );
            progress::println(bar, line);
            bar.inc(1);
            windows.push(w);
        }
    }
    Ok(windows)
}

/// One window: `calls` calls of every query, round robin.
async fn window(
    net: &Devnet,
    keys: &KeySet,
    specs: &[QuerySpec],
    calls: usize,
    mode: Mode,
) -> Result<Measured> {
    let load = (mode == Mode::Loaded)
        .then(|| BackgroundLoad::start(net, keys, WorkloadKind::Erc20, Duration::from_secs(60)));
    if load.is_some() {
        tokio::time::sleep(WARM_UP).await;
    }
    let http = reqwest::Client::new();
    let url = net.state.web3_url();
    let mut latencies_ms = vec![Vec::with_capacity(calls); specs.len()];
    let mut failure = None;
    'calls: for _ in 0..calls {
        for (spec, lat) in specs.iter().zip(&mut latencies_ms) {
            let t = Instant::now();
            match call_counted(&http, &url, spec).await {
                Ok(n) if n == spec.results => lat.push(t.elapsed().as_secs_f64() * 1e3),
                Ok(n) => {
                    failure = Some(anyhow::anyhow!(
                        "{:?} returned {n} items, first {}",
                        spec.query,
                        spec.results
                    ));
                    break 'calls;
                }
                Err(e) => {
                    failure = Some(e);
                    break 'calls;
                }
            }
        }
    }
    let load_tps = match load {
        Some(load) => Some(load.finish().await?.chain.committed_tps),
        None => None,
    };
    if let Some(e) = failure {
        return Err(e);
    }
    let p50_ms = latencies_ms
        .iter()
        .map(|l| percentiles(&mut l.clone()).p50)
        .collect();
    Ok(Measured {
        summary: Window {
            mode,
            p50_ms,
            load_tps,
        },
        latencies_ms,
    })
}

/// Every query's pooled percentiles and per-pair ratios.
fn figures(specs: &[QuerySpec], windows: &[Measured]) -> Result<Vec<QueryFigures>> {
    specs
        .iter()
        .enumerate()
        .map(|(q, spec)| {
            let pooled = |mode| {
                let mut all: Vec<f64> = windows
                    .iter()
                    .filter(|w| w.summary.mode == mode)
                    .flat_map(|w| w.latencies_ms[q].iter().copied())
                    .collect();
                percentiles(&mut all)
            };
            let ratios: Vec<f64> = windows
                .chunks_exact(2)
                .map(|pair| {
                    let p50 = |m| {
                        pair.iter()
                            .find(|w| w.summary.mode == m)
                            .map_or(f64::NAN, |w| w.summary.p50_ms[q])
                    };
                    p50(Mode::Loaded) / p50(Mode::Idle).max(1e-9)
                })
                .collect();
            Ok(QueryFigures {
                spec: spec.clone(),
                idle_ms: pooled(Mode::Idle),
                loaded_ms: pooled(Mode::Loaded),
                p50_ratio: RatioEstimate::of(&ratios).context("no pair was measured")?,
            })
        })
        .collect()
}

impl RpcBench {
    /// Writes the summary `feth bench` prints.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let p = &self.plan;
        writeln!(
            out,
            "conditions   {}; block gas limit {}, timeout_commit {}, {} CPUs, {}",
            self.client_version,
            p.block_gas_limit,
            p.timeout_commit,
            self.cpus,
            if self.on_tmpfs {
                "devnet on tmpfs"
            } else {
                "devnet on disk"
            }
        )?;
        writeln!(
            out,
            "chain        blocks {}..={} of ERC-20 load ({} tx, {:.1} tx per block), built in {:.0} s",
            self.range_from,
            self.range_to,
            self.range_txs,
            self.range_txs as f64 / (self.range_to - self.range_from + 1) as f64,
            self.build_seconds
        )?;
        writeln!(
            out,
            "big block    {} holds {} transactions",
            self.big_block, self.big_block_txs
        )?;
        let tps: Vec<f64> = self.windows.iter().filter_map(|w| w.load_tps).collect();
        writeln!(
            out,
            "windows      {} ABBA pairs, {} calls of each query per window; load: closed-loop ERC-20 from {} senders, {:.0} committed tx/s on average",
            p.pairs,
            p.calls,
            p.accounts,
            tps.iter().sum::<f64>() / tps.len().max(1) as f64
        )?;
        for q in &self.queries {
            let s = &q.spec;
            let what = match s.query {
                Query::SelectiveLogs => "eth_getLogs, one holder's Transfer topic",
                Query::WideLogs => "eth_getLogs, every Transfer of the token",
                Query::BigBlockReceipts => "eth_getBlockReceipts of the big block",
            };
            writeln!(
                out,
                "{what}: {} block(s), {} result(s)",
                s.blocks, s.results
            )?;
            for (mode, l) in [("idle", &q.idle_ms), ("loaded", &q.loaded_ms)] {
                writeln!(
                    out,
                    "  {mode:<7} p50 {:>8.1} ms  p90 {:>8.1} ms  p99 {:>8.1} ms",
                    l.p50, l.p90, l.p99
                )?;
            }
            writeln!(out, "  loaded / idle p50  {}", q.p50_ratio.describe())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(mode: Mode, lat: [f64; 2]) -> Measured {
        Measured {
            summary: Window {
                mode,
                p50_ms: lat.to_vec(),
                load_tps: None,
            },
            latencies_ms: lat.iter().map(|l| vec![*l]).collect(),
        }
    }

    #[test]
    fn ratios_pair_loaded_with_idle_in_either_order() {
        let spec = |query| QuerySpec {
            query,
            method: "eth_getLogs".into(),
            params: json!([]),
            blocks: 1,
            results: 1,
        };
        let specs = [spec(Query::SelectiveLogs), spec(Query::WideLogs)];
        let windows = [
            measured(Mode::Loaded, [20.0, 30.0]),
            measured(Mode::Idle, [10.0, 30.0]),
            measured(Mode::Idle, [10.0, 20.0]),
            measured(Mode::Loaded, [30.0, 20.0]),
        ];
        let f = figures(&specs, &windows).unwrap();
        assert!((f[0].p50_ratio.mean - 2.5).abs() < 1e-12, "{:?}", f[0]);
        assert!((f[1].p50_ratio.mean - 1.0).abs() < 1e-12, "{:?}", f[1]);
        assert_eq!(f[0].idle_ms.p50, 10.0);
        assert_eq!(f[0].loaded_ms.max, 30.0);
        assert_eq!(f[0].p50_ratio.pairs, 2);
    }
}

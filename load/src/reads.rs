//! Web3 read traffic beside the writes (`feth load --reads RATE`): what a
//! fullnode's wallets, dapps and indexers ask while it checks and executes
//! transactions, so a run shows what reads cost the block rate and what the
//! block rate costs the reads.
//!
//! An open-loop schedule at its own rate picks a method for each read by
//! the plan's weights. Every answer is checked, not just counted:
//! - `eth_blockNumber`, `eth_getBlockByNumber("latest")`: a height no lower
//!   than the highest this run had been told before it asked;
//! - `eth_getBalance` of a sender: a quantity;
//! - `eth_getTransactionReceipt` of a transaction of the latest block read
//!   (as a wallet polls for its own): the receipt names that transaction
//!   and that block;
//! - `eth_getLogs` over the last four blocks: every log is of a block in
//!   the range asked;
//! - `eth_call` of the run's token (ERC-20 loads), `balanceOf` a sender:
//!   one 32-byte word;
//! - `eth_estimateGas` of a plain value transfer from one sender to another
//!   (not in the default mix: `--read-mix estimate=W`): 21,000, the
//!   intrinsic gas of a transfer between accounts without code.
//!
//! Each read ends in exactly one of: answered right, answered wrong, failed
//! (an error, after the client's retries of transient transport errors, or
//! a timeout), or skipped — not sent because the reads in flight were at
//! their limit, or a receipt asked before any transaction was seen. None
//! is dropped from the counts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256, U64};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use super::hist::LogHist;
use super::metrics::LoadMetrics;
use super::report::{MethodFigures, ReadsReport};
use super::tally::{ReadDone, ReadEnd};
use super::{contracts, erc20};
use crate::fund::TRANSFER_GAS;
use crate::sync::lock;
use feth_chain::eth::BlockSummary;
use feth_chain::eth::EthClient;

/// The highest read rate, reads per second: one agent's reads beyond it
/// would measure the agent, and the schedule's tick must stay above zero.
pub const MAX_RATE: f64 = 100_000.0;

/// One kind of read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMethod {
    /// `eth_blockNumber`.
    BlockNumber,
    /// `eth_getBlockByNumber("latest", false)`.
    LatestBlock,
    /// `eth_getBalance(sender, "latest")`.
    Balance,
    /// `eth_getTransactionReceipt` of a recent transaction.
    Receipt,
    /// `eth_getLogs` over the last four blocks.
    Logs,
    /// `eth_call` of the run's token: `balanceOf(sender)` (ERC-20 loads).
    TokenBalance,
    /// `eth_estimateGas` of a 1-wei transfer between two senders.
    Estimate,
    /// `eth_call` of a view that does real work: FethStore's `digest`,
    /// 2,000 Keccak rounds (about 490,000 gas), its answer checked.
    Digest,
}

impl ReadMethod {
    /// Every method, in the order reports list them.
    pub const ALL: [ReadMethod; 8] = [
        Self::BlockNumber,
        Self::LatestBlock,
        Self::Balance,
        Self::Receipt,
        Self::Logs,
        Self::TokenBalance,
        Self::Estimate,
        Self::Digest,
    ];

    /// The name used in `--read-mix` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::BlockNumber => "block_number",
            Self::LatestBlock => "latest_block",
            Self::Balance => "balance",
            Self::Receipt => "receipt",
            Self::Logs => "logs",
            Self::TokenBalance => "token_balance",
            Self::Estimate => "estimate",
            Self::Digest => "digest",
        }
    }
}

/// What to read, how often.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadPlan {
    /// Reads per second, open loop.
    pub rate: f64,
    /// Each method's weight (a share of the reads).
    pub mix: Vec<(ReadMethod, u32)>,
    /// Reads in flight at most; a read due while this many wait is skipped.
    pub max_in_flight: usize,
}

impl ReadPlan {
    /// `rate` reads per second in a wallet-heavy mix: receipts 40 %,
    /// balances 25 %, block numbers 15 %, latest blocks 10 %, logs 10 %.
    pub fn wallets(rate: f64) -> Self {
        use ReadMethod::*;
        Self {
            rate,
            mix: vec![
                (Receipt, 8),
                (Balance, 5),
                (BlockNumber, 3),
                (LatestBlock, 2),
                (Logs, 2),
            ],
            max_in_flight: 64,
        }
    }

    /// Parses a mix: `receipt=4,balance=2,logs=1` (weights, whole numbers).
    pub fn parse_mix(text: &str) -> Result<Vec<(ReadMethod, u32)>> {
        let mut pairs = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part
                .split_once('=')
                .with_context(|| format!("{part:?} in the read mix: give METHOD=WEIGHT"))?;
            let weight: u32 = weight.trim().parse().with_context(|| {
                format!("{part:?}: a weight is a whole number (0 leaves the method out)")
            })?;
            pairs.push((name.trim(), weight));
        }
        Self::mix_of(pairs).with_context(|| format!("the read mix {text:?}"))
    }

    /// A mix from method names and their weights: every name a read method,
    /// some weight above 0.
    pub fn mix_of<'a>(
        pairs: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> Result<Vec<(ReadMethod, u32)>> {
        let mut mix = Vec::new();
        for (name, weight) in pairs {
            let method = ReadMethod::ALL
                .into_iter()
                .find(|m| m.name() == name)
                .with_context(|| {
                    let names: Vec<_> = ReadMethod::ALL.iter().map(|m| m.name()).collect();
                    format!(
                        "{name:?} is not a read method; the methods are {}",
                        names.join(", ")
                    )
                })?;
            mix.push((method, weight));
        }
        if mix.iter().map(|(_, w)| u64::from(*w)).sum::<u64>() == 0 {
            bail!("the mix gives no method a weight above 0");
        }
        Ok(mix)
    }

    /// Whether `method` has a weight above 0.
    pub fn calls(&self, method: ReadMethod) -> bool {
        self.mix.iter().any(|(m, w)| *m == method && *w > 0)
    }

    /// The method of read number `i`. Each cycle of `W` reads (`W` the sum
    /// of the weights) visits the positions `0..W` once, in a stride order
    /// that interleaves the methods, and a position belongs to a method by
    /// the cumulative weights: every cycle sends each method exactly its
    /// weight.
    fn pick(&self, i: u64) -> ReadMethod {
        let total: u64 = self.mix.iter().map(|(_, w)| u64::from(*w)).sum();
        let total = total.max(1);
        let position = (i % total) * stride(total) % total;
        let mut upto = 0;
        for (m, w) in &self.mix {
            upto += u64::from(*w);
            if position < upto {
                return *m;
            }
        }
        self.mix[0].0
    }
}

/// A step coprime with `total`, near its golden section, so that stepping
/// by it visits every position of a cycle once, the methods mixed.
fn stride(total: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut step = ((total as f64 * 0.618) as u64).max(1);
    while gcd(step, total) != 1 {
        step += 1;
    }
    step
}

#[derive(Default)]
struct Stats {
    figures: MethodFigures,
    hist: LogHist,
}

/// What the readers share.
struct Shared {
    client: Arc<EthClient>,
    senders: Vec<Address>,
    /// The run's token, for `balanceOf` calls.
    token: Option<Address>,
    /// The run's FethStore, for `digest` calls.
    digest: Option<Address>,
    /// The highest height any answer told.
    known: AtomicU64,
    /// The latest block read that held transactions: its height and hashes.
    recent: Mutex<Option<(u64, Vec<B256>)>>,
    stats: Mutex<BTreeMap<ReadMethod, Stats>>,
    metrics: Option<Arc<LoadMetrics>>,
    /// Reads ended since the tap last took them (see [`ReadTap`]).
    ended: Mutex<Vec<(Instant, ReadEnd, Option<f64>)>>,
}

/// How a read ended.
enum Outcome {
    Right,
    Wrong(String),
    Failed(String),
    Skipped,
}

impl Outcome {
    fn end(&self) -> ReadEnd {
        match self {
            Self::Right => ReadEnd::Right,
            Self::Wrong(_) => ReadEnd::Wrong,
            Self::Failed(_) => ReadEnd::Failed,
            Self::Skipped => ReadEnd::Skipped,
        }
    }

    /// Its name in metrics.
    fn name(&self) -> &'static str {
        match self {
            Self::Right => "ok",
            Self::Wrong(_) => "wrong",
            Self::Failed(_) => "failed",
            Self::Skipped => "skipped",
        }
    }
}

/// Read traffic under way (see [`start`]).
pub struct ReadTraffic {
    shared: Arc<Shared>,
    plan: ReadPlan,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    started: Instant,
}

/// Whom the reads ask about.
#[derive(Debug, Clone, Default)]
pub struct ReadTargets {
    /// Accounts whose balances are read (the senders).
    pub senders: Vec<Address>,
    /// The token whose `balanceOf` is called, on ERC-20 loads.
    pub token: Option<Address>,
    /// The FethStore whose `digest` view is called.
    pub digest: Option<Address>,
}

/// Starts reading from `client` at the plan's rate about `targets`. Each
/// read is also counted in `metrics`, when given.
pub fn start(
    plan: ReadPlan,
    client: Arc<EthClient>,
    targets: ReadTargets,
    metrics: Option<Arc<LoadMetrics>>,
) -> Result<ReadTraffic> {
    if !(plan.rate > 0.0 && plan.rate <= MAX_RATE) {
        bail!(
            "--reads must be a rate above 0 and at most {MAX_RATE} reads per second, not {}",
            plan.rate
        );
    }
    if plan.mix.iter().all(|(_, w)| *w == 0) {
        bail!("the read mix gives no method a weight above 0");
    }
    let ReadTargets {
        senders,
        token,
        digest,
    } = targets;
    if plan.calls(ReadMethod::Digest) && digest.is_none() {
        bail!("digest reads call FethStore, and none was deployed for this run");
    }
    if plan.calls(ReadMethod::TokenBalance) && token.is_none() {
        bail!("token_balance reads call the run's token: give --workload erc20, or leave token_balance out of --read-mix");
    }
    if senders.is_empty() {
        bail!("read traffic needs at least one sender's balance to read");
    }
    let shared = Arc::new(Shared {
        client,
        senders,
        token,
        digest,
        known: AtomicU64::new(0),
        recent: Mutex::new(None),
        stats: Mutex::new(BTreeMap::new()),
        metrics,
        ended: Mutex::new(Vec::new()),
    });
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(schedule(plan.clone(), shared.clone(), stop_rx));
    Ok(ReadTraffic {
        shared,
        plan,
        stop,
        task,
        started: Instant::now(),
    })
}

/// Sends the reads as they fall due until stopped, then waits for those in
/// flight.
async fn schedule(plan: ReadPlan, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(plan.max_in_flight.max(1)));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / plan.rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut reads = Vec::new();
    for i in 0u64.. {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => break,
        }
        let method = plan.pick(i);
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            shared.record(method, Outcome::Skipped, None);
            continue;
        };
        let shared = shared.clone();
        reads.push(tokio::spawn(async move {
            let asked = Instant::now();
            let outcome = shared.read(method, i).await;
            shared.record(method, outcome, Some(asked.elapsed()));
            drop(permit);
        }));
        reads.retain(|r: &JoinHandle<()>| !r.is_finished());
    }
    for r in reads {
        let _ = r.await;
    }
}

impl Shared {
    async fn read(&self, method: ReadMethod, i: u64) -> Outcome {
        let floor = self.known.load(Ordering::Relaxed);
        let c = &self.client;
        match method {
            ReadMethod::BlockNumber => match c.call::<U64>("eth_blockNumber", json!([])).await {
                Ok(h) => self.height(h.to(), floor),
                Err(e) => Outcome::Failed(e.to_string()),
            },
            ReadMethod::LatestBlock => match c.latest_block().await {
                Ok(b) => self.latest(b, floor),
                Err(e) => Outcome::Failed(e.to_string()),
            },
            ReadMethod::Balance => {
                let who = self.sender(i);
                match c
                    .call::<U256>("eth_getBalance", json!([who, "latest"]))
                    .await
                {
                    Ok(_) => Outcome::Right,
                    Err(e) => Outcome::Failed(e.to_string()),
                }
            }
            ReadMethod::Receipt => self.receipt(i).await,
            ReadMethod::TokenBalance => self.token_balance(i).await,
            ReadMethod::Logs => self.logs(floor).await,
            ReadMethod::Estimate => self.estimate(i).await,
            ReadMethod::Digest => self.digest(i).await,
        }
    }

    /// FethStore's `digest` of a seed drawn from `i`: right when it is the
    /// hash chain computed here.
    async fn digest(&self, i: u64) -> Outcome {
        let Some(store) = self.digest else {
            return Outcome::Skipped;
        };
        let seed = alloy_primitives::keccak256(i.to_be_bytes());
        let data = contracts::digest_call(seed, contracts::DIGEST_ROUNDS);
        let call = json!([{ "to": store, "data": data }, "latest"]);
        match self.client.call::<Bytes>("eth_call", call).await {
            Ok(out) if out[..] == contracts::digest(seed, contracts::DIGEST_ROUNDS)[..] => {
                Outcome::Right
            }
            Ok(out) => Outcome::Wrong(format!(
                "digest answered {out}, not the hash chain of its seed"
            )),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// `eth_estimateGas` of 1 wei from the sender of read `i` to the next
    /// sender: right when it is a plain transfer's 21,000.
    async fn estimate(&self, i: u64) -> Outcome {
        let (from, to) = (self.sender(i), self.sender(i + 1));
        let call = json!([{ "from": from, "to": to, "value": "0x1" }]);
        match self.client.call::<U64>("eth_estimateGas", call).await {
            Ok(gas) if gas == U64::from(TRANSFER_GAS) => Outcome::Right,
            Ok(gas) => Outcome::Wrong(format!(
                "a plain transfer estimated at {gas} gas, not {TRANSFER_GAS}"
            )),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// The sender read `i` asks about (the senders in turn; never empty).
    fn sender(&self, i: u64) -> Address {
        self.senders[(i % self.senders.len() as u64) as usize]
    }

    /// A height answered: right when not below `floor`.
    fn height(&self, h: u64, floor: u64) -> Outcome {
        self.known.fetch_max(h, Ordering::Relaxed);
        match h >= floor {
            true => Outcome::Right,
            false => Outcome::Wrong(format!("height {h} after {floor} had been answered")),
        }
    }

    fn latest(&self, b: BlockSummary, floor: u64) -> Outcome {
        let h = b.number.to::<u64>();
        if !b.transactions.is_empty() {
            let mut recent = lock(&self.recent);
            if recent.as_ref().is_none_or(|(at, _)| *at < h) {
                *recent = Some((h, b.transactions));
            }
        }
        self.height(h, floor)
    }

    async fn receipt(&self, i: u64) -> Outcome {
        let picked = {
            let recent = lock(&self.recent);
            recent
                .as_ref()
                .map(|(h, txs)| (*h, txs[(i % txs.len() as u64) as usize]))
        };
        let Some((height, hash)) = picked else {
            return Outcome::Skipped;
        };
        match self
            .client
            .call::<Option<Value>>("eth_getTransactionReceipt", json!([hash]))
            .await
        {
            Ok(Some(r)) => check_receipt(&r, hash, height),
            Ok(None) => Outcome::Wrong(format!("no receipt of {hash}, included at {height}")),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// `balanceOf` of a sender: right when it answers one 32-byte word.
    async fn token_balance(&self, i: u64) -> Outcome {
        let Some(token) = self.token else {
            return Outcome::Skipped;
        };
        let who = self.sender(i);
        let call = json!([{ "to": token, "data": erc20::balance_of_call(who) }, "latest"]);
        match self.client.call::<Bytes>("eth_call", call).await {
            Ok(out) if out.len() == 32 => Outcome::Right,
            Ok(out) => Outcome::Wrong(format!("balanceOf answered {} bytes, not 32", out.len())),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    async fn logs(&self, floor: u64) -> Outcome {
        let (from, to) = (floor.saturating_sub(3), floor);
        let filter = json!([{ "fromBlock": U64::from(from), "toBlock": U64::from(to) }]);
        match self.client.call::<Vec<Value>>("eth_getLogs", filter).await {
            Ok(logs) => check_logs(&logs, from, to),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    fn record(&self, method: ReadMethod, outcome: Outcome, took: Option<Duration>) {
        let end = outcome.end();
        let answered = matches!(end, ReadEnd::Right | ReadEnd::Wrong);
        let took_ms = took.filter(|_| answered).map(|t| t.as_secs_f64() * 1000.0);
        if let Some(m) = &self.metrics {
            m.observe_read(method.name(), outcome.name(), took.filter(|_| answered));
        }
        {
            let mut stats = lock(&self.stats);
            let s = stats.entry(method).or_default();
            let f = &mut s.figures;
            f.due += 1;
            let example = match outcome {
                Outcome::Right => {
                    f.ok += 1;
                    None
                }
                Outcome::Wrong(why) => {
                    f.wrong += 1;
                    Some(format!("wrong: {why}"))
                }
                Outcome::Failed(why) => {
                    f.failed += 1;
                    Some(format!("failed: {why}"))
                }
                Outcome::Skipped => {
                    f.skipped += 1;
                    None
                }
            };
            if let Some(text) = example.filter(|_| f.examples.len() < 3) {
                f.examples.push(text.chars().take(300).collect());
            }
            if let Some(ms) = took_ms {
                s.hist.record(ms);
            }
        }
        let mut ended = lock(&self.ended);
        ended.push((Instant::now(), end, took_ms));
    }
}

/// The reads that ended, for the run's per-second rows.
#[derive(Clone)]
pub struct ReadTap(Arc<Shared>);

impl ReadTap {
    /// The reads ended since the last call, `at` in seconds since `origin`.
    pub fn take(&self, origin: Instant) -> Vec<ReadDone> {
        let ended = std::mem::take(&mut *lock(&self.0.ended));
        ended
            .into_iter()
            .map(|(at, end, took_ms)| ReadDone {
                at: at.saturating_duration_since(origin).as_secs_f64(),
                end,
                took_ms,
            })
            .collect()
    }
}

impl ReadTraffic {
    /// A tap on the reads that end from now on.
    pub fn tap(&self) -> ReadTap {
        ReadTap(self.shared.clone())
    }
}

/// A receipt is right when it names `hash` and block `height`.
fn check_receipt(r: &Value, hash: B256, height: u64) -> Outcome {
    let named: Option<B256> = r["transactionHash"].as_str().and_then(|h| h.parse().ok());
    let block: Option<U64> = r["blockNumber"].as_str().and_then(|h| h.parse().ok());
    match (named, block) {
        (Some(n), Some(b)) if n == hash && b.to::<u64>() == height => Outcome::Right,
        _ => Outcome::Wrong(format!(
            "the receipt of {hash} (in block {height}) names transaction {} in block {}",
            r["transactionHash"], r["blockNumber"]
        )),
    }
}

/// Logs are right when each is of a block in `from..=to`.
fn check_logs(logs: &[Value], from: u64, to: u64) -> Outcome {
    for log in logs {
        let block: Option<U64> = log["blockNumber"].as_str().and_then(|h| h.parse().ok());
        match block.map(|b| b.to::<u64>()) {
            Some(b) if (from..=to).contains(&b) => {}
            _ => {
                return Outcome::Wrong(format!(
                    "a log of block {} answered for blocks {from}–{to}",
                    log["blockNumber"]
                ))
            }
        }
    }
    Outcome::Right
}

impl ReadTraffic {
    /// Stops the schedule, waits for the reads in flight (each bounded by
    /// the client's timeout) and reports.
    pub async fn finish(self) -> ReadsReport {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        let seconds = self.started.elapsed().as_secs_f64();
        let stats = lock(&self.shared.stats);
        let methods = stats
            .iter()
            .map(|(m, s)| {
                let answered = s.figures.ok + s.figures.wrong;
                let figures = MethodFigures {
                    answered_per_second: answered as f64 / seconds.max(1e-9),
                    latency_ms: s.hist.latency(),
                    ..s.figures.clone()
                };
                (m.name().to_string(), figures)
            })
            .collect();
        ReadsReport {
            rate: self.plan.rate,
            seconds,
            methods,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(n: u64) -> String {
        format!("{:#x}", n)
    }

    #[test]
    fn the_mix_is_sent_in_its_proportions() {
        let plan = ReadPlan::wallets(100.0);
        let mut counts = BTreeMap::new();
        for i in 0..2_000 {
            *counts.entry(plan.pick(i)).or_insert(0u64) += 1;
        }
        // 2,000 reads = 100 cycles of the weights 8, 5, 3, 2, 2.
        use ReadMethod::*;
        assert_eq!(counts[&Receipt], 800);
        assert_eq!(counts[&Balance], 500);
        assert_eq!(counts[&BlockNumber], 300);
        assert_eq!(counts[&LatestBlock], 200);
        assert_eq!(counts[&Logs], 200);
    }

    #[test]
    fn a_method_of_weight_zero_is_never_picked() {
        let mix = ReadPlan::parse_mix("receipt=1, logs=0, balance=3").unwrap();
        let plan = ReadPlan {
            mix,
            ..ReadPlan::wallets(1.0)
        };
        let picked: Vec<_> = (0..400).map(|i| plan.pick(i)).collect();
        assert!(!picked.contains(&ReadMethod::Logs));
        let receipts = picked.iter().filter(|m| **m == ReadMethod::Receipt).count();
        assert_eq!(receipts, 100);
    }

    #[test]
    fn a_bad_mix_names_the_problem() {
        let err = |t: &str| format!("{:#}", ReadPlan::parse_mix(t).unwrap_err());
        assert!(err("reciept=1").contains("\"reciept\" is not a read method; the methods are block_number, latest_block, balance, receipt, logs, token_balance"));
        assert!(err("receipt").contains("give METHOD=WEIGHT"));
        assert!(err("receipt=-1").contains("a weight is a whole number"));
        assert!(err("receipt=0").contains("gives no method a weight above 0"));
    }

    #[test]
    fn a_rate_out_of_bounds_or_an_empty_mix_is_refused() {
        let client =
            Arc::new(EthClient::new("http://127.0.0.1:9", Duration::from_secs(1)).unwrap());
        let targets = ReadTargets {
            digest: None,
            senders: vec![Address::ZERO],
            token: None,
        };
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e12] {
            let plan = ReadPlan::wallets(rate);
            let err = start(plan, client.clone(), targets.clone(), None)
                .err()
                .unwrap();
            assert!(
                err.to_string().contains("at most 100000 reads per second"),
                "{err}"
            );
        }
        let plan = ReadPlan {
            mix: vec![],
            ..ReadPlan::wallets(1.0)
        };
        let err = start(plan, client, targets, None).err().unwrap();
        assert!(
            err.to_string().contains("no method a weight above 0"),
            "{err}"
        );
    }

    #[test]
    fn token_reads_without_a_token_are_refused_before_any_read() {
        let client = EthClient::new("http://127.0.0.1:9", Duration::from_secs(1)).unwrap();
        let mut plan = ReadPlan::wallets(1.0);
        plan.mix.push((ReadMethod::TokenBalance, 1));
        let targets = ReadTargets {
            digest: None,
            senders: vec![Address::ZERO],
            token: None,
        };
        let err = start(plan, Arc::new(client), targets, None).err().unwrap();
        assert!(err.to_string().contains("give --workload erc20"), "{err}");
    }

    #[test]
    fn receipts_and_logs_are_checked_against_what_was_asked() {
        let hash = B256::repeat_byte(7);
        let right = json!({ "transactionHash": hash, "blockNumber": hex(12) });
        assert!(matches!(check_receipt(&right, hash, 12), Outcome::Right));
        assert!(matches!(check_receipt(&right, hash, 13), Outcome::Wrong(_)));
        let other = json!({ "transactionHash": B256::ZERO, "blockNumber": hex(12) });
        assert!(matches!(check_receipt(&other, hash, 12), Outcome::Wrong(_)));
        let logs = [
            json!({ "blockNumber": hex(5) }),
            json!({ "blockNumber": hex(8) }),
        ];
        assert!(matches!(check_logs(&logs, 5, 8), Outcome::Right));
        assert!(matches!(check_logs(&logs, 6, 8), Outcome::Wrong(_)));
        assert!(matches!(check_logs(&[json!({})], 6, 8), Outcome::Wrong(_)));
    }
}

//! `feth bench stages`: where a committed transaction's CPU and wall time
//! go, stage by stage, on a devnet of its own under a closed-loop load, and
//! which stage is serial.
//!
//! * **CPU** comes from the whole node's profile ([`crate::node_profile`]):
//!   abcid's armed blocks and CometBFT's Go profile over the same blocks,
//!   weighed in CPU time. Every stack is put in one stage by its frames
//!   ([`classify`]); a stage's CPU over the profiled blocks divided by the
//!   transactions those blocks committed is its µs per committed
//!   transaction.
//! * **Wall time** comes from abcid's counters (`/metrics`) over the same
//!   span: the time spent in CheckTx (new and recheck), FinalizeBlock and
//!   the store's write in Commit. Per committed transaction, and as the
//!   share of the span a connection was busy: a connection that answers one
//!   call at a time and is busy nearly all the time is the serial stage
//!   that caps the node.
//!
//! The stage of a stack is read from function names, so it is as good as
//! the rules below: what no rule knows is counted as "other" and shown.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use feth_profiler_rpc::api::EnableParams;
use feth_profiler_rpc::diff::find_blocks;
use feth_profiler_rpc::folded::FoldedStacks;
use feth_profiler_rpc::node;
use feth_profiler_rpc::ProfilerClient;
use serde::Serialize;

use super::background::{fund_senders, BackgroundLoad};
use crate::comet_pprof::CaptureConfig;
use crate::devnet::{self, Devnet};
use crate::load::plan::WorkloadKind;
use crate::node_profile;
use crate::progress;

/// Load before the profiled blocks: the mempool fills and blocks reach a
/// steady size.
const WARM_UP: Duration = Duration::from_secs(5);
/// A connection busy this share of the time (percent) is read as the
/// serial stage.
const SERIAL_BUSY_PCT: f64 = 75.0;
/// Longest wait for the profiled blocks.
const SESSION_TIMEOUT: Duration = Duration::from_secs(120);

/// Where a piece of the node's work belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Taking transactions in: web3 (`eth_sendRawTransaction` and the
    /// load's reads) and CometBFT's `broadcast_tx_sync`.
    RpcIngress,
    /// CometBFT's ABCI client: requests, flushes and their timers.
    AbciTransport,
    /// Recovering senders from signatures (ECDSA), wherever it runs: in
    /// CheckTx, in FinalizeBlock, or ahead on web3's workers.
    SenderRecovery,
    /// Admitting a new transaction: CometBFT's mempool and abcid's CheckTx
    /// (abcid's recheck calls run the same functions and are counted here).
    CheckTx,
    /// CometBFT's recheck of the mempool after a block.
    Recheck,
    /// Proposing and checking a proposal (PrepareProposal, ProcessProposal).
    BlockBuilding,
    /// Executing the block (FinalizeBlock).
    Execution,
    /// Commit: the state and the block written to storage.
    CommitStorage,
    /// Consensus: votes, gossip, block parts, signatures.
    Consensus,
    /// Go's garbage collector and scheduler, and goroutines ending (the
    /// ABCI client's timer starts one per firing).
    Runtime,
    /// Anything no rule knows.
    Other,
}

impl Stage {
    /// The stage's name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RpcIngress => "RPC ingress",
            Stage::AbciTransport => "ABCI transport",
            Stage::SenderRecovery => "sender recovery (ECDSA)",
            Stage::CheckTx => "CheckTx",
            Stage::Recheck => "recheck",
            Stage::BlockBuilding => "block building",
            Stage::Execution => "execution",
            Stage::CommitStorage => "Commit and storage",
            Stage::Consensus => "consensus",
            Stage::Runtime => "Go runtime (GC, scheduling)",
            Stage::Other => "other",
        }
    }
}

/// CometBFT's rules, in order of precedence: the first whose text is in a
/// frame of the stack gives its stage. The most specific work comes first:
/// a `broadcast_tx_sync` runs the mempool's CheckTx, which calls the ABCI
/// client, all on the RPC's goroutine.
const COMETBFT_RULES: &[(&str, Stage)] = &[
    ("abci/client.", Stage::AbciTransport),
    ("libs/timer.", Stage::AbciTransport),
    ("google.golang.org/grpc", Stage::AbciTransport),
    ("golang.org/x/net/http2", Stage::AbciTransport),
    ("recheckTxs", Stage::Recheck),
    ("CreateProposalBlock", Stage::BlockBuilding),
    ("ProcessProposal", Stage::BlockBuilding),
    ("PrepareProposal", Stage::BlockBuilding),
    ("store.", Stage::CommitStorage),
    ("cometbft-db", Stage::CommitStorage),
    ("goleveldb", Stage::CommitStorage),
    ("state.(*BlockExecutor).Commit", Stage::CommitStorage),
    ("state.(*BlockExecutor)", Stage::Execution),
    ("mempool.", Stage::CheckTx),
    ("rpc/core.", Stage::RpcIngress),
    ("rpc/jsonrpc/", Stage::RpcIngress),
    ("net/http.", Stage::RpcIngress),
    ("consensus.", Stage::Consensus),
    ("p2p.", Stage::Consensus),
    ("types.", Stage::Consensus),
    ("privval.", Stage::Consensus),
    ("crypto/", Stage::Consensus),
    ("runtime.gcBgMarkWorker", Stage::Runtime),
    ("runtime.bgsweep", Stage::Runtime),
    ("runtime.bgscavenge", Stage::Runtime),
    ("runtime.mcall", Stage::Runtime),
    ("runtime.mstart", Stage::Runtime),
    ("runtime.sysmon", Stage::Runtime),
];

/// abcid's rules, on its function names, in order of precedence.
const ABCID_RULES: &[(&str, Stage)] = &[
    ("verify::Verifier::verify", Stage::SenderRecovery),
    ("recover_sender", Stage::SenderRecovery),
    ("secp256k1", Stage::SenderRecovery),
    ("check_tx", Stage::CheckTx),
    ("prepare_proposal", Stage::BlockBuilding),
    ("process_proposal", Stage::BlockBuilding),
    ("::commit", Stage::CommitStorage),
    ("redb::", Stage::CommitStorage),
    ("finalize_block", Stage::Execution),
    ("execute_block", Stage::Execution),
    ("jsonrpsee", Stage::RpcIngress),
    ("::rpc::", Stage::RpcIngress),
    ("hyper", Stage::RpcIngress),
];

/// The stage of one folded stack of the whole node's profile (rooted at
/// `abcid` or `cometbft`).
pub fn classify(stack: &str) -> Stage {
    let (rules, frames) = match stack.split_once(';') {
        Some(("cometbft", rest)) => (COMETBFT_RULES, rest),
        Some(("abcid", rest)) => (ABCID_RULES, rest),
        _ => return Stage::Other,
    };
    match rules.iter().find(|(text, _)| frames.contains(text)) {
        Some((_, stage)) => *stage,
        // abcid's ABCI threads are named for their connection.
        None if frames.starts_with("check_tx;") => Stage::CheckTx,
        None if frames.starts_with("deliver_tx;") => Stage::Execution,
        None => Stage::Other,
    }
}

/// One stage's CPU per committed transaction, by process.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StageCpu {
    /// abcid's µs of CPU per committed transaction.
    pub abcid_us: f64,
    /// CometBFT's µs of CPU per committed transaction.
    pub cometbft_us: f64,
    /// Share of the node's CPU, in percent.
    pub share_pct: f64,
}

/// Each stage's CPU per committed transaction, from the whole node's
/// stacks (weighed in µs of CPU over the profiled blocks) and the
/// transactions those blocks committed.
pub fn cpu_by_stage(stacks: &FoldedStacks, committed: u64) -> BTreeMap<Stage, StageCpu> {
    let per_tx = 1.0 / committed.max(1) as f64;
    let mut stages: BTreeMap<Stage, StageCpu> = BTreeMap::new();
    for (stack, us) in stacks.iter() {
        let cpu = stages.entry(classify(stack)).or_default();
        match stack.starts_with("abcid;") {
            true => cpu.abcid_us += us as f64 * per_tx,
            false => cpu.cometbft_us += us as f64 * per_tx,
        }
    }
    let total: f64 = stages.values().map(|c| c.abcid_us + c.cometbft_us).sum();
    for cpu in stages.values_mut() {
        cpu.share_pct = 100.0 * (cpu.abcid_us + cpu.cometbft_us) / total.max(f64::MIN_POSITIVE);
    }
    stages
}

/// The sums of abcid's duration counters, in seconds, at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    /// `abcid_check_tx_duration_seconds_sum{type="new"}`.
    pub check_tx_new: f64,
    /// `abcid_check_tx_duration_seconds_sum{type="recheck"}`.
    pub check_tx_recheck: f64,
    /// `abcid_finalize_block_duration_seconds_sum`.
    pub finalize_block: f64,
    /// `abcid_store_commit_duration_seconds_sum`.
    pub store_commit: f64,
    /// `abcid_transactions_total`, valid and invalid.
    pub transactions: f64,
}

impl Counters {
    /// Reads them from abcid's Prometheus text; a missing series is 0 (a
    /// histogram that saw no call has none).
    pub fn parse(text: &str) -> Self {
        let mut c = Counters::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            match series {
                r#"abcid_check_tx_duration_seconds_sum{type="new"}"# => c.check_tx_new = value,
                r#"abcid_check_tx_duration_seconds_sum{type="recheck"}"# => {
                    c.check_tx_recheck = value
                }
                "abcid_finalize_block_duration_seconds_sum" => c.finalize_block = value,
                "abcid_store_commit_duration_seconds_sum" => c.store_commit = value,
                s if s.starts_with("abcid_transactions_total{") => c.transactions += value,
                _ => {}
            }
        }
        c
    }

    /// What each grew by from `before` to `self`.
    pub fn since(&self, before: &Counters) -> Counters {
        Counters {
            check_tx_new: self.check_tx_new - before.check_tx_new,
            check_tx_recheck: self.check_tx_recheck - before.check_tx_recheck,
            finalize_block: self.finalize_block - before.finalize_block,
            store_commit: self.store_commit - before.store_commit,
            transactions: self.transactions - before.transactions,
        }
    }
}

/// Wall time of one of abcid's ABCI calls over the measured span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WallTime {
    /// The call.
    pub call: &'static str,
    /// The connection it runs on.
    pub connection: &'static str,
    /// µs per committed transaction.
    pub us_per_tx: f64,
    /// Share of the span it took, in percent of one thread.
    pub busy_pct: f64,
}

/// The calls' wall times from counters grown by `d` over `secs` seconds.
pub fn wall_times(d: &Counters, secs: f64) -> Vec<WallTime> {
    let per_tx = 1e6 / d.transactions.max(1.0);
    let busy = 100.0 / secs.max(f64::MIN_POSITIVE);
    [
        ("CheckTx (new)", "mempool", d.check_tx_new),
        ("CheckTx (recheck)", "mempool", d.check_tx_recheck),
        ("FinalizeBlock", "consensus", d.finalize_block),
        ("Commit (store write)", "consensus", d.store_commit),
    ]
    .into_iter()
    .map(|(call, connection, s)| WallTime {
        call,
        connection,
        us_per_tx: s * per_tx,
        busy_pct: s * busy,
    })
    .collect()
}

/// The ABCI connection busy the largest share of the span, and that share:
/// one answering a call at a time (the socket client) near 100 % is the
/// serial stage that caps the node.
pub fn busiest_connection(walls: &[WallTime]) -> (&'static str, f64) {
    let mut by: BTreeMap<&'static str, f64> = BTreeMap::new();
    for w in walls {
        *by.entry(w.connection).or_default() += w.busy_pct;
    }
    by.into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(("none", 0.0))
}

/// What `feth bench stages` runs.
#[derive(Clone, Debug, Serialize)]
pub struct StagesBenchPlan {
    /// Funded senders of the closed-loop load.
    pub accounts: usize,
    /// Blocks profiled.
    pub blocks: u32,
    /// abcid's sampling frequency, Hz.
    pub frequency_hz: u32,
    /// abcid's patches.
    pub patches: String,
    /// CometBFT's `timeout_commit`.
    pub timeout_commit: devnet::GoDuration,
    /// CometBFT settings, `KEY=VALUE` as `feth devnet up --set` takes them
    /// (`abci=grpc`, `mempool.size=8000`).
    pub comet_set: Vec<String>,
}

/// What `feth bench stages` measured.
#[derive(Clone, Debug, Serialize)]
pub struct StagesBench {
    /// What was run.
    pub plan: StagesBenchPlan,
    /// The profiled blocks.
    pub heights: (u64, u64),
    /// Transactions those blocks committed.
    pub committed: u64,
    /// Seconds the profiled blocks spanned.
    pub window_secs: f64,
    /// Committed transactions per second over them.
    pub committed_tps: f64,
    /// Each process's cores busy and share.
    pub processes: Vec<node::ProcessShare>,
    /// CPU per committed transaction, by stage.
    pub cpu: BTreeMap<Stage, StageCpu>,
    /// abcid's ABCI calls' wall time over the session.
    pub wall: Vec<WallTime>,
    /// The busiest ABCI connection and its busy share, percent.
    pub busiest: (&'static str, f64),
    /// Where the whole node's profile was written.
    pub profile_dir: std::path::PathBuf,
}

impl StagesBench {
    /// The readable summary.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let p = &self.plan;
        writeln!(
            out,
            "feth bench stages: blocks {}-{} ({:.2} s), {} committed, {:.0} tx/s; patches {}, \
             timeout_commit {}, CometBFT settings [{}], closed loop from {} senders",
            self.heights.0,
            self.heights.1,
            self.window_secs,
            self.committed,
            self.committed_tps,
            p.patches,
            p.timeout_commit,
            p.comet_set.join(", "),
            p.accounts
        )?;
        for share in &self.processes {
            writeln!(
                out,
                "  {:<9} {:.2} cores ({:.0} % of the node)",
                share.process, share.cores, share.share_pct
            )?;
        }
        writeln!(out, "\nCPU per committed transaction, by stage (µs):")?;
        writeln!(
            out,
            "  {:<28} {:>8} {:>8} {:>8} {:>7}",
            "stage", "abcid", "cometbft", "node", "share"
        )?;
        let (mut a, mut c) = (0.0, 0.0);
        for (stage, cpu) in &self.cpu {
            writeln!(
                out,
                "  {:<28} {:>8.1} {:>8.1} {:>8.1} {:>6.1}%",
                stage.as_str(),
                cpu.abcid_us,
                cpu.cometbft_us,
                cpu.abcid_us + cpu.cometbft_us,
                cpu.share_pct
            )?;
            (a, c) = (a + cpu.abcid_us, c + cpu.cometbft_us);
        }
        writeln!(out, "  {:<28} {a:>8.1} {c:>8.1} {:>8.1}", "total", a + c)?;
        writeln!(out, "\nabcid's ABCI calls, wall time (counters):")?;
        for w in &self.wall {
            writeln!(
                out,
                "  {:<22} {:<10} {:>8.1} µs/tx  busy {:>5.1} % of one thread",
                w.call, w.connection, w.us_per_tx, w.busy_pct
            )?;
        }
        let (connection, busy) = self.busiest;
        writeln!(
            out,
            "\nbusiest ABCI connection: {connection}, {busy:.0} % of the time in abcid's calls"
        )?;
        let verdict = match busy >= SERIAL_BUSY_PCT {
            true => format!(
                "  serial: CometBFT's socket client makes one {connection} call at a time, \
                 so that connection caps the node"
            ),
            false => "  no ABCI connection is near busy: the limit lies outside abcid's calls \
                      (see the CPU by stage)"
                .to_string(),
        };
        writeln!(out, "{verdict}")?;
        writeln!(
            out,
            "whole-node flamegraph: {}",
            self.profile_dir.join("node.svg").display()
        )
    }
}

/// Starts a devnet of its own, funds the senders, loads it in a closed loop,
/// profiles `plan.blocks` blocks of the whole node and reads abcid's
/// counters over them; the profile is written under `out`.
pub async fn stages(plan: StagesBenchPlan, out: &std::path::Path) -> Result<StagesBench> {
    let bar = progress::spinner("starting a devnet");
    let (dir, _) = devnet::scratch_dir()?;
    let net = Devnet::start_private(dir.path(), |o| {
        o.timeout_commit = plan.timeout_commit;
        o.patches = plan.patches.clone();
        o.set = plan.comet_set.clone();
    })
    .await
    .context("starting the devnet")?;
    let metrics = net
        .state
        .metrics_url()
        .context("this abcid serves no /metrics: build it from this tree")?;
    let client = crate::eth::EthClient::new(&net.state.web3_url(), Duration::from_secs(10))?;
    bar.set_message(format!("funding {} senders", plan.accounts));
    let keys_file = dir.path().join("keys.txt");
    let keys = fund_senders(&net, &client, 12, plan.accounts, &keys_file).await?;
    let load = BackgroundLoad::start(&net, &keys, WorkloadKind::Transfer, Duration::from_secs(30));
    bar.set_message("closed-loop load: warming up");
    tokio::time::sleep(WARM_UP).await;
    bar.set_message(format!(
        "profiling {} blocks of the whole node",
        plan.blocks
    ));
    let session = profile_session(&net, &plan, &metrics).await;
    bar.set_message("draining the load");
    load.finish().await?;
    bar.finish_and_clear();
    let (windows, counters, secs) = session?;
    let blocks = find_blocks(&net.state.options.dir.join("flamegraphs"))?;
    let heights = block_heights(&blocks)?;
    let title = format!(
        "blocks {}-{}: the whole node, patches {}",
        heights.0, heights.1, plan.patches
    );
    let (files, stacks) = node_profile::write_blocks("abcid", &blocks, &windows, out, &title)?;
    let committed = committed_in(&client, heights).await?;
    let wall = wall_times(&counters, secs);
    Ok(StagesBench {
        busiest: busiest_connection(&wall),
        cpu: cpu_by_stage(&stacks, committed),
        committed_tps: committed as f64 / files.window_secs,
        window_secs: files.window_secs,
        processes: files.processes,
        heights,
        committed,
        wall,
        profile_dir: files.dir,
        plan,
    })
}

/// Arms abcid's profiler, profiles CometBFT until the session ends, and
/// returns CometBFT's windows with abcid's counters' growth and its span.
async fn profile_session(
    net: &Devnet,
    plan: &StagesBenchPlan,
    metrics: &str,
) -> Result<(Vec<crate::comet_pprof::Window>, Counters, f64)> {
    let profiler = ProfilerClient::new(&net.state.profiler_url(), None)?;
    let pprof_url = net
        .state
        .cometbft_pprof_url()
        .context("this devnet does not serve CometBFT's pprof")?;
    let cfg = CaptureConfig {
        pprof_url,
        seconds: 1,
        label: "cometbft".to_string(),
        comet_rpc: Some(net.state.rpc_url()),
        out: std::path::PathBuf::new(),
    };
    let before = read_counters(metrics).await?;
    let started = Instant::now();
    profiler
        .enable(EnableParams {
            blocks: Some(i64::from(plan.blocks)),
            frequency_hz: Some(i64::from(plan.frequency_hz)),
        })
        .await
        .context("cannot arm abcid's profiler")?;
    let deadline = Instant::now() + SESSION_TIMEOUT;
    let windows = node_profile::comet_while_armed(&cfg, &profiler, deadline).await?;
    let after = read_counters(metrics).await?;
    let secs = started.elapsed().as_secs_f64();
    profiler
        .wait_idle(SESSION_TIMEOUT)
        .await
        .context("the profiled blocks did not end")?;
    Ok((windows, after.since(&before), secs))
}

async fn read_counters(url: &str) -> Result<Counters> {
    let text = reqwest::Client::new()
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .with_context(|| format!("cannot read {url}"))?
        .text()
        .await?;
    Ok(Counters::parse(&text))
}

/// The lowest and highest height of the block profiles in `dirs`.
fn block_heights(dirs: &[std::path::PathBuf]) -> Result<(u64, u64)> {
    let heights: Vec<u64> = dirs
        .iter()
        .filter_map(|d| d.file_name()?.to_str()?.parse().ok())
        .collect();
    match (heights.iter().min(), heights.iter().max()) {
        (Some(&a), Some(&b)) => Ok((a, b)),
        _ => bail!("abcid's profiler wrote no block profile"),
    }
}

/// Transactions in blocks `first..=last`.
async fn committed_in(client: &crate::eth::EthClient, (first, last): (u64, u64)) -> Result<u64> {
    let mut n = 0;
    for (h, block) in (first..).zip(client.blocks(first..=last).await?) {
        let block = block.with_context(|| format!("block {h} is not on the chain"))?;
        n += block.transactions.len() as u64;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_fall_in_their_stage_by_their_frames() {
        let cases = [
            ("cometbft;runtime.goexit;github.com/cometbft/cometbft/libs/timer.(*ThrottleTimer).fireRoutine", Stage::AbciTransport),
            ("cometbft;runtime.goexit;github.com/cometbft/cometbft/mempool.(*CListMempool).CheckTx;github.com/cometbft/cometbft/abci/client.(*socketClient).queueRequest", Stage::AbciTransport),
            ("cometbft;net/http.(*conn).serve;github.com/cometbft/cometbft/rpc/core.(*Environment).BroadcastTxSync;github.com/cometbft/cometbft/mempool.(*CListMempool).CheckTx;crypto/sha256.Sum256", Stage::CheckTx),
            ("cometbft;net/http.(*conn).serve;encoding/json.Unmarshal", Stage::RpcIngress),
            ("cometbft;x;github.com/cometbft/cometbft/state.(*BlockExecutor).CreateProposalBlock;github.com/cometbft/cometbft/mempool.(*CListMempool).ReapMaxBytesMaxGas", Stage::BlockBuilding),
            ("cometbft;x;github.com/cometbft/cometbft/mempool.(*CListMempool).recheckTxs", Stage::Recheck),
            ("cometbft;x;github.com/cometbft/cometbft/consensus.(*State).receiveRoutine", Stage::Consensus),
            ("cometbft;runtime.gcBgMarkWorker;runtime.scanobject", Stage::Runtime),
            ("cometbft;x;github.com/cometbft/cometbft/abci/client.(*grpcClient).CheckTxAsync;google.golang.org/grpc.(*ClientConn).Invoke", Stage::AbciTransport),
            ("cometbft;google.golang.org/grpc/internal/transport.(*loopyWriter).run", Stage::AbciTransport),
            ("cometbft;main.main", Stage::Other),
            ("abcid;check_tx;abcid::app::AbciApp::check_tx;secp256k1::recover", Stage::SenderRecovery),
            ("abcid;check_tx;abcid::app::AbciApp::check_tx;abcid::state::nonce", Stage::CheckTx),
            ("abcid;web3;abcid::rpc::eth::x;abcid::node::Node::recover_ahead;abcid::verify::Verifier::verify", Stage::SenderRecovery),
            ("abcid;deliver_tx;abcid::app::AbciApp::commit;redb::tree::insert", Stage::CommitStorage),
            ("abcid;deliver_tx;abcid::app::AbciApp::finalize_block;revm::transact", Stage::Execution),
            ("abcid;deliver_tx;std::thread::start;memcpy", Stage::Execution),
            ("abcid;tokio-runtime-w;jsonrpsee_server::serve;abcid::rpc::send_raw", Stage::RpcIngress),
            ("abcid;tokio-runtime-w;tokio::park", Stage::Other),
            ("geth;main", Stage::Other),
        ];
        for (stack, stage) in cases {
            assert_eq!(classify(stack), stage, "{stack}");
        }
    }

    #[test]
    fn cpu_per_transaction_adds_up_by_stage_and_process() {
        let stacks = FoldedStacks::parse(
            "abcid;check_tx;abcid::x::check_tx 300\n\
             cometbft;github.com/cometbft/cometbft/mempool.(*CListMempool).CheckTx 100\n\
             cometbft;github.com/cometbft/cometbft/consensus.(*State).x 600\n",
        )
        .unwrap();
        let cpu = cpu_by_stage(&stacks, 10);
        let check = &cpu[&Stage::CheckTx];
        assert_eq!((check.abcid_us, check.cometbft_us), (30.0, 10.0));
        assert_eq!(check.share_pct, 40.0);
        assert_eq!(cpu[&Stage::Consensus].cometbft_us, 60.0);
        assert!(!cpu.contains_key(&Stage::Execution));
    }

    #[test]
    fn counters_give_wall_time_per_transaction_and_the_busiest_connection() {
        let text = "# HELP x\n\
            abcid_check_tx_duration_seconds_sum{type=\"new\"} 1.5\n\
            abcid_check_tx_duration_seconds_sum{type=\"recheck\"} 0.5\n\
            abcid_check_tx_duration_seconds_count{type=\"new\"} 99\n\
            abcid_finalize_block_duration_seconds_sum 0.25\n\
            abcid_store_commit_duration_seconds_sum 0.25\n\
            abcid_transactions_total{result=\"valid\"} 900\n\
            abcid_transactions_total{result=\"invalid\"} 100\n";
        let after = Counters::parse(text);
        assert_eq!(after.transactions, 1000.0);
        let before = Counters {
            transactions: 500.0,
            ..Counters::default()
        };
        let walls = wall_times(&after.since(&before), 4.0);
        assert_eq!(walls[0].us_per_tx, 3000.0, "1.5 s over 500 transactions");
        assert_eq!(walls[0].busy_pct, 37.5);
        assert_eq!(busiest_connection(&walls), ("mempool", 50.0));
        assert_eq!(busiest_connection(&[]), ("none", 0.0));
    }
}

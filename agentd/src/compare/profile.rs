//! A few profiled blocks per run, and the differential flamegraph of a step
//! against the step before it.
//!
//! Profiles are captured after the measured window, under the same offered
//! load: an armed profiler costs a little throughput, and the measured window
//! must not pay it. The profiler is armed only once a block holds the load's
//! transactions, so the profiled blocks are never the empty ones before the
//! load gets going (on a busy machine its start can take several blocks).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use feth_comet::rpc::Rpc;
use feth_profiler_rpc::api::EnableParams;
use feth_profiler_rpc::diff::{diff_flamegraph, find_blocks, load_profile_set, DiffOptions};
use feth_profiler_rpc::{download, ProfilerClient, RoleFilter};

use crate::comet_pprof;
use crate::go_profile::blocks::BlocksConfig;
use crate::go_profile::roles::RoleTable;
use crate::go_profile::{self, BlocksReport};
use crate::node_profile;

/// Longest wait for the armed blocks to be produced and rendered.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Longest wait for the first block holding the load's transactions.
const LOADED_TIMEOUT: Duration = Duration::from_secs(60);

/// What a capture gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Captured {
    /// The profiles, copied into this folder.
    Profiles(PathBuf),
    /// The node wrote no profile, for this reason (the profiler's own last
    /// failure when it reported one): the run has no flamegraph, and the
    /// comparison goes on without it.
    Nothing(String),
}

/// A node whose app embeds profiler-rpc, beside its CometBFT: abcid, or a
/// recipe chain's app that names a `profiler` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedNode {
    /// The app's process, as the whole node's profile names it (`abcid`).
    pub app: String,
    /// The app's profiler (JSON-RPC).
    pub profiler: String,
    /// Its CometBFT's RPC.
    pub comet_rpc: String,
    /// Its CometBFT's Go pprof, when served.
    pub pprof: Option<String>,
}

/// Runs `load` (which must keep the node busy for at least `blocks` blocks
/// after its first loaded one), arms the app's profiler for `blocks` blocks
/// once a block holds transactions, waits until every captured block is
/// rendered, and downloads their profiles into `out/<chain id>/<height>/`.
pub async fn capture<T>(
    node: &EmbeddedNode,
    blocks: u32,
    out: &Path,
    load: impl Future<Output = Result<T>>,
) -> Result<Captured> {
    let app = &node.app;
    let profiler = ProfilerClient::new(&node.profiler, None)?;
    let rpc = Rpc::new(&node.comet_rpc, 20, 2)?;
    let after = rpc
        .status()
        .await
        .context("cannot read the head from CometBFT's /status")?
        .latest_height;
    let session = async {
        wait_loaded_block(&rpc, after)
            .await
            .context("the load under the profiled blocks never reached a block")?;
        let params = EnableParams {
            blocks: Some(i64::from(blocks)),
            frequency_hz: None,
        };
        profiler
            .session(params, IDLE_TIMEOUT)
            .await
            .with_context(|| format!("{app}'s profiled blocks were not all captured and rendered"))
    };
    let (loaded, session) = tokio::join!(load, session);
    loaded.context("the load under the profiled blocks")?;
    let session = session?;
    if session.profiles_written() == 0 {
        let why = match session.failure() {
            Some(e) => format!(
                "{app}'s profiler failed at {} (height {:?}): {}",
                e.stage, e.height, e.message
            ),
            None => format!("{app}'s profiler wrote no profile of the {blocks} armed blocks and reported no failure"),
        };
        return Ok(Captured::Nothing(why));
    }
    let idle = session.after;
    download_after(&profiler, after, &out.join(&idle.chain_id)).await?;
    // A block's window is its FinalizeBlock to Commit: a small block can
    // hold no sample at 99 Hz, and then its profile has no folded stacks.
    if let Err(e) = load_profile_set(out, RoleFilter::All) {
        return Ok(Captured::Nothing(format!(
            "the {blocks} profiled blocks held no sample ({e})"
        )));
    }
    Ok(Captured::Profiles(out.to_path_buf()))
}

/// Downloads the profiles of the blocks above `after` into `chain_dir`.
async fn download_after(profiler: &ProfilerClient, after: u64, chain_dir: &Path) -> Result<()> {
    let mut profiles = profiler.list().await.context("cannot list the profiles")?;
    profiles.retain(|p| p.height > after);
    let plan = download::plan_download(chain_dir, &profiles);
    for file in plan.files {
        download::download_file(profiler, chain_dir, file)
            .await
            .with_context(|| format!("cannot download height {}'s profile", file.height))?;
    }
    download::write_metadata(chain_dir, &profiles)
        .with_context(|| format!("cannot write profiles' metadata in {}", chain_dir.display()))
}

/// How long after the profiled load begins a Go node's per-block captures
/// start: the load's senders are under way by then.
const GO_START_AFTER: Duration = Duration::from_secs(1);

/// Runs `load` and, [`GO_START_AFTER`] into it, profiles the Go node of
/// `cfg` per block (see [`crate::go_profile`]), written under `out`.
pub async fn capture_go<T>(
    cfg: &BlocksConfig,
    out: &Path,
    load: impl Future<Output = Result<T>>,
) -> Result<BlocksReport> {
    let table = RoleTable::default_table()?;
    let profiled = async {
        tokio::time::sleep(GO_START_AFTER).await;
        go_profile::profile_blocks(cfg, &table, out).await
    };
    let (loaded, profiled) = tokio::join!(load, profiled);
    loaded.context("the load under the profiled blocks")?;
    profiled
}

/// Seconds of CometBFT's profile: the profiled load's length (`PROFILE_SECS`
/// in `run.rs`) less a second for its start.
const COMETBFT_SECONDS: u64 = 4;

/// Takes CometBFT's own CPU profile of the next [`COMETBFT_SECONDS`] from
/// `node`'s Go pprof endpoint, folded and drawn under `out`, labelled with
/// the blocks it covers; an error when the node serves none (an abcid
/// devnet made before it did, a recipe naming no `pprof`) or the capture
/// fails. Returns the capture's folder and the window itself.
pub async fn capture_cometbft(
    node: &EmbeddedNode,
    out: &Path,
) -> Result<(PathBuf, comet_pprof::Window)> {
    let pprof_url = node.pprof.clone().context(
        "the node serves no CometBFT pprof (an abcid devnet made before it did: recreate it with --fresh; a recipe: name its `pprof` endpoint)",
    )?;
    let cfg = comet_pprof::CaptureConfig {
        pprof_url,
        seconds: COMETBFT_SECONDS,
        label: "cometbft".to_string(),
        comet_rpc: Some(node.comet_rpc.clone()),
        out: out.to_path_buf(),
    };
    let window = comet_pprof::take(&cfg).await?;
    let capture = comet_pprof::save(&cfg, &window)?;
    Ok((capture.dir, window))
}

/// The whole node's profile of a step, in `out`: the app's block profiles
/// in `blocks` (its process named `app`) and CometBFT's `window`, weighed
/// in CPU time over the app's blocks (see [`crate::node_profile`]).
pub fn whole_node(
    app: &str,
    blocks: &Path,
    window: comet_pprof::Window,
    out: &Path,
    title: &str,
) -> Result<PathBuf> {
    let found = find_blocks(blocks)
        .with_context(|| format!("cannot list the block profiles in {}", blocks.display()))?;
    let (files, _) = node_profile::write_blocks(app, &found, &[window], out, title)?;
    Ok(files.dir)
}

/// Waits until a block above `after` holds a transaction, read from
/// CometBFT's RPC (polled every 100 ms, at most [`LOADED_TIMEOUT`]).
async fn wait_loaded_block(rpc: &Rpc, after: u64) -> Result<()> {
    let started = std::time::Instant::now();
    let mut next = after + 1;
    while started.elapsed() < LOADED_TIMEOUT {
        let latest = rpc
            .status()
            .await
            .context("CometBFT's /status")?
            .latest_height;
        if latest >= next {
            let heights: Vec<u64> = (next..=latest).collect();
            let (facts, _) = rpc.fetch(&heights, &[]).await?;
            if facts.values().any(|f| f.txs.unwrap_or(0) > 0) {
                return Ok(());
            }
            next = latest + 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("no block after {after} held a transaction within {LOADED_TIMEOUT:?}")
}

/// Writes the differential flamegraph `before` → `after` (each a folder of
/// block profiles) to `svg`, shares compared (BEFORE scaled to AFTER).
pub fn diff(before: &Path, after: &Path, svg: &Path, title: &str) -> Result<()> {
    let load = |p: &Path| {
        load_profile_set(p, RoleFilter::All)
            .with_context(|| format!("cannot read the profiles in {}", p.display()))
    };
    let options = DiffOptions {
        normalize: true,
        title: title.to_string(),
        top: 10,
    };
    let result = diff_flamegraph(&load(before)?.stacks, &load(after)?.stacks, &options)
        .context("cannot render the differential flamegraph")?;
    if let Some(dir) = svg.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(svg, result.svg).with_context(|| format!("cannot write {}", svg.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_two_folded_sets() {
        let dir = tempfile::tempdir().unwrap();
        let before = dir.path().join("before.folded");
        let after = dir.path().join("after.folded");
        std::fs::write(&before, "main;work 30\nmain;idle 10\n").unwrap();
        std::fs::write(&after, "main;work 10\nmain;idle 30\n").unwrap();
        let svg = dir.path().join("out/diff.svg");
        diff(&before, &after, &svg, "before → after").unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("<svg") && text.contains("work") && text.contains("idle"));
        let empty = dir.path().join("empty.folded");
        std::fs::write(&empty, "").unwrap();
        assert!(diff(&empty, &after, &svg, "t").is_err());
    }
}

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
use feth_profiler_rpc::api::EnableParams;
use feth_profiler_rpc::diff::{diff_flamegraph, find_blocks, load_profile_set, DiffOptions};
use feth_profiler_rpc::{ProfilerClient, RoleFilter};

use crate::comet_pprof;
use crate::devnet::DevnetState;
use crate::eth::EthClient;
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

/// Runs `load` (which must keep the node busy for at least `blocks` blocks
/// after its first loaded one), arms abcid's profiler for `blocks` blocks
/// once a block holds transactions, waits until every captured block is
/// rendered, and copies the profiles into `out`.
pub async fn capture<T>(
    net: &DevnetState,
    blocks: u32,
    out: &Path,
    load: impl Future<Output = Result<T>>,
) -> Result<Captured> {
    let profiler = ProfilerClient::new(&net.profiler_url(), None)?;
    let before = profiler
        .status()
        .await
        .context("cannot read abcid's profiler status")?;
    let client = EthClient::new(&net.web3_url(), Duration::from_secs(10))?;
    let after = client
        .block_number()
        .await
        .context("cannot read the head")?;
    let arm = async {
        wait_loaded_block(&client, after)
            .await
            .context("the load under the profiled blocks never reached a block")?;
        profiler
            .enable(EnableParams {
                blocks: Some(i64::from(blocks)),
                frequency_hz: None,
            })
            .await
            .context("cannot arm abcid's profiler")
    };
    let (loaded, armed) = tokio::join!(load, arm);
    loaded.context("the load under the profiled blocks")?;
    armed?;
    let after = profiler
        .wait_idle(IDLE_TIMEOUT)
        .await
        .context("the profiled blocks were not all rendered")?;
    if after.captured_total == before.captured_total {
        let why = match after.last_error {
            Some(e) if after.failures_total > before.failures_total => format!(
                "abcid's profiler failed at {} (height {:?}): {}",
                e.stage, e.height, e.message
            ),
            _ => format!("abcid's profiler wrote no profile of the {blocks} armed blocks and reported no failure"),
        };
        return Ok(Captured::Nothing(why));
    }
    copy_dir(&net.options.dir.join("flamegraphs"), out)?;
    // A block's window is its FinalizeBlock to Commit: a small block can
    // hold no sample at 99 Hz, and then its profile has no folded stacks.
    if let Err(e) = load_profile_set(out, RoleFilter::All) {
        return Ok(Captured::Nothing(format!(
            "the {blocks} profiled blocks held no sample ({e})"
        )));
    }
    Ok(Captured::Profiles(out.to_path_buf()))
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
/// the devnet's Go pprof endpoint, folded and drawn under `out`, labelled
/// with the blocks it covers; an error when the devnet does not serve it
/// (one made before it did) or the capture fails. Returns the capture's
/// folder and the window itself.
pub async fn capture_cometbft(
    net: &DevnetState,
    out: &Path,
) -> Result<(PathBuf, comet_pprof::Window)> {
    let pprof_url = net.cometbft_pprof_url().context(
        "the devnet does not serve CometBFT's pprof (made before it did: recreate it with --fresh)",
    )?;
    let cfg = comet_pprof::CaptureConfig {
        pprof_url,
        seconds: COMETBFT_SECONDS,
        label: "cometbft".to_string(),
        comet_rpc: Some(net.rpc_url()),
        out: out.to_path_buf(),
    };
    let window = comet_pprof::take(&cfg).await?;
    let capture = comet_pprof::save(&cfg, &window)?;
    Ok((capture.dir, window))
}

/// The whole node's profile of a step, in `out`: abcid's block profiles
/// in `abcid` and CometBFT's `window`, weighed in CPU time over abcid's
/// blocks (see [`crate::node_profile`]).
pub fn whole_node(
    abcid: &Path,
    window: comet_pprof::Window,
    out: &Path,
    title: &str,
) -> Result<PathBuf> {
    let blocks = find_blocks(abcid)
        .with_context(|| format!("cannot list the block profiles in {}", abcid.display()))?;
    let (files, _) = node_profile::write_blocks(&blocks, &[window], out, title)?;
    Ok(files.dir)
}

/// Waits until a block above `after` holds a transaction (polled every
/// 100 ms, at most [`LOADED_TIMEOUT`]).
async fn wait_loaded_block(client: &EthClient, after: u64) -> Result<()> {
    let started = std::time::Instant::now();
    let mut next = after + 1;
    while started.elapsed() < LOADED_TIMEOUT {
        while let Some(block) = client.block(next).await? {
            if !block.transactions.is_empty() {
                return Ok(());
            }
            next += 1;
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

/// Copies the tree `from` into `to` (created), files and folders only.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    let entries =
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?;
    for entry in entries {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_a_tree_and_diffs_two_folded_sets() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        std::fs::create_dir_all(src.join("chain/7")).unwrap();
        std::fs::write(src.join("chain/7/a.folded"), "main;work 3\n").unwrap();
        copy_dir(&src, &dst).unwrap();
        assert_eq!(
            std::fs::read_to_string(dst.join("chain/7/a.folded")).unwrap(),
            "main;work 3\n"
        );
        assert!(copy_dir(&dir.path().join("absent"), &dst).is_err());

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

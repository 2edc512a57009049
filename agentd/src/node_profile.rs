//! The whole node in one profile: abcid's block profiles and CometBFT's own
//! CPU over the same blocks, weighed in CPU time in one flamegraph
//! (`node.svg`), with `node.folded` for `feth flamegraph diff` and
//! `node.json` for what each process cost (see
//! [`feth_profiler_rpc::node`]).
//!
//! Go profiles whole seconds, one window at a time; abcid's profiler covers
//! armed blocks. While a session is armed, CometBFT is profiled in
//! one-second windows until the session ends, so its windows cover the
//! armed blocks with at most a second to spare, and its weights are scaled
//! to the blocks' own span.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use feth_profiler_rpc::folded::FoldedStacks;
use feth_profiler_rpc::node::{self, ProcessShare, ProcessStacks};
use feth_profiler_rpc::ProfilerClient;
use serde::Serialize;

use crate::comet_pprof::{self, CaptureConfig, Window};

/// The folded stacks of the whole node, in µs of CPU.
pub const FOLDED: &str = "node.folded";

/// What [`write`] put where.
#[derive(Debug, Clone, Serialize)]
pub struct NodeProfileFiles {
    /// The folder holding `node.svg`, `node.folded`, `node.json`, the
    /// consensus engine's own folded stacks and its raw Go profiles.
    pub dir: PathBuf,
    /// The span the CPU is scaled to: abcid's blocks' windows, in seconds.
    pub window_secs: f64,
    /// Each process's samples, window and cores.
    pub processes: Vec<ProcessShare>,
    /// Latest CometBFT height before the first and after the last Go window.
    pub cometbft_heights: Option<(u64, u64)>,
}

/// Profiles CometBFT in one-second windows for as long as `profiler`'s
/// session stays armed, and at most until `deadline`; `cfg.seconds` is
/// ignored. Returns no window when no session was armed.
pub async fn comet_while_armed(
    cfg: &CaptureConfig,
    profiler: &ProfilerClient,
    deadline: Instant,
) -> Result<Vec<Window>> {
    let cfg = CaptureConfig {
        seconds: 1,
        ..cfg.clone()
    };
    let mut windows = Vec::new();
    while Instant::now() < deadline && armed(profiler).await? {
        windows.push(comet_pprof::take(&cfg).await?);
    }
    Ok(windows)
}

async fn armed(profiler: &ProfilerClient) -> Result<bool> {
    let status = tokio::time::timeout(Duration::from_secs(10), profiler.status())
        .await
        .context("abcid's profiler status took over 10 s")??;
    Ok(status.armed)
}

/// The whole node's profile of the app's block profiles in `blocks` (each a
/// `<height>/` folder with its `meta.json`; its process named `app`, such
/// as `abcid`) and CometBFT's `windows` over
/// the same blocks, written into `dir`, scaled to the blocks' span.
/// Returns what was written and the whole node's stacks, in µs of CPU.
pub fn write_blocks(
    app: &str,
    blocks: &[PathBuf],
    windows: &[Window],
    dir: &Path,
    title: &str,
) -> Result<(NodeProfileFiles, FoldedStacks)> {
    let app = node::load_blocks(app, blocks)?;
    let comet = comet_part("cometbft", windows)?;
    write(dir, title, &app, &comet, windows)
}

/// CometBFT's windows as one process: their stacks merged, over the sum
/// of their seconds.
fn comet_part(label: &str, windows: &[Window]) -> Result<ProcessStacks> {
    let first = windows
        .first()
        .context("CometBFT was not profiled: no window was taken")?;
    let mut stacks = FoldedStacks::new();
    for window in windows {
        stacks.merge(&window.profile.stacks);
    }
    Ok(ProcessStacks {
        process: label.to_string(),
        stacks,
        sample_hz: first.profile.sample_hz,
        seconds: windows.iter().map(|w| w.profile.seconds).sum(),
    })
}

/// Writes the whole node's profile of `abcid` and `comet` (its `windows`'
/// raw profiles beside it) into `dir`, scaled to abcid's span.
fn write(
    dir: &Path,
    title: &str,
    abcid: &ProcessStacks,
    comet: &ProcessStacks,
    windows: &[Window],
) -> Result<(NodeProfileFiles, FoldedStacks)> {
    let profile = node::combine(&[abcid.clone(), comet.clone()], abcid.seconds)
        .context("cannot weigh the two profiles")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let put = |name: &str, bytes: &[u8]| -> Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
    };
    let svg = profile
        .stacks
        .to_svg(title, Some(&profile.subtitle()))
        .context("cannot draw the whole node's flamegraph")?;
    put("node.svg", &svg)?;
    put(FOLDED, profile.stacks.to_text().as_bytes())?;
    put(
        &format!("{}.folded", comet.process),
        comet.stacks.to_text().as_bytes(),
    )?;
    for (i, window) in windows.iter().enumerate() {
        put(&format!("{}-{i}.pb.gz", comet.process), &window.raw)?;
    }
    let files = NodeProfileFiles {
        dir: dir.to_path_buf(),
        window_secs: profile.window_secs,
        processes: profile.processes,
        cometbft_heights: windows
            .first()
            .zip(windows.last())
            .and_then(|(a, b)| Some((a.heights?.0, b.heights?.1))),
    };
    put(
        "node.json",
        serde_json::to_string_pretty(&files)?.as_bytes(),
    )?;
    Ok((files, profile.stacks))
}

#[cfg(test)]
mod tests {
    use feth_profiler_rpc::gopprof::GoProfile;

    use super::*;

    fn window(text: &str, seconds: f64, heights: (u64, u64)) -> Window {
        Window {
            raw: text.as_bytes().to_vec(),
            profile: GoProfile {
                stacks: FoldedStacks::parse(text).unwrap(),
                seconds,
                sample_hz: 100.0,
            },
            chain_id: Some("c".into()),
            heights: Some(heights),
            started_unix: 0.0,
        }
    }

    #[test]
    fn both_processes_land_in_one_flamegraph_over_abcids_span() {
        let windows = [
            window("cometbft;timer 60\n", 1.0, (10, 12)),
            window("cometbft;timer 40\ncometbft;consensus 20\n", 1.0, (12, 14)),
        ];
        let comet = comet_part("cometbft", &windows).unwrap();
        assert_eq!((comet.seconds, comet.stacks.total()), (2.0, 120));
        let abcid = ProcessStacks {
            process: "abcid".into(),
            stacks: FoldedStacks::parse("deliver_tx;exec 50\n").unwrap(),
            sample_hz: 100.0,
            seconds: 1.0,
        };
        let dir = tempfile::tempdir().unwrap();
        let (files, stacks) = write(dir.path(), "whole node", &abcid, &comet, &windows).unwrap();
        assert_eq!(files.cometbft_heights, Some((10, 14)));
        assert_eq!(files.window_secs, 1.0);
        let folded = std::fs::read_to_string(dir.path().join(FOLDED)).unwrap();
        assert_eq!(folded, stacks.to_text());
        // 120 samples over 2 s is 0.6 s of CPU per second; abcid 0.5 s.
        assert_eq!(
            folded,
            "abcid;deliver_tx;exec 500000\ncometbft;consensus 100000\ncometbft;timer 500000\n"
        );
        let svg = std::fs::read_to_string(dir.path().join("node.svg")).unwrap();
        assert!(svg.contains("whole node") && svg.contains("cometbft 0.60 cores"));
        assert!(dir.path().join("cometbft-1.pb.gz").is_file());
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("node.json")).unwrap()).unwrap();
        assert_eq!(json["processes"][0]["cores"], 0.5);
        assert!(comet_part("cometbft", &[]).is_err());
    }
}

//! On/off profiling of a live Go fullnode per block: CometBFT alone, or a
//! Cosmos SDK chain (cosmos/evm's evmd) with CometBFT in-process.
//!
//! Nothing of ours runs in the node: its pprof endpoint (`rpc.pprof_laddr`)
//! is asked for a CPU profile a block at a time ([`blocks`]), every sample
//! is put in a role by its frames ([`roles`]), and the allocation and lock
//! profiles are taken over the same window ([`extras`]). Nothing runs on
//! the node before the first capture or after the last. What was taken is
//! written by [`write`]:
//!
//! ```text
//! <out>/<chain>/<label>-blocks-<first>-<last>/
//!   session.json           the report: windows, gaps, roles, extras
//!   all.folded, all.svg    every window's stacks, role frame below the label
//!   <height>/              one per capture (<first>-<last>/ when it spans)
//!     profile.pb.gz  all.folded  all.svg  capture.json
//!   allocs.pb.gz, allocs.folded, allocs.svg   (mutex.*, block.* when enabled)
//! ```

pub mod blocks;
pub mod extras;
pub mod roles;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use blocks::{BlockSession, BlockWindow, BlocksConfig};
use extras::{Extra, ExtraProfile, TakenExtra};
use roles::{FrameRole, RoleSplit, RoleTable};

/// Every capture's stacks of a session, each with its role below the
/// process label.
pub const FOLDED: &str = "all.folded";

/// A comparison step's per-block Go profile: where it is and its role
/// split.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StepGoProfile {
    /// The session's folder (`session.json`, `all.folded`, `all.svg`, …).
    pub dir: PathBuf,
    /// First and last height profiled.
    pub heights: (u64, u64),
    /// CPU samples in all.
    pub samples: u64,
    /// Each role's share of them, in per cent.
    pub role_shares: std::collections::BTreeMap<FrameRole, f64>,
}

impl From<&BlocksReport> for StepGoProfile {
    fn from(r: &BlocksReport) -> Self {
        StepGoProfile {
            dir: r.dir.clone(),
            heights: r.heights,
            samples: r.roles.values().sum(),
            role_shares: r.role_shares.clone(),
        }
    }
}

/// The role split in words: `check_tx 36 %, deliver_tx 4 %, …`, the roles
/// with no samples left out.
pub fn describe_shares(shares: &std::collections::BTreeMap<FrameRole, f64>) -> String {
    let parts: Vec<String> = shares
        .iter()
        .filter(|(_, s)| **s > 0.0)
        .map(|(role, s)| format!("{} {s:.0} %", role.as_str()))
        .collect();
    parts.join(", ")
}

/// What a session wrote, and its findings (`session.json`).
#[derive(Debug, Clone, Serialize)]
pub struct BlocksReport {
    /// The session's folder.
    pub dir: PathBuf,
    /// The chain.
    pub chain_id: String,
    /// The process label, the root frame of every stack.
    pub label: String,
    /// Seconds each capture asked for.
    pub capture_secs: u64,
    /// The chain's block interval read before the session.
    pub block_interval_secs: Option<f64>,
    /// First and last height covered.
    pub heights: (u64, u64),
    /// Whether some capture held several heights (blocks shorter than a
    /// capture can resolve).
    pub spans: bool,
    /// Heights committed between captures and seen by none.
    pub missed: Vec<u64>,
    /// Share of the session's time the captures saw (0–1).
    pub coverage: f64,
    /// Mean and longest gap between captures, in seconds.
    pub gap_secs: Option<(f64, f64)>,
    /// Each capture.
    pub windows: Vec<BlockWindow>,
    /// Samples per role over every capture.
    pub roles: RoleSplit,
    /// The same in per cent.
    pub role_shares: std::collections::BTreeMap<FrameRole, f64>,
    /// The allocation and lock profiles over the window.
    pub extras: Vec<ExtraProfile>,
}

/// Takes per-block CPU profiles of `cfg.blocks` heights and, beside them,
/// the allocation and lock profiles over as many seconds as the captures
/// are expected to take; writes them all under `out`.
pub async fn profile_blocks(
    cfg: &BlocksConfig,
    table: &RoleTable,
    out: &Path,
) -> Result<BlocksReport> {
    let plan = blocks::plan(cfg).await?;
    let expected = plan.capture_secs.saturating_mul(u64::from(cfg.blocks));
    let seconds = expected.clamp(1, crate::comet_pprof::MAX_SECONDS);
    let extras = futures::future::join_all(
        Extra::ALL.map(|e| extras::take(&cfg.pprof_url, e, seconds, &cfg.label)),
    );
    let (session, extras) = tokio::join!(blocks::take(plan, cfg, table), extras);
    let session = session?;
    let extras: Vec<TakenExtra> = extras
        .into_iter()
        .zip(Extra::ALL)
        .map(|(taken, e)| taken.with_context(|| format!("the node's {} profile", e.name())))
        .collect::<Result<_>>()?;
    write(&session, &extras, &cfg.label, out)
}

/// Writes `session` and `extras` under `<out>/<chain>/`.
pub fn write(
    session: &BlockSession,
    extras: &[TakenExtra],
    label: &str,
    out: &Path,
) -> Result<BlocksReport> {
    let dir = out
        .join(crate::comet_pprof::safe(&session.chain_id))
        .join(session.folder(label));
    for taken in &session.windows {
        write_window(&dir, taken, label)?;
    }
    let merged = session.merged();
    put(&dir, "all.folded", merged.to_text().as_bytes())?;
    let report = report(session, extras, label, &dir);
    let title = format!("{label} CPU by role");
    put(
        &dir,
        "all.svg",
        &merged.to_svg(&title, Some(&subtitle(&report)))?,
    )?;
    for extra in extras.iter().filter(|e| e.summary.total > 0) {
        let name = extra.summary.kind;
        put(&dir, &format!("{name}.pb.gz"), &extra.raw)?;
        put(
            &dir,
            &format!("{name}.folded"),
            extra.stacks.to_text().as_bytes(),
        )?;
        let title = format!(
            "{label} {name} ({}, {})",
            extra.summary.value, extra.summary.unit
        );
        put(
            &dir,
            &format!("{name}.svg"),
            &extra.stacks.to_svg(&title, None)?,
        )?;
    }
    put(
        &dir,
        "session.json",
        serde_json::to_string_pretty(&report)?.as_bytes(),
    )?;
    Ok(report)
}

fn report(session: &BlockSession, extras: &[TakenExtra], label: &str, dir: &Path) -> BlocksReport {
    let roles = session.roles();
    let gaps: Vec<f64> = session
        .windows
        .iter()
        .filter_map(|w| w.window.gap_before_secs)
        .collect();
    let gap_secs = (!gaps.is_empty()).then(|| {
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        (mean, gaps.iter().copied().fold(0.0, f64::max))
    });
    BlocksReport {
        dir: dir.to_path_buf(),
        chain_id: session.chain_id.clone(),
        label: label.to_string(),
        capture_secs: session.capture_secs,
        block_interval_secs: session.block_interval_secs,
        heights: session.heights().unwrap_or((0, 0)),
        spans: session.spans(),
        missed: session.missed(),
        coverage: session.coverage(),
        gap_secs,
        windows: session.windows.iter().map(|w| w.window.clone()).collect(),
        role_shares: roles::shares(&roles),
        roles,
        extras: extras.iter().map(|e| e.summary.clone()).collect(),
    }
}

fn write_window(dir: &Path, taken: &blocks::TakenWindow, label: &str) -> Result<()> {
    let w = &taken.window;
    let name = match w.heights {
        (a, b) if a == b => a.to_string(),
        (a, b) => format!("{a}-{b}"),
    };
    let dir = dir.join(name);
    put(&dir, "profile.pb.gz", &taken.raw)?;
    put(&dir, "all.folded", taken.tagged.to_text().as_bytes())?;
    let title = match w.heights {
        (a, b) if a == b => format!("{label} CPU, block {a}"),
        (a, b) => format!("{label} CPU, blocks {a}–{b}"),
    };
    let sub = format!(
        "{:.1} s, {} samples, {:.2} cores busy{}",
        w.seconds,
        w.samples,
        w.cores,
        if w.whole {
            ""
        } else {
            " (the block's first part)"
        }
    );
    put(&dir, "all.svg", &taken.tagged.to_svg(&title, Some(&sub))?)?;
    put(
        &dir,
        "capture.json",
        serde_json::to_string_pretty(w)?.as_bytes(),
    )
}

/// What the session's flamegraph covers, in words.
fn subtitle(r: &BlocksReport) -> String {
    format!(
        "blocks {}–{}, {} captures of {} s, {:.0} % of the time seen; {}",
        r.heights.0,
        r.heights.1,
        r.windows.len(),
        r.capture_secs,
        100.0 * r.coverage,
        describe_shares(&r.role_shares)
    )
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

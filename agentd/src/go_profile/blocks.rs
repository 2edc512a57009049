//! Per-block CPU profiles of a Go node (CometBFT, or a Cosmos SDK chain
//! with CometBFT in-process), from its pprof endpoint and CometBFT's RPC.
//!
//! Go profiles whole seconds, one CPU profile at a time. A capture begins
//! as soon as a new height is seen (CometBFT's `/status`, polled every
//! [`POLL`]) and lasts `capture_secs`; it holds the work of the heights
//! committed while it ran, or, when none was, of the next height (cut short:
//! the rest of that block's time falls in the gap before the next capture).
//! When blocks are shorter than a capture, one capture spans several
//! heights and says so. The gap between captures is measured and reported;
//! nothing runs on the node between them. Each window's stacks are
//! classified by the role table and written with the role as a frame below
//! the process label.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use feth_comet::rpc::Rpc;
use feth_profiler_rpc::folded::FoldedStacks;
use feth_profiler_rpc::gopprof;
use serde::Serialize;

use super::roles::{FrameRole, RoleSplit, RoleTable};
use crate::comet_pprof;

/// How often CometBFT's `/status` is read while waiting for a new height.
pub const POLL: Duration = Duration::from_millis(20);
/// Most heights one session may cover.
pub const MAX_BLOCKS: u32 = 1000;

/// What to capture.
#[derive(Debug, Clone)]
pub struct BlocksConfig {
    /// The node's pprof base URL (`rpc.pprof_laddr`).
    pub pprof_url: String,
    /// CometBFT's RPC.
    pub comet_rpc: String,
    /// Heights to cover, at least (1–[`MAX_BLOCKS`]).
    pub blocks: u32,
    /// Seconds per capture; `None`: the chain's block interval, read from
    /// its last headers, rounded to whole seconds (at least 1).
    pub capture_secs: Option<u64>,
    /// The root frame of every stack: the process's name.
    pub label: String,
    /// Longest the whole session may take.
    pub timeout: Duration,
}

/// One capture: the heights whose work it holds.
#[derive(Debug, Clone, Serialize)]
pub struct BlockWindow {
    /// First and last height it holds.
    pub heights: (u64, u64),
    /// Whether its last height was committed before it ended (otherwise
    /// it holds the first part of that block's time only).
    pub whole: bool,
    /// Seconds it covers, as Go reports them.
    pub seconds: f64,
    /// Seconds since the previous capture ended (none for the first).
    pub gap_before_secs: Option<f64>,
    /// CPU samples.
    pub samples: u64,
    /// Cores busy on average.
    pub cores: f64,
    /// Samples per role.
    pub roles: RoleSplit,
    /// Unix time it began.
    pub started_unix: f64,
}

/// A decoded window, with its raw profile and role-tagged stacks.
#[derive(Debug, Clone)]
pub struct TakenWindow {
    /// What it covers.
    pub window: BlockWindow,
    /// The profile as the node served it.
    pub raw: Vec<u8>,
    /// Its stacks, each with its role below the label.
    pub tagged: FoldedStacks,
}

/// A whole session of per-block captures, not yet written.
#[derive(Debug, Clone)]
pub struct BlockSession {
    /// The chain (CometBFT's `network`).
    pub chain_id: String,
    /// Seconds each capture asked for.
    pub capture_secs: u64,
    /// The chain's block interval before the session, when read.
    pub block_interval_secs: Option<f64>,
    /// The captures, in order.
    pub windows: Vec<TakenWindow>,
    /// Seconds from the first capture's start to the last one's end.
    pub elapsed_secs: f64,
}

/// What a session starts from: the chain, where it is, and how long each
/// capture lasts.
pub struct Plan {
    rpc: Rpc,
    status: feth_comet::rpc::Status,
    /// The chain's block interval, when read.
    pub interval: Option<f64>,
    /// Seconds per capture.
    pub capture_secs: u64,
}

/// Reads the chain's state and block interval and settles the capture
/// length.
pub async fn plan(cfg: &BlocksConfig) -> Result<Plan> {
    if !(1..=MAX_BLOCKS).contains(&cfg.blocks) {
        bail!("--blocks {}: give 1 to {MAX_BLOCKS}", cfg.blocks);
    }
    let rpc = Rpc::new(&cfg.comet_rpc, 20, 2)?;
    let status = rpc.status().await.context("CometBFT's /status")?;
    let interval = block_interval(&rpc, status.latest_height).await;
    let capture_secs = match cfg.capture_secs {
        Some(s) if (1..=comet_pprof::MAX_SECONDS).contains(&s) => s,
        Some(s) => bail!("{s} s per capture: give 1 to {}", comet_pprof::MAX_SECONDS),
        None => interval.map_or(1, |i| (i.round() as u64).clamp(1, 60)),
    };
    Ok(Plan {
        rpc,
        status,
        interval,
        capture_secs,
    })
}

/// Takes per-block CPU profiles until `cfg.blocks` heights are covered.
pub async fn take(plan: Plan, cfg: &BlocksConfig, table: &RoleTable) -> Result<BlockSession> {
    let Plan {
        rpc,
        status,
        interval,
        capture_secs,
    } = plan;
    let deadline = Instant::now() + cfg.timeout;
    let mut h = status.latest_height;
    let mut wait = true;
    let mut windows: Vec<TakenWindow> = Vec::new();
    let mut covered = 0u64;
    let mut last_end: Option<Instant> = None;
    let mut first_start: Option<Instant> = None;
    while covered < u64::from(cfg.blocks) {
        if Instant::now() >= deadline {
            bail!(
                "{covered} of {} heights profiled before the deadline",
                cfg.blocks
            );
        }
        if wait {
            h = next_height(&rpc, h, deadline).await?;
        }
        let started = Instant::now();
        first_start.get_or_insert(started);
        let gap = last_end.map(|end| started.duration_since(end).as_secs_f64());
        let started_unix = comet_pprof::unix_now();
        let raw = comet_pprof::fetch(&cfg.pprof_url, "profile", capture_secs).await?;
        last_end = Some(Instant::now());
        let after = rpc
            .status()
            .await
            .context("CometBFT's /status")?
            .latest_height;
        let (first, whole) = (h.saturating_add(1), after > h);
        let last = after.max(first);
        covered += last - first + 1;
        // A window that saw its heights committed is followed at once by
        // the next height's; one cut short waits for its height's commit.
        (h, wait) = match whole {
            true => (after, false),
            false => (h, true),
        };
        let profile = gopprof::fold(&raw, &cfg.label)?;
        windows.push(window(
            table,
            raw,
            &profile,
            (first, last),
            whole,
            gap,
            started_unix,
        ));
    }
    let elapsed_secs = match (first_start, last_end) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    Ok(BlockSession {
        chain_id: status.network,
        capture_secs,
        block_interval_secs: interval,
        windows,
        elapsed_secs,
    })
}

fn window(
    table: &RoleTable,
    raw: Vec<u8>,
    profile: &gopprof::GoProfile,
    heights: (u64, u64),
    whole: bool,
    gap_before_secs: Option<f64>,
    started_unix: f64,
) -> TakenWindow {
    TakenWindow {
        window: BlockWindow {
            heights,
            whole,
            seconds: profile.seconds,
            gap_before_secs,
            samples: profile.stacks.total(),
            cores: profile.cores(),
            roles: table.split(&profile.stacks),
            started_unix,
        },
        raw,
        tagged: table.tag(&profile.stacks),
    }
}

/// Waits for a height above `seen`, reading `/status` every [`POLL`].
async fn next_height(rpc: &Rpc, seen: u64, deadline: Instant) -> Result<u64> {
    loop {
        let latest = rpc
            .status()
            .await
            .context("CometBFT's /status")?
            .latest_height;
        if latest > seen {
            return Ok(latest);
        }
        if Instant::now() >= deadline {
            bail!("no block above height {seen} before the deadline: is the chain making blocks?");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The median interval between the last few block headers, in seconds;
/// `None` when the chain is too young or its headers cannot be read.
async fn block_interval(rpc: &Rpc, latest: u64) -> Option<f64> {
    let heights: Vec<u64> = (latest.saturating_sub(5).max(1)..=latest).collect();
    let (facts, _) = rpc.fetch(&heights, &[]).await.ok()?;
    let times: Vec<i64> = facts.values().filter_map(|f| f.time_ns).collect();
    let mut gaps: Vec<f64> = times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]) as f64 / 1e9)
        .filter(|g| *g > 0.0)
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied()
}

impl BlockSession {
    /// Samples per role over every window.
    pub fn roles(&self) -> RoleSplit {
        let mut total: RoleSplit = FrameRole::ALL.iter().map(|r| (*r, 0)).collect();
        for w in &self.windows {
            for (role, n) in &w.window.roles {
                *total.entry(*role).or_insert(0) += n;
            }
        }
        total
    }

    /// Every window's tagged stacks in one set.
    pub fn merged(&self) -> FoldedStacks {
        let mut all = FoldedStacks::new();
        for w in &self.windows {
            all.merge(&w.tagged);
        }
        all
    }

    /// First and last height covered.
    pub fn heights(&self) -> Option<(u64, u64)> {
        let first = self.windows.first()?.window.heights.0;
        let last = self.windows.last()?.window.heights.1;
        Some((first, last))
    }

    /// Heights committed between two captures, seen by neither.
    pub fn missed(&self) -> Vec<u64> {
        self.windows
            .windows(2)
            .flat_map(|w| w[0].window.heights.1 + 1..w[1].window.heights.0)
            .collect()
    }

    /// Whether some capture held more than one height.
    pub fn spans(&self) -> bool {
        self.windows
            .iter()
            .any(|w| w.window.heights.1 > w.window.heights.0)
    }

    /// The captures' seconds over the session's: the share of its time
    /// the profiles saw.
    pub fn coverage(&self) -> f64 {
        let seen: f64 = self.windows.iter().map(|w| w.window.seconds).sum();
        match self.elapsed_secs > 0.0 {
            true => (seen / self.elapsed_secs).min(1.0),
            false => 0.0,
        }
    }

    /// Folder name of the session under `<out>/<chain>/`.
    pub fn folder(&self, label: &str) -> PathBuf {
        let (a, b) = self.heights().unwrap_or((0, 0));
        PathBuf::from(format!("{}-blocks-{a}-{b}", comet_pprof::safe(label)))
    }
}

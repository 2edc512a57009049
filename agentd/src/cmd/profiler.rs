//! `feth profiler`: arm a live node's block profiler, show what it does, or fetch what it
//! captured.
//!
//! * `feth profiler --profiler URL --enable [--blocks N] [--frequency-hz F]` arms the node.
//! * `feth profiler --profiler URL` waits for the armed session to finish, disarms, and
//!   downloads its profiles into `flamegraphs/<chain-id>/<height>/`, plus a merged
//!   flamegraph of the session in `flamegraphs/<chain-id>/merged-<first>-<last>/`.
//! * `--cometbft` (or `--cometbft-pprof URL`) also profiles CometBFT's own CPU over the
//!   session's blocks and draws the whole node, both processes weighed in CPU time, in
//!   `flamegraphs/<chain-id>/node-<first>-<last>/node.svg`; with `--enable` it arms,
//!   profiles both and fetches in one go.
//! * `feth profiler status` shows what the node's profiler is doing.
//!
//! `--profiler` is the profiler's own JSON-RPC endpoint, not a web3 endpoint; the older
//! spelling `--network` still works as a hidden alias. With `--json`, stdout carries one
//! JSON document and no progress bar is drawn.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use feth_profiler_rpc::api::{EnableParams, ProfileSummary, SessionState, SessionStatus, Status};
use feth_profiler_rpc::config::validate_chain_id;
use feth_profiler_rpc::download::{self, DownloadPlan};
use feth_profiler_rpc::merge::merge_session;
use feth_profiler_rpc::{ClientError, ProfilerClient, Work};
use indicatif::{ProgressBar, ProgressStyle};

use crate::comet_pprof::{self, CaptureConfig};
use crate::node_profile::{self, NodeProfileFiles};
use serde::Serialize;

/// The profiler endpoint of a default local node.
pub const DEFAULT_PROFILER_URL: &str = "http://127.0.0.1:6060";
/// Where profiles are downloaded by default.
pub const DEFAULT_OUT: &str = "flamegraphs";
/// Longest wait for a session's blocks and the node's rendering, by default.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// Where the node's profiler listens, and how to print.
#[derive(Clone, Debug, clap::Args)]
pub struct EndpointArgs {
    /// The node's profiler JSON-RPC endpoint.
    #[arg(
        long = "profiler",
        alias = "network",
        global = true,
        env = "FETH_PROFILER_URL",
        default_value = DEFAULT_PROFILER_URL,
        value_name = "URL"
    )]
    pub url: String,
    /// Bearer token, required when the node serves the profiler off loopback.
    #[arg(
        long,
        global = true,
        env = "FETH_PROFILER_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Print JSON instead of a readable summary.
    #[arg(long, global = true)]
    pub json: bool,
    /// A node of a devnet of several nodes (`v0`, `f1`, …): its profiler,
    /// instead of --profiler.
    #[arg(long, global = true, value_name = "NAME")]
    pub node: Option<String>,
    /// The devnet folder --node is looked up in.
    #[arg(long, global = true, default_value = crate::devnet::DEFAULT_DIR)]
    pub dir: PathBuf,
}

impl EndpointArgs {
    /// The profiler URL: --node's in the devnet at --dir, else --profiler.
    pub fn profiler_url(&self) -> anyhow::Result<String> {
        match &self.node {
            Some(name) => {
                let state = crate::devnet::network::NetworkState::load(&self.dir)?;
                Ok(state.node(name)?.state.profiler_url())
            }
            None => Ok(self.url.clone()),
        }
    }
}

/// `feth profiler`: arm a live node's block profiler, or fetch what it captured and
/// disarm it.
#[derive(Clone, Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProfilerArgs {
    /// `status`; without a subcommand: fetch (or arm, with --enable).
    #[command(subcommand)]
    pub command: Option<ProfilerCommand>,
    /// Endpoint and output format.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    /// Arm the profiler from the next block on (without it: wait, disarm and fetch).
    #[arg(long)]
    pub enable: bool,
    /// With --enable: consecutive blocks to capture (node default 1).
    #[arg(long, requires = "enable")]
    pub blocks: Option<u32>,
    /// With --enable: sampling frequency in Hz, 1-1000 (node default 99).
    #[arg(long, requires = "enable")]
    pub frequency_hz: Option<u32>,
    /// Directory the profiles are downloaded into.
    #[arg(long, default_value = DEFAULT_OUT)]
    pub out: PathBuf,
    /// Download every profile the node keeps, not only the latest session's.
    #[arg(long)]
    pub all: bool,
    /// Disarm at once instead of waiting for the armed session's remaining blocks.
    #[arg(long)]
    pub no_wait: bool,
    /// Longest wait for the session's blocks and for the node's rendering, in seconds.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout_secs: u64,
    /// Also profile CometBFT over the armed blocks (the devnet's Go pprof at
    /// --dir, unless --cometbft-pprof) and draw the whole node in one
    /// flamegraph; with --enable: arm, profile both and fetch in one go.
    #[arg(long)]
    pub cometbft: bool,
    /// CometBFT's (or another Go node's) pprof address, its
    /// `rpc.pprof_laddr`, e.g. `http://127.0.0.1:6061`; implies --cometbft.
    #[arg(long, value_name = "URL")]
    pub cometbft_pprof: Option<String>,
    /// CometBFT's RPC, to name the blocks its profile covers (with
    /// --cometbft-pprof; the devnet's otherwise).
    #[arg(long, value_name = "URL", requires = "cometbft_pprof")]
    pub cometbft_rpc: Option<String>,
}

impl ProfilerArgs {
    /// Whether CometBFT is profiled with the session.
    fn with_cometbft(&self) -> bool {
        self.cometbft || self.cometbft_pprof.is_some()
    }
}

/// Subcommands of `feth profiler`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum ProfilerCommand {
    /// Show whether the profiler is armed, what it keeps and its last failure.
    Status,
    /// Capture CometBFT's own CPU (or any Go node's, from its pprof
    /// endpoint) over the next seconds, as a flamegraph labelled with the
    /// blocks it covers.
    Cometbft(CometArgs),
    /// Split a Go profile already taken (profile.pb.gz, or folded stacks
    /// rooted at a process label) by role, with the frames that decided
    /// each: how to check a role table written for a fork.
    Roles(super::go_blocks::RolesArgs),
}

/// `feth profiler cometbft`: where the node's Go pprof is, and how long.
#[derive(Clone, Debug, clap::Args)]
pub struct CometArgs {
    /// The node's Go pprof address (`rpc.pprof_laddr`), e.g.
    /// `http://127.0.0.1:6061`; default: the devnet's at --dir (or --node's).
    #[arg(long, value_name = "URL")]
    pub pprof: Option<String>,
    /// CometBFT's RPC, to name the chain and the blocks the window covers;
    /// default: the devnet's, when --pprof is not given.
    #[arg(long, value_name = "URL")]
    pub comet_rpc: Option<String>,
    /// Seconds of profile (1-300).
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// The root frame of every stack: the process's name.
    #[arg(long, default_value = "cometbft")]
    pub label: String,
    /// Directory the capture is written into.
    #[arg(long, default_value = DEFAULT_OUT)]
    pub out: PathBuf,
    /// Profile per block instead: consecutive captures aligned to block
    /// boundaries until this many heights are covered (1-1000), each
    /// sample put in a role (check_tx, deliver_tx, commit, …), with the
    /// node's allocation and lock profiles over the same window.
    #[arg(long, value_name = "N")]
    pub blocks: Option<u32>,
    /// With --blocks: seconds per capture (default: the chain's block
    /// interval, rounded, at least 1).
    #[arg(long, requires = "blocks", value_name = "S")]
    pub capture_secs: Option<u64>,
    /// With --blocks: a role table of one's own (see agentd/roles/
    /// cosmos-sdk.toml), tried before the built-in rules.
    #[arg(long, requires = "blocks", value_name = "FILE")]
    pub roles: Option<PathBuf>,
    /// With --blocks: longest the session may take, in seconds.
    #[arg(long, requires = "blocks", default_value_t = 600)]
    pub timeout_secs: u64,
}

/// Runs `feth profiler …`.
pub async fn run(args: ProfilerArgs) -> anyhow::Result<()> {
    match &args.command {
        Some(ProfilerCommand::Cometbft(comet)) => {
            return capture_comet(comet, &args.endpoint).await
        }
        Some(ProfilerCommand::Roles(roles)) => {
            return super::go_blocks::roles(roles, args.endpoint.json)
        }
        _ => {}
    }
    let url = args.endpoint.profiler_url()?;
    let client = ProfilerClient::new(&url, args.endpoint.token.as_deref())?;
    match (args.command.is_some(), args.enable) {
        (true, _) => show_status(&client, args.endpoint.json).await,
        (false, true) if args.with_cometbft() => {
            arm(&client, &args).await?;
            collect(&client, &args).await
        }
        (false, true) => enable(&client, &args).await,
        (false, false) => collect(&client, &args).await,
    }
}

/// A capture's configuration: `pprof` and `rpc`, else the devnet's (at
/// --dir, or --node's).
pub(super) fn comet_config(
    pprof: Option<&String>,
    rpc: Option<&String>,
    endpoint: &EndpointArgs,
    out: &std::path::Path,
) -> anyhow::Result<CaptureConfig> {
    let recipe = endpoint.dir.join(crate::devnet::recipe::STATE_FILE);
    let (pprof, rpc) = match pprof {
        Some(url) => (url.clone(), rpc.cloned()),
        None if endpoint.node.is_none() && recipe.is_file() => {
            let state = crate::devnet::recipe::RecipeState::load(&endpoint.dir)?;
            let url = state.urls.pprof.clone().with_context(|| {
                format!(
                    "recipe `{}` names no Go pprof endpoint for the devnet at {}: pass --pprof URL",
                    state.recipe.name,
                    endpoint.dir.display()
                )
            })?;
            (url, rpc.cloned().or(Some(state.urls.comet_rpc)))
        }
        None => {
            let state = match &endpoint.node {
                Some(name) => {
                    let net = crate::devnet::network::NetworkState::load(&endpoint.dir)?;
                    net.node(name)?.state.clone()
                }
                None => crate::devnet::DevnetState::load(&endpoint.dir).with_context(|| {
                    format!(
                        "no --pprof given and no devnet at {}: pass --pprof URL (the node's rpc.pprof_laddr)",
                        endpoint.dir.display()
                    )
                })?,
            };
            let url = state.cometbft_pprof_url().with_context(|| {
                format!(
                    "the devnet at {} was made before CometBFT served pprof: recreate it (feth devnet up --fresh) or pass --pprof",
                    endpoint.dir.display()
                )
            })?;
            (url, rpc.cloned().or_else(|| Some(state.rpc_url())))
        }
    };
    Ok(CaptureConfig {
        pprof_url: pprof,
        seconds: 1,
        label: "cometbft".to_string(),
        comet_rpc: rpc,
        out: out.to_path_buf(),
    })
}

/// Captures CometBFT's CPU profile with a progress bar, then prints what
/// it found (JSON with --json).
async fn capture_comet(args: &CometArgs, endpoint: &EndpointArgs) -> anyhow::Result<()> {
    if let Some(blocks) = args.blocks {
        return super::go_blocks::run(args, blocks, endpoint).await;
    }
    let cfg = CaptureConfig {
        seconds: args.seconds,
        label: args.label.clone(),
        ..comet_config(
            args.pprof.as_ref(),
            args.comet_rpc.as_ref(),
            endpoint,
            &args.out,
        )?
    };
    let bar = progress(
        endpoint.json,
        cfg.seconds,
        "{spinner} profiling {msg} {pos}/{len} s",
    );
    bar.set_message(cfg.pprof_url.clone());
    let ticker = {
        let bar = bar.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                bar.inc(1);
            }
        })
    };
    let capture = comet_pprof::capture(&cfg).await;
    ticker.abort();
    bar.finish_and_clear();
    let capture = capture?;
    if endpoint.json {
        println!("{}", serde_json::to_string_pretty(&capture)?);
        return Ok(());
    }
    let blocks = capture.heights.map_or(String::new(), |(a, b)| {
        format!(" over blocks {}–{b}", a + 1)
    });
    println!(
        "{}: {:.1} s{blocks}, {} samples, {:.2} cores busy",
        cfg.label, capture.seconds, capture.samples, capture.cores
    );
    println!("  most samples of their own:");
    for (function, n) in capture.top.iter().take(5) {
        let share = 100.0 * *n as f64 / capture.samples.max(1) as f64;
        println!("    {share:5.1} %  {function}");
    }
    println!("  written to {}", capture.dir.display());
    Ok(())
}

async fn show_status(client: &ProfilerClient, json: bool) -> anyhow::Result<()> {
    let status = client.status().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print_status(client.url(), &status);
    }
    Ok(())
}

fn print_status(url: &str, status: &Status) {
    println!(
        "profiler at {url}: {} (chain {})",
        if status.armed { "ARMED" } else { "disarmed" },
        status.chain_id
    );
    if status.warming_up {
        println!("  warming up for a new session");
    }
    if let Some(session) = &status.session {
        println!("  {}", describe_session(session));
    }
    println!(
        "  profiles kept: {} ({} of {}, at most {} profiles), {} still rendering",
        status.profiles,
        human_bytes(status.profiles_bytes),
        human_bytes(status.retention.max_bytes),
        status.retention.max_profiles,
        status.pending_renders
    );
    println!(
        "  captured since start: {}, failures: {}",
        status.captured_total, status.failures_total
    );
    let cost = &status.consensus_cost;
    if cost.blocks > 0 {
        println!(
            "  consensus thread in armed hooks: {:.1} µs per block (longest call {:.1} µs, {} blocks)",
            cost.mean_block_us(),
            cost.max_call_ns as f64 / 1e3,
            cost.blocks
        );
    }
    if let Some(error) = &status.last_error {
        println!(
            "  last failure ({} at height {}): {}",
            error.stage,
            error.height.map_or("-".into(), |h| h.to_string()),
            error.message
        );
    }
}

/// Arms the node's profiler with the command line's options.
async fn arm(client: &ProfilerClient, args: &ProfilerArgs) -> anyhow::Result<SessionStatus> {
    Ok(client
        .enable(EnableParams {
            blocks: args.blocks.map(i64::from),
            frequency_hz: args.frequency_hz.map(i64::from),
        })
        .await?)
}

async fn enable(client: &ProfilerClient, args: &ProfilerArgs) -> anyhow::Result<()> {
    let session = arm(client, args).await?;
    if args.endpoint.json {
        println!("{}", serde_json::to_string_pretty(&session)?);
    } else {
        println!(
            "armed session {}: the next {} block(s) at {} Hz",
            session.id, session.blocks_requested, session.frequency_hz
        );
        println!("fetch them with: feth profiler --profiler {}", client.url());
    }
    Ok(())
}

/// What `feth profiler` (fetch) did, printed as JSON with `--json`.
#[derive(Debug, Serialize)]
struct CollectReport {
    chain_id: String,
    session: Option<SessionStatus>,
    dir: PathBuf,
    profiles: Vec<ProfileSummary>,
    downloaded_files: usize,
    already_present: usize,
    merged_dir: Option<PathBuf>,
    node_profile: Option<NodeProfileFiles>,
    warnings: Vec<String>,
}

/// Waits for the armed session (profiling CometBFT meanwhile, when asked),
/// disarms, downloads and merges.
async fn collect(client: &ProfilerClient, args: &ProfilerArgs) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    let json = args.endpoint.json;
    let comet = match args.with_cometbft() {
        true => Some(comet_config(
            args.cometbft_pprof.as_ref(),
            args.cometbft_rpc.as_ref(),
            &args.endpoint,
            &args.out,
        )?),
        false => None,
    };
    let windows = async {
        match &comet {
            Some(cfg) => Some(node_profile::comet_while_armed(cfg, client, deadline).await),
            None => None,
        }
    };
    let (finished, windows) = tokio::join!(finish_session(client, args, deadline), windows);
    let (status, session, mut warnings) = finished?;
    let listed = client.list().await?;
    let session_id = session
        .as_ref()
        .map(|s| s.id)
        .or_else(|| listed.iter().map(|p| p.session_id).max());
    let profiles: Vec<ProfileSummary> = listed
        .into_iter()
        .filter(|p| args.all || Some(p.session_id) == session_id)
        .collect();

    let chain_dir = args.out.join(&status.chain_id);
    let plan = download::plan_download(&chain_dir, &profiles);
    let already_present = plan.already_present;
    let downloaded_files =
        download_with_progress(client, &chain_dir, &profiles, plan, json).await?;
    let session_profiles: Vec<&ProfileSummary> = profiles
        .iter()
        .filter(|p| Some(p.session_id) == session_id)
        .collect();
    let merged_dir = merge_session(&chain_dir, &session_profiles)?;
    warnings.extend(failure_warning(&status, session.as_ref()));
    let node_profile = match windows {
        Some(windows) => whole_node(&chain_dir, &session_profiles, windows)
            .map_err(|e| warnings.push(format!("no whole-node profile: {e:#}")))
            .ok(),
        None => None,
    };

    let report = CollectReport {
        chain_id: status.chain_id.clone(),
        session,
        dir: chain_dir,
        profiles,
        downloaded_files,
        already_present,
        merged_dir,
        node_profile,
        warnings,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_collect_report(&report);
    }
    Ok(())
}

/// The whole node's profile of the session's blocks and CometBFT's
/// `windows` over them, in `<chain_dir>/node-<first>-<last>/`.
fn whole_node(
    chain_dir: &std::path::Path,
    blocks: &[&ProfileSummary],
    windows: anyhow::Result<Vec<comet_pprof::Window>>,
) -> anyhow::Result<NodeProfileFiles> {
    let windows = windows.context("profiling CometBFT failed")?;
    if windows.is_empty() {
        anyhow::bail!(
            "no session was armed while CometBFT could be profiled: arm and fetch in one go with --enable --cometbft"
        );
    }
    let (Some(first), Some(last)) = (
        blocks.iter().map(|p| p.height).min(),
        blocks.iter().map(|p| p.height).max(),
    ) else {
        anyhow::bail!("the session captured no block");
    };
    let dirs: Vec<PathBuf> = blocks
        .iter()
        .map(|p| chain_dir.join(p.height.to_string()))
        .collect();
    let chain = blocks[0].chain_id.as_str();
    let title = format!("{chain} blocks {first}-{last}: the whole node, abcid and CometBFT");
    let dir = chain_dir.join(format!("node-{first}-{last}"));
    let (files, _) = node_profile::write_blocks("abcid", &dirs, &windows, &dir, &title)?;
    Ok(files)
}

/// Waits for the armed session (unless `--no-wait`), disarms and waits for the node's
/// rendering. Returns the node's status afterwards, the session, and warnings.
async fn finish_session(
    client: &ProfilerClient,
    args: &ProfilerArgs,
    deadline: Instant,
) -> anyhow::Result<(Status, Option<SessionStatus>, Vec<String>)> {
    let json = args.endpoint.json;
    let mut warnings = Vec::new();
    let status = client.status().await?;
    validate_chain_id(&status.chain_id)
        .with_context(|| format!("node reports an unsafe chain id {:?}", status.chain_id))?;
    if status.armed && !args.no_wait {
        warnings.extend(wait_for_session(client, &status, deadline, json).await?);
    }
    let disabled = client.disable().await?;
    if disabled.was_armed {
        let mut note = "disarmed the profiler before its session finished".to_string();
        if let Some(height) = disabled.discarded_height {
            note.push_str(&format!("; the capture of block {height} was discarded"));
        }
        warnings.push(note);
    }
    warnings.extend(wait_for_renders(client, deadline, json).await?);
    let status = client.status().await?;
    let session = disabled.session.or(status.session.clone());
    Ok((status, session, warnings))
}

/// The node's last failure, if it happened during `session`. Session ids are arming times
/// in Unix ms.
fn failure_warning(status: &Status, session: Option<&SessionStatus>) -> Option<String> {
    let since = session.map_or(0, |s| s.id);
    let error = status.last_error.as_ref().filter(|e| e.unix_ms >= since)?;
    Some(format!(
        "the node's profiler reports a failure ({} at height {}): {}",
        error.stage,
        error.height.map_or("-".into(), |h| h.to_string()),
        error.message
    ))
}

async fn wait_for_session(
    client: &ProfilerClient,
    status: &Status,
    deadline: Instant,
    quiet: bool,
) -> anyhow::Result<Option<String>> {
    let requested = status.session.as_ref().map_or(1, |s| s.blocks_requested);
    let bar = progress(
        quiet,
        u64::from(requested),
        "{spinner} capturing blocks {pos}/{len} {msg}",
    );
    let waited = client
        .wait_until(
            deadline.saturating_duration_since(Instant::now()),
            |status| {
                if let Some(session) = &status.session {
                    bar.set_position(u64::from(session.blocks_captured));
                    bar.set_message(
                        session
                            .in_progress_height
                            .map_or(String::new(), |h| format!("(at height {h})")),
                    );
                }
                !status.armed
            },
        )
        .await;
    timed_out(waited, bar, || {
        "timed out waiting for the session's blocks; is the chain producing blocks?".into()
    })
}

async fn wait_for_renders(
    client: &ProfilerClient,
    deadline: Instant,
    quiet: bool,
) -> anyhow::Result<Option<String>> {
    let spinner = progress(quiet, 0, "{spinner} node is rendering {msg}");
    let mut pending = 0;
    let waited = client
        .wait_until(
            deadline.saturating_duration_since(Instant::now()),
            |status| {
                pending = status.pending_renders;
                spinner.set_message(format!("{pending} block(s)"));
                pending == 0
            },
        )
        .await;
    timed_out(waited, spinner, || {
        format!("timed out with {pending} block(s) still rendering on the node; run again later")
    })
}

/// A wait's end: `None` when it ended, `warning`'s text when it timed out (the bar
/// left on screen), the error otherwise.
fn timed_out(
    waited: Result<Status, ClientError>,
    bar: ProgressBar,
    warning: impl FnOnce() -> String,
) -> anyhow::Result<Option<String>> {
    match waited {
        Ok(_) => {
            bar.finish_and_clear();
            Ok(None)
        }
        Err(ClientError::Timeout { .. }) => {
            bar.abandon();
            Ok(Some(warning()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Downloads the planned files with a progress bar, then every profile's metadata;
/// returns how many files were downloaded.
async fn download_with_progress(
    client: &ProfilerClient,
    chain_dir: &std::path::Path,
    profiles: &[ProfileSummary],
    plan: DownloadPlan,
    quiet: bool,
) -> anyhow::Result<usize> {
    let bar = progress(
        quiet,
        plan.files.len() as u64,
        "{bar:30} {pos}/{len} files {msg}",
    );
    for file in &plan.files {
        bar.set_message(format!("height {}", file.height));
        download::download_file(client, chain_dir, *file).await?;
        bar.inc(1);
    }
    download::write_metadata(chain_dir, profiles)?;
    bar.finish_and_clear();
    Ok(plan.files.len())
}

fn print_collect_report(report: &CollectReport) {
    match &report.session {
        Some(session) => println!("chain {}: {}", report.chain_id, describe_session(session)),
        None => println!("chain {}: no session on record", report.chain_id),
    }
    if report.profiles.is_empty() {
        println!("no profiles to fetch");
    } else {
        print_profile_table(report);
    }
    if let Some(dir) = &report.merged_dir {
        println!("merged flamegraph: {}", dir.join("all.svg").display());
    }
    if let Some(node) = &report.node_profile {
        let parts: Vec<String> = node
            .processes
            .iter()
            .map(|p| format!("{} {:.2} cores ({:.0} %)", p.process, p.cores, p.share_pct))
            .collect();
        println!(
            "whole node: {} ({})",
            node.dir.join("node.svg").display(),
            parts.join(", ")
        );
    }
    for warning in &report.warnings {
        println!("warning: {warning}");
    }
}

fn print_profile_table(report: &CollectReport) {
    let works: Vec<String> = Work::ALL.iter().map(|w| format!("{w:>10}")).collect();
    println!(
        "{:>10} {:>8} {} {:>10} {:>10} {:>8}  files",
        "height",
        "samples",
        works.join(" "),
        "window",
        "execution",
        "lag"
    );
    for p in &report.profiles {
        let execution = p
            .execution_ms
            .map_or_else(|| "-".to_string(), |ms| format!("{ms:.0}ms"));
        let works: Vec<String> = Work::ALL
            .iter()
            .map(|w| format!("{:>10}", work_cell(p, *w)))
            .collect();
        println!(
            "{:>10} {:>8} {} {:>8.0}ms {:>10} {:>6.1}ms  {}",
            p.height,
            p.samples,
            works.join(" "),
            p.duration_ms,
            execution,
            p.start_delay_ms.max(p.end_delay_ms),
            report.dir.join(p.height.to_string()).display()
        );
    }
    println!(
        "(samples by work, whichever thread did it: admission on web3 workers is check_tx, \
         Commit on the consensus thread is commit)"
    );
    println!(
        "(window: previous Commit end to this Commit end; execution: FinalizeBlock start to \
         Commit end; lag: how late the window opened or closed after the node's calls)"
    );
    println!(
        "{} file(s) downloaded, {} profile(s) already present",
        report.downloaded_files, report.already_present
    );
}

/// One kind of work's samples in a block; a profile written before work was told apart
/// has only its check_tx and deliver_tx counts.
fn work_cell(p: &ProfileSummary, work: Work) -> String {
    match (p.work_samples.get(&work), work) {
        (Some(n), _) => n.to_string(),
        (None, Work::CheckTx) => p.check_tx_samples.to_string(),
        (None, Work::DeliverTx) => p.deliver_tx_samples.to_string(),
        (None, _) => "-".to_string(),
    }
}

fn describe_session(session: &SessionStatus) -> String {
    let state = match session.state {
        SessionState::Armed => "armed",
        SessionState::Completed => "completed",
        SessionState::Disabled => "disabled",
        SessionState::Failed => "failed",
    };
    let mut text = format!(
        "session {} {state}: {}/{} blocks captured at {} Hz",
        session.id, session.blocks_captured, session.blocks_requested, session.frequency_hz
    );
    if session.blocks_discarded > 0 {
        text.push_str(&format!(", {} discarded", session.blocks_discarded));
    }
    if let Some(height) = session.in_progress_height {
        text.push_str(&format!(", capturing height {height}"));
    }
    text
}

/// A progress bar (or spinner when `len` is 0) on stderr; hidden when `hidden`.
pub(super) fn progress(hidden: bool, len: u64, template: &str) -> ProgressBar {
    if hidden {
        return ProgressBar::hidden();
    }
    let bar = if len == 0 {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::new(len)
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cmd::{Cli, Command};

    /// Parses `feth profiler ARGS…` with the real command line.
    fn parse(args: &[&str]) -> Result<ProfilerArgs, clap::Error> {
        let argv = ["feth", "profiler"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(argv)?.command {
            Command::Profiler(args) => Ok(args),
            other => panic!("`feth profiler` parsed as {other:?}"),
        }
    }

    #[test]
    fn node_names_a_node_of_a_devnet_and_a_missing_one_is_a_clear_error() {
        let args = parse(&["--enable", "--node", "v2", "--dir", "/nonexistent"]).expect("parses");
        assert_eq!(args.endpoint.node.as_deref(), Some("v2"));
        let err = args.endpoint.profiler_url().unwrap_err().to_string();
        assert!(err.contains("no network in /nonexistent"), "{err}");
        let args = parse(&[]).expect("parses");
        assert_eq!(args.endpoint.profiler_url().unwrap(), DEFAULT_PROFILER_URL);
    }

    #[test]
    fn no_optional_flag_gives_the_defaults() {
        let args = parse(&[]).expect("bare `feth profiler` parses");
        assert_eq!(args.endpoint.url, DEFAULT_PROFILER_URL);
        assert_eq!(args.endpoint.token, None);
        assert!(!args.endpoint.json);
        assert!(args.command.is_none());
        assert!(!args.enable && !args.all && !args.no_wait);
        assert_eq!((args.blocks, args.frequency_hz), (None, None));
        assert_eq!(args.out, PathBuf::from(DEFAULT_OUT));
        assert_eq!(args.timeout_secs, DEFAULT_TIMEOUT_SECS);
    }

    #[test]
    fn the_endpoint_is_profiler_and_network_is_a_hidden_alias() {
        let url = "http://127.0.0.1:1";
        for flag in ["--profiler", "--network"] {
            let args = parse(&["status", flag, url]).expect("status with an endpoint");
            assert_eq!(args.endpoint.url, url, "{flag}");
            assert!(matches!(args.command, Some(ProfilerCommand::Status)));
        }
        let help = parse(&["--help"])
            .expect_err("--help stops parsing")
            .to_string();
        assert!(help.contains("--profiler <URL>"), "{help}");
        assert!(!help.contains("--network"), "the alias is hidden: {help}");
    }

    #[test]
    fn enable_options_are_parsed_and_need_enable() {
        let args = parse(&[
            "--enable",
            "--blocks",
            "3",
            "--frequency-hz",
            "199",
            "--json",
        ])
        .expect("--enable with options");
        assert!(args.enable && args.endpoint.json);
        assert_eq!((args.blocks, args.frequency_hz), (Some(3), Some(199)));
        assert!(
            parse(&["--blocks", "3"]).is_err(),
            "--blocks needs --enable"
        );
        assert!(parse(&["--frequency-hz", "99"]).is_err(), "needs --enable");
        assert!(parse(&["status", "--enable"]).is_err());
        assert!(parse(&["--enable", "--blocks", "-1"]).is_err());
    }

    #[test]
    fn cometbft_options_parse_and_its_rpc_needs_its_pprof() {
        let args = parse(&["--enable", "--blocks", "4", "--cometbft"]).expect("parses");
        assert!(args.enable && args.with_cometbft());
        let args = parse(&[
            "--cometbft-pprof",
            "http://127.0.0.1:6061",
            "--cometbft-rpc",
            "http://127.0.0.1:26657",
        ])
        .expect("parses");
        assert!(args.with_cometbft() && !args.cometbft);
        assert!(!parse(&[]).expect("parses").with_cometbft());
        assert!(parse(&["--cometbft-rpc", "http://127.0.0.1:26657"]).is_err());
    }

    #[test]
    fn sessions_and_sizes_read_well() {
        let session = SessionStatus {
            id: 7,
            state: SessionState::Armed,
            frequency_hz: 99,
            blocks_requested: 3,
            blocks_started: 2,
            blocks_captured: 1,
            blocks_discarded: 1,
            in_progress_height: Some(12),
        };
        assert_eq!(
            describe_session(&session),
            "session 7 armed: 1/3 blocks captured at 99 Hz, 1 discarded, capturing height 12"
        );
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}

//! `feth profiler` and `feth flamegraph diff`: clap-derive arguments and async entry points,
//! wired into the `feth` binary by `agentd`.
//!
//! * `feth profiler --network URL --enable [--blocks N] [--frequency-hz F]` arms the node.
//! * `feth profiler --network URL` waits for the armed session to finish, disarms, and
//!   downloads its profiles into `flamegraphs/<chain-id>/<height>/`, plus a merged
//!   flamegraph of the session in `flamegraphs/<chain-id>/merged-<first>-<last>/`.
//! * `feth profiler status` shows what the node's profiler is doing.
//! * `feth flamegraph diff BEFORE AFTER [-o OUT.svg]` draws a differential flamegraph.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::api::{
    EnableParams, FetchParams, HeightSelector, ProfileKind, ProfileSummary, SessionState,
    SessionStatus, Status,
};
use crate::client::ProfilerClient;
use crate::config::validate_chain_id;
use crate::diff::{diff_flamegraph, load_profile_set, DiffOptions, FrameChange};
use crate::folded::FoldedStacks;
use crate::role::RoleFilter;
use crate::store::META_FILE;

/// How often the CLI polls the node while waiting.
const POLL: Duration = Duration::from_millis(500);

/// Where the node's profiler listens, and how to print.
#[derive(Clone, Debug, clap::Args)]
pub struct EndpointArgs {
    /// The node's profiler JSON-RPC endpoint.
    #[arg(
        long,
        global = true,
        env = "FETH_PROFILER_URL",
        default_value = "http://127.0.0.1:6060"
    )]
    pub network: String,
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
    #[arg(long, default_value = "flamegraphs")]
    pub out: PathBuf,
    /// Download every profile the node keeps, not only the latest session's.
    #[arg(long)]
    pub all: bool,
    /// Disarm at once instead of waiting for the armed session's remaining blocks.
    #[arg(long)]
    pub no_wait: bool,
    /// Longest wait for the session's blocks and for the node's rendering, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout_secs: u64,
}

/// Subcommands of `feth profiler`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum ProfilerCommand {
    /// Show whether the profiler is armed, what it keeps and its last failure.
    Status,
}

/// `feth flamegraph`: work on downloaded profiles.
#[derive(Clone, Debug, clap::Args)]
pub struct FlamegraphArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: FlamegraphCommand,
}

/// Subcommands of `feth flamegraph`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum FlamegraphCommand {
    /// Differential flamegraph of two sets of profiles: red grew, blue shrank.
    Diff(DiffArgs),
}

/// `feth flamegraph diff BEFORE AFTER`.
#[derive(Clone, Debug, clap::Args)]
pub struct DiffArgs {
    /// Profiles before the change: a .folded file, a block directory, or a directory of
    /// block directories (e.g. `flamegraphs/<chain-id>`), merged.
    pub before: PathBuf,
    /// Profiles after the change, same forms.
    pub after: PathBuf,
    /// Output SVG.
    #[arg(short, long, default_value = "flamegraphs/diff.svg")]
    pub output: PathBuf,
    /// Threads to compare.
    #[arg(long, value_enum, default_value_t = RoleFilter::All)]
    pub role: RoleFilter,
    /// Compare absolute sample counts instead of scaling BEFORE to AFTER's total.
    #[arg(long)]
    pub no_normalize: bool,
    /// How many frames the summary lists.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print JSON instead of a readable summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `feth profiler …`.
pub async fn run_profiler(args: ProfilerArgs) -> anyhow::Result<()> {
    let client = ProfilerClient::new(&args.endpoint.network, args.endpoint.token.as_deref())?;
    match (&args.command, args.enable) {
        (Some(ProfilerCommand::Status), _) => show_status(&client, args.endpoint.json).await,
        (None, true) => enable(&client, &args).await,
        (None, false) => collect(&client, &args).await,
    }
}

async fn show_status(client: &ProfilerClient, json: bool) -> anyhow::Result<()> {
    let status = client.status().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(());
    }
    println!(
        "profiler at {}: {} (chain {})",
        client.url(),
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
    Ok(())
}

async fn enable(client: &ProfilerClient, args: &ProfilerArgs) -> anyhow::Result<()> {
    let session = client
        .enable(EnableParams {
            blocks: args.blocks.map(i64::from),
            frequency_hz: args.frequency_hz.map(i64::from),
        })
        .await?;
    if args.endpoint.json {
        println!("{}", serde_json::to_string_pretty(&session)?);
    } else {
        println!(
            "armed session {}: the next {} block(s) at {} Hz",
            session.id, session.blocks_requested, session.frequency_hz
        );
        println!("fetch them with: feth profiler --network {}", client.url());
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
    warnings: Vec<String>,
}

async fn collect(client: &ProfilerClient, args: &ProfilerArgs) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    let json = args.endpoint.json;
    let mut warnings = Vec::new();

    let status = client.status().await?;
    validate_chain_id(&status.chain_id)
        .with_context(|| format!("node reports an unsafe chain id {:?}", status.chain_id))?;
    if status.armed && !args.no_wait {
        if let Some(warning) = wait_for_session(client, &status, deadline, json).await? {
            warnings.push(warning);
        }
    }
    let disabled = client.disable().await?;
    if disabled.was_armed {
        let mut note = "disarmed the profiler before its session finished".to_string();
        if let Some(height) = disabled.discarded_height {
            note.push_str(&format!("; the capture of block {height} was discarded"));
        }
        warnings.push(note);
    }
    if let Some(warning) = wait_for_renders(client, deadline, json).await? {
        warnings.push(warning);
    }
    let status = client.status().await?;
    let session = disabled.session.or(status.session.clone());
    // Session ids are arming times in Unix ms: report failures of this session only.
    let since = session.as_ref().map_or(0, |s| s.id);
    if let Some(error) = status.last_error.as_ref().filter(|e| e.unix_ms >= since) {
        warnings.push(format!(
            "the node's profiler reports a failure ({} at height {}): {}",
            error.stage,
            error.height.map_or("-".into(), |h| h.to_string()),
            error.message
        ));
    }

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
    let (downloaded_files, already_present) = download(client, &chain_dir, &profiles, json).await?;
    let session_profiles: Vec<&ProfileSummary> = profiles
        .iter()
        .filter(|p| Some(p.session_id) == session_id)
        .collect();
    let merged_dir = merge_session(&chain_dir, &session_profiles)?;

    let report = CollectReport {
        chain_id: status.chain_id.clone(),
        session,
        dir: chain_dir,
        profiles,
        downloaded_files,
        already_present,
        merged_dir,
        warnings,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_collect_report(&report);
    }
    Ok(())
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
    loop {
        let status = client.status().await?;
        if let Some(session) = &status.session {
            bar.set_position(u64::from(session.blocks_captured));
            bar.set_message(
                session
                    .in_progress_height
                    .map_or(String::new(), |h| format!("(at height {h})")),
            );
        }
        if !status.armed {
            bar.finish_and_clear();
            return Ok(None);
        }
        if Instant::now() >= deadline {
            bar.abandon();
            return Ok(Some(
                "timed out waiting for the session's blocks; is the chain producing blocks?".into(),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn wait_for_renders(
    client: &ProfilerClient,
    deadline: Instant,
    quiet: bool,
) -> anyhow::Result<Option<String>> {
    let spinner = progress(quiet, 0, "{spinner} node is rendering {msg}");
    loop {
        let pending = client.status().await?.pending_renders;
        if pending == 0 {
            spinner.finish_and_clear();
            return Ok(None);
        }
        spinner.set_message(format!("{pending} block(s)"));
        if Instant::now() >= deadline {
            spinner.abandon();
            return Ok(Some(format!(
                "timed out with {pending} block(s) still rendering on the node; run again later"
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Downloads every file of `profiles` not already present; returns (files downloaded,
/// profiles already complete locally).
async fn download(
    client: &ProfilerClient,
    chain_dir: &Path,
    profiles: &[ProfileSummary],
    quiet: bool,
) -> anyhow::Result<(usize, usize)> {
    let mut todo = Vec::new();
    let mut already_present = 0;
    for profile in profiles {
        let dir = chain_dir.join(profile.height.to_string());
        if is_complete_locally(&dir, profile) {
            already_present += 1;
            continue;
        }
        // Only names this crate produces are fetched, so a node cannot steer writes.
        for kind in ProfileKind::ALL {
            for role in RoleFilter::ALL {
                if profile.files.contains(&kind.file_name(role)) {
                    todo.push((profile, kind, role));
                }
            }
        }
    }
    let bar = progress(quiet, todo.len() as u64, "{bar:30} {pos}/{len} files {msg}");
    for (profile, kind, role) in &todo {
        let dir = chain_dir.join(profile.height.to_string());
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        bar.set_message(format!("height {}", profile.height));
        let response = client
            .fetch(FetchParams {
                height: HeightSelector::Height(profile.height),
                kind: *kind,
                role: *role,
            })
            .await?;
        let bytes = response
            .decode()
            .with_context(|| format!("decoding {} of height {}", response.file, profile.height))?;
        let path = dir.join(kind.file_name(*role));
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        bar.inc(1);
    }
    for profile in profiles {
        let dir = chain_dir.join(profile.height.to_string());
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(META_FILE);
        fs::write(&path, serde_json::to_vec_pretty(profile)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    bar.finish_and_clear();
    Ok((todo.len(), already_present))
}

fn is_complete_locally(dir: &Path, profile: &ProfileSummary) -> bool {
    let same_meta = fs::read(dir.join(META_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<ProfileSummary>(&bytes).ok())
        .is_some_and(|local| &local == profile);
    same_meta && profile.files.iter().all(|f| dir.join(f).is_file())
}

/// Merges a session's downloaded blocks into one flamegraph per role (when it has more
/// than one block with samples).
fn merge_session(
    chain_dir: &Path,
    profiles: &[&ProfileSummary],
) -> anyhow::Result<Option<PathBuf>> {
    let with_samples: Vec<&&ProfileSummary> = profiles.iter().filter(|p| p.samples > 0).collect();
    let (Some(first), Some(last)) = (
        with_samples.iter().map(|p| p.height).min(),
        with_samples.iter().map(|p| p.height).max(),
    ) else {
        return Ok(None);
    };
    if with_samples.len() < 2 {
        return Ok(None);
    }
    let mut merged = FoldedStacks::new();
    for profile in &with_samples {
        let path = chain_dir
            .join(profile.height.to_string())
            .join(ProfileKind::Folded.file_name(RoleFilter::All));
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        merged.merge(&FoldedStacks::parse(&text)?);
    }
    let dir = chain_dir.join(format!("merged-{first}-{last}"));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let chain_id = with_samples[0].chain_id.as_str();
    for role in RoleFilter::ALL {
        let stacks = merged.filter(role);
        if stacks.is_empty() {
            continue;
        }
        let title = format!(
            "{chain_id} blocks {first}-{last} merged ({} blocks): {role}",
            with_samples.len()
        );
        let subtitle = format!("{} samples; root frame = thread", stacks.total());
        let svg = stacks.to_svg(&title, Some(&subtitle))?;
        for (kind, bytes) in [
            (ProfileKind::Svg, svg),
            (ProfileKind::Folded, stacks.to_text().into_bytes()),
        ] {
            let path = dir.join(kind.file_name(role));
            fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(Some(dir))
}

fn print_collect_report(report: &CollectReport) {
    match &report.session {
        Some(session) => println!("chain {}: {}", report.chain_id, describe_session(session)),
        None => println!("chain {}: no session on record", report.chain_id),
    }
    if report.profiles.is_empty() {
        println!("no profiles to fetch");
    } else {
        println!(
            "{:>10} {:>8} {:>9} {:>11} {:>10} {:>10} {:>8}  files",
            "height", "samples", "check_tx", "deliver_tx", "window", "execution", "lag"
        );
        for p in &report.profiles {
            let execution = p
                .execution_ms
                .map_or_else(|| "-".to_string(), |ms| format!("{ms:.0}ms"));
            println!(
                "{:>10} {:>8} {:>9} {:>11} {:>8.0}ms {:>10} {:>6.1}ms  {}",
                p.height,
                p.samples,
                p.check_tx_samples,
                p.deliver_tx_samples,
                p.duration_ms,
                execution,
                p.start_delay_ms.max(p.end_delay_ms),
                report.dir.join(p.height.to_string()).display()
            );
        }
        println!(
            "(window: previous Commit end to this Commit end; execution: FinalizeBlock start to \
             Commit end; lag: how late the window opened or closed after the node's calls)"
        );
        println!(
            "{} file(s) downloaded, {} profile(s) already present",
            report.downloaded_files, report.already_present
        );
    }
    if let Some(dir) = &report.merged_dir {
        println!("merged flamegraph: {}", dir.join("all.svg").display());
    }
    for warning in &report.warnings {
        println!("warning: {warning}");
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

fn progress(hidden: bool, len: u64, template: &str) -> ProgressBar {
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

fn human_bytes(bytes: u64) -> String {
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

/// What `feth flamegraph diff` did, printed as JSON with `--json`.
#[derive(Debug, Serialize)]
struct DiffReport {
    output: PathBuf,
    role: RoleFilter,
    normalized: bool,
    before: SetReport,
    after: SetReport,
    top_changes: Vec<FrameChange>,
}

#[derive(Debug, Serialize)]
struct SetReport {
    path: PathBuf,
    profiles: usize,
    samples: u64,
}

/// Runs `feth flamegraph …`.
pub async fn run_flamegraph(args: FlamegraphArgs) -> anyhow::Result<()> {
    match args.command {
        FlamegraphCommand::Diff(diff) => tokio::task::spawn_blocking(move || run_diff(&diff))
            .await
            .context("the diff task failed")?,
    }
}

fn run_diff(args: &DiffArgs) -> anyhow::Result<()> {
    let before = load_profile_set(&args.before, args.role)
        .with_context(|| format!("loading BEFORE from {}", args.before.display()))?;
    let after = load_profile_set(&args.after, args.role)
        .with_context(|| format!("loading AFTER from {}", args.after.display()))?;
    if before.stacks.is_empty() || after.stacks.is_empty() {
        bail!(
            "no {} samples in {}",
            args.role,
            if before.stacks.is_empty() {
                "BEFORE"
            } else {
                "AFTER"
            }
        );
    }
    let options = DiffOptions {
        normalize: !args.no_normalize,
        title: format!(
            "{} -> {} ({})",
            args.before.display(),
            args.after.display(),
            args.role
        ),
        top: args.top,
    };
    let result = diff_flamegraph(&before.stacks, &after.stacks, &options)?;
    if let Some(parent) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    fs::write(&args.output, &result.svg)
        .with_context(|| format!("writing {}", args.output.display()))?;

    let report = DiffReport {
        output: args.output.clone(),
        role: args.role,
        normalized: options.normalize,
        before: SetReport {
            path: args.before.clone(),
            profiles: before.sources.len(),
            samples: result.before_samples,
        },
        after: SetReport {
            path: args.after.clone(),
            profiles: after.sources.len(),
            samples: result.after_samples,
        },
        top_changes: result.top_changes,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "differential flamegraph ({}): {}",
        report.role,
        report.output.display()
    );
    for (name, set) in [("before", &report.before), ("after ", &report.after)] {
        println!(
            "  {name}: {} samples from {} profile(s) in {}",
            set.samples,
            set.profiles,
            set.path.display()
        );
    }
    if report.top_changes.is_empty() {
        println!("  no frame changed its share of self samples");
    } else {
        println!("  largest moves in share of self samples:");
        for change in &report.top_changes {
            println!(
                "  {:>+7.2} pp  {:>6.2}% -> {:>6.2}%  {}",
                change.delta_pp, change.before_pct, change.after_pct, change.frame
            );
        }
    }
    Ok(())
}

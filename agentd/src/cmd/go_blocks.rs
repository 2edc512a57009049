//! `feth profiler cometbft --blocks N`: a Go node profiled per block, each
//! sample in a role, with its allocation and lock profiles (see
//! [`crate::go_profile`]); a table per block and over the window, or JSON.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use feth_profiler_rpc::folded::FoldedStacks;
use feth_profiler_rpc::gopprof;

use super::profiler::{comet_config, human_bytes, progress, CometArgs, EndpointArgs};
use crate::go_profile::blocks::BlocksConfig;
use crate::go_profile::roles::{self, FrameRole, RoleTable};
use crate::go_profile::{self, BlocksReport};

/// `feth profiler roles`: a profile on disk, split by role.
#[derive(Clone, Debug, clap::Args)]
pub struct RolesArgs {
    /// A Go CPU profile (`profile.pb.gz`, as `go tool pprof` reads) or
    /// folded stacks rooted at a process label (`<label>.folded`).
    pub profile: PathBuf,
    /// A role table of one's own, tried before the built-in rules.
    #[arg(long, value_name = "FILE")]
    pub roles: Option<PathBuf>,
    /// Deciding frames shown per role.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
}

/// Splits `args.profile` by role and prints each role's deciding frames.
pub fn roles(args: &RolesArgs, json: bool) -> anyhow::Result<()> {
    let table = table(args.roles.as_deref())?;
    let bytes = std::fs::read(&args.profile)
        .with_context(|| format!("cannot read {}", args.profile.display()))?;
    let stacks = match std::str::from_utf8(&bytes).ok().map(FoldedStacks::parse) {
        Some(Ok(folded)) if !folded.is_empty() => folded,
        _ => {
            gopprof::fold(&bytes, "node")
                .with_context(|| {
                    format!(
                        "{} is neither folded stacks nor a Go profile",
                        args.profile.display()
                    )
                })?
                .stacks
        }
    };
    let explained = table.explain(&roles::untag(&stacks), args.top);
    if json {
        println!("{}", serde_json::to_string_pretty(&explained)?);
        return Ok(());
    }
    println!("{}: {} samples", args.profile.display(), stacks.total());
    for r in explained.iter().filter(|r| r.samples > 0) {
        println!(
            "  {:<14} {:5.1} %  {} samples",
            r.role.as_str(),
            r.share,
            r.samples
        );
        let what = match r.role {
            FrameRole::Other => "goroutine entry",
            _ => "decided by",
        };
        for (frame, n) in &r.anchors {
            println!("      {n:>7}  {what} {frame}");
        }
    }
    Ok(())
}

fn table(path: Option<&Path>) -> anyhow::Result<RoleTable> {
    match path {
        Some(path) => RoleTable::with_file(path),
        None => RoleTable::default_table(),
    }
}

/// Runs a per-block session and prints what it found.
pub async fn run(args: &CometArgs, blocks: u32, endpoint: &EndpointArgs) -> anyhow::Result<()> {
    let capture = comet_config(
        args.pprof.as_ref(),
        args.comet_rpc.as_ref(),
        endpoint,
        &args.out,
    )?;
    let comet_rpc = capture
        .comet_rpc
        .clone()
        .context("--blocks needs CometBFT's RPC to see blocks: pass --comet-rpc URL")?;
    let table = table(args.roles.as_deref())?;
    let cfg = BlocksConfig {
        pprof_url: capture.pprof_url,
        comet_rpc,
        blocks,
        capture_secs: args.capture_secs,
        label: args.label.clone(),
        timeout: Duration::from_secs(args.timeout_secs),
    };
    let bar = progress(endpoint.json, 0, "{spinner} profiling {msg} per block");
    bar.set_message(format!("{} over {blocks} blocks", cfg.pprof_url));
    let report = go_profile::profile_blocks(&cfg, &table, &args.out).await;
    bar.finish_and_clear();
    let report = report?;
    if endpoint.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

fn print_report(r: &BlocksReport) {
    println!(
        "{}: blocks {}–{}, {} captures of {} s{}",
        r.label,
        r.heights.0,
        r.heights.1,
        r.windows.len(),
        r.capture_secs,
        r.block_interval_secs
            .map_or(String::new(), |i| format!(" (blocks every {i:.2} s)")),
    );
    let roles: Vec<&str> = FrameRole::ALL.iter().map(|r| r.as_str()).collect();
    println!(
        "  {:<13} {:>6} {:>7} {:>6}  % of samples: {}",
        "height",
        "secs",
        "gap",
        "cores",
        roles.join(" / ")
    );
    for w in &r.windows {
        let h = match w.heights {
            (a, b) if a == b => a.to_string(),
            (a, b) => format!("{a}–{b}"),
        };
        let part = if w.whole { ' ' } else { '*' };
        let gap = w
            .gap_before_secs
            .map_or("-".to_string(), |g| format!("{:.0}ms", g * 1e3));
        println!(
            "  {h:<12}{part} {:>6.1} {gap:>7} {:>6.2}  {}",
            w.seconds,
            w.cores,
            shares(&crate::go_profile::roles::shares(&w.roles))
        );
    }
    println!(
        "  {:<13} {:>6} {:>7} {:>6}  {}",
        "all",
        "",
        "",
        "",
        shares(&r.role_shares)
    );
    if r.windows.iter().any(|w| !w.whole) {
        println!("  * cut short: the block was not committed when its capture ended");
    }
    let spans = r
        .windows
        .iter()
        .filter(|w| w.heights.1 > w.heights.0)
        .count();
    if spans > 0 {
        println!(
            "  {spans} of {} captures held several heights: blocks shorter than a {} s capture, \
             or a capture that ended late; their split is over those heights together",
            r.windows.len(),
            r.capture_secs
        );
    }
    if !r.missed.is_empty() {
        println!("  heights between captures, seen by none: {:?}", r.missed);
    }
    if let Some((mean, max)) = r.gap_secs {
        println!(
            "  gaps between captures: mean {:.0} ms, longest {:.0} ms; {:.0} % of the time seen",
            mean * 1e3,
            max * 1e3,
            100.0 * r.coverage
        );
    }
    for e in &r.extras {
        print_extra(e);
    }
    println!("  written to {}", r.dir.display());
}

fn print_extra(e: &go_profile::extras::ExtraProfile) {
    if let Some(note) = &e.note {
        println!("  {}: {note}", e.kind);
        return;
    }
    let amount = |v: u64| match e.unit {
        "bytes" => human_bytes(v),
        _ => format!("{:.1} ms", v as f64 / 1e6),
    };
    println!(
        "  {} over {} s: {} in all; most at:",
        e.kind,
        e.seconds,
        amount(e.total)
    );
    for (site, v) in e.top.iter().take(5) {
        println!("    {:>10}  {site}", amount(*v));
    }
}

fn shares(shares: &std::collections::BTreeMap<FrameRole, f64>) -> String {
    FrameRole::ALL
        .iter()
        .map(|r| format!("{:.0}", shares.get(r).copied().unwrap_or(0.0)))
        .collect::<Vec<_>>()
        .join(" / ")
}

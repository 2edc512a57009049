//! CometBFT's own CPU over a window of blocks: a Go CPU profile from the
//! node's pprof endpoint (`rpc.pprof_laddr`; a Cosmos SDK node serves the
//! same), folded and drawn like abcid's block profiles, and labelled with
//! the blocks it covers.
//!
//! Under load CometBFT can cost more CPU than the application, and a tool
//! that profiles only the application cannot show it. Go profiles one
//! window at a time, so a capture is a window in seconds; the blocks it
//! covers are read from CometBFT's RPC before and after it.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use feth_comet::rpc::{Rpc, Status};
use feth_profiler_rpc::folded::FoldedStacks;
use feth_profiler_rpc::gopprof::{self, GoProfile, MAX_PROFILE_BYTES};
use serde::Serialize;

/// Longest window one capture may ask for (Go's own limit is the HTTP
/// server's write timeout; CometBFT sets none).
pub const MAX_SECONDS: u64 = 300;

/// What to capture, and where to write it.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    /// The node's pprof base URL (`http://127.0.0.1:6061`).
    pub pprof_url: String,
    /// Seconds of profile, 1–[`MAX_SECONDS`].
    pub seconds: u64,
    /// The root frame of every stack: the process (`cometbft`).
    pub label: String,
    /// CometBFT's RPC, to name the chain and the blocks the window covers.
    pub comet_rpc: Option<String>,
    /// Folder the capture's own folder is made in (`flamegraphs`).
    pub out: PathBuf,
}

/// What a capture wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Capture {
    /// The folder holding `profile.pb.gz`, `<label>.folded`, `flamegraph.svg`
    /// and `capture.json`.
    pub dir: PathBuf,
    /// The chain (CometBFT's `network`), when its RPC was given.
    pub chain_id: Option<String>,
    /// Latest height before and after the window, when its RPC was given.
    pub heights: Option<(u64, u64)>,
    /// Seconds the profile covers, as Go reports them.
    pub seconds: f64,
    /// Samples taken (Go samples at 100 Hz per busy thread by default).
    pub samples: u64,
    /// CPU cores busy on average over the window (samples / rate / seconds).
    pub cores: f64,
    /// The functions with the most samples of their own, most first.
    pub top: Vec<(String, u64)>,
    /// Unix time the window began.
    pub started_unix: f64,
}

/// One window of a Go CPU profile, decoded but not written.
#[derive(Debug, Clone)]
pub struct Window {
    /// The profile as the node served it (gzipped profile.proto).
    pub raw: Vec<u8>,
    /// Its stacks under `cfg.label`, and what they cover.
    pub profile: GoProfile,
    /// The chain (CometBFT's `network`), when its RPC was given.
    pub chain_id: Option<String>,
    /// Latest height before and after the window, when its RPC was given.
    pub heights: Option<(u64, u64)>,
    /// Unix time the window began.
    pub started_unix: f64,
}

/// Takes one CPU profile of `cfg.seconds`, labelled with the blocks it
/// covers; writes nothing.
pub async fn take(cfg: &CaptureConfig) -> Result<Window> {
    if !(1..=MAX_SECONDS).contains(&cfg.seconds) {
        bail!("--seconds {}: give 1 to {MAX_SECONDS}", cfg.seconds);
    }
    let rpc = cfg
        .comet_rpc
        .as_deref()
        .map(|u| Rpc::new(u, 1, 1))
        .transpose()?;
    let before = status(rpc.as_ref()).await?;
    let started_unix = unix_now();
    let raw = fetch(&cfg.pprof_url, "profile", cfg.seconds).await?;
    let after = status(rpc.as_ref()).await?;
    let profile = gopprof::fold(&raw, &cfg.label)?;
    let heights = before
        .as_ref()
        .zip(after.as_ref())
        .map(|(b, a)| (b.latest_height, a.latest_height));
    Ok(Window {
        raw,
        profile,
        chain_id: after.map(|s| s.network),
        heights,
        started_unix,
    })
}

/// Takes one CPU profile of `cfg.seconds` and writes it, folded and drawn,
/// under `cfg.out`.
pub async fn capture(cfg: &CaptureConfig) -> Result<Capture> {
    save(cfg, &take(cfg).await?)
}

/// Writes a window taken with `cfg`, folded and drawn, in its own folder
/// under `cfg.out`.
pub fn save(cfg: &CaptureConfig, window: &Window) -> Result<Capture> {
    let profile = &window.profile;
    let dir = capture_dir(
        cfg,
        window.chain_id.as_deref(),
        window.heights,
        window.started_unix,
    );
    let samples = profile.stacks.total();
    let capture = Capture {
        dir,
        chain_id: window.chain_id.clone(),
        heights: window.heights,
        seconds: profile.seconds,
        samples,
        cores: profile.cores(),
        top: top_functions(&profile.stacks, 10),
        started_unix: window.started_unix,
    };
    write(&capture, &cfg.label, &window.raw, &profile.stacks)?;
    Ok(capture)
}

/// The `n` functions with the most samples (or value) of their own, most
/// first.
pub fn top_functions(stacks: &FoldedStacks, n: usize) -> Vec<(String, u64)> {
    let mut top: Vec<(String, u64)> = stacks
        .self_counts()
        .into_iter()
        .map(|(f, n)| (f.to_string(), n))
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(n);
    top
}

/// CometBFT's `/status`, when its RPC is known.
async fn status(rpc: Option<&Rpc>) -> Result<Option<Status>> {
    match rpc {
        Some(rpc) => Ok(Some(rpc.status().await.context("CometBFT's /status")?)),
        None => Ok(None),
    }
}

/// `GET {url}/debug/pprof/{profile}?seconds=N`, at most
/// [`MAX_PROFILE_BYTES`] of answer: the CPU profile (`profile`) over the
/// next N seconds, or the change of another (`allocs`, `mutex`, `block`)
/// over them.
pub async fn fetch(url: &str, profile: &str, seconds: u64) -> Result<Vec<u8>> {
    let url = format!(
        "{}/debug/pprof/{profile}?seconds={seconds}",
        url.trim_end_matches('/')
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(seconds + 30))
        .build()
        .context("cannot build an HTTP client")?;
    let mut resp = http
        .get(&url)
        .send()
        .await
        .with_context(|| format!("cannot reach {url}: is rpc.pprof_laddr set on the node?"))?;
    if !resp.status().is_success() {
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        bail!("{url} answered {status}: {}", body.trim());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .with_context(|| format!("reading {url}"))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MAX_PROFILE_BYTES {
            bail!("{url}: the profile exceeds {MAX_PROFILE_BYTES} bytes");
        }
    }
    Ok(bytes)
}

/// The time now, in Unix seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `s` with anything but `[A-Za-z0-9._-]` as `_`, for a file name.
pub fn safe(s: &str) -> String {
    s.chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
            true => c,
            false => '_',
        })
        .collect()
}

/// `<out>/<chain>/<label>-<first>-<last>`, or `<out>/<label>/<unix time>`
/// without a chain to name.
fn capture_dir(
    cfg: &CaptureConfig,
    chain: Option<&str>,
    heights: Option<(u64, u64)>,
    unix: f64,
) -> PathBuf {
    let label = safe(&cfg.label);
    match (chain, heights) {
        (Some(chain), Some((first, last))) => cfg
            .out
            .join(safe(chain))
            .join(format!("{label}-{first}-{last}")),
        _ => cfg.out.join(&label).join(format!("{}", unix as u64)),
    }
}

fn write(capture: &Capture, label: &str, raw: &[u8], stacks: &FoldedStacks) -> Result<()> {
    let dir = &capture.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let put = |name: &str, bytes: &[u8]| -> Result<()> {
        let path: PathBuf = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
    };
    put("profile.pb.gz", raw)?;
    put(&format!("{label}.folded"), stacks.to_text().as_bytes())?;
    let title = format!("{label} CPU");
    let subtitle = subtitle(capture);
    put("flamegraph.svg", &stacks.to_svg(&title, Some(&subtitle))?)?;
    put(
        "capture.json",
        serde_json::to_string_pretty(capture)?.as_bytes(),
    )
}

/// What the flamegraph covers, in words.
fn subtitle(c: &Capture) -> String {
    let blocks = c
        .heights
        .map_or(String::new(), |(a, b)| format!(", blocks {}–{b}", a + 1));
    format!(
        "{:.1} s{blocks}, {} samples, {:.2} cores busy",
        c.seconds, c.samples, c.cores
    )
}

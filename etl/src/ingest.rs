//! Ingest: log files → parser thread(s) → batches of observations → Redis,
//! with optional RPC enrichment of each written batch.
//!
//! Parsing runs on plain threads (one for all files, or one per file with
//! `--follow`) and hands batches to the async writer over a bounded
//! channel, so parsing and Redis round trips overlap.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::cli::IngestArgs;
use crate::detect::{Detected, Detector};
use crate::parse::{Event, Line, Parser};
use crate::rpc::{Rpc, RpcError};
use crate::source::{self, Compression, FollowEnd, ReadEnd, Sink, SourceError};
use crate::store::{BlockFacts, Store, StoreError, TimeSource, WriteBatch};
use crate::time::{Clock, TimeError};

/// Observations per message from a parser thread.
const OBS_PER_MSG: usize = 4096;
/// How often `--follow` writes what it has.
const FOLLOW_FLUSH: Duration = Duration::from_millis(500);
/// How often `--follow` looks for new data.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// How far into each log to look for the chain id when none is given.
const CHAIN_ID_SCAN: u64 = 64 << 20;

/// Ingest failures.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Bad `--log-tz`.
    #[error(transparent)]
    Zone(#[from] TimeError),
    /// A log cannot be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Redis failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node's RPC failed before ingest could start.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// No chain id given and none found.
    #[error(
        "no chain id: none of the logs has a `Started node` line in its first 64 MiB. Pass \
         --chain-id (or --rpc to ask the node)"
    )]
    NoChainId,
    /// The logs (or RPC) disagree with `--chain-id` or each other.
    #[error("{0}")]
    ChainMismatch(String),
    /// Nothing to read.
    #[error("no logs given: pass --tendermint LOG… and/or --abcid LOG…")]
    NoLogs,
    /// No Redis URL.
    #[error("no Redis given: pass --redis redis://HOST:PORT/DB (or set FETH_REDIS)")]
    NoRedis,
    /// A log path is a directory or missing.
    #[error("log {0} does not exist or is not a file")]
    NotAFile(PathBuf),
    /// An empty or odd chain id / node name.
    #[error("{what} {value:?} is not usable: it must be non-empty and contain no whitespace")]
    BadName {
        /// `chain id` or `node name`.
        what: &'static str,
        /// The value.
        value: String,
    },
}

/// One thing a log line says, ready to merge into a batch.
#[derive(Debug, Clone)]
struct Obs {
    height: u64,
    /// The node that applied the block (not for abcid lines or replays).
    node: Option<Arc<str>>,
    /// The node's consensus commit time (Unix ns).
    commit_ns: Option<i64>,
    facts: BlockFacts,
}

enum Msg {
    Obs(Vec<Obs>),
    File(Box<FileReport>),
    Fatal(IngestError),
}

/// A sample of a line that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    /// 1-based line number.
    pub line: u64,
    /// Why.
    pub reason: String,
    /// The line's start.
    pub text: String,
}

/// What one log file held.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Node name for lines without a prefix.
    pub node: String,
    /// Node names from line prefixes.
    pub prefixed_nodes: BTreeSet<String>,
    /// Plain or gzip.
    pub compression: Compression,
    /// Software and format.
    pub detected: Detected,
    /// Lines read.
    pub lines: u64,
    /// Lines with a block/node event.
    pub events: u64,
    /// Well-formed lines of no interest.
    pub other: u64,
    /// Empty lines.
    pub blank: u64,
    /// Lines that look like node log lines but cannot be read.
    pub malformed: u64,
    /// Lines in no known format.
    pub foreign: u64,
    /// First malformed line.
    pub first_malformed: Option<BadLine>,
    /// First foreign line.
    pub first_foreign: Option<BadLine>,
    /// Lowest and highest height seen.
    pub heights: Option<(u64, u64)>,
    /// How reading ended (cut last line, cut gzip stream).
    pub end: ReadEnd,
    /// With `--follow`: rotations and truncations seen.
    pub follow: Option<FollowEnd>,
}

/// RPC enrichment figures.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RpcSummary {
    /// Node URL.
    pub url: String,
    /// Heights given a header time.
    pub headers: u64,
    /// Heights given valid/invalid counts.
    pub results: u64,
    /// Heights the node could not answer for.
    pub missing: u64,
    /// The first of those, with the node's reason.
    pub first_missing: Option<(u64, String)>,
}

/// What an ingest run did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestReport {
    /// Run id (also in Redis under `feth:C:run:ID`).
    pub run_id: String,
    /// Chain id written.
    pub chain_id: String,
    /// Where the chain id came from.
    pub chain_id_from: &'static str,
    /// Redis (password hidden).
    pub redis: String,
    /// Zone applied to plain timestamps.
    pub log_tz: String,
    /// Per file.
    pub files: Vec<FileReport>,
    /// Distinct heights written.
    pub heights_written: u64,
    /// Lowest and highest height written.
    pub heights: Option<(u64, u64)>,
    /// Heights that have a consensus commit time from the logs.
    pub heights_with_commit_time: u64,
    /// Heights given a header time by abcid lines.
    pub heights_with_abcid_time: u64,
    /// Nodes written.
    pub nodes: BTreeSet<String>,
    /// RPC enrichment, with `--rpc`.
    pub rpc: Option<RpcSummary>,
    /// Which block times `stats` will use for these heights.
    pub block_time_source: String,
    /// Wall time.
    pub elapsed_s: f64,
    /// Lines per second over the run.
    pub lines_per_s: f64,
    /// Redis transactions written.
    pub batches: u64,
}

/// An ingest's report and an RPC failure that happened after the logs were
/// written (the logs' data stands; the error is still an error).
#[derive(Debug)]
pub struct Outcome {
    /// What was done.
    pub report: IngestReport,
    /// Set when RPC enrichment failed part-way.
    pub rpc_error: Option<RpcError>,
}

/// The node name a log file gives its lines: the file name without `.gz`,
/// a rotation suffix after the extension (`.1`, `-20261121`), the extension
/// (`.log`, `.json`, `.txt`, `.out`) and a date before it (`-20261121`).
pub fn node_name_from_path(path: &Path) -> String {
    const EXTS: [&str; 4] = [".log", ".json", ".txt", ".out"];
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    if let Some(s) = name.strip_suffix(".gz") {
        name = s.to_string();
    }
    if let Some(p) = name.rfind(['.', '-']) {
        if digits(&name[p + 1..]) && EXTS.iter().any(|e| name[..p].ends_with(e)) {
            name.truncate(p);
        }
    }
    while let Some(e) = EXTS
        .iter()
        .find(|e| name.len() > e.len() && name.ends_with(*e))
    {
        name.truncate(name.len() - e.len());
    }
    if let Some(p) = name.rfind(['-', '_']) {
        if p > 0 && name.len() - p > 6 && digits(&name[p + 1..]) {
            name.truncate(p);
        }
    }
    if name.is_empty() {
        "node".to_string()
    } else {
        name
    }
}

fn check_name(what: &'static str, value: &str) -> Result<(), IngestError> {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err(IngestError::BadName {
            what,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// Looks for the chain id in the first 64 MiB of a log.
fn scan_chain_id(path: &Path) -> Result<Option<String>, SourceError> {
    struct Scan {
        parser: Parser,
        found: Option<String>,
        stop: Arc<AtomicBool>,
        read: Arc<AtomicU64>,
    }
    impl Sink for Scan {
        fn line(&mut self, line: &[u8]) {
            if self.found.is_some() {
                return;
            }
            if let Line::Event(r) = self.parser.parse(line) {
                if let Event::Network(n) = r.event {
                    self.found = Some(n.to_string());
                    self.stop.store(true, Ordering::Relaxed);
                }
            }
            if self.read.load(Ordering::Relaxed) > CHAIN_ID_SCAN {
                self.stop.store(true, Ordering::Relaxed);
            }
        }
    }
    let read = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut scan = Scan {
        parser: Parser::new(),
        found: None,
        stop: stop.clone(),
        read: read.clone(),
    };
    source::read_all(path, read, &stop, &mut scan)?;
    Ok(scan.found)
}

/// Reads one file's lines into observations.
struct Reader {
    parser: Parser,
    st: State,
}

/// Everything of a [`Reader`] but its parser (which the current line borrows).
struct State {
    clock: Clock,
    detector: Detector,
    node: Arc<str>,
    nodes: HashMap<String, Arc<str>>,
    chain: String,
    out: Vec<Obs>,
    tx: mpsc::Sender<Msg>,
    stop: Arc<AtomicBool>,
    report: FileReport,
    lo: u64,
    hi: u64,
}

fn sample(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(&line[..line.len().min(160)]);
    s.trim_end().to_string()
}

impl State {
    fn send(&mut self) {
        if self.out.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.out);
        if self.tx.blocking_send(Msg::Obs(batch)).is_err() {
            // The writer has stopped (an error); stop reading.
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn node_for(&mut self, prefix: Option<&str>) -> Arc<str> {
        match prefix {
            None => self.node.clone(),
            Some(p) => {
                if let Some(n) = self.nodes.get(p) {
                    return n.clone();
                }
                let n: Arc<str> = Arc::from(p);
                self.report.prefixed_nodes.insert(p.to_string());
                self.nodes.insert(p.to_string(), n.clone());
                n
            }
        }
    }

    fn bad(&mut self, reason: String, line: &[u8]) {
        self.report.malformed += 1;
        if self.report.first_malformed.is_none() {
            self.report.first_malformed = Some(BadLine {
                line: self.report.lines,
                reason,
                text: sample(line),
            });
        }
    }

    fn obs(
        &mut self,
        height: u64,
        node: Option<Arc<str>>,
        commit_ns: Option<i64>,
        facts: BlockFacts,
    ) {
        self.lo = self.lo.min(height);
        self.hi = self.hi.max(height);
        self.out.push(Obs {
            height,
            node,
            commit_ns,
            facts,
        });
        if self.out.len() >= OBS_PER_MSG {
            self.send();
        }
    }
}

impl Sink for Reader {
    fn line(&mut self, line: &[u8]) {
        let st = &mut self.st;
        st.report.lines += 1;
        let rec = match self.parser.parse(line) {
            Line::Event(r) => r,
            Line::Other(f) => {
                st.report.other += 1;
                st.detector.format(f);
                return;
            }
            Line::Blank => {
                st.report.blank += 1;
                return;
            }
            Line::Malformed(m) => {
                let reason = m.to_string();
                st.bad(reason, line);
                return;
            }
            Line::Foreign => {
                st.report.foreign += 1;
                if st.report.first_foreign.is_none() {
                    st.report.first_foreign = Some(BadLine {
                        line: st.report.lines,
                        reason: "not a Tendermint/CometBFT or abcid log line".into(),
                        text: sample(line),
                    });
                }
                return;
            }
        };
        let t = match st.clock.unix_nanos(&rec.time) {
            Ok(t) => t,
            Err(e) => {
                st.bad(e.to_string(), line);
                return;
            }
        };
        st.report.events += 1;
        st.detector.record(&rec);
        let prefix = rec.node;
        let event = rec.event;
        match event {
            Event::CommitDecided { height, txs } => {
                let node = st.node_for(prefix);
                let facts = BlockFacts {
                    txs: Some(txs),
                    ..BlockFacts::default()
                };
                st.obs(height, Some(node), Some(t), facts);
            }
            Event::Executed {
                height,
                valid,
                invalid,
                replay,
            } => {
                let node = (!replay).then(|| st.node_for(prefix));
                let facts = BlockFacts {
                    txs: valid.checked_add(invalid),
                    valid: Some(valid),
                    invalid: Some(invalid),
                    ..BlockFacts::default()
                };
                st.obs(height, node, None, facts);
            }
            Event::Finalized { height, txs, .. } => {
                let node = st.node_for(prefix);
                let facts = BlockFacts {
                    txs: Some(txs),
                    ..BlockFacts::default()
                };
                st.obs(height, Some(node), None, facts);
            }
            Event::StateCommitted { height, txs } => {
                let node = st.node_for(prefix);
                let facts = BlockFacts {
                    txs,
                    ..BlockFacts::default()
                };
                st.obs(height, Some(node), None, facts);
            }
            Event::Abcid {
                height,
                txs,
                valid,
                invalid,
                block_time,
            } => match Clock::utc().unix_nanos(&block_time) {
                Ok(bt) => {
                    let facts = BlockFacts {
                        txs: Some(txs),
                        valid: Some(valid),
                        invalid: Some(invalid),
                        time_ns: Some(bt),
                        time_src: Some(TimeSource::Abcid),
                    };
                    st.obs(height, None, None, facts);
                }
                Err(e) => st.bad(e.to_string(), line),
            },
            Event::Version(_) => {}
            Event::Network(n) => {
                if n != st.chain {
                    let msg = format!(
                        "{} is a log of chain {n:?} (its `Started node` line, line {}), but this run writes chain {:?}. Ingest it with --chain-id {n}",
                        st.report.path.display(),
                        st.report.lines,
                        st.chain
                    );
                    st.stop.store(true, Ordering::Relaxed);
                    // If the writer is gone it has its own error to report.
                    let _ = st
                        .tx
                        .blocking_send(Msg::Fatal(IngestError::ChainMismatch(msg)));
                }
            }
        }
    }

    fn idle(&mut self) {
        self.st.send();
    }
}

struct Job {
    path: PathBuf,
    node: Arc<str>,
}

struct ReaderCtx {
    clock: Clock,
    chain: String,
    tx: mpsc::Sender<Msg>,
    stop: Arc<AtomicBool>,
    progress: Arc<AtomicU64>,
    follow: bool,
}

fn read_job(job: &Job, ctx: &ReaderCtx) {
    let mut r = Reader {
        parser: Parser::new(),
        st: State {
            clock: ctx.clock.clone(),
            detector: Detector::default(),
            node: job.node.clone(),
            nodes: HashMap::new(),
            chain: ctx.chain.clone(),
            out: Vec::with_capacity(OBS_PER_MSG),
            tx: ctx.tx.clone(),
            stop: ctx.stop.clone(),
            report: FileReport {
                path: job.path.clone(),
                node: job.node.to_string(),
                prefixed_nodes: BTreeSet::new(),
                compression: Compression::None,
                detected: Detector::default().detected(),
                lines: 0,
                events: 0,
                other: 0,
                blank: 0,
                malformed: 0,
                foreign: 0,
                first_malformed: None,
                first_foreign: None,
                heights: None,
                end: ReadEnd::default(),
                follow: None,
            },
            lo: u64::MAX,
            hi: 0,
        },
    };
    let result = if ctx.follow {
        source::follow(
            &job.path,
            ctx.progress.clone(),
            &ctx.stop,
            FOLLOW_POLL,
            &mut r,
        )
        .map(|(c, f)| {
            r.st.report.end.unterminated = f.unterminated > 0;
            r.st.report.follow = Some(f);
            c
        })
    } else {
        source::read_all(&job.path, ctx.progress.clone(), &ctx.stop, &mut r).map(|(c, end)| {
            r.st.report.end = end;
            c
        })
    };
    r.st.send();
    match result {
        Ok(c) => {
            r.st.report.compression = c;
            r.st.report.detected = r.st.detector.detected();
            r.st.report.heights = (r.st.lo <= r.st.hi).then_some((r.st.lo, r.st.hi));
            let _ = ctx.tx.blocking_send(Msg::File(Box::new(r.st.report)));
        }
        Err(e) => {
            ctx.stop.store(true, Ordering::Relaxed);
            let _ = ctx.tx.blocking_send(Msg::Fatal(e.into()));
        }
    }
}

/// Merges observations into the next Redis batch.
#[derive(Default)]
struct Pending {
    batch: WriteBatch,
}

impl Pending {
    fn add(&mut self, o: Obs) {
        if let Some(node) = o.node {
            let e = self
                .batch
                .node_heights
                .entry((node, o.height))
                .or_insert(None);
            if let Some(t) = o.commit_ns {
                *e = Some(e.map_or(t, |c| c.min(t)));
            }
        }
        self.batch
            .blocks
            .entry(o.height)
            .or_default()
            .merge(&o.facts);
    }

    fn len(&self) -> usize {
        self.batch.blocks.len()
    }
}

/// A set of heights kept as disjoint ranges (heights come mostly in order).
#[derive(Default)]
struct Ranges {
    /// start → end (inclusive).
    r: BTreeMap<u64, u64>,
}

impl Ranges {
    fn insert(&mut self, h: u64) {
        let before = self.r.range(..=h).next_back().map(|(s, e)| (*s, *e));
        if let Some((_, e)) = before {
            if h <= e {
                return;
            }
        }
        let start = match before {
            Some((s, e)) if e + 1 == h => s,
            _ => h,
        };
        let end = h
            .checked_add(1)
            .and_then(|n| self.r.remove(&n))
            .unwrap_or(h);
        self.r.insert(start, end);
    }

    fn len(&self) -> u64 {
        self.r.iter().map(|(s, e)| e - s + 1).sum()
    }

    fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    fn bounds(&self) -> Option<(u64, u64)> {
        Some((*self.r.keys().next()?, *self.r.values().next_back()?))
    }
}

/// Running totals of what was written.
#[derive(Default)]
struct Written {
    heights: Ranges,
    with_commit: Ranges,
    with_abcid_time: Ranges,
    nodes: BTreeSet<String>,
    batches: u64,
}

/// RPC enrichment of written heights, in its own task.
async fn enrich(
    rpc: Rpc,
    store: Store,
    mut rx: mpsc::Receiver<(Vec<u64>, Vec<u64>)>,
) -> (RpcSummary, Option<RpcError>) {
    let mut sum = RpcSummary {
        url: rpc.url().to_string(),
        ..RpcSummary::default()
    };
    while let Some((heights, need_results)) = rx.recv().await {
        let (facts, missing) = match rpc.fetch(&heights, &need_results).await {
            Ok(r) => r,
            Err(e) => return (sum, Some(e)),
        };
        sum.headers += facts.values().filter(|f| f.time_ns.is_some()).count() as u64;
        sum.results += facts.values().filter(|f| f.valid.is_some()).count() as u64;
        sum.missing += missing.len() as u64;
        if sum.first_missing.is_none() {
            sum.first_missing = missing.into_iter().next();
        }
        let batch = WriteBatch {
            blocks: facts,
            node_heights: BTreeMap::new(),
        };
        if let Err(e) = store.write(&batch).await {
            // A Redis failure here is reported like an RPC one: the logs' data stands.
            return (
                sum,
                Some(RpcError::Answer {
                    url: rpc.url().to_string(),
                    what: "writing RPC data".into(),
                    detail: e.to_string(),
                }),
            );
        }
    }
    (sum, None)
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs an ingest until the logs end (or, with `--follow`, until `shutdown`
/// completes). Returns what was done.
pub async fn run(
    args: &IngestArgs,
    shutdown: impl Future<Output = ()>,
) -> Result<Outcome, IngestError> {
    let started = Instant::now();
    let started_ms = unix_ms();
    let clock = Clock::new(args.log_tz.as_deref())?;
    if args.tendermint.is_empty() && args.abcid.is_empty() {
        return Err(IngestError::NoLogs);
    }
    let redis_url = args.redis.as_deref().ok_or(IngestError::NoRedis)?;
    // abcid logs first: their valid/invalid counts are then known when the
    // node logs' batches decide what to ask the RPC for.
    let paths: Vec<&PathBuf> = args.abcid.iter().chain(&args.tendermint).collect();
    for p in &paths {
        if !p.is_file() {
            return Err(IngestError::NotAFile((*p).clone()));
        }
    }
    if let Some(n) = &args.node {
        check_name("node name", n)?;
    }
    let rpc = match &args.rpc {
        Some(url) => Some(Rpc::new(url, args.rpc_batch, args.rpc_concurrency)?),
        None => None,
    };
    let status = match &rpc {
        Some(r) => Some(r.status().await?),
        None => None,
    };
    let (chain, chain_id_from) = match (&args.chain_id, &status) {
        (Some(c), Some(s)) if *c != s.network => {
            return Err(IngestError::ChainMismatch(format!(
                "--chain-id is {c:?} but the node at --rpc {} serves chain {:?}",
                args.rpc.as_deref().unwrap_or_default(),
                s.network
            )))
        }
        (Some(c), _) => (c.clone(), "--chain-id"),
        (None, Some(s)) => (s.network.clone(), "RPC /status"),
        (None, None) => {
            let mut found: Option<(String, PathBuf)> = None;
            for p in &args.tendermint {
                if let Some(id) = scan_chain_id(p)? {
                    match &found {
                        Some((other, op)) if *other != id => {
                            return Err(IngestError::ChainMismatch(format!(
                                "the logs are from different chains: {other:?} ({}) and {id:?} ({}); ingest them separately with --chain-id",
                                op.display(),
                                p.display()
                            )))
                        }
                        Some(_) => {}
                        None => found = Some((id, p.clone())),
                    }
                }
            }
            (
                found.ok_or(IngestError::NoChainId)?.0,
                "the logs' `Started node` line",
            )
        }
    };
    check_name("chain id", &chain)?;

    let store = Store::connect(redis_url, &chain, args.redis_retry()).await?;
    let run_id = format!("{started_ms}-{}", std::process::id());
    let files_json = serde_json::to_string(&paths).unwrap_or_default();
    store
        .write_run(
            &run_id,
            started_ms,
            &[
                ("status", "running".into()),
                ("started_ms", started_ms.to_string()),
                ("files", files_json),
            ],
        )
        .await?;

    let jobs: Vec<Job> = paths
        .iter()
        .map(|p| Job {
            path: (*p).clone(),
            node: Arc::from(args.node.clone().unwrap_or_else(|| node_name_from_path(p))),
        })
        .collect();
    let total_bytes: u64 = jobs
        .iter()
        .filter_map(|j| std::fs::metadata(&j.path).ok())
        .map(|m| m.len())
        .sum();

    let (tx, mut rx) = mpsc::channel::<Msg>(16);
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let ctx = |tx: mpsc::Sender<Msg>| ReaderCtx {
        clock: clock.clone(),
        chain: chain.clone(),
        tx,
        stop: stop.clone(),
        progress: progress.clone(),
        follow: args.follow,
    };
    let mut threads = Vec::new();
    if args.follow {
        for job in jobs {
            let c = ctx(tx.clone());
            threads.push(std::thread::spawn(move || read_job(&job, &c)));
        }
    } else {
        let c = ctx(tx.clone());
        threads.push(std::thread::spawn(move || {
            for job in &jobs {
                if c.stop.load(Ordering::Relaxed) {
                    break;
                }
                read_job(job, &c);
            }
        }));
    }
    drop(tx);

    let bar = (!args.follow && !args.no_progress).then(|| {
        let bar = indicatif::ProgressBar::new(total_bytes);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} ingest {bytes}/{total_bytes} {bar:30} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });

    let (rpc_tx, rpc_task) = match rpc.clone() {
        Some(r) => {
            let (t, rx) = mpsc::channel(4);
            (Some(t), Some(tokio::spawn(enrich(r, store.clone(), rx))))
        }
        None => (None, None),
    };

    let mut pending = Pending::default();
    let mut written = Written::default();
    let mut files = Vec::new();
    let mut fatal: Option<IngestError> = None;
    tokio::pin!(shutdown);
    let mut shutting_down = false;
    let mut tick = tokio::time::interval(if args.follow {
        FOLLOW_FLUSH
    } else {
        Duration::from_millis(200)
    });

    loop {
        let msg = tokio::select! {
            m = rx.recv() => m,
            () = &mut shutdown, if !shutting_down => {
                shutting_down = true;
                stop.store(true, Ordering::Relaxed);
                continue;
            }
            _ = tick.tick() => {
                if let Some(b) = &bar {
                    b.set_position(progress.load(Ordering::Relaxed));
                }
                if args.follow && pending.len() > 0 {
                    if let Err(e) = flush(&store, &mut pending, &mut written, rpc_tx.as_ref()).await {
                        fatal = Some(e);
                        break;
                    }
                }
                continue;
            }
        };
        match msg {
            Some(Msg::Obs(v)) => {
                for o in v {
                    pending.add(o);
                }
                if pending.len() >= args.batch_heights.max(1) {
                    if let Err(e) = flush(&store, &mut pending, &mut written, rpc_tx.as_ref()).await
                    {
                        fatal = Some(e);
                        break;
                    }
                }
            }
            Some(Msg::File(r)) => files.push(*r),
            Some(Msg::Fatal(e)) => {
                fatal = Some(e);
                break;
            }
            None => break,
        }
    }
    if fatal.is_none() {
        if let Err(e) = flush(&store, &mut pending, &mut written, rpc_tx.as_ref()).await {
            fatal = Some(e);
        }
    }
    stop.store(true, Ordering::Relaxed);
    drop(rx);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    for t in threads {
        // Reader threads never panic; a join error would only repeat one.
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    drop(rpc_tx);
    let (rpc_summary, rpc_error) = match rpc_task {
        Some(t) => match t.await {
            Ok((s, e)) => (Some(s), e),
            Err(e) => (
                None,
                Some(RpcError::Answer {
                    url: args.rpc.clone().unwrap_or_default(),
                    what: "enrichment".into(),
                    detail: e.to_string(),
                }),
            ),
        },
        None => (None, None),
    };
    if let Some(e) = fatal {
        let _ = store
            .write_run(
                &run_id,
                started_ms,
                &[("status", "failed".into()), ("error", e.to_string())],
            )
            .await;
        return Err(e);
    }

    for f in &files {
        let fmt = f
            .detected
            .formats
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(k, _)| *k)
            .unwrap_or("unknown");
        let tz = if fmt == "plain" {
            clock.zone_name().to_string()
        } else {
            "UTC (stamps carry their zone)".to_string()
        };
        let meta = [
            ("log_tz", tz),
            ("version", f.detected.software.clone()),
            ("format", fmt.to_string()),
            ("updated_ms", unix_ms().to_string()),
        ];
        for node in std::iter::once(&f.node).chain(&f.prefixed_nodes) {
            if written.nodes.contains(node) {
                store.write_node_meta(node, &meta).await?;
            }
        }
    }

    let elapsed = started.elapsed().as_secs_f64();
    let lines: u64 = files.iter().map(|f| f.lines).sum();
    let with_rpc = rpc_summary.as_ref().map_or(0, |r| r.headers);
    let block_time_source = if with_rpc > 0 {
        format!("header times from the node's RPC (/blockchain) for {with_rpc} heights")
    } else if !written.with_abcid_time.is_empty() {
        format!(
            "header times from abcid's block lines for {} heights",
            written.with_abcid_time.len()
        )
    } else if !written.with_commit.is_empty() {
        format!(
            "commit log times (`finalizing commit of block`), plain-log zone {}",
            clock.zone_name()
        )
    } else {
        "none: no commit lines, abcid lines or RPC".to_string()
    };
    let report = IngestReport {
        run_id: run_id.clone(),
        chain_id: chain,
        chain_id_from,
        redis: crate::store::redact(redis_url),
        log_tz: clock.zone_name().to_string(),
        heights_written: written.heights.len(),
        heights: written.heights.bounds(),
        heights_with_commit_time: written.with_commit.len(),
        heights_with_abcid_time: written.with_abcid_time.len(),
        nodes: written.nodes,
        files,
        rpc: rpc_summary,
        block_time_source,
        elapsed_s: elapsed,
        #[allow(clippy::cast_precision_loss)]
        lines_per_s: if elapsed > 0.0 {
            lines as f64 / elapsed
        } else {
            0.0
        },
        batches: written.batches,
    };
    let report_json = serde_json::to_string(&report).unwrap_or_default();
    store
        .write_run(
            &run_id,
            started_ms,
            &[
                (
                    "status",
                    if rpc_error.is_some() {
                        "rpc-failed"
                    } else {
                        "complete"
                    }
                    .into(),
                ),
                ("finished_ms", unix_ms().to_string()),
                ("report", report_json),
            ],
        )
        .await?;
    Ok(Outcome { report, rpc_error })
}

async fn flush(
    store: &Store,
    pending: &mut Pending,
    written: &mut Written,
    rpc_tx: Option<&mpsc::Sender<(Vec<u64>, Vec<u64>)>>,
) -> Result<(), IngestError> {
    if pending.batch.is_empty() {
        return Ok(());
    }
    let batch = std::mem::take(&mut pending.batch);
    store.write(&batch).await?;
    written.batches += 1;
    for (h, f) in &batch.blocks {
        written.heights.insert(*h);
        if f.time_src == Some(TimeSource::Abcid) {
            written.with_abcid_time.insert(*h);
        }
    }
    for ((node, h), commit) in &batch.node_heights {
        if !written.nodes.contains(&**node) {
            written.nodes.insert(node.to_string());
        }
        if commit.is_some() {
            written.with_commit.insert(*h);
        }
    }
    if let Some(tx) = rpc_tx {
        let heights: Vec<u64> = batch.blocks.keys().copied().collect();
        let need: Vec<u64> = batch
            .blocks
            .iter()
            .filter(|(_, f)| f.valid.is_none())
            .map(|(h, _)| *h)
            .collect();
        // If the enrichment task has stopped (RPC error), it reports that itself.
        let _ = tx.send((heights, need)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_distinct_heights() {
        let mut r = Ranges::default();
        for h in [5, 3, 4, 4, 10, 6, 1, 9, 2, 8, 7, 7] {
            r.insert(h);
        }
        assert_eq!((r.len(), r.bounds(), r.r.len()), (10, Some((1, 10)), 1));
        let mut r = Ranges::default();
        for h in [1, 3, 5, 3] {
            r.insert(h);
        }
        assert_eq!((r.len(), r.bounds(), r.r.len()), (3, Some((1, 5)), 3));
    }

    #[test]
    fn node_names_from_file_names() {
        for (file, node) in [
            ("/var/log/node0.log", "node0"),
            ("node0.log.1", "node0"),
            ("node0.log.3.gz", "node0"),
            ("validator-2.log-20261121.gz", "validator-2"),
            ("cometbft-20261121.log", "cometbft"),
            ("cometbft-v0.37.18.json.log", "cometbft-v0.37.18"),
            ("val.json", "val"),
            ("node", "node"),
            (".log", ".log"),
        ] {
            assert_eq!(node_name_from_path(Path::new(file)), node, "{file}");
        }
    }
}

//! Reader threads: each log file's lines parsed into observations and sent
//! to the writer in messages, with a [`FileReport`] at the end.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc;

use super::batch::Obs;
use super::error::IngestError;
use super::report::{BadLine, FileReport};
use crate::detect::Detector;
use crate::parse::{Event, Line, Parser, Record};
use crate::source::{self, Compression, ReadEnd, Sink};
use feth_comet::facts::{BlockFacts, TimeSource};
use feth_comet::time::{Civil, Clock};

/// Observations per message from a parser thread.
const OBS_PER_MSG: usize = 4096;
/// How often `follow` looks for new data.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// What a reader thread tells the writer.
pub(super) enum Msg {
    /// Observations to write.
    Obs(Vec<Obs>),
    /// A file was read to its end (or to the stop).
    File(Box<FileReport>),
    /// Reading cannot go on.
    Fatal(IngestError),
}

/// One log file and the node name of its unprefixed lines.
pub(super) struct Job {
    pub(super) path: PathBuf,
    pub(super) node: Arc<str>,
}

/// What every reader thread shares.
#[derive(Clone)]
pub(super) struct ReaderCtx {
    pub(super) clock: Clock,
    pub(super) chain: String,
    pub(super) tx: mpsc::Sender<Msg>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) progress: Arc<AtomicU64>,
    pub(super) follow: bool,
}

/// Starts the reader threads: one per file when following (files grow
/// independently), else one reading the files in turn.
pub(super) fn spawn(jobs: Vec<Job>, ctx: &ReaderCtx) -> Vec<JoinHandle<()>> {
    if ctx.follow {
        return jobs
            .into_iter()
            .map(|job| {
                let c = ctx.clone();
                std::thread::spawn(move || read_job(&job, &c))
            })
            .collect();
    }
    let c = ctx.clone();
    vec![std::thread::spawn(move || {
        for job in &jobs {
            if c.stop.load(Ordering::Relaxed) {
                break;
            }
            read_job(job, &c);
        }
    })]
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

    /// Counts a line that carries no event.
    fn no_event(&mut self, parsed: &Line<'_>, line: &[u8]) {
        match parsed {
            Line::Event(_) => {}
            Line::Other(f) => {
                self.report.other += 1;
                self.detector.format(*f);
            }
            Line::Blank => self.report.blank += 1,
            Line::Malformed(m) => self.bad(m.to_string(), line),
            Line::Foreign => {
                self.report.foreign += 1;
                if self.report.first_foreign.is_none() {
                    self.report.first_foreign = Some(BadLine {
                        line: self.report.lines,
                        reason: "not a Tendermint/CometBFT, Cosmos SDK or abcid log line".into(),
                        text: sample(line),
                    });
                }
            }
        }
    }

    /// Turns an event line into an observation (or a chain check).
    fn event(&mut self, rec: &Record<'_>, line: &[u8]) {
        let t = match rec.time.map(|c| self.clock.unix_nanos(&c)) {
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => return self.bad(e.to_string(), line),
            None => {
                self.report.undated += 1;
                None
            }
        };
        self.report.events += 1;
        self.detector.record(rec);
        let prefix = rec.node;
        match rec.event {
            Event::CommitDecided { height, txs } => {
                let node = self.node_for(prefix);
                let facts = BlockFacts {
                    txs: Some(txs),
                    ..BlockFacts::default()
                };
                self.obs(height, Some(node), t, facts);
            }
            Event::Executed {
                height,
                valid,
                invalid,
                replay,
            } => {
                let node = (!replay).then(|| self.node_for(prefix));
                let facts = BlockFacts {
                    txs: valid.checked_add(invalid),
                    valid: Some(valid),
                    invalid: Some(invalid),
                    ..BlockFacts::default()
                };
                self.obs(height, node, None, facts);
            }
            Event::Finalized { height, txs, .. } => {
                let node = self.node_for(prefix);
                let facts = BlockFacts {
                    txs: Some(txs),
                    ..BlockFacts::default()
                };
                self.obs(height, Some(node), None, facts);
            }
            Event::StateCommitted { height, txs } => {
                let node = self.node_for(prefix);
                let facts = BlockFacts {
                    txs,
                    ..BlockFacts::default()
                };
                self.obs(height, Some(node), None, facts);
            }
            Event::Abcid {
                height,
                txs,
                valid,
                invalid,
                block_time,
            } => {
                let facts = BlockFacts {
                    txs: Some(txs),
                    valid: Some(valid),
                    invalid: Some(invalid),
                    ..BlockFacts::default()
                };
                self.abcid(height, facts, &block_time, line);
            }
            Event::Version(_) => {}
            Event::Network(n) => self.check_chain(n),
        }
    }

    /// abcid's per-block line: its counts, with the header time (always UTC).
    fn abcid(&mut self, height: u64, facts: BlockFacts, block_time: &Civil, line: &[u8]) {
        match Clock::utc().unix_nanos(block_time) {
            Ok(bt) => {
                let facts = BlockFacts {
                    time_ns: Some(bt),
                    time_src: Some(TimeSource::Abcid),
                    ..facts
                };
                self.obs(height, None, None, facts);
            }
            Err(e) => self.bad(e.to_string(), line),
        }
    }

    /// A `Started node` line of another chain stops the run.
    fn check_chain(&mut self, network: &str) {
        if network == self.chain {
            return;
        }
        let msg = format!(
            "{} is a log of chain {network:?} (its `Started node` line, line {}), but this run writes chain {:?}. Ingest it with --chain-id {network}",
            self.report.path.display(),
            self.report.lines,
            self.chain
        );
        self.stop.store(true, Ordering::Relaxed);
        // If the writer is gone it has its own error to report.
        let _ = self
            .tx
            .blocking_send(Msg::Fatal(IngestError::ChainMismatch(msg)));
    }
}

impl Sink for Reader {
    fn line(&mut self, line: &[u8]) {
        self.st.report.lines += 1;
        match self.parser.parse(line) {
            Line::Event(rec) => self.st.event(&rec, line),
            other => self.st.no_event(&other, line),
        }
    }

    fn idle(&mut self) {
        self.st.send();
    }
}

/// An empty report of `job`'s file.
fn file_report(job: &Job) -> FileReport {
    FileReport {
        path: job.path.clone(),
        node: job.node.to_string(),
        prefixed_nodes: BTreeSet::new(),
        compression: Compression::None,
        detected: Detector::default().detected(),
        lines: 0,
        events: 0,
        undated: 0,
        other: 0,
        blank: 0,
        malformed: 0,
        foreign: 0,
        first_malformed: None,
        first_foreign: None,
        heights: None,
        end: ReadEnd::default(),
        follow: None,
    }
}

/// Reads one file (following it if asked), sending its observations and
/// then its report, or a fatal error.
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
            report: file_report(job),
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
            let mut st = r.st;
            st.report.compression = c;
            st.report.detected = st.detector.detected();
            st.report.heights = (st.lo <= st.hi).then_some((st.lo, st.hi));
            let _ = ctx.tx.blocking_send(Msg::File(Box::new(st.report)));
        }
        Err(e) => {
            ctx.stop.store(true, Ordering::Relaxed);
            let _ = ctx.tx.blocking_send(Msg::Fatal(e.into()));
        }
    }
}

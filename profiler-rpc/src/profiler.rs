//! [`BlockProfiler`]: the handle an ABCI application embeds.
//!
//! ```no_run
//! use feth_profiler_rpc::{tag_current_thread, BlockProfiler, ProfilerConfig, Role};
//!
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let profiler = BlockProfiler::new(ProfilerConfig::new("feth-devnet-1", "flamegraphs"))?;
//! // consensus connection, FinalizeBlock:
//! tag_current_thread(Role::DeliverTx);
//! profiler.begin_block(42);
//! // ... execute the block, then Commit ...
//! profiler.end_block(42);
//! // mempool connection, CheckTx:
//! tag_current_thread(Role::CheckTx);
//! # Ok(()) }
//! ```
//!
//! A session is armed by [`BlockProfiler::enable`] (or `profiler_enable`) and captures the
//! next N blocks; then it disarms itself.
//!
//! **The window of a block** is its whole life in the node: from the end of the previous
//! block's Commit (`end_block(H - 1)`) to the end of its own (`end_block(H)`). It holds the
//! CheckTx of the transactions that arrived meanwhile (the mempool connection's share, which
//! on CometBFT 0.38 runs mostly between blocks: the mempool is locked around Commit), the
//! block's FinalizeBlock and its Commit. Windows of consecutive captured blocks are
//! contiguous; the first one opens at the first `end_block` after arming, so a session never
//! captures a block it joined halfway. `begin_block` marks where execution starts inside the
//! window ([`ProfileSummary::execution_ms`](crate::api::ProfileSummary::execution_ms)).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::api::{
    ConsensusCost, DisableOutcome, EnableParams, FetchParams, FetchResponse, HeightSelector,
    ProfileSummary, SessionState, SessionStatus, Status,
};
use crate::config::ProfilerConfig;
use crate::error::ProfilerError;
use crate::lock::lock;
use crate::render;
use crate::sampler::{self, Command};
use crate::shared::{unix_ms, Health, Shared};
use crate::store::{Indexed, Store};

/// How long `enable` waits for the profiler's warm-up on the sampling thread.
const WARM_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a `BlockProfiler` exists in this process (pprof-rs has one global profiler).
static INSTANCE_ALIVE: AtomicBool = AtomicBool::new(false);

/// Per-block CPU profiler of an ABCI application. Create one per process with
/// [`BlockProfiler::new`], share the `Arc` with the ABCI handlers and [`crate::serve`].
///
/// Dropping the last `Arc` stops sampling and joins the profiler's threads.
pub struct BlockProfiler {
    armed: AtomicBool,
    cost: CostMeter,
    state: Mutex<State>,
    shared: Arc<Shared>,
    max_blocks: u32,
    /// `None` only while dropping.
    workers: Option<Workers>,
    _instance: InstanceClaim,
}

struct Workers {
    commands: mpsc::Sender<Command>,
    threads: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    /// An `enable` is warming the profiler up.
    warming: bool,
    /// The current or latest session.
    session: Option<SessionStatus>,
    /// When `begin_block` of the block being captured was called.
    execution_started: Option<Instant>,
}

impl BlockProfiler {
    /// Opens the profile store (`<out_dir>/<chain_id>/`, indexing what an earlier run left)
    /// and starts the sampling and rendering threads. The profiler starts disarmed.
    ///
    /// Fails on an invalid configuration, an unusable output directory, or when another
    /// `BlockProfiler` is alive in this process.
    pub fn new(config: ProfilerConfig) -> Result<Arc<BlockProfiler>, ProfilerError> {
        config.validate()?;
        let instance = InstanceClaim::acquire()?;
        let (store, index) = Store::open(&config.out_dir, &config.chain_id, config.retention)?;
        let shared = Arc::new(Shared {
            chain_id: config.chain_id.clone(),
            thread_work: config.thread_work.clone(),
            store,
            index: Mutex::new(index),
            health: Mutex::new(Health::default()),
            pending_renders: Default::default(),
        });
        let spawn_error =
            |e| ProfilerError::io("spawning a profiler thread for", &config.out_dir, e);
        let (render, render_thread) = render::spawn(shared.clone()).map_err(spawn_error)?;
        let (commands, sampler_thread) =
            sampler::spawn(shared.clone(), render, config.blocklist.clone())
                .map_err(spawn_error)?;
        Ok(Arc::new(BlockProfiler {
            armed: AtomicBool::new(false),
            cost: CostMeter::default(),
            state: Mutex::new(State::default()),
            shared,
            max_blocks: config.max_blocks_per_session(),
            workers: Some(Workers {
                commands,
                // The sampler first: it owns the renderer's sender.
                threads: vec![sampler_thread, render_thread],
            }),
            _instance: instance,
        }))
    }

    /// Marks the start of block `height`'s execution; call it first thing in FinalizeBlock,
    /// on the consensus thread. Disarmed: one atomic load. Armed: one uncontended lock, to
    /// note the time (the block's window opened at the previous `end_block`).
    #[inline]
    pub fn begin_block(&self, height: u64) {
        if self.armed.load(Ordering::Acquire) {
            self.begin_armed(height);
        }
    }

    /// Marks the end of block `height`; call it at the very end of Commit, on the consensus
    /// thread. Disarmed: one atomic load. Armed: one uncontended lock and up to two
    /// messages: the block's window closes (its samples are collected, rendered and written
    /// off this thread) and the next block's opens. After the session's last block the
    /// profiler disarms itself.
    #[inline]
    pub fn end_block(&self, height: u64) {
        if self.armed.load(Ordering::Acquire) {
            self.end_armed(height);
        }
    }

    /// Whether a session is armed.
    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// The chain id profiles are stored under.
    pub fn chain_id(&self) -> &str {
        &self.shared.chain_id
    }

    fn send(&self, command: Command) -> bool {
        self.workers
            .as_ref()
            .is_some_and(|w| w.commands.send(command).is_ok())
    }

    #[cold]
    #[inline(never)]
    fn begin_armed(&self, height: u64) {
        let now = Instant::now();
        self.open_execution(height, now);
        self.cost.record(now, false);
    }

    fn open_execution(&self, height: u64, now: Instant) {
        let mut state = lock(&self.state);
        let State {
            session,
            execution_started,
            ..
        } = &mut *state;
        // Armed in the middle of a block: its window opens at its end_block.
        let Some(session) = session
            .as_mut()
            .filter(|s| s.state == SessionState::Armed && s.in_progress_height.is_some())
        else {
            return;
        };
        session.in_progress_height = Some(height);
        *execution_started = Some(now);
    }

    #[cold]
    #[inline(never)]
    fn end_armed(&self, height: u64) {
        let requested = Instant::now();
        self.close_window(height, requested);
        self.cost.record(requested, true);
    }

    fn close_window(&self, height: u64, requested: Instant) {
        let mut state = lock(&self.state);
        let State {
            session,
            execution_started,
            ..
        } = &mut *state;
        let execution = execution_started.take().map(|t| requested - t);
        let Some(session) = session.as_mut().filter(|s| s.state == SessionState::Armed) else {
            return;
        };
        if session.in_progress_height.take().is_some() {
            self.shared.render_queued();
            if !self.send(Command::End {
                height,
                requested,
                execution,
            }) {
                self.shared.render_done();
                self.sampler_gone(session, height);
                return;
            }
            session.blocks_captured += 1;
            if session.blocks_captured >= session.blocks_requested {
                session.state = SessionState::Completed;
                self.armed.store(false, Ordering::Release);
                // The sampler keeps the session's guard running until told.
                self.send(Command::Stop);
                return;
            }
        }
        let next = height + 1;
        if !self.send(Command::Begin {
            session_id: session.id,
            frequency_hz: session.frequency_hz,
            requested,
        }) {
            self.sampler_gone(session, next);
            return;
        }
        session.in_progress_height = Some(next);
        session.blocks_started += 1;
    }

    fn sampler_gone(&self, session: &mut SessionStatus, height: u64) {
        session.state = SessionState::Failed;
        session.in_progress_height = None;
        self.armed.store(false, Ordering::Release);
        self.shared.record_failure(
            Some(height),
            "sampler",
            ProfilerError::SamplerGone.to_string(),
        );
    }

    /// Arms a session: the `blocks` blocks after the current one are captured at
    /// `frequency_hz`, the first window opening at the next `end_block`. Validates the params, refuses a second session, and first has the
    /// sampling thread warm pprof-rs up (its expensive first build), waiting for it: this
    /// call blocks for up to a few hundred milliseconds — call it from the RPC thread,
    /// never from the consensus thread.
    pub fn enable(&self, params: EnableParams) -> Result<SessionStatus, ProfilerError> {
        let request = params.validate(self.max_blocks)?;
        {
            let mut state = lock(&self.state);
            if state.warming {
                return Err(ProfilerError::SessionActive {
                    session_id: state.session.as_ref().map_or(0, |s| s.id),
                    state: "warming up",
                });
            }
            if let Some(session) = state
                .session
                .as_ref()
                .filter(|s| s.state == SessionState::Armed)
            {
                return Err(ProfilerError::SessionActive {
                    session_id: session.id,
                    state: "armed",
                });
            }
            state.warming = true;
        }

        let warmed = self.warm_up();

        let mut state = lock(&self.state);
        state.warming = false;
        warmed?;
        let previous_id = state.session.as_ref().map_or(0, |s| s.id);
        let status = SessionStatus {
            id: unix_ms().max(previous_id + 1),
            state: SessionState::Armed,
            frequency_hz: request.frequency_hz,
            blocks_requested: request.blocks,
            blocks_started: 0,
            blocks_captured: 0,
            blocks_discarded: 0,
            in_progress_height: None,
        };
        state.session = Some(status.clone());
        state.execution_started = None;
        self.armed.store(true, Ordering::Release);
        tracing::info!(
            session = status.id,
            blocks = status.blocks_requested,
            frequency_hz = status.frequency_hz,
            "block profiler armed"
        );
        Ok(status)
    }

    fn warm_up(&self) -> Result<(), ProfilerError> {
        let (reply, result) = mpsc::sync_channel(1);
        if !self.send(Command::Warm { reply }) {
            return Err(ProfilerError::SamplerGone);
        }
        match result.recv_timeout(WARM_TIMEOUT) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => {
                self.shared.record_failure(None, "start", reason.clone());
                Err(ProfilerError::Warmup(reason))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ProfilerError::Warmup(format!(
                "no answer from the sampling thread within {}s",
                WARM_TIMEOUT.as_secs()
            ))),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ProfilerError::SamplerGone),
        }
    }

    /// Disarms the profiler. A block being captured is thrown away; blocks already captured
    /// are still rendered and written.
    pub fn disable(&self) -> DisableOutcome {
        let mut state = lock(&self.state);
        let Some(session) = state.session.as_mut() else {
            return DisableOutcome {
                was_armed: false,
                session: None,
                discarded_height: None,
            };
        };
        if session.state != SessionState::Armed {
            return DisableOutcome {
                was_armed: false,
                session: Some(session.clone()),
                discarded_height: None,
            };
        }
        session.state = SessionState::Disabled;
        self.armed.store(false, Ordering::Release);
        let discarded_height = session.in_progress_height.take();
        if discarded_height.is_some() {
            session.blocks_discarded += 1;
            // If the sampler is gone there is nothing to stop.
            self.send(Command::Stop);
        }
        tracing::info!(session = session.id, "block profiler disarmed");
        DisableOutcome {
            was_armed: true,
            session: Some(session.clone()),
            discarded_height,
        }
    }

    /// Snapshot of the session, the renders in flight, the store and the last failure.
    pub fn status(&self) -> Status {
        let (warming_up, session) = {
            let state = lock(&self.state);
            (state.warming, state.session.clone())
        };
        let (profiles, profiles_bytes) = {
            let index = lock(&self.shared.index);
            (
                index.len() as u64,
                index.values().map(|i| i.disk_bytes).sum(),
            )
        };
        let health = lock(&self.shared.health);
        Status {
            chain_id: self.shared.chain_id.clone(),
            out_dir: self.shared.store.dir().to_path_buf(),
            armed: self.is_armed(),
            warming_up,
            session,
            pending_renders: self.shared.pending_renders.load(Ordering::Acquire),
            profiles,
            profiles_bytes,
            retention: self.shared.store.retention(),
            captured_total: health.captured_total,
            failures_total: health.failures_total,
            last_error: health.last_error.clone(),
            consensus_cost: self.cost.snapshot(),
        }
    }

    /// The stored profiles, lowest height first.
    pub fn list(&self) -> Vec<ProfileSummary> {
        lock(&self.shared.index)
            .values()
            .map(|i| i.summary.clone())
            .collect()
    }

    /// Reads one file of a stored profile: `latest` is the most recent capture.
    pub fn fetch(&self, params: &FetchParams) -> Result<FetchResponse, ProfilerError> {
        let summary = {
            let index = lock(&self.shared.index);
            match params.height {
                HeightSelector::Latest => index
                    .values()
                    .max_by_key(|i| (i.summary.captured_unix_ms, i.summary.height))
                    .map(|i| i.summary.clone())
                    .ok_or(ProfilerError::NoProfiles)?,
                HeightSelector::Height(height) => index
                    .get(&height)
                    .map(|i| i.summary.clone())
                    .ok_or_else(|| ProfilerError::UnknownHeight {
                        height,
                        available: describe_heights(&index),
                    })?,
            }
        };
        let file = params.kind.file_name(params.role);
        if !summary.files.contains(&file) {
            return Err(ProfilerError::MissingFile {
                height: summary.height,
                role: params.role.to_string(),
                file,
            });
        }
        let bytes = self.shared.store.read(summary.height, &file)?;
        FetchResponse::new(summary.height, params.kind, params.role, file, bytes)
    }

    /// Waits until every captured block has been rendered and written (or has failed).
    /// Returns false on timeout. Meant for tests and tools, not for the consensus thread.
    pub fn wait_for_renders(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.shared.pending_renders.load(Ordering::Acquire) == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for BlockProfiler {
    fn drop(&mut self) {
        self.armed.store(false, Ordering::Release);
        if let Some(Workers { commands, threads }) = self.workers.take() {
            // Closing the channel stops the sampler (dropping its guard), which closes the
            // renderer's channel; both finish their queues first.
            drop(commands);
            for thread in threads {
                if thread.join().is_err() {
                    tracing::error!("a profiler thread panicked while shutting down");
                }
            }
        }
    }
}

fn describe_heights(index: &BTreeMap<u64, Indexed>) -> String {
    let heights: Vec<String> = index.keys().map(u64::to_string).collect();
    match (index.keys().next(), index.keys().next_back()) {
        (None, _) | (_, None) => "nothing captured yet".into(),
        _ if heights.len() <= 10 => format!("captured heights: {}", heights.join(", ")),
        (Some(first), Some(last)) => {
            format!(
                "{} profiles captured between heights {first} and {last}",
                heights.len()
            )
        }
    }
}

/// Accumulates the consensus thread's wall time in armed hooks (relaxed atomics: a few
/// nanoseconds per call, read only by `status`).
///
/// Wall time only: reading the thread's CPU clock right after waking the sampling thread
/// got the consensus thread descheduled until the sampler was done (measured: `end_block`
/// p50 from 17 µs to 1.4 ms in `cargo bench -p feth-profiler-rpc`). The benchmark measures
/// CPU time from outside the call instead.
#[derive(Default)]
struct CostMeter {
    blocks: AtomicU64,
    total_ns: AtomicU64,
    max_call_ns: AtomicU64,
}

impl CostMeter {
    fn record(&self, since: Instant, end_of_block: bool) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if end_of_block {
            self.blocks.fetch_add(1, Ordering::Relaxed);
        }
        self.total_ns.fetch_add(ns, Ordering::Relaxed);
        self.max_call_ns.fetch_max(ns, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ConsensusCost {
        ConsensusCost {
            blocks: self.blocks.load(Ordering::Relaxed),
            total_ns: self.total_ns.load(Ordering::Relaxed),
            max_call_ns: self.max_call_ns.load(Ordering::Relaxed),
        }
    }
}

/// Claim on the process-wide profiler, released on drop.
struct InstanceClaim;

impl InstanceClaim {
    fn acquire() -> Result<Self, ProfilerError> {
        INSTANCE_ALIVE
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| InstanceClaim)
            .map_err(|_| ProfilerError::AlreadyInstantiated)
    }
}

impl Drop for InstanceClaim {
    fn drop(&mut self) {
        INSTANCE_ALIVE.store(false, Ordering::Release);
    }
}

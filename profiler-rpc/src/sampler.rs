//! The `fethprof-sample` thread: sole owner of the pprof-rs guard.
//!
//! pprof-rs has one global profiler per process; its first build costs ~150 ms, a guard
//! must be dropped before another is built, dropping it discards its samples, and each
//! build or drop (re)allocates its ~18 MB sample table. None of that may run on the
//! consensus thread, which only sends this thread a message:
//!
//! * `Warm` (from `enable`, which waits for the answer): first build, dropped at once;
//! * `Begin` (at the previous block's `end_block`): open the block's window, starting the
//!   session's guard for its first block;
//! * `End` (at the block's `end_block`): collect the session's cumulative raw samples
//!   (`build_unresolved`), keep what grew since the previous block's collection — the
//!   block's own samples — and queue them for rendering;
//! * `Stop` (session over, or disabled): drop the guard.
//!
//! **One guard per session.** The guard lives from the session's first window to its end;
//! a block's profile is the difference between two collections. A block therefore costs
//! one pass over the sample table rather than a drop and two reallocations of it, and
//! consecutive windows are truly contiguous: samples taken between a block's `end_block`
//! and its collection (`end_delay_ms`) count for that block, none are lost.
//!
//! Scheduling: before a session's first window, the thread waits under the normal policy,
//! so that the first `Begin` (about 0.1 ms of work) runs at once. While blocks are captured
//! it waits under `SCHED_BATCH`, so that `End` never preempts the node: under full load a
//! window then closes up to a scheduler slice late. Each profile records the delay.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Instant, SystemTime};

use pprof::{ProfilerGuard, ProfilerGuardBuilder, UnresolvedReport};

use crate::render::RenderJob;
use crate::role::PROFILER_THREAD_PREFIX;
use crate::shared::{set_current_thread_batch, unix_ms, Shared};

/// Messages to the sampling thread, handled in order.
pub(crate) enum Command {
    /// Compute the blocklist and run (and drop) a first profiler build.
    Warm {
        reply: mpsc::SyncSender<Result<(), String>>,
    },
    /// Start capturing the next block; `requested` is when the previous block's
    /// `end_block` was called.
    Begin {
        session_id: u64,
        frequency_hz: u32,
        requested: Instant,
    },
    /// Stop capturing, call the block `height` and hand its samples to rendering;
    /// `execution` is the time from its `begin_block` to its `end_block`.
    End {
        height: u64,
        requested: Instant,
        execution: Option<std::time::Duration>,
    },
    /// The session is over: drop the guard (the samples of an open window are thrown away).
    Stop,
}

/// The session being captured: its guard, and what was already collected from it.
struct Active {
    guard: ProfilerGuard<'static>,
    session_id: u64,
    frequency_hz: u32,
    /// Cumulative sample counts at the last collection (a block's `End`), if any.
    collected: Option<UnresolvedReport>,
    /// When the last collection (or the guard's start) happened.
    collected_at: Instant,
    /// The same moment, as wall time.
    collected_wall: SystemTime,
    /// The open window, between `Begin` and `End`.
    window: Option<Window>,
}

/// A block's window.
struct Window {
    started: Instant,
    started_at: SystemTime,
    start_delay_ms: f64,
}

struct Sampler {
    shared: Arc<Shared>,
    render: mpsc::Sender<RenderJob>,
    blocklist: Vec<String>,
    builder: Option<ProfilerGuardBuilder>,
    active: Option<Active>,
}

/// Starts the sampling thread. It exits when every sender is gone, and then drops
/// `render`, which stops the rendering thread.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    render: mpsc::Sender<RenderJob>,
    blocklist: Vec<String>,
) -> std::io::Result<(mpsc::Sender<Command>, JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Command>();
    let mut sampler = Sampler {
        shared,
        render,
        blocklist,
        builder: None,
        active: None,
    };
    let handle = thread::Builder::new()
        .name(format!("{PROFILER_THREAD_PREFIX}sample"))
        .spawn(move || {
            let mut batch = false;
            for command in rx {
                let settles_block = matches!(command, Command::End { .. });
                let handled = panic::catch_unwind(AssertUnwindSafe(|| sampler.handle(command)));
                if handled.is_err() {
                    sampler.active = None;
                    sampler.shared.record_failure(
                        None,
                        "sampler",
                        "sampling thread panicked".into(),
                    );
                    if settles_block {
                        sampler.shared.render_done();
                    }
                }
                let capturing = sampler.active.is_some();
                if capturing != batch {
                    set_current_thread_batch(capturing);
                    batch = capturing;
                }
            }
        })?;
    Ok((tx, handle))
}

impl Sampler {
    fn handle(&mut self, command: Command) {
        match command {
            Command::Warm { reply } => {
                self.active = None;
                let result = self.warm();
                // The enabling call may have given up waiting; nothing to do then.
                let _ = reply.send(result);
            }
            Command::Begin {
                session_id,
                frequency_hz,
                requested,
            } => self.begin(session_id, frequency_hz, requested),
            Command::End {
                height,
                requested,
                execution,
            } => self.end(height, requested, execution),
            Command::Stop => self.active = None,
        }
    }

    /// The expensive first build (blocklist scan, lazy statics, first symbolisation), run
    /// before a session is armed so that no block pays for it.
    fn warm(&mut self) -> Result<(), String> {
        let builder = ProfilerGuardBuilder::default().blocklist(&self.blocklist);
        let guard = builder
            .clone()
            .build()
            .map_err(|e| format!("building the pprof-rs profiler: {e}"))?;
        drop(guard);
        self.builder = Some(builder);
        Ok(())
    }

    /// Opens the next block's window: where the previous one was collected when the
    /// session's guard is running, or on a fresh guard for a session's first block.
    fn begin(&mut self, session_id: u64, frequency_hz: u32, requested: Instant) {
        if let Some(active) = self
            .active
            .as_mut()
            .filter(|a| a.session_id == session_id && a.frequency_hz == frequency_hz)
        {
            active.window = Some(Window {
                started: active.collected_at,
                started_at: active.collected_wall,
                start_delay_ms: millis(active.collected_at.saturating_duration_since(requested)),
            });
            return;
        }
        // Never more than one guard (pprof-rs refuses a second build while one lives).
        self.active = None;
        let Some(builder) = &self.builder else {
            self.shared.record_failure(
                None,
                "start",
                "profiler was not warmed up before arming".into(),
            );
            return;
        };
        let frequency = libc::c_int::try_from(frequency_hz).unwrap_or(libc::c_int::MAX);
        match builder.clone().frequency(frequency).build() {
            Ok(guard) => {
                let (started, started_at) = (Instant::now(), SystemTime::now());
                self.active = Some(Active {
                    guard,
                    session_id,
                    frequency_hz,
                    collected: None,
                    collected_at: started,
                    collected_wall: started_at,
                    window: Some(Window {
                        started,
                        started_at,
                        start_delay_ms: millis(started.duration_since(requested)),
                    }),
                })
            }
            Err(e) => self.shared.record_failure(
                None,
                "start",
                format!("starting the pprof-rs profiler: {e}"),
            ),
        }
    }

    /// Collects the session's samples, keeps those taken since the previous collection
    /// (the block's) and queues the block for rendering; the guard keeps running for the
    /// next block. Every `End` settles one pending block, here or in the rendering thread.
    fn end(&mut self, height: u64, requested: Instant, execution: Option<std::time::Duration>) {
        let Some((active, window)) = self
            .active
            .as_mut()
            .and_then(|a| a.window.take().map(|w| (a, w)))
        else {
            // Its start failed (already reported).
            self.shared.render_done();
            return;
        };
        let collected = active.guard.report().build_unresolved();
        let stopped = Instant::now();
        let report = match collected {
            Ok(cumulative) => {
                let block = since(active.collected.as_ref(), &cumulative);
                active.collected = Some(cumulative);
                active.collected_at = stopped;
                active.collected_wall = SystemTime::now();
                block
            }
            Err(e) => {
                self.shared.record_failure(
                    Some(height),
                    "capture",
                    format!("collecting samples: {e}"),
                );
                // The guard may be unusable: the next block starts a fresh one.
                self.active = None;
                self.shared.render_done();
                return;
            }
        };
        let job = RenderJob {
            session_id: active.session_id,
            height,
            frequency_hz: active.frequency_hz,
            window: stopped.duration_since(window.started),
            started_at: window.started_at,
            start_delay_ms: window.start_delay_ms,
            end_delay_ms: millis(stopped.saturating_duration_since(requested)),
            execution_ms: execution.map(millis),
            captured_unix_ms: unix_ms(),
            report,
        };
        if self.render.send(job).is_err() {
            self.shared.record_failure(
                Some(height),
                "render",
                "the rendering thread has stopped".into(),
            );
            self.shared.render_done();
        }
    }
}

/// The samples of `now` (cumulative counts) that were not in `before` yet: pprof-rs's
/// counts only grow while its guard lives, so this is what was sampled in between.
fn since(before: Option<&UnresolvedReport>, now: &UnresolvedReport) -> UnresolvedReport {
    let data = now
        .data
        .iter()
        .filter_map(|(stack, &count)| {
            let earlier = before.and_then(|b| b.data.get(stack)).copied();
            let grown = count - earlier.unwrap_or(0);
            (grown > 0).then(|| (stack.clone(), grown))
        })
        .collect();
    UnresolvedReport {
        data,
        timing: now.timing.clone(),
    }
}

fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

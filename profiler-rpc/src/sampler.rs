//! The `fethprof-sample` thread: sole owner of the pprof-rs guard.
//!
//! pprof-rs has one global profiler per process; its first build costs ~150 ms, a guard
//! must be dropped before another is built, dropping it discards its samples and
//! reallocates its ~18 MB sample table, and collecting its raw samples
//! (`build_unresolved`) hashes every stack through libgcc (milliseconds for a busy block).
//! None of that may run on the consensus thread, which only sends this thread a message:
//!
//! * `Warm` (from `enable`, which waits for the answer): first build, dropped at once;
//! * `Begin` (at the previous block's `end_block`): start a fresh guard for the block;
//! * `End` (at the block's `end_block`): collect the block's raw samples, drop the guard,
//!   queue the samples for rendering;
//! * `Stop`: drop the guard and its samples (disable).
//!
//! Between two captured blocks `End` is followed at once by `Begin`: the next window opens
//! as soon as the previous one is collected (milliseconds for a busy block; pprof-rs drops
//! the samples that fall in that gap, and each profile records it as `start_delay_ms`).
//!
//! Scheduling: before a session's first window, the thread waits under the normal policy,
//! so that the first `Begin` (about 0.1 ms of work) runs at once. While blocks are captured
//! it waits under `SCHED_BATCH`, so that `End` (collecting samples, reallocating pprof-rs's
//! table) never preempts the node: under full load a window then closes up to a scheduler
//! slice late. Each profile records both delays.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Instant, SystemTime};

use pprof::{ProfilerGuard, ProfilerGuardBuilder};

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
    /// Stop capturing and throw the samples away.
    Stop,
}

/// The block being captured.
struct Active {
    guard: ProfilerGuard<'static>,
    session_id: u64,
    frequency_hz: u32,
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

    fn begin(&mut self, session_id: u64, frequency_hz: u32, requested: Instant) {
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
                let started = Instant::now();
                self.active = Some(Active {
                    guard,
                    session_id,
                    frequency_hz,
                    started,
                    started_at: SystemTime::now(),
                    start_delay_ms: millis(started.duration_since(requested)),
                })
            }
            Err(e) => self.shared.record_failure(
                None,
                "start",
                format!("starting the pprof-rs profiler: {e}"),
            ),
        }
    }

    /// Takes the block's raw samples, drops the guard (samples must be taken first: the
    /// drop discards them) and queues the block for rendering. Every `End` settles one
    /// pending block, here or in the rendering thread.
    fn end(&mut self, height: u64, requested: Instant, execution: Option<std::time::Duration>) {
        let Some(active) = self.active.take() else {
            // Its start failed (already reported).
            self.shared.render_done();
            return;
        };
        let report = active.guard.report().build_unresolved();
        let stopped = Instant::now();
        drop(active.guard);
        let report = match report {
            Ok(report) => report,
            Err(e) => {
                self.shared.record_failure(
                    Some(height),
                    "capture",
                    format!("collecting samples: {e}"),
                );
                self.shared.render_done();
                return;
            }
        };
        let job = RenderJob {
            session_id: active.session_id,
            height,
            frequency_hz: active.frequency_hz,
            window: stopped.duration_since(active.started),
            started_at: active.started_at,
            start_delay_ms: active.start_delay_ms,
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

fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

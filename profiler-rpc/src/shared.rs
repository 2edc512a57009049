//! State shared by the embedding handle, the sampling thread and the rendering thread:
//! the profile store and its index, the health counters and the last failure.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::api::{ErrorReport, ProfileSummary};
use crate::lock::lock;
use crate::store::{Indexed, Store};
use crate::work::ThreadWork;

/// Failure counters and the most recent failure.
#[derive(Debug, Default)]
pub(crate) struct Health {
    pub captured_total: u64,
    pub failures_total: u64,
    pub last_error: Option<ErrorReport>,
}

/// Everything the profiler's threads share.
pub(crate) struct Shared {
    pub chain_id: String,
    /// The node's rules for its threads' unmarked samples.
    pub thread_work: Vec<ThreadWork>,
    pub store: Store,
    pub index: Mutex<BTreeMap<u64, Indexed>>,
    pub health: Mutex<Health>,
    pub pending_renders: AtomicU64,
}

impl Shared {
    /// Records a failure: logged, counted and kept for `profiler_status`.
    pub fn record_failure(&self, height: Option<u64>, stage: &str, message: String) {
        tracing::error!(height, stage, %message, "block profiler failure; the node goes on");
        let mut health = lock(&self.health);
        health.failures_total += 1;
        health.last_error = Some(ErrorReport {
            height,
            stage: stage.to_string(),
            message,
            unix_ms: unix_ms(),
        });
    }

    /// Records a block written to disk.
    pub fn record_capture(&self, summary: &ProfileSummary) {
        tracing::info!(
            height = summary.height,
            samples = summary.samples,
            check_tx = summary.check_tx_samples,
            deliver_tx = summary.deliver_tx_samples,
            "block profile written"
        );
        lock(&self.health).captured_total += 1;
    }

    /// A render job was queued.
    pub fn render_queued(&self) {
        self.pending_renders.fetch_add(1, Ordering::AcqRel);
    }

    /// A render job finished, successfully or not.
    pub fn render_done(&self) {
        self.pending_renders.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Puts the calling thread under `SCHED_BATCH` (`batch`) or back under `SCHED_OTHER`. A
/// batch thread never preempts the node's threads when it wakes up: it waits for the next
/// scheduling point (immediate with a spare core, up to a scheduler slice under full load).
/// Linux only; elsewhere a no-op.
pub(crate) fn set_current_thread_batch(batch: bool) {
    #[cfg(target_os = "linux")]
    {
        let policy = if batch {
            libc::SCHED_BATCH
        } else {
            libc::SCHED_OTHER
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: changes only the calling thread's policy; priority 0 is the only valid
        // one for both policies.
        let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
        if rc != 0 {
            tracing::warn!(
                errno = rc,
                batch,
                "cannot change a profiler thread's policy"
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = batch;
}

/// Gives the calling thread the lowest priority (nice 19): it runs on spare CPU.
/// Linux only (where nice values are per thread); elsewhere a no-op.
pub(crate) fn set_current_thread_lowest_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let Ok(tid) = libc::id_t::try_from(tid) else {
            return;
        };
        // SAFETY: renices only the thread `tid`.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 19) } != 0 {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                "cannot lower the priority of a profiler thread"
            );
        }
    }
}

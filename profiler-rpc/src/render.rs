//! Turning one block's raw samples into files: symbolise, split by role, fold, and render
//! SVG flamegraphs and pprof protobufs — on the `fethprof-render` thread, never on the
//! consensus thread.

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime};

use pprof::protos::Message as _;
use pprof::{Frames, Report, Symbol, UnresolvedReport};

use crate::api::{ProfileKind, ProfileSummary};
use crate::error::ProfilerError;
use crate::folded::FoldedStacks;
use crate::role::{Role, RoleFilter, PROFILER_THREAD_PREFIX};
use crate::shared::{set_current_thread_batch, set_current_thread_lowest_priority, Shared};
use crate::store::StoredFile;

/// Label key of the block height in protobuf samples.
const BLOCK_HEIGHT_LABEL: &str = "block_height";
/// Resolved addresses kept between blocks; the cache is cleared beyond this.
const SYMBOL_CACHE_LIMIT: usize = 200_000;

/// One captured block's raw samples, handed over by the sampling thread.
pub(crate) struct RenderJob {
    pub session_id: u64,
    pub height: u64,
    pub frequency_hz: u32,
    /// How long the profiler ran for this block.
    pub window: Duration,
    pub started_at: SystemTime,
    pub start_delay_ms: f64,
    pub end_delay_ms: f64,
    pub execution_ms: Option<f64>,
    pub captured_unix_ms: u64,
    pub report: UnresolvedReport,
}

/// A block's files, rendered in memory.
struct Rendered {
    pub summary: ProfileSummary,
    pub files: Vec<StoredFile>,
}

/// Starts the rendering thread (`SCHED_BATCH`, nice 19: it renders on spare CPU); it exits
/// when the returned sender is dropped.
pub(crate) fn spawn(
    shared: Arc<Shared>,
) -> std::io::Result<(mpsc::Sender<RenderJob>, JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<RenderJob>();
    let handle = thread::Builder::new()
        .name(format!("{PROFILER_THREAD_PREFIX}render"))
        .spawn(move || {
            set_current_thread_batch(true);
            set_current_thread_lowest_priority();
            let mut symbolizer = Symbolizer::default();
            for job in rx {
                render_and_store(&shared, &mut symbolizer, job);
            }
        })?;
    Ok((tx, handle))
}

/// Renders and writes one block; every failure, panics included, is recorded and
/// swallowed so that the next block still works.
fn render_and_store(shared: &Shared, symbolizer: &mut Symbolizer, job: RenderJob) {
    let height = job.height;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let rendered =
            render_block(job, &shared.chain_id, symbolizer).map_err(|e| ("render", e))?;
        let summary = rendered.summary.clone();
        shared
            .store
            .save(rendered.summary, rendered.files, &shared.index)
            .map_err(|e| ("write", e))?;
        Ok::<_, (&str, ProfilerError)>(summary)
    }));
    match outcome {
        Ok(Ok(summary)) => shared.record_capture(&summary),
        Ok(Err((stage, e))) => shared.record_failure(Some(height), stage, e.to_string()),
        Err(panic) => {
            // A panic may have left the cache half-updated.
            *symbolizer = Symbolizer::default();
            let reason = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            shared.record_failure(Some(height), "render", format!("panicked: {reason}"));
        }
    }
    shared.render_done();
}

/// Symbolises a block's samples and renders every file of its profile.
fn render_block(
    job: RenderJob,
    chain_id: &str,
    symbolizer: &mut Symbolizer,
) -> Result<Rendered, ProfilerError> {
    let RenderJob {
        session_id,
        height,
        frequency_hz,
        window,
        started_at,
        start_delay_ms,
        end_delay_ms,
        execution_ms,
        captured_unix_ms,
        report,
    } = job;
    let UnresolvedReport { data, mut timing } = report;
    timing.start_time = started_at;
    timing.duration = window;

    let mut samples: Vec<(Frames, isize)> = Vec::new();
    let mut profiler_samples = 0u64;
    for (unresolved, count) in data {
        let name_len = unresolved
            .thread_name_length
            .min(unresolved.thread_name.len());
        let frames = symbolizer.frames(
            unresolved.frames.iter().map(|frame| frame.ip),
            &unresolved.thread_name[..name_len],
            unresolved.thread_id,
            unresolved.sample_timestamp,
        );
        if frames.thread_name.starts_with(PROFILER_THREAD_PREFIX) {
            profiler_samples += count.unsigned_abs() as u64;
        } else {
            samples.push((frames, count));
        }
    }

    let all = fold(&samples);
    let duration_ms = window.as_secs_f64() * 1e3;
    let mut files = Vec::new();
    for filter in RoleFilter::ALL {
        let folded = all.filter(filter);
        if folded.is_empty() {
            continue;
        }
        let title = format!("{chain_id} block {height}: {filter}");
        let subtitle = format!(
            "{} samples at {frequency_hz} Hz in {duration_ms:.0} ms; root frame = thread",
            folded.total()
        );
        files.push(StoredFile {
            name: ProfileKind::Svg.file_name(filter),
            bytes: folded.to_svg(&title, Some(&subtitle))?,
        });
        files.push(StoredFile {
            name: ProfileKind::Folded.file_name(filter),
            bytes: folded.to_text().into_bytes(),
        });
        let mut selected: HashMap<Frames, isize> = HashMap::new();
        for (frames, count) in &samples {
            if filter.matches_thread(&frames.thread_name_or_id()) {
                *selected.entry(frames.clone()).or_insert(0) += count;
            }
        }
        let report = Report {
            data: selected,
            timing: timing.clone(),
        };
        files.push(StoredFile {
            name: ProfileKind::Pb.file_name(filter),
            bytes: encode_pprof(&report, height)?,
        });
    }

    let role_samples = |role: Role| all.filter(role.into()).total();
    let summary = ProfileSummary {
        chain_id: chain_id.to_string(),
        height,
        session_id,
        captured_unix_ms,
        frequency_hz,
        duration_ms,
        start_delay_ms,
        end_delay_ms,
        execution_ms,
        samples: all.total(),
        check_tx_samples: role_samples(Role::CheckTx),
        deliver_tx_samples: role_samples(Role::DeliverTx),
        profiler_samples,
        files: files.iter().map(|f| f.name.clone()).collect(),
        bytes: files.iter().map(|f| f.bytes.len() as u64).sum(),
    };
    Ok(Rendered { summary, files })
}

/// Resolves sampled addresses to symbols, caching them across blocks: consecutive blocks
/// mostly revisit the same code, and resolution dominates rendering time.
#[derive(Default)]
struct Symbolizer {
    cache: HashMap<usize, Resolved>,
}

#[derive(Clone)]
struct Resolved {
    symbols: Vec<Symbol>,
    /// pprof-rs's signal handler: that frame and the next one are noise.
    in_signal_handler: bool,
}

impl Symbolizer {
    /// The symbolised stack of a sample (innermost frame first, like pprof-rs's own).
    fn frames(
        &mut self,
        ips: impl Iterator<Item = usize>,
        thread_name: &[u8],
        thread_id: u64,
        sample_timestamp: SystemTime,
    ) -> Frames {
        let mut frames = Vec::new();
        let mut ips = ips;
        while let Some(ip) = ips.next() {
            let resolved = self.resolve(ip);
            if resolved.in_signal_handler {
                ips.next();
                continue;
            }
            if !resolved.symbols.is_empty() {
                frames.push(resolved.symbols);
            }
        }
        Frames {
            frames,
            thread_name: String::from_utf8_lossy(thread_name).into_owned(),
            thread_id,
            sample_timestamp,
        }
    }

    fn resolve(&mut self, ip: usize) -> Resolved {
        if let Some(resolved) = self.cache.get(&ip) {
            return resolved.clone();
        }
        if self.cache.len() >= SYMBOL_CACHE_LIMIT {
            self.cache.clear();
        }
        let mut symbols = Vec::new();
        // Frame-pointer stacks hold return addresses: resolve the call instruction (ip - 1)
        // so inlined frames and line numbers are those of the call site.
        backtrace::resolve(ip.saturating_sub(1) as *mut c_void, |symbol| {
            symbols.push(Symbol {
                name: symbol.name().map(|n| n.as_bytes().to_vec()),
                addr: symbol.addr(),
                lineno: symbol.lineno(),
                filename: symbol.filename().map(|f| f.to_path_buf()),
            })
        });
        let in_signal_handler = symbols
            .iter()
            .any(|s| matches!(&*s.name(), "perf_signal_handler" | "_perf_signal_handler"));
        let resolved = Resolved {
            symbols,
            in_signal_handler,
        };
        self.cache.insert(ip, resolved.clone());
        resolved
    }
}

/// Folds symbolised samples: thread name as root frame, then callers before callees
/// (inlined frames expanded, outermost first).
fn fold(samples: &[(Frames, isize)]) -> FoldedStacks {
    let mut folded = FoldedStacks::new();
    for (frames, count) in samples {
        let mut stack = sanitize_frame(&frames.thread_name_or_id());
        for frame in frames.frames.iter().rev() {
            for symbol in frame.iter().rev() {
                stack.push(';');
                stack.push_str(&sanitize_frame(&symbol.name()));
            }
        }
        folded.add(stack, count.unsigned_abs() as u64);
    }
    folded
}

/// Makes a symbol name safe as one folded frame: `;` separates frames and newlines end
/// lines, so both are replaced (`[u8; 32]` becomes `[u8: 32]`).
fn sanitize_frame(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

/// Encodes a report as a pprof protobuf whose samples carry, besides pprof-rs's `thread`
/// label, a numeric `block_height` label.
fn encode_pprof(report: &Report, height: u64) -> Result<Vec<u8>, ProfilerError> {
    let mut profile = report.pprof().map_err(|e| ProfilerError::Render {
        what: "pprof protobuf".into(),
        reason: e.to_string(),
    })?;
    let key = i64::try_from(profile.string_table.len()).unwrap_or(i64::MAX);
    profile.string_table.push(BLOCK_HEIGHT_LABEL.to_string());
    let num = i64::try_from(height).unwrap_or(i64::MAX);
    for sample in &mut profile.sample {
        sample.label.push(pprof::protos::Label {
            key,
            num,
            ..Default::default()
        });
    }
    Ok(profile.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_removes_separators() {
        assert_eq!(
            sanitize_frame("<[u8; 32] as Foo>::bar"),
            "<[u8: 32] as Foo>::bar"
        );
        assert_eq!(sanitize_frame("a\nb"), "a b");
    }
}

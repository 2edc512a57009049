//! Turning one block's raw samples into files: symbolise, split by role, fold, and render
//! SVG flamegraphs and pprof protobufs — on the `fethprof-render` thread, never on the
//! consensus thread.

use std::collections::{BTreeMap, HashMap};
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
use crate::work::{self, Work};

/// Label key of the sample's work in protobuf samples.
const ROLE_LABEL: &str = "role";
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
        let rendered = render_block(job, shared, symbolizer).map_err(|e| ("render", e))?;
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

/// One symbolised sample and the work it was spent on.
struct Sample {
    frames: Frames,
    count: isize,
    work: Work,
}

/// Symbolises a block's samples and renders every file of its profile.
fn render_block(
    job: RenderJob,
    shared: &Shared,
    symbolizer: &mut Symbolizer,
) -> Result<Rendered, ProfilerError> {
    let chain_id = shared.chain_id.as_str();
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

    let mut samples: Vec<Sample> = Vec::new();
    let mut profiler_samples = 0u64;
    for (unresolved, count) in data {
        let name_len = unresolved
            .thread_name_length
            .min(unresolved.thread_name.len());
        let (frames, marker) = symbolizer.frames(
            unresolved.frames.iter().map(|frame| frame.ip),
            &unresolved.thread_name[..name_len],
            unresolved.thread_id,
            unresolved.sample_timestamp,
        );
        if frames.thread_name.starts_with(PROFILER_THREAD_PREFIX) {
            profiler_samples += count.unsigned_abs() as u64;
        } else {
            let work = work::classify(marker, &frames.thread_name_or_id(), &shared.thread_work);
            samples.push(Sample {
                frames,
                count,
                work,
            });
        }
    }

    let all = fold(&samples);
    let work_of: HashMap<&Frames, Work> = samples.iter().map(|s| (&s.frames, s.work)).collect();
    let duration_ms = window.as_secs_f64() * 1e3;
    let mut files = Vec::new();
    for filter in RoleFilter::ALL {
        let folded = all.filter(filter);
        if folded.is_empty() {
            continue;
        }
        let title = format!("{chain_id} block {height}: {filter}");
        let subtitle = format!(
            "{} samples at {frequency_hz} Hz in {duration_ms:.0} ms; root frame = work, then thread",
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
        for sample in samples.iter().filter(|s| filter.matches(s.work)) {
            *selected.entry(sample.frames.clone()).or_insert(0) += sample.count;
        }
        let report = Report {
            data: selected,
            timing: timing.clone(),
        };
        files.push(StoredFile {
            name: ProfileKind::Pb.file_name(filter),
            bytes: encode_pprof(&report, height, &work_of)?,
        });
    }

    let work_samples = work_samples(&samples);
    let role_samples = |role: Role| work_samples.get(&role.into()).copied().unwrap_or(0);
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
        work_samples,
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
    /// The innermost work marker among its (inlined) symbols.
    marker: Option<Work>,
}

impl Symbolizer {
    /// The symbolised stack of a sample (innermost frame first, like pprof-rs's own) and
    /// its innermost work marker.
    fn frames(
        &mut self,
        ips: impl Iterator<Item = usize>,
        thread_name: &[u8],
        thread_id: u64,
        sample_timestamp: SystemTime,
    ) -> (Frames, Option<Work>) {
        let mut frames = Vec::new();
        let mut marker = None;
        let mut ips = ips;
        while let Some(ip) = ips.next() {
            let resolved = self.resolve(ip);
            if resolved.in_signal_handler {
                ips.next();
                continue;
            }
            marker = marker.or(resolved.marker);
            if !resolved.symbols.is_empty() {
                frames.push(resolved.symbols);
            }
        }
        let frames = Frames {
            frames,
            thread_name: String::from_utf8_lossy(thread_name).into_owned(),
            thread_id,
            sample_timestamp,
        };
        (frames, marker)
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
        let marker = work::innermost_marker(symbols.iter().map(Symbol::name));
        let resolved = Resolved {
            symbols,
            in_signal_handler,
            marker,
        };
        self.cache.insert(ip, resolved.clone());
        resolved
    }
}

/// Samples by work, every kind present (zero when none was spent on it).
fn work_samples(samples: &[Sample]) -> BTreeMap<Work, u64> {
    let mut by_work: BTreeMap<Work, u64> = Work::ALL.into_iter().map(|w| (w, 0)).collect();
    for sample in samples {
        let n = by_work.entry(sample.work).or_default();
        *n = n.saturating_add(sample.count.unsigned_abs() as u64);
    }
    by_work
}

/// Folds symbolised samples: the work as root frame, the thread's name below it, then
/// callers before callees (inlined frames expanded, outermost first).
fn fold(samples: &[Sample]) -> FoldedStacks {
    let mut folded = FoldedStacks::new();
    for Sample {
        frames,
        count,
        work,
    } in samples
    {
        let mut stack = format!("{work};{}", sanitize_frame(&frames.thread_name_or_id()));
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
/// label, a `role` label (the sample's work, from `work_of`) and a numeric `block_height`
/// label.
fn encode_pprof(
    report: &Report,
    height: u64,
    work_of: &HashMap<&Frames, Work>,
) -> Result<Vec<u8>, ProfilerError> {
    let mut profile = report.pprof().map_err(|e| ProfilerError::Render {
        what: "pprof protobuf".into(),
        reason: e.to_string(),
    })?;
    let mut intern = |text: &str| {
        let index = profile.string_table.len();
        profile.string_table.push(text.to_string());
        i64::try_from(index).unwrap_or(i64::MAX)
    };
    let height_key = intern(BLOCK_HEIGHT_LABEL);
    let role_key = intern(ROLE_LABEL);
    let work_names: BTreeMap<Work, i64> = Work::ALL.map(|w| (w, intern(w.as_str()))).into();
    let num = i64::try_from(height).unwrap_or(i64::MAX);
    // pprof-rs writes one sample per entry of `data`, in its iteration order.
    for (sample, frames) in profile.sample.iter_mut().zip(report.data.keys()) {
        // Every selected stack is one of the block's samples.
        let work = work_of.get(frames).copied().unwrap_or(Work::Other);
        sample.label.push(pprof::protos::Label {
            key: role_key,
            str: work_names[&work],
            ..Default::default()
        });
        sample.label.push(pprof::protos::Label {
            key: height_key,
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

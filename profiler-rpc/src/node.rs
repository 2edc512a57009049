//! The whole node in one flamegraph: the application's block profiles and
//! the consensus engine's CPU profile (CometBFT, from its Go pprof), each
//! under a root frame naming its process.
//!
//! The two profilers sample at different rates (pprof-rs at the session's
//! frequency, Go at 100 Hz) over windows that are close but not equal (the
//! armed blocks, and whole seconds of Go's profile). So the stacks are
//! weighed in microseconds of CPU, not in samples, and each process's
//! weights are scaled to one common window: the widths then compare the
//! processes' CPU over the same span of time, and one differential
//! flamegraph of two such profiles shows both processes.

use std::fs;
use std::path::PathBuf;

use serde::Serialize;

use crate::api::{ProfileKind, ProfileSummary, META_FILE};
use crate::error::ProfilerError;
use crate::folded::FoldedStacks;
use crate::role::RoleFilter;

/// One process's stacks over its own window.
#[derive(Clone, Debug)]
pub struct ProcessStacks {
    /// The process's name, the root frame of its stacks (`abcid`, `cometbft`).
    pub process: String,
    /// Its stacks, counted in samples. A stack that does not start with
    /// `process` is put under it.
    pub stacks: FoldedStacks,
    /// Samples per second of one busy thread.
    pub sample_hz: f64,
    /// Seconds the stacks cover.
    pub seconds: f64,
}

/// One process's part of a [`NodeProfile`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessShare {
    /// The process's name.
    pub process: String,
    /// Samples taken.
    pub samples: u64,
    /// Samples per second of one busy thread.
    pub sample_hz: f64,
    /// Seconds its profile covered.
    pub seconds: f64,
    /// CPU cores it kept busy on average over its window.
    pub cores: f64,
    /// Its share of the node's CPU, in percent.
    pub share_pct: f64,
}

/// The processes' stacks in one set, in microseconds of CPU over `window_secs`.
#[derive(Clone, Debug)]
pub struct NodeProfile {
    /// Every process's stacks under its name, weighed in µs of CPU.
    pub stacks: FoldedStacks,
    /// The common window the weights are scaled to.
    pub window_secs: f64,
    /// Each process's figures, in the order given.
    pub processes: Vec<ProcessShare>,
}

/// Weighs each part's samples as µs of CPU, scaled from its own window to
/// `window_secs`, and puts them in one set. Refuses a part with no window,
/// no rate, or a name that cannot be a frame.
pub fn combine(parts: &[ProcessStacks], window_secs: f64) -> Result<NodeProfile, ProfilerError> {
    if !(window_secs.is_finite() && window_secs > 0.0) {
        return Err(bad(format!("a window of {window_secs} s")));
    }
    let mut stacks = FoldedStacks::new();
    let mut processes = Vec::with_capacity(parts.len());
    for part in parts {
        check(part)?;
        let us_per_sample = 1e6 / part.sample_hz * window_secs / part.seconds;
        let prefix = format!("{};", part.process);
        for (stack, count) in part.stacks.iter() {
            let weight = (count as f64 * us_per_sample).round() as u64;
            match stack.starts_with(&prefix) {
                true => stacks.add(stack.to_string(), weight),
                false => stacks.add(format!("{prefix}{stack}"), weight),
            }
        }
        let samples = part.stacks.total();
        processes.push(ProcessShare {
            process: part.process.clone(),
            samples,
            sample_hz: part.sample_hz,
            seconds: part.seconds,
            cores: samples as f64 / part.sample_hz / part.seconds,
            share_pct: 0.0,
        });
    }
    let total: f64 = processes.iter().map(|p| p.cores).sum();
    for p in &mut processes {
        p.share_pct = if total > 0.0 {
            100.0 * p.cores / total
        } else {
            0.0
        };
    }
    Ok(NodeProfile {
        stacks,
        window_secs,
        processes,
    })
}

impl NodeProfile {
    /// A line saying what the flamegraph shows, for its subtitle.
    pub fn subtitle(&self) -> String {
        let parts: Vec<String> = self
            .processes
            .iter()
            .map(|p| format!("{} {:.2} cores ({:.0} %)", p.process, p.cores, p.share_pct))
            .collect();
        format!(
            "widths: µs of CPU over {:.2} s; {}",
            self.window_secs,
            parts.join(", ")
        )
    }
}

/// The block profiles in `dirs` (each `<height>/` with its `meta.json`, as
/// [`crate::diff::find_blocks`] finds them) as
/// one process's stacks: their folded stacks merged, over the sum of their
/// windows (a block without samples still adds its window). The blocks must
/// share one sampling rate, as a session's do.
pub fn load_blocks(process: &str, dirs: &[PathBuf]) -> Result<ProcessStacks, ProfilerError> {
    let mut stacks = FoldedStacks::new();
    let (mut seconds, mut sample_hz) = (0.0, None);
    for dir in dirs {
        let meta = dir.join(META_FILE);
        let text = fs::read_to_string(&meta).map_err(|e| ProfilerError::io("reading", &meta, e))?;
        let summary: ProfileSummary = serde_json::from_str(&text)
            .map_err(|e| bad(format!("{} is not a block's summary: {e}", meta.display())))?;
        match sample_hz {
            Some(hz) if hz != summary.frequency_hz => {
                return Err(bad(format!(
                    "blocks sampled at {hz} Hz and {} Hz (height {}): take one session's blocks",
                    summary.frequency_hz, summary.height
                )))
            }
            _ => sample_hz = Some(summary.frequency_hz),
        }
        seconds += summary.duration_ms / 1e3;
        let folded = dir.join(ProfileKind::Folded.file_name(RoleFilter::All));
        if folded.is_file() {
            let text = fs::read_to_string(&folded)
                .map_err(|e| ProfilerError::io("reading", &folded, e))?;
            stacks.merge(&FoldedStacks::parse(&text)?);
        }
    }
    let sample_hz = sample_hz.ok_or_else(|| bad(format!("no {process} block profiles")))?;
    Ok(ProcessStacks {
        process: process.to_string(),
        stacks,
        sample_hz: f64::from(sample_hz),
        seconds,
    })
}

fn check(part: &ProcessStacks) -> Result<(), ProfilerError> {
    let name = &part.process;
    if name.is_empty() || name.contains([';', ' ', '\n']) {
        return Err(bad(format!(
            "process name {name:?} (no ';', spaces or newlines)"
        )));
    }
    if !(part.sample_hz.is_finite() && part.sample_hz > 0.0) {
        return Err(bad(format!("{name} sampled at {} Hz", part.sample_hz)));
    }
    if !(part.seconds.is_finite() && part.seconds > 0.0) {
        return Err(bad(format!("{name} over a window of {} s", part.seconds)));
    }
    Ok(())
}

fn bad(reason: String) -> ProfilerError {
    ProfilerError::Render {
        what: "a whole-node profile".into(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::diff::find_blocks;

    fn part(process: &str, text: &str, sample_hz: f64, seconds: f64) -> ProcessStacks {
        ProcessStacks {
            process: process.into(),
            stacks: FoldedStacks::parse(text).unwrap(),
            sample_hz,
            seconds,
        }
    }

    #[test]
    fn processes_are_weighed_in_cpu_time_over_one_window() {
        // abcid: 99 samples at 99 Hz over 1 s is one core-second; CometBFT:
        // 100 samples at 100 Hz over 2 s is half a core.
        let abcid = part(
            "abcid",
            "check_tx;verify 66\ndeliver_tx;exec 33\n",
            99.0,
            1.0,
        );
        let comet = part("cometbft", "cometbft;timer 100\n", 100.0, 2.0);
        let node = combine(&[abcid, comet], 1.0).unwrap();
        let text = node.stacks.to_text();
        assert_eq!(
            text,
            "abcid;check_tx;verify 666667\nabcid;deliver_tx;exec 333333\ncometbft;timer 500000\n"
        );
        let cores: Vec<(String, f64)> = node
            .processes
            .iter()
            .map(|p| (p.process.clone(), p.cores))
            .collect();
        assert_eq!(cores, [("abcid".into(), 1.0), ("cometbft".into(), 0.5)]);
        let shares: Vec<f64> = node.processes.iter().map(|p| p.share_pct.round()).collect();
        assert_eq!(shares, [67.0, 33.0]);
        assert!(
            node.subtitle().contains("cometbft 0.50 cores (33 %)"),
            "{}",
            node.subtitle()
        );
    }

    #[test]
    fn parts_that_cannot_be_weighed_are_refused() {
        let err = |p: ProcessStacks, w: f64| combine(&[p], w).unwrap_err().to_string();
        assert!(err(part("a b", "x 1\n", 99.0, 1.0), 1.0).contains("process name"));
        assert!(err(part("a", "x 1\n", 0.0, 1.0), 1.0).contains("0 Hz"));
        assert!(err(part("a", "x 1\n", 99.0, 0.0), 1.0).contains("window of 0 s"));
        assert!(err(part("a", "x 1\n", 99.0, 1.0), f64::NAN).contains("NaN"));
    }

    fn block(dir: &Path, name: &str, height: u64, hz: u32, folded: Option<&str>) -> PathBuf {
        let block = dir.join("chain").join(name);
        fs::create_dir_all(&block).unwrap();
        let summary = ProfileSummary {
            chain_id: "chain".into(),
            height,
            session_id: 1,
            captured_unix_ms: 0,
            frequency_hz: hz,
            duration_ms: 250.0,
            start_delay_ms: 0.0,
            end_delay_ms: 0.0,
            execution_ms: None,
            samples: 0,
            check_tx_samples: 0,
            deliver_tx_samples: 0,
            work_samples: Default::default(),
            profiler_samples: 0,
            files: vec![],
            bytes: 0,
        };
        fs::write(block.join(META_FILE), serde_json::to_vec(&summary).unwrap()).unwrap();
        if let Some(text) = folded {
            fs::write(block.join("all.folded"), text).unwrap();
        }
        block
    }

    #[test]
    fn a_sessions_blocks_load_as_one_process_over_their_windows() {
        let dir = tempfile::tempdir().unwrap();
        block(dir.path(), "7", 7, 99, Some("deliver_tx;exec 3\n"));
        block(dir.path(), "8", 8, 99, None);
        block(
            dir.path(),
            "9",
            9,
            99,
            Some("deliver_tx;exec 2\ncheck_tx;verify 1\n"),
        );
        // A profile the node is still writing is left out.
        block(dir.path(), ".tmp-10", 10, 99, Some("deliver_tx;exec 7\n"));
        let dirs = find_blocks(dir.path()).unwrap();
        assert_eq!(dirs.len(), 3, "{dirs:?}");
        let abcid = load_blocks("abcid", &dirs).unwrap();
        assert_eq!(abcid.seconds, 0.75, "the empty block's window counts");
        assert_eq!(abcid.sample_hz, 99.0);
        assert_eq!(
            abcid.stacks.to_text(),
            "check_tx;verify 1\ndeliver_tx;exec 5\n"
        );
        block(dir.path(), "10", 10, 199, Some("x 1\n"));
        let mixed = load_blocks("abcid", &find_blocks(dir.path()).unwrap());
        assert!(mixed
            .unwrap_err()
            .to_string()
            .contains("199 Hz and 99 Hz (height 7)"));
        assert!(load_blocks("abcid", &[]).is_err());
        assert!(find_blocks(&dir.path().join("absent")).is_err());
    }
}

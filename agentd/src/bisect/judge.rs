//! The real judge: a probe builds its commit and runs one comparison of
//! three builds on devnets of their own, paired and interleaved: the good
//! endpoint, the probe and the bad endpoint. The gate classifies the probe
//! against the good one; the bad one, measured in the same rounds, must
//! still be shown slower, so that hours of drift between probes cannot
//! move an answer. The comparison buys rounds (`until_resolved`) up to
//! its own budget; what it still cannot tell is skipped. Looking for a
//! speed-up, the same rounds are asked the other way round ([`Find`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::ProgressBar;

use super::build::{Builder, Built};
use super::commits::Commit;
use super::search::{Class, Find};
use super::{Judge, Probe, Ratio};
use crate::compare::gate::Undecidable;
use crate::compare::run::CompareConfig;
use crate::compare::{self, ladder, CompareReport, GateConfig, GateVerdict};

/// Builds and measures probes.
pub struct DevnetJudge {
    /// The commits, good endpoint first.
    pub commits: Vec<Commit>,
    /// Their builds.
    pub builder: Builder,
    /// Every comparison's settings (its steps are the probe's builds).
    pub compare: CompareConfig,
    /// How a probe is classified (its `step` is set per probe).
    pub gate: GateConfig,
    /// The change looked for.
    pub find: Find,
    /// abcid's patch set every build runs (`base` for a recipe chain).
    pub patches: String,
    /// Where each probe's comparison report goes (`probe-<index>.json`).
    pub out: PathBuf,
    /// Each commit's flamegraph from the first probe that profiled it.
    pub flamegraphs: BTreeMap<usize, PathBuf>,
    /// Where builds show their progress (the comparisons show their own).
    pub bar: ProgressBar,
}

impl Judge for DevnetJudge {
    async fn judge(&mut self, index: usize) -> Result<Probe> {
        let started = Instant::now();
        let last = self.commits.len() - 1;
        let good = self.endpoint(0, "good").await?;
        let bad = self.endpoint(last, "bad").await?;
        let mut builds = vec![("good".to_string(), good)];
        if index != last {
            match self.build(index).await? {
                Built::Binary { path, .. } => builds.push((self.step_name(index), path)),
                Built::Failed { why, log } => {
                    let why = format!("does not build ({why}); its log: {}", log.display());
                    return Ok(skipped(index, why, started));
                }
            }
        }
        builds.push(("bad".to_string(), bad));
        let report = self.measure(index, builds).await?;
        let path = self.out.join(format!("probe-{index}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let mut probe = self.classify(index, &report)?;
        probe.seconds = started.elapsed().as_secs_f64();
        probe.report = Some(path);
        Ok(probe)
    }
}

impl DevnetJudge {
    /// An endpoint's binary: it must build.
    async fn endpoint(&self, index: usize, which: &str) -> Result<PathBuf> {
        let commit = &self.commits[index];
        match self.build(index).await? {
            Built::Binary { path, .. } => Ok(path),
            Built::Failed { why, log } => anyhow::bail!(
                "the {which} endpoint {} does not build ({why}); its log: {}",
                commit.short(),
                log.display()
            ),
        }
    }

    /// Commit `index`'s build, a spinner turning while it builds.
    async fn build(&self, index: usize) -> Result<Built> {
        let commit = &self.commits[index];
        self.bar.set_message(format!(
            "building commit {index} ({} {})",
            commit.short(),
            commit.subject
        ));
        self.bar
            .enable_steady_tick(std::time::Duration::from_millis(250));
        let built = self.builder.build(commit).await;
        self.bar.disable_steady_tick();
        built
    }

    /// The step name of commit `index` in a probe's report.
    fn step_name(&self, index: usize) -> String {
        format!("{index}-{}", self.commits[index].short())
    }

    /// One comparison of `builds`; the flamegraphs it drew are kept.
    async fn measure(
        &mut self,
        index: usize,
        builds: Vec<(String, PathBuf)>,
    ) -> Result<CompareReport> {
        let mut cfg = self.compare.clone();
        cfg.steps = ladder::named_builds(builds, &self.patches);
        let report = compare::run::run(&cfg)
            .await
            .with_context(|| format!("the comparison of commit {index}"))?;
        let last = self.commits.len() - 1;
        for run in report.runs.iter().filter(|r| r.round == 0) {
            let commit = match run.step.as_str() {
                "good" => 0,
                "bad" => last,
                _ => index,
            };
            if let Some(svg) = &run.flamegraph {
                self.flamegraphs
                    .entry(commit)
                    .or_insert_with(|| svg.clone());
            }
        }
        Ok(report)
    }

    /// The probe's class from its report: the bad endpoint first, then the
    /// probe, each against the good one.
    fn classify(&self, index: usize, report: &CompareReport) -> Result<Probe> {
        let started = Instant::now();
        if let Some(why) = &report.failed {
            let why = format!("the comparison stopped early: {why}");
            return Ok(skipped(index, why, started));
        }
        let last = self.commits.len() - 1;
        let bad = match self.verdict(report, "bad")? {
            Ok(v) => v,
            Err(why) => return Ok(skipped(index, why, started)),
        };
        let endpoint = self.class_of(&bad, report);
        if index == last {
            let why = self.why(&bad, endpoint, report);
            return Ok(probe(index, endpoint, Some(endpoint), Some(&bad), why));
        }
        if endpoint != Class::Bad {
            let why = format!(
                "in this probe's rounds the bad endpoint was not shown {} ({})",
                self.find.word(),
                self.why(&bad, endpoint, report)
            );
            return Ok(probe(index, Class::Skip, Some(endpoint), Some(&bad), why));
        }
        let name = self.step_name(index);
        let verdict = match self.verdict(report, &name)? {
            Ok(v) => v,
            Err(why) => return Ok(skipped(index, why, started)),
        };
        let class = self.class_of(&verdict, report);
        let why = self.why(&verdict, class, report);
        Ok(probe(index, class, Some(Class::Bad), Some(&verdict), why))
    }

    /// A verdict's class for the change looked for: skipped when measured
    /// on a busy machine, else by the gate's rule (the other way round for
    /// a speed-up).
    fn class_of(&self, verdict: &GateVerdict, report: &CompareReport) -> Class {
        if report.machine.is_busy() {
            return Class::Skip;
        }
        self.figures_class(verdict)
    }

    /// What the figures alone say, busy machine or not.
    fn figures_class(&self, verdict: &GateVerdict) -> Class {
        let theta = self.gate.max_regression_pct / 100.0;
        self.find.class(&verdict.oriented, theta)
    }

    /// Why a verdict got `class`: the gate's own sentence for a slowdown,
    /// else one for a speed-up (after the busy machine's, when it was).
    fn why(&self, verdict: &GateVerdict, class: Class, report: &CompareReport) -> String {
        if self.find == Find::Slower {
            return verdict.explanation.clone();
        }
        if report.machine.is_busy() {
            let alone = faster_words(verdict, self.figures_class(verdict));
            return format!(
                "INCONCLUSIVE: measured on a busy machine. {}. The figures alone said: {alone}",
                report.machine.describe()
            );
        }
        faster_words(verdict, class)
    }

    /// The gate on `step` against `good`; `Err(why)` when the figures
    /// cannot decide at all.
    fn verdict(&self, report: &CompareReport, step: &str) -> Result<Result<GateVerdict, String>> {
        let cfg = GateConfig {
            step: Some(step.to_string()),
            ..self.gate.clone()
        };
        match compare::gate(None, report, &cfg) {
            Ok(v) => Ok(Ok(v)),
            Err(e) => match e.downcast::<Undecidable>() {
                Ok(why) => Ok(Err(why.to_string())),
                Err(e) => Err(e),
            },
        }
    }
}

/// A speed-up probe's `class` in words, with what was measured.
fn faster_words(verdict: &GateVerdict, class: Class) -> String {
    let what = verdict.measured();
    let pct = verdict.max_regression_pct;
    match class {
        Class::Bad => {
            format!("FASTER: {what}; the old endpoint shown slower than it by more than {pct} %")
        }
        Class::Good => format!(
            "not faster: {what}; the old endpoint shown no more than {pct} % slower than it"
        ),
        Class::Skip => format!(
            "cannot tell: {what}; the data cannot show the old endpoint slower than it by more than {pct} %, nor within that"
        ),
    }
}

fn probe(
    index: usize,
    class: Class,
    endpoint: Option<Class>,
    verdict: Option<&GateVerdict>,
    why: String,
) -> Probe {
    Probe {
        index,
        class,
        endpoint,
        ratio: verdict.map(|v| Ratio {
            ratio: v.oriented.ratio,
            low: v.oriented.low,
            high: v.oriented.high,
        }),
        rounds: verdict.map_or(0, |v| v.oriented.rounds),
        why,
        seconds: 0.0,
        report: None,
    }
}

fn skipped(index: usize, why: String, started: Instant) -> Probe {
    Probe {
        seconds: started.elapsed().as_secs_f64(),
        ..probe(index, Class::Skip, None, None, why)
    }
}

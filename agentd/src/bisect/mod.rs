//! `feth bisect`: which commit made the chain slower (or, asked so,
//! faster). A binary search over the commits between a good (old) and a
//! bad (new) revision in which every probe is a paired, interleaved
//! comparison judged by the regression gate: "not slower" is good,
//! "slower" is bad, and "cannot tell" (inconclusive once its rounds are
//! spent, or no build) is skipped, never guessed. Looking for a speed-up
//! ([`Find::Faster`]) asks the gate the other way round.
//!
//! - [`search`]: the bisection on commit indices (pure).
//! - [`Judge`]: the seam a probe goes through: the real one builds the
//!   commit ([`build`]) and compares it against both endpoints on devnets
//!   ([`judge`]); the tests' model answers from simulated rounds.
//! - [`commits`]: the commits between the endpoints, from git.
//! - [`render`]: the table, Markdown and JSON of a bisection.

pub mod build;
pub mod commits;
pub mod judge;
pub mod render;
pub mod search;

use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::ProgressBar;
use serde::Serialize;

use self::search::{Bisection, Class, Find, Found};

/// One probe: a commit measured against the good endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// The commit's index (0 the good endpoint, the last the bad one).
    pub index: usize,
    /// What the probe said.
    pub class: Class,
    /// What the same rounds said of the bad endpoint against the good one
    /// (`None` when nothing was measured, as for a commit that does not
    /// build): it must be bad for the probe to count.
    pub endpoint: Option<Class>,
    /// Its figure against the good endpoint (higher is better) with the
    /// 95 % interval, when measured.
    pub ratio: Option<Ratio>,
    /// Rounds the comparison ran.
    pub rounds: usize,
    /// Why: the gate's sentence, or what kept it from deciding.
    pub why: String,
    /// Its wall time, builds included.
    pub seconds: f64,
    /// The probe's comparison report, when it ran one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<std::path::PathBuf>,
}

/// A ratio and its 95 % interval, oriented so that below 1 is slower.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    /// The estimate.
    pub ratio: f64,
    /// Lower end of the interval.
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
}

/// What answers a probe: builds commit `index` and measures it against
/// both endpoints in the same rounds (the real judge), or a model of that
/// in the tests. Probing the bad endpoint itself (the last index) measures
/// the endpoints alone.
pub trait Judge {
    /// Probes commit `index`.
    fn judge(&mut self, index: usize) -> impl std::future::Future<Output = Result<Probe>>;
}

/// What the bisection looks for, and how long it may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The change looked for.
    pub find: Find,
    /// No probe starts that would, at the mean probe's time so far, end
    /// past this much wall time.
    pub budget: Option<Duration>,
}

/// A whole bisection.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Every probe in the order run.
    pub probes: Vec<Probe>,
    /// What was found; `None` when the bisection stopped at its endpoints.
    pub found: Option<Found>,
    /// Why it stopped before the end, if it did.
    pub stopped: Option<String>,
    /// Wall time of the whole.
    pub seconds: f64,
}

/// Bisects `len` commits (index 0 good, `len - 1` bad) through `judge`.
/// The endpoints are checked first, in the first probe's own rounds (or
/// alone, when no probe measured them): the bad one must show the change
/// looked for (slower, or faster) against the good one, else the
/// bisection stops and says so. `bar` shows
/// the probes and the expected time left.
pub async fn bisect(
    len: usize,
    judge: &mut impl Judge,
    limits: Limits,
    bar: &ProgressBar,
) -> Result<Outcome> {
    let started = Instant::now();
    let mut search = Bisection::new(len);
    let mut probes: Vec<Probe> = Vec::new();
    let mut checked = false;
    let mut stopped = None;
    while let Some(index) = search.next() {
        if let Some(why) = show_progress(bar, &search, &probes, index, started, limits) {
            stopped = Some(why);
            break;
        }
        let probe = judge.judge(index).await?;
        let endpoint = probe.endpoint;
        search.mark(index, probe.class);
        probes.push(probe);
        if let (false, Some(class)) = (checked, endpoint) {
            checked = true;
            if class != Class::Bad {
                return Ok(unchanged(probes, limits.find, started));
            }
        }
    }
    if !checked && stopped.is_none() {
        bar.set_message(format!(
            "checking that the bad endpoint is {}",
            limits.find.word()
        ));
        let probe = judge.judge(len.max(2) - 1).await?;
        let bad = probe.class == Class::Bad;
        probes.push(probe);
        if !bad {
            return Ok(unchanged(probes, limits.find, started));
        }
    }
    bar.finish_and_clear();
    Ok(Outcome {
        probes,
        found: Some(search.found()),
        stopped,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Shows where the search stands and the time it expects still to take;
/// `Some(why)` when the budget would run out during the next probe.
fn show_progress(
    bar: &ProgressBar,
    search: &Bisection,
    probes: &[Probe],
    index: usize,
    started: Instant,
    limits: Limits,
) -> Option<String> {
    let elapsed = started.elapsed().as_secs_f64();
    let left = search.probes_left();
    bar.set_length((probes.len() + left) as u64);
    bar.set_position(probes.len() as u64);
    if probes.is_empty() {
        bar.println(format!(
            "bisect: probing commit {index} with both endpoints; at most {left} probe(s) in all"
        ));
        return None;
    }
    let mean = elapsed / probes.len() as f64;
    bar.println(format!(
        "bisect: probing commit {index}; at most {left} probe(s) left, about {} at {} each",
        minutes(mean * left as f64),
        minutes(mean)
    ));
    let budget = limits.budget?.as_secs_f64();
    (elapsed + mean > budget).then(|| {
        format!(
            "the budget ({}) would run out during the next probe (about {} each)",
            minutes(budget),
            minutes(mean)
        )
    })
}

/// The bisection stopped at its endpoints: the bad one is not shown
/// slower (or faster) than the good one.
fn unchanged(probes: Vec<Probe>, find: Find, started: Instant) -> Outcome {
    let why = probes.last().map_or(String::new(), |p| p.why.clone());
    Outcome {
        probes,
        found: None,
        stopped: Some(format!(
            "the bad endpoint is not shown {} than the good one ({why}): nothing to bisect",
            find.word()
        )),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Seconds as `N min` (or `N s` under two minutes).
pub fn minutes(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else {
        format!("{:.0} min", seconds / 60.0)
    }
}

#[cfg(test)]
mod model;

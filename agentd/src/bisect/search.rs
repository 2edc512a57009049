//! The bisection itself, on commit indices: 0 is the good endpoint, the
//! last the bad one. Probes are marked good, bad or skipped ("cannot
//! tell", or no build); the next probe is the unmarked commit nearest the
//! middle of what is left, stepping around skipped ones as `git bisect
//! skip` does.

use serde::Serialize;

use crate::stats::decide::gate_rule;
use crate::stats::{GateAnswer, LogRatio};

/// Which change the bisection looks for. The endpoints are always the
/// older revision (index 0, `git bisect`'s "good" or "old") and the newer
/// one (the last, "bad" or "new"); a probe is marked [`Class::Bad`] when it
/// already shows the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Find {
    /// The commit that made the chain slower: a probe shown slower than
    /// the old endpoint beyond the threshold has the change.
    Slower,
    /// The commit that made the chain faster: a probe shown faster than
    /// the old endpoint beyond the threshold (the old one slower than it
    /// by more than the threshold) has the change.
    Faster,
}

impl std::str::FromStr for Find {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "slower" => Ok(Find::Slower),
            "faster" => Ok(Find::Faster),
            _ => Err(format!(
                "{s:?} is not a change to look for: say `slower` (a regression) or `faster` (a speed-up)"
            )),
        }
    }
}

impl Find {
    /// A probe's class from its figure against the old endpoint (oriented
    /// so that above 1 is better) and the threshold `theta` (0.05: 5 %),
    /// by the gate's own rule: asked as it is for a slowdown, the other way
    /// round for a speed-up.
    pub fn class(self, oriented: &LogRatio, theta: f64) -> Class {
        let asked = match self {
            Find::Slower => *oriented,
            Find::Faster => oriented.inverse(),
        };
        Class::of(gate_rule(&asked, theta).0)
    }

    /// The change in a word: `slower` or `faster`.
    pub fn word(self) -> &'static str {
        match self {
            Find::Slower => "slower",
            Find::Faster => "faster",
        }
    }

    /// What a table calls a class: good/bad for a slowdown, slow/fast for
    /// a speed-up.
    pub fn class_word(self, class: Class) -> &'static str {
        match (self, class) {
            (_, Class::Skip) => "skip",
            (Find::Slower, Class::Good) => "good",
            (Find::Slower, Class::Bad) => "bad",
            (Find::Faster, Class::Good) => "slow",
            (Find::Faster, Class::Bad) => "fast",
        }
    }
}

/// What a probe said of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Not slower than the good endpoint beyond the threshold, shown.
    Good,
    /// Slower than the good endpoint beyond the threshold, shown.
    Bad,
    /// The data (or the build) could not tell: left out of the search.
    Skip,
}

impl Class {
    /// The class of the gate's answer: pass is good, regression bad,
    /// inconclusive skipped.
    pub fn of(answer: GateAnswer) -> Self {
        match answer {
            GateAnswer::Pass => Class::Good,
            GateAnswer::Regression => Class::Bad,
            GateAnswer::Inconclusive => Class::Skip,
        }
    }
}

/// Where the search stands, or ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// The first bad commit: its parent is good.
    FirstBad(usize),
    /// The first bad commit is in `(last_good, first_bad]`; the commits in
    /// between could not be told (skipped) or were not probed (budget).
    Range {
        /// The last commit known good.
        last_good: usize,
        /// The first commit known bad.
        first_bad: usize,
        /// The commits between them that were skipped.
        skipped: Vec<usize>,
    },
}

/// The bisection's marks over `len` commits.
#[derive(Debug, Clone)]
pub struct Bisection {
    marks: Vec<Option<Class>>,
}

impl Bisection {
    /// A bisection of `len` commits (at least two): the first good, the
    /// last bad.
    pub fn new(len: usize) -> Self {
        let mut marks = vec![None; len.max(2)];
        marks[0] = Some(Class::Good);
        let last = marks.len() - 1;
        marks[last] = Some(Class::Bad);
        Self { marks }
    }

    /// Marks commit `index` (the endpoints keep their marks).
    pub fn mark(&mut self, index: usize, class: Class) {
        if index > 0 && index + 1 < self.marks.len() {
            self.marks[index] = Some(class);
        }
    }

    /// The last good and the first bad commit: the first commit marked bad,
    /// and the last one marked good before it.
    fn bounds(&self) -> (usize, usize) {
        let first_bad = (0..self.marks.len())
            .find(|&i| self.marks[i] == Some(Class::Bad))
            .unwrap_or(self.marks.len() - 1);
        let last_good = (0..first_bad)
            .rev()
            .find(|&i| self.marks[i] == Some(Class::Good))
            .unwrap_or(0);
        (last_good, first_bad)
    }

    /// The next commit to probe: the unmarked one between the bounds
    /// nearest their middle (the lower on a tie); `None` when none is left.
    pub fn next(&self) -> Option<usize> {
        let (lo, hi) = self.bounds();
        let middle = (lo + hi) as f64 / 2.0;
        (lo + 1..hi)
            .filter(|&i| self.marks[i].is_none())
            .min_by(|&a, &b| {
                let (da, db) = ((a as f64 - middle).abs(), (b as f64 - middle).abs());
                da.total_cmp(&db).then(a.cmp(&b))
            })
    }

    /// Probes still needed at most to end the search (a bound for the
    /// remaining-time estimate): ⌈log2⌉ of the commits left to tell apart.
    pub fn probes_left(&self) -> usize {
        let (lo, hi) = self.bounds();
        let open = (lo + 1..hi).filter(|&i| self.marks[i].is_none()).count();
        (usize::BITS - open.leading_zeros()) as usize
    }

    /// What the marks so far show.
    pub fn found(&self) -> Found {
        let (lo, hi) = self.bounds();
        if hi == lo + 1 {
            return Found::FirstBad(hi);
        }
        Found::Range {
            last_good: lo,
            first_bad: hi,
            skipped: (lo + 1..hi)
                .filter(|&i| self.marks[i] == Some(Class::Skip))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a bisection of `len` commits whose first bad one is `k`, every
    /// probe answered truly except those in `skip`.
    fn run(len: usize, k: usize, skip: &[usize]) -> (Found, Vec<usize>) {
        let mut b = Bisection::new(len);
        let mut probed = Vec::new();
        while let Some(i) = b.next() {
            probed.push(i);
            let class = match (skip.contains(&i), i >= k) {
                (true, _) => Class::Skip,
                (false, true) => Class::Bad,
                (false, false) => Class::Good,
            };
            b.mark(i, class);
        }
        (b.found(), probed)
    }

    #[test]
    fn every_first_bad_commit_is_found_in_log2_probes() {
        for k in 1..16 {
            let (found, probed) = run(16, k, &[]);
            assert_eq!(found, Found::FirstBad(k), "k = {k}");
            assert!(probed.len() <= 4, "k = {k}: {probed:?}");
        }
    }

    #[test]
    fn a_skipped_commit_is_stepped_around_and_reported_when_it_hides_the_answer() {
        // The answer is not the skipped commit: found anyway.
        assert_eq!(run(16, 9, &[7]).0, Found::FirstBad(9));
        // The skipped commit is the first bad one: a range holding it.
        assert_eq!(
            run(16, 7, &[7]).0,
            Found::Range {
                last_good: 6,
                first_bad: 8,
                skipped: vec![7]
            }
        );
    }

    /// `ratio` with a ±`half` % interval over 8 rounds.
    fn est(ratio: f64, half: f64) -> LogRatio {
        let mut e = LogRatio::from_logs(&[ratio.ln(); 8]).expect("rounds");
        e.low = Some(ratio * (1.0 - half / 100.0));
        e.high = Some(ratio * (1.0 + half / 100.0));
        e
    }

    #[test]
    fn a_speed_up_is_the_change_only_when_looking_for_one() {
        let faster = est(1.5, 3.0);
        assert_eq!(Find::Faster.class(&faster, 0.05), Class::Bad);
        assert_eq!(Find::Slower.class(&faster, 0.05), Class::Good);
        let slower = est(0.7, 3.0);
        assert_eq!(Find::Faster.class(&slower, 0.05), Class::Good);
        assert_eq!(Find::Slower.class(&slower, 0.05), Class::Bad);
        // Within noise of the threshold either way: cannot tell.
        let unsure = est(1.05, 6.0);
        assert_eq!(Find::Faster.class(&unsure, 0.05), Class::Skip);
        assert_eq!(Find::Slower.class(&est(0.95, 6.0), 0.05), Class::Skip);
    }

    #[test]
    fn two_commits_need_no_probe() {
        let b = Bisection::new(2);
        assert_eq!(b.next(), None);
        assert_eq!(b.found(), Found::FirstBad(1));
        assert_eq!(b.probes_left(), 0);
    }

    #[test]
    fn the_probes_left_bound_the_search() {
        let mut b = Bisection::new(16);
        assert_eq!(b.probes_left(), 4);
        b.mark(b.next().unwrap(), Class::Good);
        assert_eq!(b.probes_left(), 3);
    }
}

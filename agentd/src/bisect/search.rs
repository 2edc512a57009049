//! The bisection itself, on commit indices: 0 is the good endpoint, the
//! last the bad one. Probes are marked good, bad or skipped ("cannot
//! tell", or no build); the next probe is the unmarked commit nearest the
//! middle of what is left, stepping around skipped ones as `git bisect
//! skip` does.

use serde::Serialize;

use crate::stats::GateAnswer;

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

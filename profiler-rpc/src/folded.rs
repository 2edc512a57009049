//! Folded stacks: `root;caller;callee count` lines, the common currency of block profiles,
//! merges of N blocks and differential flamegraphs.
//!
//! The root frame of every stack of a block profile is the sample's work (see
//! [`crate::work`]) and the second its thread's name, so a role's stacks are the ones
//! rooted at that role's name.

use std::collections::BTreeMap;

use crate::error::ProfilerError;
use crate::role::RoleFilter;

/// A multiset of call stacks with sample counts, in deterministic (sorted) order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoldedStacks {
    stacks: BTreeMap<String, u64>,
}

impl FoldedStacks {
    /// An empty set of stacks.
    pub fn new() -> Self {
        FoldedStacks::default()
    }

    /// Parses folded text; blank lines are skipped, anything else must end in ` <count>`.
    pub fn parse(text: &str) -> Result<Self, ProfilerError> {
        let mut folded = FoldedStacks::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            let parsed = line
                .rsplit_once(' ')
                .and_then(|(stack, count)| Some((stack, count.parse::<u64>().ok()?)));
            match parsed {
                Some((stack, count)) if !stack.is_empty() => folded.add(stack.to_string(), count),
                _ => {
                    return Err(ProfilerError::Render {
                        what: "folded stacks".into(),
                        reason: format!("line {} is not `stack count`: {line:?}", index + 1),
                    })
                }
            }
        }
        Ok(folded)
    }

    /// Adds `count` samples of `stack` (frames joined by `;`, root first).
    pub fn add(&mut self, stack: String, count: u64) {
        if count > 0 {
            *self.stacks.entry(stack).or_insert(0) += count;
        }
    }

    /// Adds every stack of `other` (merging blocks into one profile).
    pub fn merge(&mut self, other: &FoldedStacks) {
        for (stack, count) in &other.stacks {
            self.add(stack.clone(), *count);
        }
    }

    /// The stacks selected by `filter` (by root frame, i.e. the samples' work).
    pub fn filter(&self, filter: RoleFilter) -> FoldedStacks {
        let stacks = self
            .stacks
            .iter()
            .filter(|(stack, _)| filter.matches_root(root_frame(stack)))
            .map(|(stack, count)| (stack.clone(), *count))
            .collect();
        FoldedStacks { stacks }
    }

    /// Total samples.
    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Iterates over `(stack, count)` pairs in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.stacks.iter().map(|(s, c)| (s.as_str(), *c))
    }

    /// Samples whose innermost recorded frame is each function ("self" samples).
    pub fn self_counts(&self) -> BTreeMap<&str, u64> {
        let mut counts = BTreeMap::new();
        for (stack, count) in &self.stacks {
            let leaf = stack.rsplit(';').next().unwrap_or(stack);
            *counts.entry(leaf).or_insert(0) += count;
        }
        counts
    }

    /// Renders the stacks as an SVG flamegraph (e.g. a merge of N blocks).
    pub fn to_svg(&self, title: &str, subtitle: Option<&str>) -> Result<Vec<u8>, ProfilerError> {
        let lines: Vec<String> = self.iter().map(|(s, c)| format!("{s} {c}")).collect();
        crate::svg::flamegraph_svg(
            lines.iter().map(String::as_str),
            title.to_string(),
            subtitle.map(str::to_string),
        )
    }

    /// The folded text: one `stack count` line per stack, sorted, newline-terminated.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for (stack, count) in &self.stacks {
            text.push_str(stack);
            text.push(' ');
            text.push_str(&count.to_string());
            text.push('\n');
        }
        text
    }
}

fn root_frame(stack: &str) -> &str {
    stack.split(';').next().unwrap_or(stack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_merge_and_print_round_trip() {
        let mut a = FoldedStacks::parse("check_tx;main;f 3\ndeliver_tx;main;g 2\n\n")
            .expect("valid folded text");
        let b = FoldedStacks::parse("check_tx;main;f 1\nabcid;poll 4").expect("valid");
        a.merge(&b);
        assert_eq!(a.total(), 10);
        assert_eq!(
            a.to_text(),
            "abcid;poll 4\ncheck_tx;main;f 4\ndeliver_tx;main;g 2\n"
        );
        assert_eq!(FoldedStacks::parse(&a.to_text()).expect("reparse"), a);
    }

    #[test]
    fn frames_with_spaces_keep_their_names() {
        let folded = FoldedStacks::parse("t;<T as core::ops::Fn>::call 7").expect("valid");
        assert_eq!(
            folded.iter().collect::<Vec<_>>(),
            vec![("t;<T as core::ops::Fn>::call", 7)]
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        for bad in ["no_count_here", "a;b x", "a;b -1", " 5"] {
            assert!(FoldedStacks::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn filters_select_stacks_by_work_root() {
        let folded =
            FoldedStacks::parse("check_tx;a 1\ndeliver_tx;b 2\ncheck_tx_other;c 4").expect("valid");
        assert_eq!(folded.filter(RoleFilter::CheckTx).total(), 1);
        assert_eq!(folded.filter(RoleFilter::DeliverTx).total(), 2);
        assert_eq!(folded.filter(RoleFilter::All).total(), 7);
    }

    #[test]
    fn self_counts_sum_by_leaf() {
        let folded = FoldedStacks::parse("t;a;leaf 2\nu;b;leaf 3\nt;a 1").expect("valid");
        let counts = folded.self_counts();
        assert_eq!(counts.get("leaf"), Some(&5));
        assert_eq!(counts.get("a"), Some(&1));
    }
}

//! `--shard I/N`: several agents share one keys file without sharing a
//! sender.
//!
//! Shard `I` of `N` takes the contiguous block of keys
//! `[I·K/N, (I+1)·K/N)` of a file of `K` keys (sizes differ by at most one).
//! Contiguous blocks rather than a stride (`i mod N`) because a block is
//! described by two numbers: a run records its block ([`KeyRange`]) and a
//! merge proves by comparing ranges that no two runs shared a sender, and a
//! key's index in the file (the block's start plus its index in the shard)
//! keeps what is derived from it, such as fresh recipients, apart across
//! agents. Together the `N` shards cover every key exactly once.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (`--shard I/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// `I`, from 0.
    pub index: usize,
    /// `N`, at least 1.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> Result<Self> {
        let usage =
            "give --shard I/N: this agent's index I (from 0) and the number of agents N, e.g. 0/4";
        let Some((i, n)) = text.trim().split_once('/') else {
            bail!("--shard {text:?}: {usage}");
        };
        let (Ok(index), Ok(count)) = (i.trim().parse::<usize>(), n.trim().parse::<usize>()) else {
            bail!("--shard {text:?}: I and N must be whole numbers; {usage}");
        };
        if count == 0 {
            bail!("--shard {text:?}: N must be at least 1");
        }
        if index >= count {
            bail!(
                "--shard {text:?}: I must be below N (shards are numbered 0 to {})",
                count - 1
            );
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The keys of this shard in a file of `total` keys.
    pub fn range(&self, total: usize) -> Result<Range<usize>> {
        if self.count > total {
            bail!(
                "--shard {self}: more shards ({}) than keys in the keys file ({total}); \
                 fund more accounts or run fewer agents",
                self.count
            );
        }
        let at = |i: usize| (i as u128 * total as u128 / self.count as u128) as usize;
        Ok(at(self.index)..at(self.index + 1))
    }
}

/// The keys a run sent from: `count` keys from index `first` of the keys
/// file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRange {
    /// Index in the keys file of the first sender.
    pub first: usize,
    /// Senders.
    pub count: usize,
}

impl KeyRange {
    /// One past the last index.
    pub fn end(&self) -> usize {
        self.first + self.count
    }

    /// Whether the two ranges share a key.
    pub fn overlaps(&self, other: &KeyRange) -> bool {
        self.count > 0 && other.count > 0 && self.first < other.end() && other.first < self.end()
    }
}

impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            0 => write!(f, "no key"),
            _ => write!(f, "keys {}–{}", self.first, self.end() - 1),
        }
    }
}

/// How a sharded run was cut from its keys file, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardOf {
    /// The shard.
    pub shard: Shard,
    /// Keys in the whole file.
    pub keys_in_file: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(text: &str) -> Result<Shard> {
        text.parse()
    }

    #[test]
    fn shards_cover_every_key_exactly_once() {
        for total in [1usize, 2, 3, 7, 10, 100, 1001] {
            for count in 1..=total.min(12) {
                let mut seen = vec![0u32; total];
                for index in 0..count {
                    let r = Shard { index, count }.range(total).unwrap();
                    assert!(!r.is_empty(), "{index}/{count} of {total} is empty");
                    assert!(r.len() <= total / count + 1);
                    for k in r {
                        seen[k] += 1;
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{count} shards of {total}");
            }
        }
        let r = Shard { index: 1, count: 3 }.range(10).unwrap();
        assert_eq!(r, 3..6);
    }

    #[test]
    fn bad_shards_are_refused_with_the_reason() {
        assert_eq!(shard(" 2/4 ").unwrap(), Shard { index: 2, count: 4 });
        assert_eq!(shard("0/1").unwrap().to_string(), "0/1");
        let e = |t: &str| shard(t).unwrap_err().to_string();
        assert!(e("4/4").contains("I must be below N"), "{}", e("4/4"));
        assert!(e("0/0").contains("N must be at least 1"));
        assert!(e("1").contains("I/N"));
        assert!(e("a/2").contains("whole numbers"));
        assert!(e("-1/2").contains("whole numbers"));
        let e = Shard { index: 0, count: 5 }
            .range(4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("more shards (5) than keys in the keys file (4)"),
            "{e}"
        );
    }

    #[test]
    fn ranges_overlap_only_when_they_share_a_key() {
        let r = |first, count| KeyRange { first, count };
        assert!(!r(0, 5).overlaps(&r(5, 5)));
        assert!(r(0, 6).overlaps(&r(5, 5)));
        assert!(r(3, 1).overlaps(&r(0, 10)));
        assert!(!r(3, 0).overlaps(&r(0, 10)));
        assert_eq!(r(5, 5).to_string(), "keys 5–9");
    }
}

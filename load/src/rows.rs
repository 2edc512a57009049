//! The rows a run's report keeps in memory: the latest ones up to a bound,
//! with a count of the older ones dropped, so a run of days keeps bounded
//! memory. The series file (`--series-out`) has every row.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Finished seconds kept in memory: a day.
pub const KEEP_SECONDS: usize = 86_400;
/// Block rows kept in memory.
pub const KEEP_BLOCKS: usize = 100_000;
/// Windows kept in memory.
pub const KEEP_WINDOWS: usize = 100_000;

/// The latest rows, at most a bound of them.
#[derive(Debug, Clone)]
pub struct Latest<T> {
    rows: VecDeque<T>,
    keep: usize,
    dropped: u64,
}

impl<T> Latest<T> {
    /// No rows yet; at most `keep` will be kept.
    pub fn new(keep: usize) -> Self {
        Self {
            rows: VecDeque::new(),
            keep: keep.max(1),
            dropped: 0,
        }
    }

    /// Appends `row`, dropping the oldest one past the bound.
    pub fn push(&mut self, row: T) {
        if self.rows.len() == self.keep {
            self.rows.pop_front();
            self.dropped += 1;
        }
        self.rows.push_back(row);
    }

    /// The rows kept, oldest first.
    pub fn rows(&self) -> &VecDeque<T> {
        &self.rows
    }

    /// Rows dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Rows pushed so far, dropped ones included.
    pub fn pushed(&self) -> u64 {
        self.dropped + self.rows.len() as u64
    }
}

impl<T: Clone> Latest<T> {
    /// The rows kept, oldest first, as a vector.
    pub fn to_vec(&self) -> Vec<T> {
        self.rows.iter().cloned().collect()
    }
}

/// Rows left out of a report because the run outlasted what it keeps in
/// memory (the oldest ones; the series file has them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// Oldest finished seconds left out of `series`.
    pub seconds: u64,
    /// Oldest blocks left out of `blocks`.
    pub blocks: u64,
    /// Oldest windows left out of `windows`.
    pub windows: u64,
}

impl Dropped {
    /// Whether nothing was left out.
    pub fn is_none(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_rows_and_counts_the_rest() {
        let mut l = Latest::new(3);
        for i in 0..5 {
            l.push(i);
        }
        assert_eq!(l.to_vec(), vec![2, 3, 4]);
        assert_eq!((l.dropped(), l.pushed()), (2, 5));
        let mut small = Latest::new(0);
        small.push('a');
        small.push('b');
        assert_eq!((small.to_vec(), small.dropped()), (vec!['b'], 1));
    }
}

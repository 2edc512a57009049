//! The open-loop sender's schedule: when each transaction is due (how long
//! every request slot was busy at once is [`crate::load::slots::BusyClock`]).

use std::ops::Range;
use std::time::{Duration, Instant};

/// Intended send times at a fixed rate: transaction `seq` is due at
/// `start + seq / rate`, whenever the previous ones actually went out (so a
/// slow node cannot slow the schedule: no coordinated omission).
#[derive(Debug, Clone)]
pub struct Schedule {
    start: Instant,
    rate: f64,
    next: u64,
}

impl Schedule {
    /// Transaction 0 due at `start`, then `rate` per second (`rate` > 0).
    pub fn new(start: Instant, rate: f64) -> Self {
        Self {
            start,
            rate,
            next: 0,
        }
    }

    /// When transaction `seq` is due.
    pub fn intended(&self, seq: u64) -> Instant {
        self.start + Duration::from_secs_f64(seq as f64 / self.rate)
    }

    /// When the first transaction not yet released is due.
    pub fn next_due(&self) -> Instant {
        self.intended(self.next)
    }

    /// Releases the transactions due by `now`, at most `max` of them, oldest
    /// first.
    pub fn take_due(&mut self, now: Instant, max: u64) -> Range<u64> {
        let elapsed = now.saturating_duration_since(self.start).as_secs_f64();
        // Estimate, then settle the float rounding against `intended` itself.
        let mut due = (elapsed * self.rate).floor() as u64 + 1;
        while self.intended(due) <= now {
            due += 1;
        }
        while due > 0 && self.intended(due - 1) > now {
            due -= 1;
        }
        let n = due.saturating_sub(self.next).min(max);
        let taken = self.next..self.next + n;
        self.next += n;
        taken
    }

    /// Transactions released so far.
    pub fn released(&self) -> u64 {
        self.next
    }

    /// How late, at `now`, the oldest transaction not yet released is (zero
    /// when none is due).
    pub fn backlog_lag(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.next_due())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn due_transactions_are_released_by_their_intended_times_in_batches() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, 1000.0); // one every ms
        assert_eq!(s.take_due(t0, 10), 0..1, "transaction 0 is due at once");
        assert_eq!(s.take_due(t0, 10), 1..1, "nothing more yet");
        assert_eq!(s.next_due(), t0 + MS);
        // 25.5 ms in: 1..=25 are due, released ten at a time.
        let now = t0 + 25 * MS + MS / 2;
        assert_eq!(s.take_due(now, 10), 1..11);
        assert_eq!(s.backlog_lag(now), 14 * MS + MS / 2, "11 was due at 11 ms");
        assert_eq!(s.take_due(now, 10), 11..21);
        assert_eq!(s.take_due(now, 10), 21..26);
        assert_eq!(s.take_due(now, 10), 26..26);
        assert_eq!(s.backlog_lag(now), Duration::ZERO);
        assert_eq!(s.released(), 26);
        // Exactly on a due time: that transaction is due.
        assert_eq!(s.take_due(t0 + 26 * MS, 10), 26..27);
        assert_eq!(s.intended(26), t0 + 26 * MS);
    }

    #[test]
    fn odd_rates_release_every_due_transaction_once() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, 3.0);
        let mut released = Vec::new();
        for ms in (0..=2002).step_by(7) {
            let now = t0 + ms * MS;
            for seq in s.take_due(now, 10) {
                assert!(s.intended(seq) <= now, "{seq} released early");
                released.push(seq);
            }
        }
        // Due at 0, ⅓, ⅔, 1, 1⅓, 1⅔ and 2 s; the next at 2⅓ s.
        assert_eq!(released, (0..7).collect::<Vec<_>>());
    }
}

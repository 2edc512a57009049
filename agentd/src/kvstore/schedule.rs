//! The open-loop sender's bookkeeping: when each transaction is due, and how
//! long every request slot was busy at once.

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

/// How long all of a fixed number of slots were taken at once.
#[derive(Debug, Clone)]
pub struct BusyClock {
    slots: usize,
    in_use: usize,
    all_busy_since: Option<Instant>,
    total: Duration,
}

impl BusyClock {
    /// `slots` slots, all free.
    pub fn new(slots: usize) -> Self {
        Self {
            slots,
            in_use: 0,
            all_busy_since: None,
            total: Duration::ZERO,
        }
    }

    /// A slot was taken at `now`.
    pub fn take(&mut self, now: Instant) {
        self.in_use += 1;
        if self.in_use == self.slots {
            self.all_busy_since = Some(now);
        }
    }

    /// A slot was freed at `now`.
    pub fn free(&mut self, now: Instant) {
        if let Some(since) = self.all_busy_since.take() {
            self.total += now.saturating_duration_since(since);
        }
        self.in_use = self.in_use.saturating_sub(1);
    }

    /// Time with every slot taken, up to `now`.
    pub fn busy(&self, now: Instant) -> Duration {
        self.total
            + self
                .all_busy_since
                .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
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

    #[test]
    fn busy_time_counts_only_while_every_slot_is_taken() {
        let t0 = Instant::now();
        let mut c = BusyClock::new(2);
        c.take(t0);
        assert_eq!(c.busy(t0 + 5 * MS), Duration::ZERO, "one slot of two");
        c.take(t0 + 10 * MS);
        assert_eq!(c.busy(t0 + 13 * MS), 3 * MS, "an open busy stretch counts");
        c.free(t0 + 20 * MS);
        c.take(t0 + 30 * MS);
        c.free(t0 + 31 * MS);
        c.free(t0 + 40 * MS);
        assert_eq!(c.busy(t0 + 100 * MS), 11 * MS);
    }
}

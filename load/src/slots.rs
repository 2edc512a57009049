//! How long every request slot (worker) was busy at once.
//!
//! A schedule lag while every slot waits on the node is the node's doing (it
//! answers too slowly); a lag with slots idle is the agent's own. Each
//! request takes a slot for as long as its worker is busy with it; the time
//! during which all slots are taken is integrated exactly, under a lock
//! taken twice per request (not per transaction), which is far off the
//! send path's costs. The load engine and the key-value store's open loop
//! both keep this clock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sync::lock;

/// How long all of a fixed number of slots were taken at once; the caller
/// keeps it under its lock (see [`SlotClock`] for one that keeps its own).
#[derive(Debug, Clone)]
pub struct BusyClock {
    slots: usize,
    in_use: usize,
    all_busy_since: Option<Instant>,
    total: Duration,
}

impl BusyClock {
    /// `slots` slots (at least one), all free.
    pub fn new(slots: usize) -> Self {
        Self {
            slots: slots.max(1),
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

/// A [`BusyClock`] of the engine's request slots, shared by its workers.
#[derive(Debug)]
pub struct SlotClock {
    clock: Mutex<BusyClock>,
}

/// A slot taken by one request; released when dropped.
#[derive(Debug)]
pub struct Slot<'a>(&'a SlotClock);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        lock(&self.0.clock).free(Instant::now());
    }
}

impl SlotClock {
    /// A clock of `slots` request slots (at least one).
    pub fn new(slots: usize) -> Self {
        Self {
            clock: Mutex::new(BusyClock::new(slots)),
        }
    }

    /// Takes a slot until the returned guard is dropped.
    pub fn enter(&self) -> Slot<'_> {
        lock(&self.clock).take(Instant::now());
        Slot(self)
    }

    /// Total time so far during which every slot was taken.
    pub fn full_time(&self) -> Duration {
        lock(&self.clock).busy(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

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

    #[test]
    fn a_slot_is_given_back_when_its_guard_is_dropped() {
        let clock = SlotClock::new(2);
        let first = clock.enter();
        let second = clock.enter();
        assert_eq!(lock(&clock.clock).in_use, 2);
        assert!(
            lock(&clock.clock).all_busy_since.is_some(),
            "every slot taken"
        );
        drop((first, second));
        assert_eq!(lock(&clock.clock).in_use, 0);
        assert!(lock(&clock.clock).all_busy_since.is_none());
    }
}

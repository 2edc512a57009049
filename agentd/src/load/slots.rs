//! How long every request slot (worker) of the engine was busy at once.
//!
//! A schedule lag while every slot waits on the node is the node's doing (it
//! answers too slowly); a lag with slots idle is the agent's own. Each
//! request takes a slot for as long as its worker is busy with it; the time
//! during which all slots are taken is integrated exactly, under a lock
//! taken twice per request (not per transaction), which is far off the
//! send path's costs.

use crate::sync::lock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time-integrated "every slot busy" clock of `slots` request slots.
#[derive(Debug)]
pub struct SlotClock {
    slots: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_flight: usize,
    full_since: Option<Instant>,
    full: Duration,
}

/// A slot taken by one request; released when dropped.
#[derive(Debug)]
pub struct Slot<'a>(&'a SlotClock);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.leave(Instant::now());
    }
}

impl SlotClock {
    /// A clock of `slots` request slots (at least one).
    pub fn new(slots: usize) -> Self {
        Self {
            slots: slots.max(1),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Takes a slot until the returned guard is dropped.
    pub fn enter(&self) -> Slot<'_> {
        self.enter_at(Instant::now());
        Slot(self)
    }

    fn enter_at(&self, now: Instant) {
        let mut s = self.state();
        s.in_flight += 1;
        if s.in_flight == self.slots {
            s.full_since = Some(now);
        }
    }

    fn leave(&self, now: Instant) {
        let mut s = self.state();
        if s.in_flight == self.slots {
            if let Some(since) = s.full_since.take() {
                s.full += now.saturating_duration_since(since);
            }
        }
        s.in_flight = s.in_flight.saturating_sub(1);
    }

    /// Total time so far during which every slot was taken.
    pub fn full_time(&self) -> Duration {
        self.full_time_at(Instant::now())
    }

    fn full_time_at(&self, now: Instant) -> Duration {
        let s = self.state();
        s.full
            + s.full_since
                .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_time_with_every_slot_taken_counts() {
        let clock = SlotClock::new(2);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        clock.enter_at(at(0));
        assert_eq!(clock.full_time_at(at(50)), Duration::ZERO, "one of two");
        clock.enter_at(at(100));
        assert_eq!(clock.full_time_at(at(130)), Duration::from_millis(30));
        clock.leave(at(160));
        clock.enter_at(at(200));
        clock.leave(at(210));
        clock.leave(at(300));
        assert_eq!(clock.full_time_at(at(1000)), Duration::from_millis(70));
        // A guard releases its slot when dropped.
        let full = clock.full_time();
        drop((clock.enter(), clock.enter()));
        assert!(clock.full_time() >= full);
        assert_eq!(clock.state().in_flight, 0);
    }
}

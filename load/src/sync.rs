//! Locks that survive a panic elsewhere.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking it over when poisoned.
///
/// A poisoned lock only means a thread panicked while holding it; the
/// state behind feth's locks (counters, queues, figures of a run) is still
/// the best there is, and a measurement run is worth finishing and
/// reporting rather than cascading one task's panic into every other task.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

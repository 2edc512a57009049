//! The node's locks as the `parallel-abci` and `rwlock` patches set them.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Shared state behind a read-write lock (`rwlock` on) or a mutex (off).
///
/// Why a first implementation uses a mutex: it is the default tool for shared
/// state, and each reader "only holds it briefly" — until FinalizeBlock holds
/// it for a whole block and every web3 read and CheckTx queues behind it.
#[derive(Debug)]
pub enum StateLock<T> {
    /// One holder at a time, reader or writer.
    Mutex(Mutex<T>),
    /// Readers together, writers alone.
    RwLock(RwLock<T>),
}

/// A lock that was poisoned by a panic elsewhere.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("internal state lock poisoned")]
pub struct Poisoned;

/// Read access through a [`StateLock`].
pub enum ReadGuard<'a, T> {
    /// Held through the mutex.
    Mutex(MutexGuard<'a, T>),
    /// Held as one of the readers.
    RwLock(RwLockReadGuard<'a, T>),
}

/// Write access through a [`StateLock`].
pub enum WriteGuard<'a, T> {
    /// Held through the mutex.
    Mutex(MutexGuard<'a, T>),
    /// Held as the writer.
    RwLock(RwLockWriteGuard<'a, T>),
}

impl<T> StateLock<T> {
    /// `value` behind a read-write lock when `rwlock`, a mutex otherwise.
    pub fn new(value: T, rwlock: bool) -> Self {
        if rwlock {
            Self::RwLock(RwLock::new(value))
        } else {
            Self::Mutex(Mutex::new(value))
        }
    }

    /// Shared access (exclusive under a mutex).
    pub fn read(&self) -> Result<ReadGuard<'_, T>, Poisoned> {
        match self {
            Self::Mutex(m) => m.lock().map(ReadGuard::Mutex).map_err(|_| Poisoned),
            Self::RwLock(l) => l.read().map(ReadGuard::RwLock).map_err(|_| Poisoned),
        }
    }

    /// Exclusive access.
    pub fn write(&self) -> Result<WriteGuard<'_, T>, Poisoned> {
        match self {
            Self::Mutex(m) => m.lock().map(WriteGuard::Mutex).map_err(|_| Poisoned),
            Self::RwLock(l) => l.write().map(WriteGuard::RwLock).map_err(|_| Poisoned),
        }
    }
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Self::Mutex(g) => g,
            Self::RwLock(g) => g,
        }
    }
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Self::Mutex(g) => g,
            Self::RwLock(g) => g,
        }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match self {
            Self::Mutex(g) => g,
            Self::RwLock(g) => g,
        }
    }
}

/// The one lock around the whole application when `parallel-abci` is off.
///
/// Why a first implementation has it: the ABCI examples serve one connection
/// at a time, and one lock makes the state machine obviously race-free. Its
/// price: CheckTx on the mempool connection, FinalizeBlock and Commit on the
/// consensus connection and every web3 read wait for each other.
#[derive(Debug)]
pub struct AppLock(Option<Mutex<()>>);

/// Held for the length of one ABCI call or web3 read (nothing when the
/// application runs in parallel).
pub type AppGuard<'a> = Option<MutexGuard<'a, ()>>;

impl AppLock {
    /// No lock when `parallel`; one mutex otherwise.
    pub fn new(parallel: bool) -> Self {
        Self((!parallel).then(|| Mutex::new(())))
    }

    /// Waits for the application lock, if there is one.
    pub fn enter(&self) -> Result<AppGuard<'_>, Poisoned> {
        self.0
            .as_ref()
            .map(|m| m.lock().map_err(|_| Poisoned))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutex_excludes_a_second_reader_a_rwlock_does_not() {
        let mutex = StateLock::new(5, false);
        let first = mutex.read().unwrap();
        assert!(matches!(&mutex, StateLock::Mutex(m) if m.try_lock().is_err()));
        drop(first);
        let rw = StateLock::new(5, true);
        let first = rw.read().unwrap();
        let second = rw.read().unwrap();
        assert_eq!(*first + *second, 10);
        drop((first, second));
        *rw.write().unwrap() = 7;
        assert_eq!(*rw.read().unwrap(), 7);
    }

    #[test]
    fn the_app_lock_exists_only_without_parallel_abci() {
        assert!(AppLock::new(true).enter().unwrap().is_none());
        let serial = AppLock::new(false);
        let held = serial.enter().unwrap();
        assert!(held.is_some());
        assert!(matches!(&serial.0, Some(m) if m.try_lock().is_err()));
    }
}

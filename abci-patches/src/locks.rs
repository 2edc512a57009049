//! The node's locks as the `parallel-abci` and `rwlock` patches set them,
//! and the one order a thread may take them in.
//!
//! # Lock order
//!
//! [`Rank::App`] → [`Rank::Pool`] → [`Rank::Check`] → [`Rank::Chain`] →
//! [`Rank::World`]: a
//! thread that holds one of these locks takes only locks ranked after it.
//! Two threads that each hold one and want the other's would wait forever,
//! and with `parallel-abci` on nothing else serialises them (CheckTx, Commit
//! and web3 reads run at once). Each lock is taken through [`Ranked::take`],
//! which checks the order in debug builds, so every test checks it.
//! Two more rules complete it:
//! - ABCI calls hold the application lock for their whole length, so an ABCI
//!   method never calls a web3-side one (which takes that lock itself). The
//!   node's types enforce this: ABCI methods exist only on
//!   `node::Consensus`, and the ABCI connections hold only a
//!   `node::ConsensusNode`.
//! - The block in flight (`Node::pending`) and the snapshots are leaves:
//!   nothing is taken while they are held.

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
pub type AppGuard<'a> = Ranked<Option<MutexGuard<'a, ()>>>;

impl AppLock {
    /// No lock when `parallel`; one mutex otherwise.
    pub fn new(parallel: bool) -> Self {
        Self((!parallel).then(|| Mutex::new(())))
    }

    /// Waits for the application lock, if there is one.
    pub fn enter(&self) -> Result<AppGuard<'_>, Poisoned> {
        Ranked::take(Rank::App, || {
            self.0
                .as_ref()
                .map(|m| m.lock().map_err(|_| Poisoned))
                .transpose()
        })
    }
}

/// The node's locks in the order a thread may take them (see the module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// The application lock ([`AppLock`]).
    App,
    /// `app-mempool`: the node's own pool ([`crate::app_pool`]), held
    /// across a CheckTx so that admission order is proposal order.
    Pool,
    /// The mempool's check state.
    Check,
    /// The genesis and the last committed block.
    Chain,
    /// The committed world state ([`StateLock`]).
    World,
}

impl Rank {
    /// Every rank, in order.
    #[cfg(debug_assertions)]
    const ALL: [Rank; 5] = [Rank::App, Rank::Pool, Rank::Check, Rank::Chain, Rank::World];
}

/// A lock guard that knows its [`Rank`]; in debug builds its thread's held
/// ranks are tracked, and taking a lock out of order panics before it can
/// deadlock.
pub struct Ranked<G> {
    guard: G,
    rank: Rank,
}

impl<G> Ranked<G> {
    /// Takes a lock of `rank` with `lock`, after checking (debug builds) that
    /// this thread holds no lock ranked after `rank`.
    pub fn take<E>(rank: Rank, lock: impl FnOnce() -> Result<G, E>) -> Result<Self, E> {
        held::enter(rank);
        match lock() {
            Ok(guard) => Ok(Self { guard, rank }),
            Err(e) => {
                held::leave(rank);
                Err(e)
            }
        }
    }
}

impl<G> Deref for Ranked<G> {
    type Target = G;

    fn deref(&self) -> &G {
        &self.guard
    }
}

impl<G> DerefMut for Ranked<G> {
    fn deref_mut(&mut self) -> &mut G {
        &mut self.guard
    }
}

impl<G> Drop for Ranked<G> {
    fn drop(&mut self) {
        held::leave(self.rank);
    }
}

/// The ranks this thread holds (debug builds only; nothing in release).
mod held {
    use super::Rank;

    #[cfg(debug_assertions)]
    thread_local! {
        static COUNTS: std::cell::Cell<[u16; Rank::ALL.len()]> =
            const { std::cell::Cell::new([0; Rank::ALL.len()]) };
    }

    /// Records `rank` as held; panics if a later rank is held already.
    #[cfg(debug_assertions)]
    pub(super) fn enter(rank: Rank) {
        COUNTS.with(|c| {
            let mut counts = c.get();
            let later = (rank as usize + 1..counts.len()).find(|&r| counts[r] > 0);
            if let Some(later) = later {
                let held = Rank::ALL[later];
                panic!("lock order broken: {rank:?} taken while holding {held:?} (see locks.rs)");
            }
            counts[rank as usize] += 1;
            c.set(counts);
        });
    }

    /// Records that one lock of `rank` was released.
    #[cfg(debug_assertions)]
    pub(super) fn leave(rank: Rank) {
        COUNTS.with(|c| {
            let mut counts = c.get();
            counts[rank as usize] = counts[rank as usize].saturating_sub(1);
            c.set(counts);
        });
    }

    #[cfg(not(debug_assertions))]
    pub(super) fn enter(_: Rank) {}

    #[cfg(not(debug_assertions))]
    pub(super) fn leave(_: Rank) {}
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
    fn locks_taken_in_order_and_released_pass_the_check() {
        let check = std::sync::Mutex::new(0);
        let world = StateLock::new(0, false);
        for _ in 0..2 {
            let app = AppLock::new(false);
            let _app = app.enter().unwrap();
            let _check = Ranked::take(Rank::Check, || check.lock()).unwrap();
            let _world = Ranked::take(Rank::World, || world.read()).unwrap();
        }
        // Released: a lower rank may be taken again after a higher one.
        drop(Ranked::take(Rank::World, || world.write()).unwrap());
        let _check = Ranked::take(Rank::Check, || check.lock()).unwrap();
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "lock order broken: Check taken while holding World")]
    fn a_lock_taken_against_the_order_panics_before_it_waits() {
        let world = StateLock::new(0, true);
        let check = std::sync::Mutex::new(0);
        let _world = Ranked::take(Rank::World, || world.read()).unwrap();
        let _check = Ranked::take(Rank::Check, || check.lock());
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

//! `snapshot-reads`: the committed state web3 reads see, published by Commit
//! as an immutable [`Snapshot`] that no reader can hold consensus back with.
//!
//! A snapshot is a base [`WorldState`] plus the diffs of the blocks committed
//! after it, newest last; a read looks through the diffs newest first, then
//! the base. [`Snapshots`] keeps two bases (left-right): new snapshots are
//! built on the front one; every [`FOLD_AFTER`] blocks Commit brings the back
//! one up to date in place (the diffs it lacks, not the whole state) and
//! swaps the two — but only when no reader still holds the back one, which
//! it checks without waiting (`Arc::get_mut`); otherwise it tries again at
//! the next Commit and the diff list grows meanwhile. Readers hold a
//! snapshot for at most one call's deadline, so the list stays short.
//! Cost: two more copies of the account state than the node without the
//! patch, and a read looks through at most a few diffs before the base.

use std::sync::{Arc, Mutex, RwLock};

use alloy_primitives::{Address, B256, U256};
use revm::bytecode::Bytecode;

use crate::records::BlockRecord;
use crate::state::{AccountRecord, StateDiff, StateRead, WorldState};

/// How many committed blocks' diffs a snapshot stacks on its base before
/// Commit tries to fold them into the other base.
pub const FOLD_AFTER: usize = 8;

/// The committed state as of one block: immutable, shared by its readers.
#[derive(Debug)]
pub struct Snapshot {
    base: Arc<WorldState>,
    layers: Vec<Arc<StateDiff>>,
    head: BlockRecord,
}

impl Snapshot {
    /// The block this state is the result of.
    pub fn head(&self) -> &BlockRecord {
        &self.head
    }

    /// How many block diffs lie over the base (the fold's test reads it).
    #[cfg(test)]
    fn depth(&self) -> usize {
        self.layers.len()
    }
}

impl StateRead for Snapshot {
    fn account(&self, address: &Address) -> Option<AccountRecord> {
        for layer in self.layers.iter().rev() {
            if let Some(change) = layer.accounts.get(address) {
                return *change;
            }
        }
        self.base.account(address)
    }

    fn storage(&self, address: &Address, slot: &U256) -> U256 {
        // Within one diff the wipe comes before the slot writes, as
        // `WorldState::apply` does them.
        for layer in self.layers.iter().rev() {
            if let Some(value) = layer.storage.get(&(*address, *slot)) {
                return *value;
            }
            if layer.cleared_storage.contains(address) {
                return U256::ZERO;
            }
        }
        self.base.storage(address, slot)
    }

    fn code(&self, hash: &B256) -> Option<Bytecode> {
        for layer in self.layers.iter().rev() {
            if let Some(code) = layer.code.get(hash) {
                return Some(code.clone());
            }
        }
        self.base.code(hash).cloned()
    }
}

/// What only Commit touches: the two bases and the diffs each lacks.
#[derive(Debug)]
struct Bases {
    /// The base of new snapshots, and the diffs committed since it.
    front: Arc<WorldState>,
    front_layers: Vec<Arc<StateDiff>>,
    /// The other base; it lacks `back_behind`, then `front_layers`.
    back: Arc<WorldState>,
    back_behind: Vec<Arc<StateDiff>>,
}

/// The published snapshot and the bases Commit builds the next one from.
#[derive(Debug)]
pub struct Snapshots {
    current: RwLock<Arc<Snapshot>>,
    bases: Mutex<Bases>,
}

impl Snapshots {
    /// Snapshots of `world`, the state after `head` (two copies are made).
    pub fn new(world: &WorldState, head: BlockRecord) -> Self {
        let front = Arc::new(world.clone());
        let current = Snapshot {
            base: front.clone(),
            layers: Vec::new(),
            head,
        };
        Self {
            current: RwLock::new(Arc::new(current)),
            bases: Mutex::new(Bases {
                front,
                front_layers: Vec::new(),
                back: Arc::new(world.clone()),
                back_behind: Vec::new(),
            }),
        }
    }

    /// The latest committed state. The lock is held only to clone a pointer.
    pub fn current(&self) -> Arc<Snapshot> {
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Commit: publishes the state after `head`, which `diff` produced.
    /// Never waits for a reader.
    pub fn commit(&self, diff: StateDiff, head: BlockRecord) {
        let mut bases = match self.bases.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        bases.front_layers.push(Arc::new(diff));
        if bases.front_layers.len() >= FOLD_AFTER {
            fold(&mut bases);
        }
        let next = Arc::new(Snapshot {
            base: bases.front.clone(),
            layers: bases.front_layers.clone(),
            head,
        });
        drop(bases);
        match self.current.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }
}

/// Brings the back base up to date and makes it the front, when no reader
/// holds it; otherwise leaves everything as it is.
fn fold(bases: &mut Bases) {
    let Bases {
        back,
        back_behind,
        front_layers,
        ..
    } = bases;
    let Some(world) = Arc::get_mut(back) else {
        return;
    };
    for diff in back_behind.iter().chain(front_layers.iter()) {
        world.apply(diff);
    }
    std::mem::swap(&mut bases.front, &mut bases.back);
    bases.back_behind = std::mem::take(&mut bases.front_layers);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(number: u64) -> BlockRecord {
        BlockRecord {
            number,
            hash: B256::ZERO,
            parent_hash: B256::ZERO,
            timestamp: 0,
            timestamp_nanos: 0,
            gas_used: 0,
            gas_limit: 0,
            base_fee: 0,
            miner: Address::ZERO,
            app_hash: B256::ZERO,
            tx_hashes: Vec::new(),
            invalid_txs: 0,
            size: 0,
            logs_bloom: None,
        }
    }

    fn diff(n: u64) -> StateDiff {
        let a = Address::repeat_byte(1);
        let mut d = StateDiff::default();
        d.accounts.insert(
            a,
            Some(AccountRecord {
                nonce: n,
                ..Default::default()
            }),
        );
        d.storage.insert((a, U256::from(n % 3)), U256::from(n));
        if n.is_multiple_of(5) {
            d.cleared_storage.insert(a);
        }
        d
    }

    /// Over many commits, with and without readers holding old snapshots,
    /// every snapshot reads exactly as a world with the diffs applied.
    #[test]
    fn snapshots_read_as_the_applied_world() {
        let a = Address::repeat_byte(1);
        let mut world = WorldState::default();
        let snapshots = Snapshots::new(&world, head(0));
        let mut held = Vec::new();
        for n in 1..=40u64 {
            let d = diff(n);
            world.apply(&d);
            snapshots.commit(d, head(n));
            let snap = snapshots.current();
            assert_eq!(snap.head().number, n);
            assert_eq!(StateRead::account(&*snap, &a), world.account(&a));
            for slot in 0..3u64 {
                let slot = U256::from(slot);
                assert_eq!(
                    StateRead::storage(&*snap, &a, &slot),
                    world.storage(&a, &slot),
                    "block {n}"
                );
            }
            // Readers hold some snapshots across folds for a while.
            if n.is_multiple_of(7) {
                held.push(snap);
            }
            if n.is_multiple_of(13) {
                held.clear();
            }
        }
        assert!(snapshots.current().depth() < 2 * FOLD_AFTER);
    }
}

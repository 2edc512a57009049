//! World state: the committed accounts, storage and code held in memory, and
//! the per-block overlay revm executes against.
//!
//! The committed [`WorldState`] is only changed by [`WorldState::apply`] at
//! Commit, with the [`StateDiff`] the block produced. During FinalizeBlock revm
//! reads through a [`BlockOverlay`] that records every write, so a block that
//! is never committed (crash, replay) leaves no trace.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;

use alloy_primitives::{keccak256, Address, B256, U256};
use revm::{
    bytecode::Bytecode,
    primitives::{AddressMap, KECCAK_EMPTY},
    state::{Account, AccountInfo},
    Database, DatabaseCommit,
};

/// What abcid keeps of an account (code lives apart, by hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountRecord {
    /// Next nonce.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// Keccak-256 of the account's code (`KECCAK_EMPTY` for none).
    pub code_hash: B256,
}

impl Default for AccountRecord {
    fn default() -> Self {
        Self {
            nonce: 0,
            balance: U256::ZERO,
            code_hash: KECCAK_EMPTY,
        }
    }
}

impl AccountRecord {
    fn from_info(info: &AccountInfo) -> Self {
        Self {
            nonce: info.nonce,
            balance: info.balance,
            code_hash: info.code_hash,
        }
    }

    fn to_info(self) -> AccountInfo {
        AccountInfo {
            balance: self.balance,
            nonce: self.nonce,
            code_hash: self.code_hash,
            ..Default::default()
        }
    }
}

/// The committed world state.
#[derive(Debug, Default, Clone)]
pub struct WorldState {
    accounts: HashMap<Address, AccountRecord>,
    storage: HashMap<Address, HashMap<U256, U256>>,
    code: HashMap<B256, Bytecode>,
}

impl WorldState {
    /// The account at `address`, if it exists.
    pub fn account(&self, address: &Address) -> Option<AccountRecord> {
        self.accounts.get(address).copied()
    }

    /// The value of one storage slot (zero when unset).
    pub fn storage(&self, address: &Address, slot: &U256) -> U256 {
        self.storage
            .get(address)
            .and_then(|slots| slots.get(slot))
            .copied()
            .unwrap_or_default()
    }

    /// The code stored under `hash`.
    pub fn code(&self, hash: &B256) -> Option<&Bytecode> {
        self.code.get(hash)
    }

    /// Inserts an account as loaded from disk or genesis.
    pub fn load_account(&mut self, address: Address, record: AccountRecord) {
        self.accounts.insert(address, record);
    }

    /// Inserts one storage slot as loaded from disk.
    pub fn load_storage(&mut self, address: Address, slot: U256, value: U256) {
        self.storage.entry(address).or_default().insert(slot, value);
    }

    /// Inserts code as loaded from disk.
    pub fn load_code(&mut self, code: Bytecode) {
        self.code.insert(code.hash_slow(), code);
    }

    /// Applies a block's changes.
    pub fn apply(&mut self, diff: &StateDiff) {
        for address in &diff.cleared_storage {
            self.storage.remove(address);
        }
        for (address, change) in &diff.accounts {
            match change {
                Some(record) => {
                    self.accounts.insert(*address, *record);
                }
                None => {
                    self.accounts.remove(address);
                }
            }
        }
        for ((address, slot), value) in &diff.storage {
            let slots = self.storage.entry(*address).or_default();
            if value.is_zero() {
                slots.remove(slot);
            } else {
                slots.insert(*slot, *value);
            }
        }
        for code in diff.code.values() {
            self.code.insert(code.hash_slow(), code.clone());
        }
    }
}

/// Everything a block changed, in a deterministic order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StateDiff {
    /// New account values; `None` deletes the account.
    pub accounts: BTreeMap<Address, Option<AccountRecord>>,
    /// New slot values (zero deletes).
    pub storage: BTreeMap<(Address, U256), U256>,
    /// Accounts whose whole storage was wiped before `storage` applies.
    pub cleared_storage: BTreeSet<Address>,
    /// Code deployed in this block, by hash.
    pub code: BTreeMap<B256, Bytecode>,
}

impl StateDiff {
    /// A digest of the diff, chained into the app hash.
    pub fn digest(&self) -> B256 {
        let mut buf = Vec::with_capacity(self.accounts.len() * 80 + self.storage.len() * 84);
        for (address, change) in &self.accounts {
            buf.extend_from_slice(address.as_slice());
            match change {
                Some(a) => {
                    buf.push(1);
                    buf.extend_from_slice(&a.nonce.to_be_bytes());
                    buf.extend_from_slice(&a.balance.to_be_bytes::<32>());
                    buf.extend_from_slice(a.code_hash.as_slice());
                }
                None => buf.push(0),
            }
        }
        for address in &self.cleared_storage {
            buf.push(2);
            buf.extend_from_slice(address.as_slice());
        }
        for ((address, slot), value) in &self.storage {
            buf.extend_from_slice(address.as_slice());
            buf.extend_from_slice(&slot.to_be_bytes::<32>());
            buf.extend_from_slice(&value.to_be_bytes::<32>());
        }
        for hash in self.code.keys() {
            buf.extend_from_slice(hash.as_slice());
        }
        keccak256(&buf)
    }
}

/// Read access to a state: the committed world, or an overlay over it.
pub trait StateRead {
    /// The account at `address`, if it exists.
    fn account(&self, address: &Address) -> Option<AccountRecord>;
    /// The value of one storage slot (zero when unset).
    fn storage(&self, address: &Address, slot: &U256) -> U256;
    /// The code stored under `hash`.
    fn code(&self, hash: &B256) -> Option<Bytecode>;
}

impl StateRead for WorldState {
    fn account(&self, address: &Address) -> Option<AccountRecord> {
        WorldState::account(self, address)
    }

    fn storage(&self, address: &Address, slot: &U256) -> U256 {
        WorldState::storage(self, address, slot)
    }

    fn code(&self, hash: &B256) -> Option<Bytecode> {
        WorldState::code(self, hash).cloned()
    }
}

/// revm's database over a base state (the committed world, or a block's
/// overlay for a per-transaction layer): reads fall through to the base,
/// writes are kept in a [`StateDiff`].
#[derive(Debug)]
pub struct BlockOverlay<'a, B: StateRead = WorldState> {
    base: &'a B,
    diff: StateDiff,
}

impl<'a, B: StateRead> BlockOverlay<'a, B> {
    /// An empty overlay over `base`.
    pub fn new(base: &'a B) -> Self {
        Self {
            base,
            diff: StateDiff::default(),
        }
    }

    /// An overlay over `base` that already holds the changes `diff`.
    pub fn with_diff(base: &'a B, diff: StateDiff) -> Self {
        Self { base, diff }
    }

    /// The changes collected so far.
    pub fn into_diff(self) -> StateDiff {
        self.diff
    }

    /// Folds the changes of a layer above this one into this overlay, as if
    /// they had been written here.
    pub fn merge(&mut self, layer: StateDiff) {
        for address in layer.cleared_storage {
            self.wipe_storage(address);
        }
        self.diff.accounts.extend(layer.accounts);
        self.diff.storage.extend(layer.storage);
        for (hash, code) in layer.code {
            self.diff.code.entry(hash).or_insert(code);
        }
    }

    fn wipe_storage(&mut self, address: Address) {
        self.diff.cleared_storage.insert(address);
        self.diff.storage.retain(|(a, _), _| *a != address);
    }
}

impl<B: StateRead> StateRead for BlockOverlay<'_, B> {
    fn account(&self, address: &Address) -> Option<AccountRecord> {
        match self.diff.accounts.get(address) {
            Some(change) => *change,
            None => self.base.account(address),
        }
    }

    fn storage(&self, address: &Address, slot: &U256) -> U256 {
        if let Some(value) = self.diff.storage.get(&(*address, *slot)) {
            return *value;
        }
        if self.diff.cleared_storage.contains(address) {
            return U256::ZERO;
        }
        self.base.storage(address, slot)
    }

    fn code(&self, hash: &B256) -> Option<Bytecode> {
        match self.diff.code.get(hash) {
            Some(code) => Some(code.clone()),
            None => self.base.code(hash),
        }
    }
}

/// BLOCKHASH is deterministic but not the CometBFT hash: that would need the
/// block store inside execution, which no workload here relies on.
fn block_hash(number: u64) -> B256 {
    keccak256(number.to_be_bytes())
}

impl<B: StateRead> Database for BlockOverlay<'_, B> {
    type Error = Infallible;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        // revm 43 does not call `code_by_hash` for an account loaded without
        // code: attach it here (cheap, the bytes are reference-counted).
        let mut info = StateRead::account(self, &address).map(AccountRecord::to_info);
        if let Some(info) = info.as_mut() {
            if info.code_hash != KECCAK_EMPTY {
                info.code = Some(self.code_by_hash(info.code_hash)?);
            }
        }
        Ok(info)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        Ok(StateRead::code(self, &code_hash).unwrap_or_default())
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, Self::Error> {
        Ok(StateRead::storage(self, &address, &index))
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Self::Error> {
        Ok(block_hash(number))
    }
}

impl<B: StateRead> DatabaseCommit for BlockOverlay<'_, B> {
    fn commit(&mut self, changes: AddressMap<Account>) {
        for (address, account) in changes {
            if !account.is_touched() {
                continue;
            }
            if account.is_selfdestructed() {
                self.diff.accounts.insert(address, None);
                self.wipe_storage(address);
                continue;
            }
            if account.is_empty() {
                // EIP-161: a touched account left without nonce, balance or
                // code is removed (a zero-value transfer to a fresh address
                // creates nothing). It holds no storage: a contract's nonce
                // is at least 1.
                self.diff.accounts.insert(address, None);
                continue;
            }
            if account.is_created() {
                self.wipe_storage(address);
            }
            if let Some(code) = account.info.code.as_ref() {
                if account.info.code_hash != KECCAK_EMPTY {
                    self.diff
                        .code
                        .entry(account.info.code_hash)
                        .or_insert_with(|| code.clone());
                }
            }
            self.diff
                .accounts
                .insert(address, Some(AccountRecord::from_info(&account.info)));
            for (slot, value) in account.storage {
                if value.is_changed() {
                    self.diff
                        .storage
                        .insert((address, slot), value.present_value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_then_read_back() {
        let mut world = WorldState::default();
        let a = Address::repeat_byte(1);
        world.load_account(
            a,
            AccountRecord {
                nonce: 1,
                balance: U256::from(10),
                code_hash: KECCAK_EMPTY,
            },
        );
        world.load_storage(a, U256::from(1), U256::from(5));
        let mut diff = StateDiff::default();
        diff.accounts.insert(
            a,
            Some(AccountRecord {
                nonce: 2,
                balance: U256::from(7),
                code_hash: KECCAK_EMPTY,
            }),
        );
        diff.storage.insert((a, U256::from(1)), U256::ZERO);
        diff.storage.insert((a, U256::from(2)), U256::from(9));
        world.apply(&diff);
        assert_eq!(world.account(&a).unwrap().nonce, 2);
        assert_eq!(world.storage(&a, &U256::from(1)), U256::ZERO);
        assert_eq!(world.storage(&a, &U256::from(2)), U256::from(9));
    }

    #[test]
    fn a_touched_empty_account_is_removed_and_a_funded_one_kept() {
        let (empty, funded) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let mut world = WorldState::default();
        world.load_account(empty, AccountRecord::default());
        let mut overlay = BlockOverlay::new(&world);
        let touched = |balance: u64| {
            let mut account = Account::default();
            account.info.balance = U256::from(balance);
            account.mark_touch();
            account
        };
        let mut changes = AddressMap::default();
        changes.insert(empty, touched(0));
        changes.insert(funded, touched(5));
        overlay.commit(changes);
        let diff = overlay.into_diff();
        assert_eq!(diff.accounts.get(&empty), Some(&None));
        let kept = diff.accounts.get(&funded).copied().flatten();
        assert_eq!(kept.map(|a| a.balance), Some(U256::from(5)));
        world.apply(&diff);
        assert_eq!(world.account(&empty), None);
    }

    #[test]
    fn digest_depends_on_content() {
        let mut d1 = StateDiff::default();
        d1.accounts
            .insert(Address::repeat_byte(1), Some(AccountRecord::default()));
        let mut d2 = d1.clone();
        assert_eq!(d1.digest(), d2.digest());
        d2.accounts.insert(Address::repeat_byte(1), None);
        assert_ne!(d1.digest(), d2.digest());
    }

    #[test]
    fn a_merged_layer_reads_as_if_written_in_place() {
        let a = Address::repeat_byte(1);
        let mut world = WorldState::default();
        world.load_storage(a, U256::from(1), U256::from(5));
        world.load_storage(a, U256::from(2), U256::from(6));
        let mut block = BlockOverlay::new(&world);
        block.diff.storage.insert((a, U256::from(3)), U256::from(7));
        let mut layer = BlockOverlay::new(&block);
        // The account is re-created: its old storage is wiped, one slot set.
        layer.wipe_storage(a);
        layer.diff.storage.insert((a, U256::from(2)), U256::from(9));
        assert_eq!(StateRead::storage(&layer, &a, &U256::from(1)), U256::ZERO);
        let changes = layer.into_diff();
        block.merge(changes);
        assert_eq!(StateRead::storage(&block, &a, &U256::from(1)), U256::ZERO);
        assert_eq!(
            StateRead::storage(&block, &a, &U256::from(2)),
            U256::from(9)
        );
        assert_eq!(StateRead::storage(&block, &a, &U256::from(3)), U256::ZERO);
        let diff = block.into_diff();
        assert!(diff.cleared_storage.contains(&a));
        assert_eq!(diff.storage.len(), 1);
    }
}

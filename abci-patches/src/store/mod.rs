//! Persistent state in redb: accounts, storage, code, blocks, transactions,
//! receipts and the app-hash history. Each block is written in one write
//! transaction at Commit, so a crash leaves either the whole block or none of it.
//!
//! With `async-commit` a writer thread does that write after Commit returns,
//! and reads find the blocks not yet written in memory ([`background`]).
//!
//! Transactions are stored in one of two layouts, and read back from either
//! (a node may be restarted with other patches):
//! - with `ram-block-txs`, [`codec`]-encoded records keyed by (height, index)
//!   and a hash → (height, index) index, written at Commit from memory;
//! - without, JSON records keyed by hash, staged by FinalizeBlock in a table of
//!   their own ([`Store::stage_txs`]) and moved by Commit
//!   ([`Store::commit_staged`]).

mod background;

use std::path::Path;
use std::sync::Arc;

use alloy_primitives::{Address, Bloom, Bytes, B256, U256};
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};
use revm::bytecode::Bytecode;

use crate::codec;
use crate::genesis::Genesis;
use crate::records::{BlockRecord, TxRecord};
use crate::state::{AccountRecord, StateDiff, WorldState};
use background::Background;
pub use background::{PausePoint, PersistPause, MAX_UNPERSISTED};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const ACCOUNTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("accounts");
const STORAGE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("storage");
const CODE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("code");
const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");
const BLOCK_HASHES: TableDefinition<&[u8], u64> = TableDefinition::new("block_hashes");
/// JSON [`TxRecord`]s by hash (without `ram-block-txs`).
const TXS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("txs");
/// The uncommitted block's JSON [`TxRecord`]s by hash, staged by FinalizeBlock
/// (without `ram-block-txs`).
const PENDING_TXS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("pending_txs");
/// [`codec`]-encoded [`TxRecord`]s by (height, index) (with `ram-block-txs`).
const TXS_BY_POSITION: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("txs_by_position");
/// Hash → (height, index) of the records of [`TXS_BY_POSITION`].
const TX_POSITIONS: TableDefinition<&[u8], (u64, u32)> = TableDefinition::new("tx_positions");
const APP_HASHES: TableDefinition<u64, &[u8]> = TableDefinition::new("app_hashes");
/// Each block's logs bloom by height: the index `eth_getLogs` scans to skip
/// blocks without a possible match (absent for blocks stored before it existed).
const LOG_BLOOMS: TableDefinition<u64, &[u8]> = TableDefinition::new("log_blooms");

const META_HEIGHT: &str = "height";
const META_APP_HASH: &str = "app_hash";
const META_GENESIS: &str = "genesis";

/// A storage failure, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("state store: {context}: {source}")]
pub struct StoreError {
    context: &'static str,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl StoreError {
    fn new(context: &'static str, message: String) -> Self {
        Self {
            context,
            source: message.into(),
        }
    }
}

fn ctx<E: std::error::Error + Send + Sync + 'static>(
    context: &'static str,
) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError {
        context,
        source: Box::new(e),
    }
}

/// Everything Commit writes for one block.
#[derive(Debug, Clone)]
pub struct BlockBatch {
    /// The block.
    pub block: BlockRecord,
    /// Its executed transactions, by hash.
    pub txs: Vec<(B256, TxRecord)>,
    /// State changes.
    pub diff: StateDiff,
}

/// The last committed height and app hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Head {
    /// Last committed height (0 before the first block).
    pub height: u64,
    /// App hash after that height.
    pub app_hash: B256,
}

/// redb's page cache with `ram-block-txs`: redb's default (1 GiB) lets the
/// process' resident memory grow with the database.
pub const CAPPED_CACHE_SIZE: usize = 64 << 20;

/// How the database is opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreConfig {
    /// Size of redb's page cache in bytes; `None` for redb's default.
    pub cache_size: Option<usize>,
    /// Start the background writer of [`Store::commit_in_background`]
    /// (`async-commit`).
    pub background: bool,
    /// Tests: where the background writer stops to be killed.
    pub pause: Option<PersistPause>,
}

/// The redb database behind abcid.
pub struct Store {
    db: Arc<Database>,
    /// `async-commit`: the writer and the blocks it has still to write.
    background: Option<Background>,
}

/// Where Commit takes a block's transactions from, and how it writes them.
enum BlockTxs<'a> {
    /// From memory, into the (height, index) layout.
    Memory(&'a [(B256, TxRecord)]),
    /// From the staging table, into the JSON-by-hash table; the hashes in block order.
    Staged(&'a [B256]),
}

impl Store {
    /// Opens or creates the database file at `path`. A staged block left by a
    /// crash between FinalizeBlock and Commit is dropped: CometBFT replays it.
    pub fn open(path: &Path, config: StoreConfig) -> Result<Self, StoreError> {
        let mut builder = Database::builder();
        if let Some(bytes) = config.cache_size {
            builder.set_cache_size(bytes);
        }
        let db = Arc::new(builder.create(path).map_err(ctx("open database"))?);
        let background = match config.background {
            true => Some(Background::start(Arc::clone(&db), config.pause)?),
            false => None,
        };
        let store = Self { db, background };
        // Create every table so that read transactions never meet a missing one.
        let tx = store.db.begin_write().map_err(ctx("begin write"))?;
        {
            tx.open_table(META).map_err(ctx("create tables"))?;
            tx.open_table(ACCOUNTS).map_err(ctx("create tables"))?;
            tx.open_table(STORAGE).map_err(ctx("create tables"))?;
            tx.open_table(CODE).map_err(ctx("create tables"))?;
            tx.open_table(BLOCKS).map_err(ctx("create tables"))?;
            tx.open_table(BLOCK_HASHES).map_err(ctx("create tables"))?;
            tx.open_table(TXS).map_err(ctx("create tables"))?;
            tx.open_table(TXS_BY_POSITION)
                .map_err(ctx("create tables"))?;
            tx.open_table(TX_POSITIONS).map_err(ctx("create tables"))?;
            tx.open_table(APP_HASHES).map_err(ctx("create tables"))?;
            tx.open_table(LOG_BLOOMS).map_err(ctx("create tables"))?;
            tx.open_table(PENDING_TXS)
                .map_err(ctx("create tables"))?
                .retain(|_, _| false)
                .map_err(ctx("drop staged block"))?;
        }
        tx.commit().map_err(ctx("create tables"))?;
        Ok(store)
    }

    /// The committed head, `None` before InitChain.
    pub fn head(&self) -> Result<Option<Head>, StoreError> {
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let meta = tx.open_table(META).map_err(ctx("open meta"))?;
        let height = meta.get(META_HEIGHT).map_err(ctx("read height"))?;
        let app_hash = meta.get(META_APP_HASH).map_err(ctx("read app hash"))?;
        match (height, app_hash) {
            (Some(h), Some(a)) => Ok(Some(Head {
                height: u64::from_be_bytes(h.value().try_into().map_err(ctx("decode height"))?),
                app_hash: B256::try_from(a.value()).map_err(ctx("decode app hash"))?,
            })),
            _ => Ok(None),
        }
    }

    /// The genesis the chain was initialised with.
    pub fn genesis(&self) -> Result<Option<Genesis>, StoreError> {
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let meta = tx.open_table(META).map_err(ctx("open meta"))?;
        match meta.get(META_GENESIS).map_err(ctx("read genesis"))? {
            Some(v) => Ok(Some(
                serde_json::from_slice(v.value()).map_err(ctx("decode genesis"))?,
            )),
            None => Ok(None),
        }
    }

    /// Loads the whole committed state into memory.
    pub fn load_world(&self) -> Result<WorldState, StoreError> {
        let mut world = WorldState::default();
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let accounts = tx.open_table(ACCOUNTS).map_err(ctx("open accounts"))?;
        for row in accounts.iter().map_err(ctx("scan accounts"))? {
            let (k, v) = row.map_err(ctx("scan accounts"))?;
            world.load_account(Address::from_slice(k.value()), decode_account(v.value())?);
        }
        let storage = tx.open_table(STORAGE).map_err(ctx("open storage"))?;
        for row in storage.iter().map_err(ctx("scan storage"))? {
            let (k, v) = row.map_err(ctx("scan storage"))?;
            let key = k.value();
            world.load_storage(
                Address::from_slice(&key[..20]),
                U256::from_be_slice(&key[20..]),
                U256::from_be_slice(v.value()),
            );
        }
        let code = tx.open_table(CODE).map_err(ctx("open code"))?;
        for row in code.iter().map_err(ctx("scan code"))? {
            let (_, v) = row.map_err(ctx("scan code"))?;
            world.load_code(Bytecode::new_raw(Bytes::copy_from_slice(v.value())));
        }
        Ok(world)
    }

    /// Writes the genesis state and block 0 (InitChain).
    pub fn init(&self, genesis: &Genesis, block: &BlockBatch) -> Result<(), StoreError> {
        self.write(block, BlockTxs::Memory(&block.txs), Some(genesis))
    }

    /// Writes one block atomically and durably (Commit), its transactions
    /// from `batch` in the (height, index) layout (`ram-block-txs`).
    pub fn commit(&self, batch: &BlockBatch) -> Result<(), StoreError> {
        self.write(batch, BlockTxs::Memory(&batch.txs), None)
    }

    /// `async-commit`: hands `batch` to the background writer, which writes
    /// it as [`Store::commit`] does; readable from now on. Waits while
    /// [`MAX_UNPERSISTED`] blocks are unwritten; fails if an earlier write
    /// failed, or if the store was opened without
    /// [`StoreConfig::background`].
    pub fn commit_in_background(&self, batch: Arc<BlockBatch>) -> Result<(), StoreError> {
        match &self.background {
            Some(background) => background.push(batch),
            None => Err(StoreError::new(
                "persist in the background",
                "the store was opened without its background writer".into(),
            )),
        }
    }

    /// Waits until every block handed to the background writer is on disk;
    /// returns how many were waiting (0 without the writer).
    pub fn flush(&self) -> Result<usize, StoreError> {
        self.background.as_ref().map_or(Ok(0), Background::flush)
    }

    /// How many committed blocks are not yet on disk (`async-commit`).
    pub fn unpersisted(&self) -> usize {
        self.background.as_ref().map_or(0, Background::unpersisted)
    }

    /// Stages the transactions of a block being finalized, as JSON records
    /// keyed by hash, in a durable write transaction of their own; replaces
    /// any staged before. Without `ram-block-txs`, FinalizeBlock does this so
    /// that nothing of an uncommitted block lives only in memory.
    pub fn stage_txs(&self, txs: &[(B256, TxRecord)]) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().map_err(ctx("begin write"))?;
        tx.set_durability(Durability::Immediate)
            .map_err(ctx("set durability"))?;
        {
            let mut pending = tx.open_table(PENDING_TXS).map_err(ctx("open pending"))?;
            pending.retain(|_, _| false).map_err(ctx("clear pending"))?;
            for (hash, record) in txs {
                let bytes = serde_json::to_vec(record).map_err(ctx("encode tx"))?;
                pending
                    .insert(hash.as_slice(), bytes.as_slice())
                    .map_err(ctx("stage tx"))?;
            }
        }
        tx.commit().map_err(ctx("commit staged txs"))
    }

    /// Writes one block atomically and durably (Commit), its transactions read
    /// back from what [`Store::stage_txs`] staged into the JSON-by-hash table.
    /// `batch.txs` is not read.
    pub fn commit_staged(&self, batch: &BlockBatch) -> Result<(), StoreError> {
        self.write(batch, BlockTxs::Staged(&batch.block.tx_hashes), None)
    }

    fn write(
        &self,
        batch: &BlockBatch,
        txs: BlockTxs<'_>,
        genesis: Option<&Genesis>,
    ) -> Result<(), StoreError> {
        prepare(&self.db, batch, txs, genesis)?
            .commit()
            .map_err(ctx("commit block"))
    }

    /// The block at `number`.
    pub fn block(&self, number: u64) -> Result<Option<BlockRecord>, StoreError> {
        // The queue before the disk: a block leaves the queue only once
        // written, so one missing from both is not committed yet.
        if let Some(block) = self.background.as_ref().and_then(|b| b.block(number)) {
            return Ok(Some(block));
        }
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let blocks = tx.open_table(BLOCKS).map_err(ctx("open blocks"))?;
        match blocks.get(number).map_err(ctx("read block"))? {
            Some(v) => Ok(Some(
                serde_json::from_slice(v.value()).map_err(ctx("decode block"))?,
            )),
            None => Ok(None),
        }
    }

    /// The height of the block whose hash is `hash`.
    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>, StoreError> {
        if let Some(number) = self.background.as_ref().and_then(|b| b.block_number(hash)) {
            return Ok(Some(number));
        }
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let hashes = tx.open_table(BLOCK_HASHES).map_err(ctx("open hashes"))?;
        Ok(hashes
            .get(hash.as_slice())
            .map_err(ctx("read block hash"))?
            .map(|v| v.value()))
    }

    /// The logs blooms of the blocks `from..=to` that have one, in height
    /// order: one read transaction over a 256-byte row per block.
    pub fn log_blooms(&self, from: u64, to: u64) -> Result<Vec<(u64, Bloom)>, StoreError> {
        let queued = self
            .background
            .as_ref()
            .map(|b| b.log_blooms(from, to))
            .unwrap_or_default();
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let table = tx.open_table(LOG_BLOOMS).map_err(ctx("open blooms"))?;
        let mut out = Vec::new();
        for row in table.range(from..=to).map_err(ctx("scan blooms"))? {
            let (height, bloom) = row.map_err(ctx("scan blooms"))?;
            let bloom = <[u8; 256]>::try_from(bloom.value()).map_err(ctx("decode bloom"))?;
            out.push((height.value(), Bloom::from(bloom)));
        }
        // A block written between the two reads is in both.
        out.extend(queued);
        out.sort_by_key(|(height, _)| *height);
        out.dedup_by_key(|(height, _)| *height);
        Ok(out)
    }

    /// The first `end` executed transactions of `block` (all of them when
    /// `end` is past the last), in block order, read in one read transaction
    /// from whichever layout they were written in.
    pub fn block_txs(&self, block: &BlockRecord, end: usize) -> Result<Vec<TxRecord>, StoreError> {
        let hashes = &block.tx_hashes[..end.min(block.tx_hashes.len())];
        if let Some(txs) = self
            .background
            .as_ref()
            .and_then(|b| b.block_txs(block.number, hashes.len()))
        {
            return Ok(txs);
        }
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let positions = tx
            .open_table(TX_POSITIONS)
            .map_err(ctx("open tx positions"))?;
        let Some(first) = hashes.first() else {
            return Ok(Vec::new());
        };
        if positions
            .get(first.as_slice())
            .map_err(ctx("read tx position"))?
            .is_some()
        {
            let records = tx.open_table(TXS_BY_POSITION).map_err(ctx("open txs"))?;
            let end = u32::try_from(hashes.len()).unwrap_or(u32::MAX);
            let mut out = Vec::with_capacity(hashes.len());
            for row in records
                .range((block.number, 0)..(block.number, end))
                .map_err(ctx("scan txs"))?
            {
                let (_, record) = row.map_err(ctx("scan txs"))?;
                out.push(codec::decode_tx(record.value()).map_err(ctx("decode tx"))?);
            }
            return Ok(out);
        }
        let txs = tx.open_table(TXS).map_err(ctx("open txs"))?;
        let mut out = Vec::with_capacity(hashes.len());
        for hash in hashes {
            let record = txs
                .get(hash.as_slice())
                .map_err(ctx("read tx"))?
                .ok_or_else(|| StoreError::new("read tx", format!("{hash} is not stored")))?;
            out.push(serde_json::from_slice(record.value()).map_err(ctx("decode tx"))?);
        }
        Ok(out)
    }

    /// The executed transaction with hash `hash`, in whichever layout it was
    /// written.
    pub fn tx(&self, hash: &B256) -> Result<Option<TxRecord>, StoreError> {
        if let Some(record) = self.background.as_ref().and_then(|b| b.tx(hash)) {
            return Ok(Some(record));
        }
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let positions = tx
            .open_table(TX_POSITIONS)
            .map_err(ctx("open tx positions"))?;
        if let Some(position) = positions
            .get(hash.as_slice())
            .map_err(ctx("read tx position"))?
        {
            let (height, index) = position.value();
            let records = tx.open_table(TXS_BY_POSITION).map_err(ctx("open txs"))?;
            let record = records
                .get((height, index))
                .map_err(ctx("read tx"))?
                .ok_or_else(|| {
                    StoreError::new("read tx", format!("no record at ({height}, {index})"))
                })?;
            return Ok(Some(
                codec::decode_tx(record.value()).map_err(ctx("decode tx"))?,
            ));
        }
        let txs = tx.open_table(TXS).map_err(ctx("open txs"))?;
        match txs.get(hash.as_slice()).map_err(ctx("read tx"))? {
            Some(v) => Ok(Some(
                serde_json::from_slice(v.value()).map_err(ctx("decode tx"))?,
            )),
            None => Ok(None),
        }
    }

    /// The app hash recorded after `height`.
    pub fn app_hash_at(&self, height: u64) -> Result<Option<B256>, StoreError> {
        if let Some(hash) = self.background.as_ref().and_then(|b| b.app_hash_at(height)) {
            return Ok(Some(hash));
        }
        let tx = self.db.begin_read().map_err(ctx("begin read"))?;
        let table = tx.open_table(APP_HASHES).map_err(ctx("open app hashes"))?;
        match table.get(height).map_err(ctx("read app hash"))? {
            Some(v) => Ok(Some(
                B256::try_from(v.value()).map_err(ctx("decode app hash"))?,
            )),
            None => Ok(None),
        }
    }
}

/// One block's write transaction, every table written, not yet committed.
fn prepare(
    db: &Database,
    batch: &BlockBatch,
    txs: BlockTxs<'_>,
    genesis: Option<&Genesis>,
) -> Result<WriteTransaction, StoreError> {
    let mut tx = db.begin_write().map_err(ctx("begin write"))?;
    tx.set_durability(Durability::Immediate)
        .map_err(ctx("set durability"))?;
    write_state(&tx, &batch.diff)?;
    match txs {
        BlockTxs::Memory(txs) => write_positional(&tx, txs)?,
        BlockTxs::Staged(hashes) => move_staged(&tx, hashes)?,
    }
    write_block(&tx, &batch.block, genesis)?;
    Ok(tx)
}

/// Accounts, storage slots and code of `diff`.
fn write_state(tx: &WriteTransaction, diff: &StateDiff) -> Result<(), StoreError> {
    let mut accounts = tx.open_table(ACCOUNTS).map_err(ctx("open accounts"))?;
    let mut storage = tx.open_table(STORAGE).map_err(ctx("open storage"))?;
    for address in &diff.cleared_storage {
        let mut lo = [0u8; 52];
        lo[..20].copy_from_slice(address.as_slice());
        let mut hi = [0xffu8; 52];
        hi[..20].copy_from_slice(address.as_slice());
        storage
            .retain_in(lo.as_slice()..=hi.as_slice(), |_, _| false)
            .map_err(ctx("clear storage"))?;
    }
    for (address, change) in &diff.accounts {
        match change {
            Some(record) => {
                accounts
                    .insert(address.as_slice(), encode_account(record).as_slice())
                    .map_err(ctx("write account"))?;
            }
            None => {
                accounts
                    .remove(address.as_slice())
                    .map_err(ctx("delete account"))?;
            }
        }
    }
    for ((address, slot), value) in &diff.storage {
        let mut key = [0u8; 52];
        key[..20].copy_from_slice(address.as_slice());
        key[20..].copy_from_slice(&slot.to_be_bytes::<32>());
        if value.is_zero() {
            storage.remove(key.as_slice()).map_err(ctx("delete slot"))?;
        } else {
            storage
                .insert(key.as_slice(), value.to_be_bytes::<32>().as_slice())
                .map_err(ctx("write slot"))?;
        }
    }
    let mut code = tx.open_table(CODE).map_err(ctx("open code"))?;
    for (hash, bytecode) in &diff.code {
        code.insert(hash.as_slice(), bytecode.original_byte_slice())
            .map_err(ctx("write code"))?;
    }
    Ok(())
}

/// `txs` encoded by [`codec`] at their (height, index), and their hashes' index.
fn write_positional(tx: &WriteTransaction, txs: &[(B256, TxRecord)]) -> Result<(), StoreError> {
    let mut records = tx.open_table(TXS_BY_POSITION).map_err(ctx("open txs"))?;
    let mut positions = tx
        .open_table(TX_POSITIONS)
        .map_err(ctx("open tx positions"))?;
    for (hash, record) in txs {
        let index = u32::try_from(record.index)
            .map_err(|_| StoreError::new("write tx", format!("index {}", record.index)))?;
        let position = (record.block_number, index);
        records
            .insert(position, codec::encode_tx(record).as_slice())
            .map_err(ctx("write tx"))?;
        positions
            .insert(hash.as_slice(), position)
            .map_err(ctx("write tx position"))?;
    }
    Ok(())
}

/// Moves the staged JSON records of `hashes` into the JSON-by-hash table and
/// empties the staging table.
fn move_staged(tx: &WriteTransaction, hashes: &[B256]) -> Result<(), StoreError> {
    let mut pending = tx.open_table(PENDING_TXS).map_err(ctx("open pending"))?;
    let mut txs = tx.open_table(TXS).map_err(ctx("open txs"))?;
    for hash in hashes {
        let staged = pending
            .get(hash.as_slice())
            .map_err(ctx("read staged tx"))?
            .ok_or_else(|| StoreError::new("read staged tx", format!("{hash} was not staged")))?;
        txs.insert(hash.as_slice(), staged.value())
            .map_err(ctx("write tx"))?;
    }
    pending.retain(|_, _| false).map_err(ctx("clear pending"))
}

/// The block, its hash and app hash, the head and, at InitChain, the genesis.
fn write_block(
    tx: &WriteTransaction,
    block: &BlockRecord,
    genesis: Option<&Genesis>,
) -> Result<(), StoreError> {
    let mut blocks = tx.open_table(BLOCKS).map_err(ctx("open blocks"))?;
    let bytes = serde_json::to_vec(block).map_err(ctx("encode block"))?;
    blocks
        .insert(block.number, bytes.as_slice())
        .map_err(ctx("write block"))?;
    let mut hashes = tx.open_table(BLOCK_HASHES).map_err(ctx("open hashes"))?;
    hashes
        .insert(block.hash.as_slice(), block.number)
        .map_err(ctx("write block hash"))?;
    let mut app_hashes = tx.open_table(APP_HASHES).map_err(ctx("open app hashes"))?;
    app_hashes
        .insert(block.number, block.app_hash.as_slice())
        .map_err(ctx("write app hash"))?;
    if let Some(bloom) = &block.logs_bloom {
        let mut blooms = tx.open_table(LOG_BLOOMS).map_err(ctx("open blooms"))?;
        blooms
            .insert(block.number, bloom.as_slice())
            .map_err(ctx("write bloom"))?;
    }
    let mut meta = tx.open_table(META).map_err(ctx("open meta"))?;
    meta.insert(META_HEIGHT, block.number.to_be_bytes().as_slice())
        .map_err(ctx("write height"))?;
    meta.insert(META_APP_HASH, block.app_hash.as_slice())
        .map_err(ctx("write app hash"))?;
    if let Some(genesis) = genesis {
        let bytes = serde_json::to_vec(genesis).map_err(ctx("encode genesis"))?;
        meta.insert(META_GENESIS, bytes.as_slice())
            .map_err(ctx("write genesis"))?;
    }
    Ok(())
}

fn encode_account(a: &AccountRecord) -> [u8; 72] {
    let mut out = [0u8; 72];
    out[..8].copy_from_slice(&a.nonce.to_be_bytes());
    out[8..40].copy_from_slice(&a.balance.to_be_bytes::<32>());
    out[40..].copy_from_slice(a.code_hash.as_slice());
    out
}

fn decode_account(bytes: &[u8]) -> Result<AccountRecord, StoreError> {
    if bytes.len() != 72 {
        return Err(StoreError::new(
            "decode account",
            format!("expected 72 bytes, found {}", bytes.len()),
        ));
    }
    let mut nonce = [0u8; 8];
    nonce.copy_from_slice(&bytes[..8]);
    Ok(AccountRecord {
        nonce: u64::from_be_bytes(nonce),
        balance: U256::from_be_slice(&bytes[8..40]),
        code_hash: B256::from_slice(&bytes[40..]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::ReceiptRecord;
    use alloy_primitives::Log;

    fn block(number: u64) -> BlockRecord {
        BlockRecord {
            number,
            hash: B256::repeat_byte(number as u8),
            parent_hash: B256::ZERO,
            timestamp: 1,
            timestamp_nanos: 0,
            gas_used: 0,
            gas_limit: 1,
            base_fee: 1,
            miner: Address::ZERO,
            app_hash: B256::repeat_byte(0xaa),
            tx_hashes: vec![],
            invalid_txs: 0,
            size: 0,
            logs_bloom: Some(Bloom::ZERO),
        }
    }

    #[test]
    fn commit_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let a = Address::repeat_byte(9);
        {
            let store = Store::open(&path, StoreConfig::default()).unwrap();
            assert_eq!(store.head().unwrap(), None);
            let mut diff = StateDiff::default();
            diff.accounts.insert(
                a,
                Some(AccountRecord {
                    nonce: 4,
                    balance: U256::from(77),
                    ..Default::default()
                }),
            );
            diff.storage.insert((a, U256::from(3)), U256::from(8));
            store
                .commit(&BlockBatch {
                    block: block(1),
                    txs: vec![],
                    diff,
                })
                .unwrap();
        }
        let store = Store::open(&path, StoreConfig::default()).unwrap();
        assert_eq!(store.head().unwrap().unwrap().height, 1);
        let world = store.load_world().unwrap();
        assert_eq!(world.account(&a).unwrap().balance, U256::from(77));
        assert_eq!(world.storage(&a, &U256::from(3)), U256::from(8));
        assert_eq!(store.block_number(&B256::repeat_byte(1)).unwrap(), Some(1));
        assert_eq!(store.app_hash_at(1).unwrap(), Some(B256::repeat_byte(0xaa)));
    }

    /// A block at `number` holding `count` transactions, and its batch.
    fn block_with_txs(number: u64, count: u8) -> BlockBatch {
        let txs: Vec<(B256, TxRecord)> = (0..count)
            .map(|i| {
                let hash = B256::repeat_byte(number as u8 * 16 + i);
                let log = Log::new(
                    Address::repeat_byte(i),
                    vec![B256::repeat_byte(0x70 + i)],
                    Bytes::from(vec![i; 40]),
                )
                .unwrap();
                let record = TxRecord {
                    raw: Bytes::from(vec![0x02, i, 0xc0]),
                    sender: Address::repeat_byte(0x5e),
                    block_number: number,
                    block_hash: B256::repeat_byte(number as u8),
                    index: u64::from(i),
                    receipt: ReceiptRecord {
                        status: i % 2 == 0,
                        gas_used: 21_000 + u64::from(i),
                        cumulative_gas_used: 21_000 * (u64::from(i) + 1),
                        effective_gas_price: 2_000_000_000,
                        logs: vec![log],
                        contract_address: (i == 0).then(|| Address::repeat_byte(0xcc)),
                    },
                    place: None,
                };
                (hash, record)
            })
            .collect();
        let mut block = block(number);
        block.tx_hashes = txs.iter().map(|(h, _)| *h).collect();
        BlockBatch {
            block,
            txs,
            diff: StateDiff::default(),
        }
    }

    #[test]
    fn both_layouts_read_back_the_same_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let (one, two) = (block_with_txs(1, 3), block_with_txs(2, 2));
        {
            let capped = StoreConfig {
                cache_size: Some(CAPPED_CACHE_SIZE),
                ..StoreConfig::default()
            };
            let store = Store::open(&path, capped).unwrap();
            store.commit(&one).unwrap();
            store.stage_txs(&two.txs).unwrap();
            // Not visible before Commit.
            assert_eq!(store.tx(&two.txs[0].0).unwrap(), None);
            let moved = BlockBatch {
                txs: Vec::new(),
                ..two.clone()
            };
            store.commit_staged(&moved).unwrap();
            for (hash, record) in one.txs.iter().chain(&two.txs) {
                assert_eq!(store.tx(hash).unwrap().as_ref(), Some(record));
            }
        }
        // And after a reopen with the other configuration.
        let store = Store::open(&path, StoreConfig::default()).unwrap();
        for (hash, record) in one.txs.iter().chain(&two.txs) {
            assert_eq!(store.tx(hash).unwrap().as_ref(), Some(record));
        }
        assert_eq!(store.tx(&B256::repeat_byte(0xee)).unwrap(), None);
        assert_eq!(store.head().unwrap().unwrap().height, 2);
    }

    /// Every read web3 makes of the store, over `batches`' blocks.
    fn reads(store: &Store, batches: &[BlockBatch]) -> Vec<String> {
        let mut out = vec![format!("{:?}", store.log_blooms(0, 99).unwrap())];
        for batch in batches {
            let n = batch.block.number;
            let block = store.block(n).unwrap().unwrap();
            out.push(format!("{block:?}"));
            out.push(format!("{:?}", store.block_number(&block.hash).unwrap()));
            out.push(format!("{:?}", store.app_hash_at(n).unwrap()));
            out.push(format!("{:?}", store.block_txs(&block, 1).unwrap()));
            out.push(format!(
                "{:?}",
                store.block_txs(&block, usize::MAX).unwrap()
            ));
            for (hash, _) in &batch.txs {
                out.push(format!("{:?}", store.tx(hash).unwrap()));
            }
        }
        out
    }

    #[test]
    fn background_commits_read_the_same_before_and_after_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let batches: Vec<BlockBatch> = (1..=9).map(|n| block_with_txs(n, 3)).collect();
        let background = StoreConfig {
            background: true,
            ..StoreConfig::default()
        };
        let (queued, written) = {
            let store = Store::open(&path, background).unwrap();
            let mut queued = Vec::new();
            for batch in &batches {
                store.commit_in_background(Arc::new(batch.clone())).unwrap();
                // Readable at once, written or not.
                assert_eq!(
                    store.block(batch.block.number).unwrap().as_ref(),
                    Some(&batch.block)
                );
                assert!(store.unpersisted() <= MAX_UNPERSISTED);
                queued = reads(&store, &batches[..batch.block.number as usize]);
            }
            // A range backwards is empty, queued or written.
            assert!(store.log_blooms(9, 1).unwrap().is_empty());
            store.flush().unwrap();
            assert_eq!(store.unpersisted(), 0);
            (queued, reads(&store, &batches))
        };
        assert_eq!(queued, written);
        // All on disk: a plain store reads the same, and the head is the last.
        let store = Store::open(&path, StoreConfig::default()).unwrap();
        assert_eq!(reads(&store, &batches), written);
        assert_eq!(store.head().unwrap().unwrap().height, 9);
        let e = store
            .commit_in_background(Arc::new(block_with_txs(10, 1)))
            .unwrap_err();
        assert!(
            e.to_string().contains("without its background writer"),
            "{e}"
        );
    }

    #[test]
    fn dropping_the_store_writes_what_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let background = StoreConfig {
            background: true,
            ..StoreConfig::default()
        };
        {
            let store = Store::open(&path, background).unwrap();
            for n in 1..=4 {
                store
                    .commit_in_background(Arc::new(block_with_txs(n, 2)))
                    .unwrap();
            }
        }
        let store = Store::open(&path, StoreConfig::default()).unwrap();
        assert_eq!(store.head().unwrap().unwrap().height, 4);
        assert!(store.tx(&block_with_txs(4, 2).txs[1].0).unwrap().is_some());
    }

    #[test]
    fn staging_replaces_what_was_staged_and_a_reopen_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let batch = block_with_txs(1, 2);
        let mut first = batch.txs.clone();
        first[1].1.receipt.status = !first[1].1.receipt.status;
        first.push((B256::repeat_byte(0xee), first[0].1.clone()));
        {
            let store = Store::open(&path, StoreConfig::default()).unwrap();
            // A FinalizeBlock replayed: the second staging wins, entirely.
            store.stage_txs(&first).unwrap();
            store.stage_txs(&batch.txs).unwrap();
            store.commit_staged(&batch).unwrap();
            assert_eq!(
                store.tx(&batch.txs[1].0).unwrap(),
                Some(batch.txs[1].1.clone())
            );
            assert_eq!(store.tx(&B256::repeat_byte(0xee)).unwrap(), None);
            // A crash between FinalizeBlock and Commit leaves a staged block.
            store.stage_txs(&block_with_txs(2, 1).txs).unwrap();
        }
        let store = Store::open(&path, StoreConfig::default()).unwrap();
        let err = store.commit_staged(&block_with_txs(2, 1)).unwrap_err();
        assert!(err.to_string().contains("was not staged"), "{err}");
        assert_eq!(store.head().unwrap().unwrap().height, 1, "nothing written");
    }
}

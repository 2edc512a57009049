//! From raw bytes to a [`VerifiedTx`]: the stateless rules of [`tx`] and
//! sender recovery, done the way the patches in force say. CheckTx, recheck
//! and FinalizeBlock all verify through one [`Verifier`].

use std::sync::Arc;

use alloy_consensus::TxEnvelope;
use alloy_primitives::{keccak256, Address, B256};

use crate::error::TxError;
use crate::genesis::Genesis;
use crate::patches::{Patch, Patches};
use crate::senders::SenderCache;
use crate::tx::{self, Ecrecover, TxRules, VerifiedTx};

/// Where a verifier runs, which says what it does with the sender cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// CheckTx and recheck: a recovered sender is remembered.
    Mempool,
    /// FinalizeBlock: a cached sender is taken out (its transaction leaves
    /// the mempool with the block), a missing one is recovered and not kept.
    Block,
}

/// Verifies transactions for one chain under one set of patches.
#[derive(Debug, Clone)]
pub struct Verifier {
    rules: TxRules,
    patches: Patches,
    ecrecover: Ecrecover,
    /// `sender-cache` on: the node's cache and how this verifier uses it.
    senders: Option<(Arc<SenderCache>, Stage)>,
}

impl Verifier {
    /// The verifier of the chain `genesis` describes.
    pub fn new(genesis: &Genesis, patches: Patches) -> Self {
        Self {
            rules: TxRules {
                chain_id: genesis.chain_id,
                max_tx_bytes: genesis.max_tx_bytes,
                // A transaction asking for more than a whole block can never
                // be included (revm refuses it too): geth's pool refuses it.
                max_tx_gas: genesis.max_tx_gas.min(genesis.block_gas_limit),
                base_fee: genesis.base_fee,
            },
            patches,
            ecrecover: if patches.has(Patch::FastEcrecover) {
                Ecrecover::C
            } else {
                Ecrecover::PureRust
            },
            senders: None,
        }
    }

    /// This verifier, using the node's sender cache at `stage` when
    /// `sender-cache` is in force (a cache the node without the patch does
    /// not have: `None`).
    pub fn with_senders(mut self, cache: Option<&Arc<SenderCache>>, stage: Stage) -> Self {
        self.senders = cache
            .filter(|_| self.patches.has(Patch::SenderCache))
            .map(|c| (c.clone(), stage));
        self
    }

    /// The patches in force.
    pub fn patches(&self) -> Patches {
        self.patches
    }

    /// Decodes `raw`, applies every stateless rule and recovers the sender.
    pub fn verify(&self, raw: &[u8]) -> Result<VerifiedTx, TxError> {
        let envelope = self.decode(raw)?;
        self.recover(raw, envelope)
    }

    /// Decodes `raw` and applies every stateless rule but the signature's:
    /// the cheap half of [`Self::verify`], which FinalizeBlock runs before
    /// it checks the block's gas, and ProcessProposal alone.
    pub fn decode(&self, raw: &[u8]) -> Result<TxEnvelope, TxError> {
        tx::decode_checked(raw, &self.rules)
    }

    /// Recovers the sender of `envelope`, decoded from `raw` by
    /// [`Self::decode`]: the costly half of [`Self::verify`].
    pub fn recover(&self, raw: &[u8], envelope: TxEnvelope) -> Result<VerifiedTx, TxError> {
        let hash = keccak256(raw);
        let sender = match &self.senders {
            // Before (`sender-cache` off): recover every time. Why: each step
            // verifies what it is handed, and a sender is a pure function of
            // the bytes.
            None => tx::recover_sender(&envelope, self.ecrecover)?,
            Some((cache, stage)) => self.recover_cached(&envelope, hash, cache, *stage)?,
        };
        Ok(VerifiedTx {
            envelope,
            hash,
            sender,
        })
    }

    /// `sender-cache` on: the recovery is skipped when the cache knows these
    /// bytes' sender (decoding and the stateless rules always ran before).
    fn recover_cached(
        &self,
        envelope: &TxEnvelope,
        hash: B256,
        cache: &SenderCache,
        stage: Stage,
    ) -> Result<Address, TxError> {
        let cached = match stage {
            Stage::Mempool => cache.get(&hash),
            Stage::Block => cache.take(&hash),
        };
        match cached {
            Some(sender) => Ok(sender),
            None => {
                let sender = tx::recover_sender(envelope, self.ecrecover)?;
                if stage == Stage::Mempool {
                    cache.insert(hash, sender);
                }
                Ok(sender)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use alloy_consensus::TxEip1559;
    use alloy_primitives::{Address, TxKind};

    use super::*;
    use crate::testkit::{key, sign};

    fn transfer(chain_id: u64) -> Vec<u8> {
        let tx = TxEip1559 {
            chain_id,
            gas_limit: 21_000,
            max_fee_per_gas: 2_000_000_000,
            to: TxKind::Call(Address::repeat_byte(0x77)),
            ..Default::default()
        };
        sign(tx, &key(2).0)
    }

    fn verifier(patches: Patches, cache: &Arc<SenderCache>, stage: Stage) -> Verifier {
        Verifier::new(&Genesis::new(9000, BTreeMap::new()), patches)
            .with_senders(Some(cache), stage)
    }

    #[test]
    fn a_hit_skips_recovery_only() {
        let cache = Arc::new(SenderCache::default());
        let mempool = verifier(Patches::ALL, &cache, Stage::Mempool);
        let raw = transfer(9000);
        let first = mempool.verify(&raw).unwrap();
        assert_eq!(first.sender, key(2).1);
        assert_eq!(cache.get(&keccak256(&raw)), Some(key(2).1));
        // Whatever the cache holds for these bytes is what verify returns:
        // proof that it did not recover again.
        let planted = Address::repeat_byte(0xaa);
        cache.take(&keccak256(&raw));
        cache.insert(keccak256(&raw), planted);
        assert_eq!(mempool.verify(&raw).unwrap().sender, planted);
        // The stateless rules still run on a hit.
        let other_chain = transfer(1);
        cache.insert(keccak256(&other_chain), planted);
        assert!(matches!(
            mempool.verify(&other_chain),
            Err(TxError::WrongChainId { .. })
        ));
    }

    #[test]
    fn a_block_takes_the_entry_and_does_not_fill_the_cache() {
        let cache = Arc::new(SenderCache::default());
        let raw = transfer(9000);
        verifier(Patches::ALL, &cache, Stage::Mempool)
            .verify(&raw)
            .unwrap();
        let block = verifier(Patches::ALL, &cache, Stage::Block);
        assert_eq!(block.verify(&raw).unwrap().sender, key(2).1);
        assert!(cache.is_empty(), "taken out");
        assert_eq!(
            block.verify(&raw).unwrap().sender,
            key(2).1,
            "a miss recovers"
        );
        assert!(cache.is_empty(), "and keeps nothing");
    }

    #[test]
    fn without_the_patch_the_cache_is_not_used() {
        let cache = Arc::new(SenderCache::default());
        let raw = transfer(9000);
        let before = Patches::ALL.without(Patch::SenderCache);
        cache.insert(keccak256(&raw), Address::repeat_byte(0xaa));
        let tx = verifier(before, &cache, Stage::Mempool)
            .verify(&raw)
            .unwrap();
        assert_eq!(tx.sender, key(2).1);
        assert_eq!(tx.hash, keccak256(&raw));
        assert_eq!(cache.len(), 1);
    }
}

//! From raw bytes to a [`VerifiedTx`]: the stateless rules of [`tx`] and
//! sender recovery, done the way the patches in force say. CheckTx, recheck
//! and FinalizeBlock all verify through one [`Verifier`].

use crate::error::TxError;
use crate::genesis::Genesis;
use crate::patches::{Patch, Patches};
use crate::tx::{self, Ecrecover, TxRules, VerifiedTx};

/// Verifies transactions for one chain under one set of patches.
#[derive(Debug, Clone)]
pub struct Verifier {
    rules: TxRules,
    patches: Patches,
    ecrecover: Ecrecover,
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
        }
    }

    /// The stateless rules applied.
    pub fn rules(&self) -> &TxRules {
        &self.rules
    }

    /// The patches in force.
    pub fn patches(&self) -> Patches {
        self.patches
    }

    /// Decodes `raw`, applies every stateless rule and recovers the sender.
    pub fn verify(&self, raw: &[u8]) -> Result<VerifiedTx, TxError> {
        tx::verify(raw, &self.rules, self.ecrecover)
    }
}

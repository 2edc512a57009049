//! The batch path: `FethDisperse` (`contracts/FethDisperse.sol`, compiled
//! with `contracts/build.mjs`) pays many accounts in one transaction, all
//! or none, and refuses any call whose ether differs from the sum it pays.

use std::time::{Duration, Instant};

use alloy_primitives::{keccak256, Address, Bytes, U256};
use anyhow::{bail, Context, Result};
use secp256k1::SecretKey;

use super::journal::{Payment, Share};
use crate::eth::EthClient;
use crate::keys;
use crate::sign::{self, Fee, TxRequest};

/// Creation code of FethDisperse (hex).
const DISPERSE_INIT: &str = include_str!("../../contracts/FethDisperse.bin");
/// Gas limit of the deployment.
pub const DEPLOY_GAS: u64 = 500_000;
/// Gas of a batch beyond its recipients: the transaction, the call and the
/// ABI decoding.
pub const BATCH_BASE_GAS: u64 = 60_000;
/// Upper bound of the gas one recipient adds: a cold account access (2,600),
/// a value transfer (9,000) to a new account (25,000), its 64 bytes of
/// calldata (at most 1,024) and the loop.
pub const PER_RECIPIENT_GAS: u64 = 40_000;
/// The largest gas limit a batch asks for: EIP-7825's per-transaction cap
/// (2²⁴), below abcid's 30 M and accepted by any node that enforces it.
pub const MAX_BATCH_GAS: u64 = 1 << 24;

/// Gas limit of a batch paying `n` accounts.
pub fn batch_gas(n: usize) -> u64 {
    BATCH_BASE_GAS + PER_RECIPIENT_GAS * n as u64
}

/// The most recipients per batch: `wanted`, within [`MAX_BATCH_GAS`] and a
/// quarter of the block gas limit (so that several batches fit a block).
pub fn batch_size(wanted: usize, block_gas_limit: u64) -> usize {
    let budget = MAX_BATCH_GAS.min(block_gas_limit / 4);
    let fits = budget.saturating_sub(BATCH_BASE_GAS) / PER_RECIPIENT_GAS;
    wanted
        .min(usize::try_from(fits).unwrap_or(usize::MAX))
        .max(1)
}

/// Calldata of `disperseEther(address[] recipients, uint256[] values)`.
pub fn disperse_call(shares: &[Share]) -> Bytes {
    let n = shares.len();
    let word = |v: U256| v.to_be_bytes::<32>();
    let mut data = Vec::with_capacity(4 + 32 * (4 + 2 * n));
    data.extend_from_slice(&keccak256(b"disperseEther(address[],uint256[])")[..4]);
    data.extend_from_slice(&word(U256::from(64)));
    data.extend_from_slice(&word(U256::from(64 + 32 * (n + 1))));
    data.extend_from_slice(&word(U256::from(n)));
    for share in shares {
        data.extend_from_slice(&[0u8; 12]);
        data.extend_from_slice(share.to.as_slice());
    }
    data.extend_from_slice(&word(U256::from(n)));
    for share in shares {
        data.extend_from_slice(&word(share.value));
    }
    data.into()
}

/// Deploys the contract from `root` and waits for its receipt; the
/// contract's address, or why the node would not run it.
pub async fn deploy(
    client: &EthClient,
    root: &SecretKey,
    chain_id: u64,
    fee: Fee,
    wait: Duration,
) -> Result<Address> {
    let code = hex::decode(DISPERSE_INIT.trim()).context("FethDisperse.bin is not hex")?;
    let root_address = keys::address_of(root);
    let nonce = client.nonce(root_address, true).await?;
    let request = TxRequest {
        chain_id,
        nonce,
        to: None,
        value: U256::ZERO,
        gas_limit: DEPLOY_GAS,
        fee,
        input: code.into(),
    };
    let tx = sign::sign(root, &request);
    client
        .send_raw(&tx.raw)
        .await
        .context("the node refused the disperse contract's deployment")?;
    let deadline = Instant::now() + wait;
    let receipt = loop {
        if let Some(receipt) = client.receipt(tx.hash).await? {
            break receipt;
        }
        if Instant::now() > deadline {
            bail!(
                "the disperse contract's deployment {} was not committed after {} s",
                tx.hash,
                wait.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let address = root_address.create(nonce);
    if receipt.status.map(|s| s.to::<u64>()) != Some(1) || receipt.contract_address != Some(address)
    {
        bail!("the disperse contract's deployment {} failed", tx.hash);
    }
    Ok(address)
}

/// One signed batch per `size` targets, with consecutive root nonces from
/// `first`.
pub fn sign_batches(
    root: &SecretKey,
    chain_id: u64,
    fee: Fee,
    first: u64,
    contract: Address,
    targets: &[Share],
    size: usize,
) -> Vec<Payment> {
    targets
        .chunks(size.max(1))
        .zip(first..)
        .map(|(shares, nonce)| {
            let value = shares.iter().map(|s| s.value).sum();
            let request = TxRequest {
                chain_id,
                nonce,
                to: Some(contract),
                value,
                gas_limit: batch_gas(shares.len()),
                fee,
                input: disperse_call(shares),
            };
            let tx = sign::sign(root, &request);
            Payment {
                to: contract,
                value,
                nonce,
                raw: tx.raw,
                hash: tx.hash,
                pays: shares.to_vec(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calldata_is_the_abi_encoding_of_two_dynamic_arrays() {
        let shares = [
            Share {
                to: Address::repeat_byte(0x11),
                value: U256::from(7u64),
            },
            Share {
                to: Address::repeat_byte(0x22),
                value: U256::from(9u64),
            },
        ];
        let data = disperse_call(&shares);
        // selector + two offsets + (length + 2 words) twice
        assert_eq!(data.len(), 4 + 32 * 8);
        assert_eq!(
            data[..4],
            keccak256(b"disperseEther(address[],uint256[])")[..4]
        );
        let word = |i: usize| U256::from_be_slice(&data[4 + 32 * i..4 + 32 * (i + 1)]);
        assert_eq!(word(0), U256::from(64));
        assert_eq!(word(1), U256::from(64 + 32 * 3));
        assert_eq!(word(2), U256::from(2));
        assert_eq!(data[4 + 32 * 3 + 12..4 + 32 * 4], [0x11; 20]);
        assert_eq!(word(5), U256::from(2));
        assert_eq!(word(6), U256::from(7));
        assert_eq!(word(7), U256::from(9));
    }

    #[test]
    fn batches_stay_within_the_transaction_and_block_gas_caps() {
        assert_eq!(batch_size(400, 150_000_000), 400);
        // (2^24 - 60,000) / 40,000 = 417 recipients fit the EIP-7825 cap.
        assert_eq!(batch_size(1_000, 150_000_000), 417);
        assert!(batch_gas(batch_size(10_000, 150_000_000)) <= MAX_BATCH_GAS);
        // geth --dev's 11.5 M blocks: a quarter of the block per batch.
        assert!(batch_gas(batch_size(10_000, 11_500_000)) <= 11_500_000 / 4);
        assert_eq!(batch_size(10_000, 100_000), 1);
    }
}

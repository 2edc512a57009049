//! The batch path: `FethDisperse` (`contracts/FethDisperse.sol`, compiled
//! with `contracts/build.mjs`) pays many accounts in one transaction, all
//! or none, and refuses any call whose ether differs from the sum it pays.

use std::time::{Duration, Instant};

use alloy_primitives::{keccak256, Address, Bytes, U256};
use anyhow::{bail, Context, Result};
use secp256k1::SecretKey;

use super::send::{Payment, Share};
use feth_chain::eth::EthClient;
use feth_chain::keys;
use feth_chain::sign::{self, Fee, TxRequest};

/// Creation code of FethDisperse (hex).
const DISPERSE_INIT: &str = include_str!("../../contracts/FethDisperse.bin");
/// Gas limit of the deployment.
pub const DEPLOY_GAS: u64 = 500_000;
/// The largest gas limit a batch asks for: EIP-7825's per-transaction cap
/// (2²⁴), below abcid's 30 M and accepted by any node that enforces it.
pub const MAX_BATCH_GAS: u64 = 1 << 24;

/// The gas limit of a batch: `base` plus `per_recipient` for each account
/// it pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchGas {
    /// Gas beyond the recipients: the transaction, the call, ABI decoding.
    pub base: u64,
    /// Gas one recipient adds.
    pub per_recipient: u64,
}

impl BatchGas {
    /// Upper bounds under the gas schedule up to Prague: a cold account
    /// access (2,600), a value transfer (9,000) to a new account (25,000),
    /// 64 bytes of calldata (at most 1,024) and the loop, per recipient.
    pub const DEFAULT: Self = Self {
        base: 60_000,
        per_recipient: 40_000,
    };

    /// Gas limit of a batch paying `n` accounts.
    pub fn gas(&self, n: usize) -> u64 {
        self.base + self.per_recipient * n as u64
    }

    /// The most recipients per batch: `wanted`, within [`MAX_BATCH_GAS`]
    /// and a quarter of the block gas limit (so that several batches fit a
    /// block).
    pub fn size(&self, wanted: usize, block_gas_limit: u64) -> usize {
        let budget = MAX_BATCH_GAS.min(block_gas_limit / 4);
        let fits = budget.saturating_sub(self.base) / self.per_recipient.max(1);
        wanted
            .min(usize::try_from(fits).unwrap_or(usize::MAX))
            .max(1)
    }

    /// These bounds, raised to what the node estimates for batches of one
    /// and two (`one`, `two`) with a tenth more: a chain whose gas
    /// schedule prices new accounts higher (geth `--dev` on a later fork
    /// asked 222,000 for one) still gets batches that go through.
    pub fn covering(self, one: u64, two: u64) -> Self {
        let per = two.saturating_sub(one);
        let base = one.saturating_sub(per);
        let margin = |g: u64| g.saturating_add(g / 10);
        Self {
            base: self.base.max(margin(base)),
            per_recipient: self.per_recipient.max(margin(per)),
        }
    }
}

/// What the node estimates for batches paying one and two fresh accounts
/// 1 wei each from `from` through `contract`.
pub async fn estimate(client: &EthClient, from: Address, contract: Address) -> Result<(u64, u64)> {
    let probe = |i: u8| Share {
        to: Address::from_slice(
            &keccak256([b"feth-disperse-probe".as_slice(), &[i]].concat())[12..],
        ),
        value: U256::from(1u64),
    };
    let mut gas = [0u64; 2];
    for (n, g) in gas.iter_mut().enumerate() {
        let shares: Vec<Share> = (0..=n as u8).map(probe).collect();
        let call = serde_json::json!([{
            "from": from,
            "to": contract,
            "value": U256::from(shares.len()),
            "input": disperse_call(&shares),
        }]);
        let answer: alloy_primitives::U64 = client
            .call("eth_estimateGas", call)
            .await
            .with_context(|| format!("estimating a batch paying {} account(s)", n + 1))?;
        *g = answer.to();
    }
    Ok((gas[0], gas[1]))
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

/// How the batches of a run pay: through which contract, in batches of how
/// many, with which gas limit.
#[derive(Debug, Clone, Copy)]
pub struct BatchPlan {
    /// The deployed disperse contract.
    pub contract: Address,
    /// Recipients per batch (the last may have fewer).
    pub size: usize,
    /// Gas limits.
    pub gas: BatchGas,
}

/// One signed batch per `plan.size` targets, with consecutive root nonces
/// from `first`.
pub fn sign_batches(
    root: &SecretKey,
    chain_id: u64,
    fee: Fee,
    first: u64,
    plan: &BatchPlan,
    targets: &[Share],
) -> Vec<Payment> {
    let (contract, size, gas) = (plan.contract, plan.size, plan.gas);
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
                gas_limit: gas.gas(shares.len()),
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
        let g = BatchGas::DEFAULT;
        assert_eq!(g.size(400, 150_000_000), 400);
        // (2^24 - 60,000) / 40,000 = 417 recipients fit the EIP-7825 cap.
        assert_eq!(g.size(1_000, 150_000_000), 417);
        assert!(g.gas(g.size(10_000, 150_000_000)) <= MAX_BATCH_GAS);
        // geth --dev's 11.5 M blocks: a quarter of the block per batch.
        assert!(g.gas(g.size(10_000, 11_500_000)) <= 11_500_000 / 4);
        assert_eq!(g.size(10_000, 100_000), 1);
    }

    #[test]
    fn estimates_raise_the_bounds_never_lower_them() {
        let g = BatchGas::DEFAULT;
        // A cheap chain (abcid measures about 35,400 per account) keeps them.
        assert_eq!(g.covering(56_000, 91_400), g);
        // geth --dev asked 222,000 for one: 190,000 more per account.
        let dear = g.covering(222_000, 412_000);
        assert_eq!(dear.per_recipient, 209_000);
        assert_eq!(dear.base, 60_000);
        assert!(dear.gas(1) >= 222_000 && dear.gas(2) >= 412_000);
    }
}

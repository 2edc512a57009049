//! The contract-heavy write kinds and the view that does real work:
//! FethStore (`contracts/FethStore.sol`: `store` writes eight fresh slots,
//! `digest` hashes 2,000 rounds) and FethSwap (`contracts/FethSwap.sol`:
//! constant-product swaps), both compiled with `contracts/build.mjs` and
//! deployed by the first sender before the load begins.
//!
//! Gas limits are the node's estimates with a tenth more, asked for a
//! sender that never called the contract (its first call writes the most
//! fresh slots).

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use anyhow::{Context, Result};

use super::deploy::{deploy, estimate, Signer};
use super::erc20::selector;
use feth_chain::eth::EthClient;

/// Creation code of FethStore (hex).
const STORE_INIT: &str = include_str!("../contracts/FethStore.bin");
/// Creation code of FethSwap (hex).
const SWAP_INIT: &str = include_str!("../contracts/FethSwap.bin");
/// Least gas limit of a deployment.
const DEPLOY_GAS: u64 = 500_000;
/// Least gas limit of a call: an estimate below it is not believed.
const CALL_GAS: u64 = 30_000;
/// Fresh slots one `store` call writes.
pub const STORE_CELLS: u64 = 8;
/// Amount of the input asset each swap sells: 10^15 of each trader's grant
/// of 10^24 lasts 10^9 swaps one way.
pub const SWAP_AMOUNT: u64 = 1_000_000_000_000_000;
/// Keccak-256 rounds of one `digest` read (about 490,000 gas).
pub const DIGEST_ROUNDS: u64 = 2_000;

/// A contract deployed for a load, with the gas limit of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployed {
    /// Its address.
    pub address: Address,
    /// The gas limit of one call from a sender that never called it.
    pub call_gas: u64,
}

fn code(hex_text: &str, name: &str) -> Result<Bytes> {
    let code = hex::decode(hex_text.trim()).with_context(|| format!("{name}.bin is not hex"))?;
    Ok(code.into())
}

fn uint(v: u64) -> [u8; 32] {
    U256::from(v).to_be_bytes::<32>()
}

/// Calldata of `store(first, count)`.
pub fn store_call(first: U256, count: u64) -> Bytes {
    let mut data = Vec::with_capacity(68);
    data.extend_from_slice(&selector("store(uint256,uint256)"));
    data.extend_from_slice(&first.to_be_bytes::<32>());
    data.extend_from_slice(&uint(count));
    data.into()
}

/// Calldata of the `store` a sender's transaction of `nonce` makes: the
/// cells from `nonce × 8` on, never written before by that sender.
pub fn store_of_nonce(nonce: u64) -> Bytes {
    store_call(U256::from(nonce) * U256::from(STORE_CELLS), STORE_CELLS)
}

/// Calldata of `swap(zeroForOne, amountIn, minOut)`.
pub fn swap_call(zero_for_one: bool, amount_in: u64, min_out: u64) -> Bytes {
    let mut data = Vec::with_capacity(100);
    data.extend_from_slice(&selector("swap(bool,uint256,uint256)"));
    data.extend_from_slice(&uint(u64::from(zero_for_one)));
    data.extend_from_slice(&uint(amount_in));
    data.extend_from_slice(&uint(min_out));
    data.into()
}

/// Calldata of the swap a sender's transaction of `nonce` makes: asset 0
/// for asset 1 on even nonces, back on odd ones, at least 1 out.
pub fn swap_of_nonce(nonce: u64) -> Bytes {
    swap_call(nonce.is_multiple_of(2), SWAP_AMOUNT, 1)
}

/// Calldata of `digest(seed, rounds)`.
pub fn digest_call(seed: B256, rounds: u64) -> Bytes {
    let mut data = Vec::with_capacity(68);
    data.extend_from_slice(&selector("digest(bytes32,uint256)"));
    data.extend_from_slice(seed.as_slice());
    data.extend_from_slice(&uint(rounds));
    data.into()
}

/// What `digest(seed, rounds)` answers, computed here: h = keccak256(h ‖ i)
/// for i = 0 .. rounds, from h = seed.
pub fn digest(seed: B256, rounds: u64) -> B256 {
    let mut h = seed;
    let mut input = [0u8; 64];
    for i in 0..rounds {
        input[..32].copy_from_slice(h.as_slice());
        input[32..].copy_from_slice(&uint(i));
        h = keccak256(input);
    }
    h
}

/// An address that never called anything: whose calls write the most.
fn newcomer() -> Address {
    Address::from_slice(&keccak256(b"feth: a sender new to the contract")[12..])
}

/// Deploys FethStore and estimates one `store` of eight fresh cells.
pub async fn prepare_store(client: &EthClient, signer: &Signer<'_>) -> Result<Deployed> {
    prepare(
        client,
        signer,
        ("FethStore", STORE_INIT),
        &store_of_nonce(0),
    )
    .await
}

/// Deploys FethSwap and estimates a trader's first swap.
pub async fn prepare_swap(client: &EthClient, signer: &Signer<'_>) -> Result<Deployed> {
    prepare(client, signer, ("FethSwap", SWAP_INIT), &swap_of_nonce(0)).await
}

/// Deploys the contract `(name, creation code)` and estimates `call` of it
/// from a sender new to it.
async fn prepare(
    client: &EthClient,
    signer: &Signer<'_>,
    (name, init): (&str, &str),
    call: &Bytes,
) -> Result<Deployed> {
    let address = deploy(client, signer, code(init, name)?, DEPLOY_GAS, name).await?;
    let call_gas = estimate(client, newcomer(), Some(address), call, CALL_GAS)
        .await
        .with_context(|| format!("estimating a call of {name}"))?;
    Ok(Deployed { address, call_gas })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calldata_is_the_abi_of_each_function() {
        // As solc's methodIdentifiers name them.
        assert_eq!(selector("store(uint256,uint256)"), [0x6e, 0xd2, 0x8e, 0xd0]);
        assert_eq!(
            selector("swap(bool,uint256,uint256)"),
            [0x08, 0xc8, 0x4c, 0x21]
        );
        assert_eq!(
            selector("digest(bytes32,uint256)"),
            [0x6b, 0x5a, 0x7f, 0x27]
        );
        let data = store_of_nonce(3);
        assert_eq!(data.len(), 68);
        assert_eq!(data[35], 24, "nonce 3 writes from cell 24");
        assert_eq!(data[67], 8);
        let even = swap_of_nonce(4);
        let odd = swap_of_nonce(5);
        assert_eq!((even.len(), even[35], odd[35]), (100, 1, 0));
        assert_eq!(U256::from_be_slice(&even[36..68]), U256::from(SWAP_AMOUNT));
        assert_eq!(digest_call(B256::repeat_byte(7), 2).len(), 68);
        assert!(code(STORE_INIT, "FethStore").unwrap().len() > 500);
        assert!(code(SWAP_INIT, "FethSwap").unwrap().len() > 500);
    }

    #[test]
    fn the_digest_chains_keccak_over_the_round_number() {
        let seed = B256::repeat_byte(1);
        assert_eq!(digest(seed, 0), seed);
        let mut once = [0u8; 64];
        once[..32].copy_from_slice(seed.as_slice());
        assert_eq!(digest(seed, 1), keccak256(once));
        let mut twice = [0u8; 64];
        twice[..32].copy_from_slice(keccak256(once).as_slice());
        twice[63] = 1;
        assert_eq!(digest(seed, 2), keccak256(twice));
    }
}

//! The ERC-20 workload: a token (`contracts/FethToken.sol`, compiled with
//! `contracts/build.mjs`) deployed by the first sender, who hands tokens to
//! every other sender; the load then calls `transfer(recipient, value)`.

use std::time::Duration;

use alloy_primitives::{keccak256, Address, Bytes, U256};
use anyhow::{bail, Context, Result};

use crate::accounts::KeySet;
use crate::eth::EthClient;
use crate::fund::{self, Payment};
use crate::sign::{self, Fee, TxRequest};

/// Creation code of FethToken (hex), without constructor arguments.
const TOKEN_INIT: &str = include_str!("../../contracts/FethToken.bin");
/// Gas limit of the deployment.
const DEPLOY_GAS: u64 = 1_500_000;
/// Gas limit of one `transfer` (a fresh recipient's slot costs ~22,100).
pub const TRANSFER_GAS: u64 = 80_000;

/// Creation code with `supply` as constructor argument.
pub fn deploy_code(supply: U256) -> Result<Bytes> {
    let mut code = hex::decode(TOKEN_INIT.trim()).context("FethToken.bin is not hex")?;
    code.extend_from_slice(&supply.to_be_bytes::<32>());
    Ok(code.into())
}

fn selector(signature: &str) -> [u8; 4] {
    let hash = keccak256(signature.as_bytes());
    [hash[0], hash[1], hash[2], hash[3]]
}

fn word(address: Address) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[12..].copy_from_slice(address.as_slice());
    w
}

/// Calldata of `balanceOf(owner)`.
pub fn balance_of_call(owner: Address) -> Bytes {
    let mut data = Vec::with_capacity(36);
    data.extend_from_slice(&selector("balanceOf(address)"));
    data.extend_from_slice(&word(owner));
    data.into()
}

/// Calldata of `transfer(to, value)`.
pub fn transfer_call(to: Address, value: U256) -> Bytes {
    let mut data = Vec::with_capacity(68);
    data.extend_from_slice(&selector("transfer(address,uint256)"));
    data.extend_from_slice(&word(to));
    data.extend_from_slice(&value.to_be_bytes::<32>());
    data.into()
}

/// `balanceOf(owner)` through `eth_call`.
pub async fn balance_of(client: &EthClient, token: Address, owner: Address) -> Result<U256> {
    let out: Bytes = client
        .call(
            "eth_call",
            serde_json::json!([{ "to": token, "data": balance_of_call(owner) }, "latest"]),
        )
        .await?;
    if out.len() != 32 {
        bail!("balanceOf returned {} bytes", out.len());
    }
    Ok(U256::from_be_slice(&out))
}

/// Deploys the token from `keys[0]` and gives every other sender
/// `per_holder` tokens; returns the token's address.
pub async fn prepare(
    client: &EthClient,
    keys: &KeySet,
    chain_id: u64,
    fee: Fee,
    per_holder: U256,
) -> Result<Address> {
    let me = keys.addresses[0];
    let first = client.nonce(me, true).await?;
    let token = me.create(first);
    let payments = sign_setup(keys, chain_id, fee, first, per_holder)?;
    fund::send_in_order(client, &payments, false)
        .await
        .context("deploying the token")?;
    let count = payments.len() as u64;
    fund::wait_nonce(
        client,
        me,
        first + count - 1,
        Duration::from_secs(120),
        false,
        count,
        first,
    )
    .await?;
    let receipt = client
        .receipt(payments[0].hash)
        .await?
        .context("no receipt for the token deployment")?;
    if receipt.status.map(|s| s.to::<u64>()) != Some(1) || receipt.contract_address != Some(token) {
        bail!("the token deployment failed (receipt {receipt:?})");
    }
    if let Some(last_holder) = keys.addresses.get(1..).and_then(<[Address]>::last) {
        let got = balance_of(client, token, *last_holder).await?;
        if got != per_holder {
            bail!("token hand-out failed: {last_holder} holds {got}, expected {per_holder}");
        }
    }
    Ok(token)
}

/// The deployer's transactions, from nonce `first`: the deployment (the
/// whole supply to the deployer), then `per_holder` tokens to every other
/// account.
fn sign_setup(
    keys: &KeySet,
    chain_id: u64,
    fee: Fee,
    first: u64,
    per_holder: U256,
) -> Result<Vec<Payment>> {
    let deployer = &keys.keys[0];
    let token = keys.addresses[0].create(first);
    let supply = per_holder * U256::from(keys.len() as u64);
    let call = |nonce: u64, to: Option<Address>, gas_limit: u64, input: Bytes| {
        let request = TxRequest {
            chain_id,
            nonce,
            to,
            value: U256::ZERO,
            gas_limit,
            fee,
            input,
        };
        let tx = sign::sign(deployer, &request);
        (tx.raw, tx.hash)
    };
    let (raw, hash) = call(first, None, DEPLOY_GAS, deploy_code(supply)?);
    let mut payments = vec![Payment {
        to: token,
        value: U256::ZERO,
        nonce: first,
        raw,
        hash,
        pays: Vec::new(),
    }];
    for (holder, nonce) in keys.addresses.iter().skip(1).zip(first + 1..) {
        let input = transfer_call(*holder, per_holder);
        let (raw, hash) = call(nonce, Some(token), TRANSFER_GAS, input);
        payments.push(Payment {
            to: *holder,
            value: U256::ZERO,
            nonce,
            raw,
            hash,
            pays: Vec::new(),
        });
    }
    Ok(payments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calldata_layout() {
        assert_eq!(
            selector("transfer(address,uint256)"),
            [0xa9, 0x05, 0x9c, 0xbb]
        );
        assert_eq!(selector("balanceOf(address)"), [0x70, 0xa0, 0x82, 0x31]);
        let data = transfer_call(Address::repeat_byte(0x11), U256::from(5u64));
        assert_eq!(data.len(), 68);
        assert_eq!(data[16..36], [0x11; 20]);
        assert_eq!(data[67], 5);
        assert!(deploy_code(U256::from(1u64)).unwrap().len() > 1000);
    }
}

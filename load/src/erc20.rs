//! The ERC-20 workload: a token (`contracts/FethToken.sol`, compiled with
//! `contracts/build.mjs`) deployed by the first sender, who hands tokens to
//! every other sender; the load then calls `transfer(recipient, value)`.
//!
//! Gas limits are the node's own estimates with a tenth more, never below
//! [`DEPLOY_GAS`] and [`TRANSFER_GAS`]: a chain whose schedule prices a new
//! storage slot higher (geth 1.17's `--dev` ran a hand-out out of gas at
//! 80,000) still gets transfers that go through.

use alloy_primitives::{keccak256, Address, Bytes, U256};
use anyhow::{bail, Context, Result};

use super::deploy::{deploy, estimate, send_and_wait, Signer};
use crate::fund::Payment;
use feth_chain::eth::EthClient;

/// Creation code of FethToken (hex), without constructor arguments.
const TOKEN_INIT: &str = include_str!("../contracts/FethToken.bin");
/// Least gas limit of the deployment.
const DEPLOY_GAS: u64 = 1_500_000;
/// Least gas limit of one `transfer` (a fresh recipient's slot costs
/// ~22,100 under Cancun's schedule).
pub const TRANSFER_GAS: u64 = 80_000;

/// A token of an ERC-20 load, deployed and handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// Its address.
    pub address: Address,
    /// The gas limit of a `transfer` to a fresh recipient on this chain.
    pub transfer_gas: u64,
}

/// Creation code with `supply` as constructor argument.
pub fn deploy_code(supply: U256) -> Result<Bytes> {
    let mut code = hex::decode(TOKEN_INIT.trim()).context("FethToken.bin is not hex")?;
    code.extend_from_slice(&supply.to_be_bytes::<32>());
    Ok(code.into())
}

/// The 4-byte selector of a function `signature`.
pub fn selector(signature: &str) -> [u8; 4] {
    let hash = keccak256(signature.as_bytes());
    [hash[0], hash[1], hash[2], hash[3]]
}

/// An address as one ABI word.
pub fn word(address: Address) -> [u8; 32] {
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
/// `per_holder` tokens: the deployment first, then the hand-outs with the
/// gas the node estimates for a transfer to a fresh recipient.
pub async fn prepare(client: &EthClient, signer: &Signer<'_>, per_holder: U256) -> Result<Token> {
    let keys = signer.keys;
    let me = keys.addresses[0];
    let supply = per_holder * U256::from(keys.len() as u64);
    let address = deploy(
        client,
        signer,
        deploy_code(supply)?,
        DEPLOY_GAS,
        "the token",
    )
    .await?;
    let first = client.nonce(me, true).await?;
    let fresh = Address::from_slice(&keccak256(b"feth: a fresh token holder")[12..]);
    let transfer_gas = estimate(
        client,
        me,
        Some(address),
        &transfer_call(fresh, per_holder),
        TRANSFER_GAS,
    )
    .await
    .context("estimating a token transfer")?;
    let handouts: Vec<Payment> = keys
        .addresses
        .iter()
        .skip(1)
        .zip(first..)
        .map(|(holder, nonce)| {
            let input = transfer_call(*holder, per_holder);
            Payment {
                to: *holder,
                ..signer.payment(nonce, Some(address), transfer_gas, input)
            }
        })
        .collect();
    send_and_wait(client, me, first, &handouts)
        .await
        .context("handing out the token")?;
    if let Some(last_holder) = keys.addresses.get(1..).and_then(<[Address]>::last) {
        let got = balance_of(client, address, *last_holder).await?;
        if got != per_holder {
            bail!("token hand-out failed: {last_holder} holds {got}, expected {per_holder}");
        }
    }
    Ok(Token {
        address,
        transfer_gas,
    })
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

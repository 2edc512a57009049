//! Contracts a load calls, deployed by its first sender before the load
//! begins: each deployment estimated, sent, committed and checked.

use std::time::Duration;

use alloy_primitives::{Address, Bytes, U256};
use anyhow::{bail, Context, Result};

use crate::fund::{self, Payment};
use feth_chain::accounts::KeySet;
use feth_chain::eth::EthClient;
use feth_chain::sign::{self, Fee, TxRequest};

/// Deploys `code` from the first key with the node's gas estimate (at
/// least `least`), waits until it is committed and checks its receipt;
/// `what` names it in errors.
pub async fn deploy(
    client: &EthClient,
    signer: &Signer<'_>,
    code: Bytes,
    least: u64,
    what: &str,
) -> Result<Address> {
    let me = signer.keys.addresses[0];
    let nonce = client.nonce(me, true).await?;
    let address = me.create(nonce);
    let gas = estimate(client, me, None, &code, least)
        .await
        .with_context(|| format!("estimating the deployment of {what}"))?;
    let payment = Payment {
        to: address,
        ..signer.payment(nonce, None, gas, code)
    };
    send_and_wait(client, me, nonce, std::slice::from_ref(&payment))
        .await
        .with_context(|| format!("deploying {what}"))?;
    let receipt = client
        .receipt(payment.hash)
        .await?
        .with_context(|| format!("no receipt for the deployment of {what}"))?;
    if receipt.status.map(|s| s.to::<u64>()) != Some(1) || receipt.contract_address != Some(address)
    {
        bail!("the deployment of {what} failed (receipt {receipt:?})");
    }
    Ok(address)
}

/// The node's estimate for `input` from `from` (to `to`, or a creation),
/// with a tenth more, and at least `least`.
pub async fn estimate(
    client: &EthClient,
    from: Address,
    to: Option<Address>,
    input: &Bytes,
    least: u64,
) -> Result<u64> {
    let call = match to {
        Some(to) => serde_json::json!([{ "from": from, "to": to, "input": input }]),
        None => serde_json::json!([{ "from": from, "input": input }]),
    };
    let gas: alloy_primitives::U64 = client.call("eth_estimateGas", call).await?;
    let gas = gas.to::<u64>();
    Ok(least.max(gas.saturating_add(gas / 10)))
}

/// Sends `payments` (the deployer's, consecutive nonces from `first`) and
/// waits until the last is committed.
pub async fn send_and_wait(
    client: &EthClient,
    me: Address,
    first: u64,
    payments: &[Payment],
) -> Result<()> {
    if payments.is_empty() {
        return Ok(());
    }
    let wait = Duration::from_secs(120);
    fund::send_in_order(client, payments, wait, false).await?;
    let count = payments.len() as u64;
    fund::wait_nonce(client, me, first + count - 1, wait, false, count, first).await
}

/// Signs the deployer's transactions.
pub struct Signer<'a> {
    /// The keys; the first signs.
    pub keys: &'a KeySet,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// The fee every transaction takes.
    pub fee: Fee,
}

impl Signer<'_> {
    /// A call of `to` (or a creation) with `input`, as a payment of nothing
    /// to `to` (the deployer for a creation: the caller names the contract).
    pub fn payment(
        &self,
        nonce: u64,
        to: Option<Address>,
        gas_limit: u64,
        input: Bytes,
    ) -> Payment {
        let request = TxRequest {
            chain_id: self.chain_id,
            nonce,
            to,
            value: U256::ZERO,
            gas_limit,
            fee: self.fee,
            input,
        };
        let tx = sign::sign(&self.keys.keys[0], &request);
        Payment {
            to: to.unwrap_or(self.keys.addresses[0]),
            value: U256::ZERO,
            nonce,
            raw: tx.raw,
            hash: tx.hash,
            pays: Vec::new(),
        }
    }
}

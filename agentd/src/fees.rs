//! Choosing legacy or EIP-1559 transactions by what the node supports, and
//! their prices.

use alloy_primitives::U256;

use crate::eth::{EthClient, RpcError};
use crate::sign::Fee;

/// Picks the fee model: EIP-1559 when the latest block has a base fee
/// (`max_fee = 2 × base_fee + tip`, as wallets do), legacy otherwise
/// (`eth_gasPrice`).
pub async fn detect(client: &EthClient) -> Result<Fee, RpcError> {
    let block = client.latest_block().await?;
    match block.base_fee_per_gas {
        Some(base) => {
            let base: u128 = base.saturating_to();
            let tip = client
                .call::<U256>("eth_maxPriorityFeePerGas", serde_json::json!([]))
                .await
                .map(|t| t.saturating_to::<u128>())
                .unwrap_or(1_000_000_000)
                .max(1);
            Ok(Fee::Eip1559 {
                max_fee: base * 2 + tip,
                tip,
            })
        }
        None => Ok(Fee::Legacy {
            gas_price: client.gas_price().await?,
        }),
    }
}

/// The most a transaction with `gas_limit` can cost at `fee`.
pub fn max_cost(fee: Fee, gas_limit: u64) -> U256 {
    let per_gas = match fee {
        Fee::Legacy { gas_price } => gas_price,
        Fee::Eip1559 { max_fee, .. } => max_fee,
    };
    U256::from(per_gas) * U256::from(gas_limit)
}

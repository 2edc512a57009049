//! What the engine needs of a node: its pending nonces and the submission of
//! signed transactions. [`EthClient`] is the real one; the engine's tests
//! run against a scripted one (the `fake` module).

use std::future::Future;

use alloy_primitives::{Address, B256};

use feth_chain::eth::{EthClient, RpcError};

/// A node the engine submits transactions to.
pub trait Node: Send + Sync + 'static {
    /// The account's next nonce (`pending`: counting the mempool's).
    fn nonce(
        &self,
        address: Address,
        pending: bool,
    ) -> impl Future<Output = Result<u64, RpcError>> + Send;

    /// Submits one signed transaction (`eth_sendRawTransaction`).
    fn send_raw(&self, raw: &[u8]) -> impl Future<Output = Result<B256, RpcError>> + Send;

    /// Submits signed transactions in one request, answered in their order.
    fn send_raw_batch(
        &self,
        raws: &[&[u8]],
    ) -> impl Future<Output = Vec<Result<B256, RpcError>>> + Send;

    /// Requests sent again after a transient transport error so far.
    fn retries(&self) -> u64;
}

impl Node for EthClient {
    async fn nonce(&self, address: Address, pending: bool) -> Result<u64, RpcError> {
        EthClient::nonce(self, address, pending).await
    }

    async fn send_raw(&self, raw: &[u8]) -> Result<B256, RpcError> {
        EthClient::send_raw(self, raw).await
    }

    async fn send_raw_batch(&self, raws: &[&[u8]]) -> Vec<Result<B256, RpcError>> {
        EthClient::send_raw_batch(self, raws).await
    }

    fn retries(&self) -> u64 {
        EthClient::retries(self)
    }
}

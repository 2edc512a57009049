//! The JSON-RPC errors abcid answers, with geth's codes: `-32000` for what
//! geth reports as a plain error, `-32602` for arguments it cannot take,
//! and EIP-1474's `-32002` when its CometBFT cannot be reached.

use jsonrpsee::types::ErrorObjectOwned;

use crate::node::NodeError;

/// The result of a web3 handler.
pub type RpcResult<T> = Result<T, ErrorObjectOwned>;

/// geth's code for transaction, execution and query errors.
pub const SERVER_ERROR: i32 = -32000;
/// geth's code for a reverted call.
pub const REVERT_ERROR: i32 = 3;
/// Invalid method parameters.
pub const INVALID_PARAMS: i32 = -32602;
/// The method exists in the standard but abcid cannot serve it honestly.
pub const UNSUPPORTED: i32 = -32601;
const INTERNAL_ERROR: i32 = -32603;
/// EIP-1474's "resource unavailable": CometBFT did not answer, nothing was
/// taken, the same transaction may go again.
pub const RESOURCE_UNAVAILABLE: i32 = -32002;

/// geth's "limit exceeded": a request refused for a bound of its client.
pub const LIMIT_EXCEEDED: i32 = -32005;

/// The body of a JSON-RPC error answered outside any request (`id` null):
/// a refused connection or an oversized body, before jsonrpsee reads it.
pub fn error_body(code: i32, message: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    })
    .to_string()
}

/// A `-32000` error with `message`.
pub fn server_error(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(SERVER_ERROR, message.into(), None::<()>)
}

/// A `-32002` error with `message`: what takes transactions is unreachable.
pub fn unavailable(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(RESOURCE_UNAVAILABLE, message.into(), None::<()>)
}

/// A `-32602` error with `message`.
pub fn invalid_params(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(INVALID_PARAMS, message.into(), None::<()>)
}

/// A `-32603` error for a failure of the node itself (its store or locks).
pub fn internal(e: NodeError) -> ErrorObjectOwned {
    internal_failure(e.to_string())
}

/// A `-32603` error with `message`: the node failed, not the request (a
/// query that panicked, for one).
pub fn internal_failure(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(INTERNAL_ERROR, message.into(), None::<()>)
}

//! The body of the web3 parameter fuzz target (`abci-patches/fuzz`), shared
//! with the seeded test that runs it under `cargo test`: any bytes, as the
//! parameters of any method, get a well-formed JSON-RPC answer — a result or
//! an error naming the problem, never a panic, never an internal error.

use jsonrpsee::RpcModule;
use serde_json::Value;

use super::Web3;

/// The methods whose parameters are fuzzed: every one that reads them.
pub const METHODS: &[&str] = &[
    "eth_getBalance",
    "eth_getTransactionCount",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_call",
    "eth_estimateGas",
    "eth_createAccessList",
    "eth_feeHistory",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getBlockReceipts",
    "eth_getBlockTransactionCountByNumber",
    "eth_getTransactionByHash",
    "eth_getTransactionByBlockNumberAndIndex",
    "eth_getTransactionReceipt",
    "eth_getLogs",
    "eth_newFilter",
    "eth_getFilterChanges",
    "eth_getFilterLogs",
    "eth_uninstallFilter",
    "eth_sendRawTransaction",
];

/// Sends `data` to `module`: its first byte picks the method, the rest is
/// the `params` member (as JSON when it parses, else as a string). `Err`
/// says what was wrong with the answer.
pub async fn one_request(module: &RpcModule<Web3>, data: &[u8]) -> Result<(), String> {
    let Some((pick, rest)) = data.split_first() else {
        return Ok(());
    };
    let method = METHODS[usize::from(*pick) % METHODS.len()];
    let text = String::from_utf8_lossy(rest);
    let params = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text.into()));
    let request =
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (answer, _) = module
        .raw_json_request(&request.to_string(), 1)
        .await
        .map_err(|e| format!("{method}: the request was not handled: {e}"))?;
    let answer: Value = serde_json::from_str(answer.get())
        .map_err(|e| format!("{method}: the answer is not JSON: {e}"))?;
    match (answer.get("result"), answer.get("error")) {
        (Some(_), None) => Ok(()),
        (None, Some(error)) => check_error(method, error),
        _ => Err(format!("{method}: neither a result nor an error: {answer}")),
    }
}

/// An error must have a code and a message, and must not be the node's own
/// failure (`-32603`, which a panicked query also answers). The message is
/// not searched for words like "panicked": an error may quote the request.
fn check_error(method: &str, error: &Value) -> Result<(), String> {
    let code = error["code"].as_i64();
    let message = error["message"].as_str().unwrap_or_default();
    if code.is_none() || message.is_empty() {
        return Err(format!("{method}: a malformed error: {error}"));
    }
    if code == Some(-32603) {
        return Err(format!("{method}: internal error: {error}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check_error;

    #[test]
    fn an_error_quoting_the_request_passes_and_the_nodes_own_failure_does_not() {
        // libFuzzer put "panicked" (a word from the binary) in a filter
        // parameter; geth's answer quotes it back, and that is no failure.
        let quoted = json!({"code": -32602, "message": "invalid type: string \"panicked\""});
        assert_eq!(check_error("eth_newFilter", &quoted), Ok(()));
        let failed = json!({"code": -32603, "message": "the query failed inside the node"});
        assert!(check_error("eth_call", &failed).is_err());
        assert!(check_error("eth_call", &json!({"code": -32000, "message": ""})).is_err());
    }
}

//! The bounds of the methods that run the EVM (`eth_call`,
//! `eth_estimateGas`, `eth_createAccessList`): each execution is capped in
//! gas ([`RpcConfig::gas_cap`](super::RpcConfig)), each request in time
//! ([`RpcConfig::evm_timeout`](super::RpcConfig)), they run a few at a time
//! off the server's threads ([`RpcConfig::evm_calls`](super::RpcConfig)), and
//! one JSON-RPC batch may run at most
//! [`RpcConfig::batch_executions`](super::RpcConfig) executions in all.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::TxKind;
use alloy_rpc_types_eth::TransactionRequest;
use jsonrpsee::core::middleware::{Batch, BatchEntry, Notification, Request, RpcServiceT};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::Extensions;

use super::error::{internal, invalid_params, server_error, RpcResult, REVERT_ERROR};
use super::Web3;
use crate::node::{CallFailure, CallLimits, CallOutcome, CallRequest};

/// What is left of one batch's executions, shared by its requests.
#[derive(Debug, Clone)]
pub struct BatchBudget {
    left: Arc<AtomicU32>,
    total: u32,
}

impl BatchBudget {
    /// A budget of `total` executions.
    pub fn new(total: u32) -> Self {
        Self {
            left: Arc::new(AtomicU32::new(total)),
            total,
        }
    }

    /// Takes one execution; an error once none is left.
    fn take(&self) -> RpcResult<()> {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| {
                server_error(format!(
                    "batch exceeds its budget of {} EVM executions: send the remaining calls in another batch",
                    self.total
                ))
            })
    }
}

/// The RPC middleware that gives every request of a batch one shared
/// [`BatchBudget`]; a request outside a batch has none (it has its own
/// deadline and concurrency bound).
#[derive(Debug, Clone)]
pub struct BudgetService<S> {
    inner: S,
    total: u32,
}

impl<S> BudgetService<S> {
    /// `inner`, with batches of `total` executions.
    pub fn new(inner: S, total: u32) -> Self {
        Self { inner, total }
    }
}

impl<S: RpcServiceT + Send + Sync> RpcServiceT for BudgetService<S> {
    type MethodResponse = S::MethodResponse;
    type NotificationResponse = S::NotificationResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(
        &self,
        request: Request<'a>,
    ) -> impl std::future::Future<Output = Self::MethodResponse> + Send + 'a {
        self.inner.call(request)
    }

    fn batch<'a>(
        &self,
        mut requests: Batch<'a>,
    ) -> impl std::future::Future<Output = Self::BatchResponse> + Send + 'a {
        let budget = BatchBudget::new(self.total);
        for entry in requests.iter_mut().flatten() {
            if let BatchEntry::Call(request) = entry {
                request.extensions_mut().insert(budget.clone());
            }
        }
        self.inner.batch(requests)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl std::future::Future<Output = Self::NotificationResponse> + Send + 'a {
        self.inner.notification(n)
    }
}

/// The bounds one request's executions run within.
pub struct CallScope {
    limits: CallLimits,
    timeout: Duration,
    budget: Option<BatchBudget>,
}

impl CallScope {
    /// A request's scope, starting now: its deadline is the configured
    /// timeout from now, its budget its batch's (if any).
    pub fn start(w: &Web3, extensions: &Extensions) -> Self {
        let timeout = w.config.evm_timeout;
        Self {
            limits: CallLimits {
                gas_cap: w.config.gas_cap,
                deadline: (!timeout.is_zero()).then(|| Instant::now() + timeout),
            },
            timeout,
            budget: extensions.get::<BatchBudget>().cloned(),
        }
    }

    /// The most gas one execution may use on this node.
    pub fn gas_cap(&self, w: &Web3) -> RpcResult<u64> {
        let chain_cap = w.node.genesis().map_err(internal)?.max_tx_gas;
        Ok(chain_cap.min(self.limits.gas_cap))
    }

    /// Runs `request` on the committed state (`eth_call`'s semantics); a
    /// call cut short by the deadline is an error, as in geth.
    pub fn run(&self, w: &Web3, request: &TransactionRequest) -> RpcResult<CallOutcome> {
        let call = to_call(request)?;
        if let Some(budget) = &self.budget {
            budget.take()?;
        }
        let outcome = w
            .node
            .call(&call, self.limits)
            .map_err(internal)?
            .map_err(server_error)?;
        if matches!(outcome.output, Err(CallFailure::TimedOut)) {
            return Err(self.timed_out());
        }
        Ok(outcome)
    }

    /// geth's error for a call past its deadline.
    fn timed_out(&self) -> ErrorObjectOwned {
        server_error(format!(
            "execution aborted (timeout = {})",
            go_duration(self.timeout)
        ))
    }
}

/// A duration as Go prints one (`5s`, `1.5s`, `250ms`).
fn go_duration(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        let secs = format!("{:.3}", d.as_secs_f64());
        format!("{}s", secs.trim_end_matches('0').trim_end_matches('.'))
    } else {
        format!("{}ms", d.as_millis())
    }
}

fn to_call(request: &TransactionRequest) -> RpcResult<CallRequest> {
    let to = match request.to {
        Some(TxKind::Call(a)) => Some(a),
        _ => None,
    };
    if request.input.input.is_some()
        && request.input.data.is_some()
        && request.input.input != request.input.data
    {
        return Err(invalid_params(
            "both \"data\" and \"input\" are set and not equal",
        ));
    }
    Ok(CallRequest {
        from: request.from,
        to,
        gas: request.gas,
        gas_price: request.gas_price.or(request.max_fee_per_gas),
        value: request.value,
        input: request.input.input().cloned().unwrap_or_default(),
        access_list: request.access_list.clone().unwrap_or_default(),
    })
}

/// The error of a call that did not succeed.
pub fn call_error(failure: CallFailure) -> ErrorObjectOwned {
    match failure {
        CallFailure::Revert(data) => {
            ErrorObjectOwned::owned(REVERT_ERROR, "execution reverted", Some(data))
        }
        CallFailure::Halt(reason) => server_error(format!("execution halted: {reason}")),
        CallFailure::TimedOut => server_error("execution aborted (timeout)"),
    }
}

/// Binary search of the smallest gas limit at which the call succeeds, all
/// of it within one scope (one deadline, one batch budget).
pub fn estimate_gas(w: &Web3, scope: &CallScope, request: TransactionRequest) -> RpcResult<u64> {
    let cap = scope.gas_cap(w)?;
    let mut hi = request.gas.unwrap_or(cap).min(cap);
    let mut probe = request;
    probe.gas = Some(hi);
    let first = scope.run(w, &probe)?;
    match first.output {
        Ok(_) => {}
        Err(CallFailure::Halt(reason)) if reason.contains("OutOfGas") => {
            return Err(server_error(format!(
                "gas required exceeds allowance ({hi})"
            )))
        }
        Err(failure) => return Err(call_error(failure)),
    }
    // Plain transfers and most calls succeed at exactly the gas they used.
    probe.gas = Some(first.gas_used);
    if scope.run(w, &probe)?.output.is_ok() {
        return Ok(first.gas_used);
    }
    let mut lo = first.gas_used;
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        probe.gas = Some(mid);
        if scope.run(w, &probe)?.output.is_ok() {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(Duration::from_secs(5)), "5s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_millis(250)), "250ms");
    }

    /// `eth_call`s on a module with `slots` EVM slots, the first parked
    /// mid-execution: whether a second one finished within `wait` while the
    /// first held its slot (both must finish once the first is released).
    async fn a_second_call_runs_beside_a_parked_one(slots: usize, wait: Duration) -> bool {
        use std::sync::Arc;

        use serde_json::{json, Value};

        let dir = tempfile::tempdir().unwrap();
        let node =
            Arc::new(crate::node::Node::open(dir.path(), crate::patches::Patches::ALL).unwrap());
        node.enter()
            .unwrap()
            .init_chain(br#"{"chain_id":9000,"alloc":{}}"#, 1, 0)
            .unwrap();
        let config = super::super::RpcConfig {
            evm_calls: slots,
            ..Default::default()
        };
        let rpc =
            Arc::new(super::super::module(node.clone(), "http://127.0.0.1:9", config).unwrap());
        let call = || {
            let rpc = rpc.clone();
            tokio::spawn(async move {
                let request = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call",
                    "params": [{"to": format!("{:#x}", alloy_primitives::Address::repeat_byte(7))}, "latest"]});
                let (response, _) = rpc.raw_json_request(&request.to_string(), 1).await.unwrap();
                let response: Value = serde_json::from_str(response.get()).unwrap();
                assert!(response.get("result").is_some(), "{response}");
            })
        };
        let (parked, release) = node.park.arm();
        let first = call();
        tokio::task::spawn_blocking(move || parked.recv_timeout(Duration::from_secs(60)))
            .await
            .unwrap()
            .expect("the first call parks");
        let mut second = call();
        let beside = tokio::time::timeout(wait, &mut second).await.is_ok();
        release.send(()).unwrap();
        let within = Duration::from_secs(60);
        tokio::time::timeout(within, first).await.unwrap().unwrap();
        if !beside {
            tokio::time::timeout(within, second).await.unwrap().unwrap();
        }
        beside
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn evm_requests_beyond_the_slots_wait_for_one() {
        // One slot: the second call waits for the parked one (watched for
        // half a second: unlimited, it takes milliseconds); two: it runs
        // (waited for as long as it takes, the first still parked).
        let (watch, long) = (Duration::from_millis(500), Duration::from_secs(60));
        assert!(!a_second_call_runs_beside_a_parked_one(1, watch).await);
        assert!(a_second_call_runs_beside_a_parked_one(2, long).await);
    }

    #[test]
    fn a_budget_runs_out_after_its_total() {
        let budget = BatchBudget::new(2);
        let shared = budget.clone();
        assert!(budget.take().is_ok());
        assert!(shared.take().is_ok());
        let err = budget.take().unwrap_err();
        assert!(
            err.message().contains("budget of 2 EVM executions"),
            "{err:?}"
        );
    }
}

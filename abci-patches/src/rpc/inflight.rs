//! Requests in flight counted per client ([`super::peer::Client`]: its
//! address, over all its connections): at most
//! [`RpcConfig::max_inflight_per_client`](super::RpcConfig) at once; one
//! more is answered at once with a `-32005` error naming the bound and its
//! flag. A batch counts as one request (its size and its EVM executions
//! have bounds of their own); a subscription counts only while it is being
//! opened. Over HTTP/1.1 a connection carries one request at a time, so the
//! bound matters for WebSocket clients, which may send many at once. The
//! same layer refuses a batch of more than
//! [`RpcConfig::max_batch`](super::RpcConfig) calls, and gives jsonrpsee's
//! refusal of an oversized answer (a call's or a whole batch's), each naming
//! the limit and the flag that raises it (jsonrpsee's own name neither).

use jsonrpsee::core::middleware::{Batch, Notification, Request, RpcServiceT};
use jsonrpsee::types::error::{
    OVERSIZED_RESPONSE_CODE, TOO_BIG_BATCH_REQUEST_CODE, TOO_BIG_BATCH_RESPONSE_CODE,
};
use jsonrpsee::types::{ErrorObjectOwned, Id};
use jsonrpsee::MethodResponse;

use super::error::LIMIT_EXCEEDED;
use super::peer::Client;
use crate::client_caps::PerClient;

/// An RPC middleware bounding each client's requests in flight.
#[derive(Clone)]
pub struct InFlightService<S> {
    inner: S,
    table: PerClient<Client>,
    max_response: u32,
    max_batch: u32,
}

impl<S> InFlightService<S> {
    /// `inner`, each client's requests in flight counted in `table`; an
    /// answer over `max_response` bytes (jsonrpsee's `-32008`) is given
    /// the flag that raises the limit; a batch of more than `max_batch`
    /// calls is refused.
    pub fn new(inner: S, table: PerClient<Client>, max_response: u32, max_batch: u32) -> Self {
        Self {
            inner,
            table,
            max_response,
            max_batch,
        }
    }
}

/// `answer`, or, when jsonrpsee refused it as over `max` bytes, that
/// refusal naming the limit and its flag.
fn named_if_oversized(answer: MethodResponse, id: Id<'static>, max: u32) -> MethodResponse {
    let (code, what) = match answer.as_error_code() {
        Some(OVERSIZED_RESPONSE_CODE) => (OVERSIZED_RESPONSE_CODE, "response"),
        Some(TOO_BIG_BATCH_RESPONSE_CODE) => (TOO_BIG_BATCH_RESPONSE_CODE, "batch's response"),
        _ => return answer,
    };
    let message = format!(
        "{what} is over the limit of {max} bytes: ask for less (a shorter range, fewer items or calls), or raise --rpc-max-response-bytes"
    );
    MethodResponse::error(id, ErrorObjectOwned::owned(code, message, None::<()>))
}

/// The refusal of a batch of `calls` over the limit `max` (jsonrpsee's code).
fn too_big_batch(calls: usize, max: u32) -> MethodResponse {
    let message = format!(
        "batch of {calls} calls is over the limit of {max}: send fewer, or raise --rpc-max-batch"
    );
    MethodResponse::error(
        Id::Null,
        ErrorObjectOwned::owned(TOO_BIG_BATCH_REQUEST_CODE, message, None::<()>),
    )
}

/// The refusal of a request of a client already at its bound of `cap`.
fn refusal(id: Id<'static>, cap: usize) -> MethodResponse {
    let message = format!(
        "too many requests in flight from this client address ({cap}): wait for answers, or raise --rpc-max-inflight-per-client"
    );
    MethodResponse::error(
        id,
        ErrorObjectOwned::owned(LIMIT_EXCEEDED, message, None::<()>),
    )
}

impl<S> RpcServiceT for InFlightService<S>
where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Send
        + Sync,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(
        &self,
        request: Request<'a>,
    ) -> impl std::future::Future<Output = Self::MethodResponse> + Send + 'a {
        let id = request.id().into_owned();
        let admitted = match self.table.take(Client::of(request.extensions())) {
            Some(place) => Ok((place, self.inner.call(request))),
            None => Err(refusal(id.clone(), self.table.cap())),
        };
        let max_response = self.max_response;
        async move {
            match admitted {
                Ok((_place, answer)) => named_if_oversized(answer.await, id, max_response),
                Err(refused) => refused,
            }
        }
    }

    fn batch<'a>(
        &self,
        requests: Batch<'a>,
    ) -> impl std::future::Future<Output = Self::BatchResponse> + Send + 'a {
        let client = requests
            .iter()
            .flatten()
            .next()
            .map(|entry| Client::of(entry.extensions()));
        let calls = requests.len();
        let admitted = if calls > usize::try_from(self.max_batch).unwrap_or(usize::MAX) {
            Err(too_big_batch(calls, self.max_batch))
        } else {
            match client.map(|client| self.table.take(client)) {
                Some(None) => Err(refusal(Id::Null, self.table.cap())),
                place => Ok((place.flatten(), self.inner.batch(requests))),
            }
        };
        let max_response = self.max_response;
        async move {
            match admitted {
                Ok((_place, answer)) => named_if_oversized(answer.await, Id::Null, max_response),
                Err(refused) => refused,
            }
        }
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl std::future::Future<Output = Self::NotificationResponse> + Send + 'a {
        self.inner.notification(n)
    }
}

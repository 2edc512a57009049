//! The client a request comes from: its peer address, which jsonrpsee's own
//! server does not hand to methods. [`accept`] hands each TCP connection to
//! jsonrpsee's service, and [`WithPeer`] puts the connection's [`Peer`] in every
//! request's extensions (HTTP and WebSocket alike), so caps can be kept per
//! client rather than per connection: a client that opens a new HTTP
//! connection for each request is still one client.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse, StopHandle};
use jsonrpsee::{ConnectionId, Extensions};
use tokio::net::{TcpListener, TcpStream};

use super::conn_cap::ConnectionTable;
use super::error::error_body;
use crate::client_caps::ConnectionSlot;
use jsonrpsee::types::error::{INVALID_REQUEST_CODE, OVERSIZED_REQUEST_CODE};

/// The address of the client a request came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Peer(pub IpAddr);

/// Whom a per-client cap counts: the peer address when the request came
/// over the network, else (a request made in-process) its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    /// A network client, by address.
    Peer(IpAddr),
    /// An in-process caller, by connection.
    Connection(ConnectionId),
}

impl Client {
    /// The client of the request with `extensions`.
    pub fn of(extensions: &Extensions) -> Self {
        match extensions.get::<Peer>() {
            Some(Peer(ip)) => Self::Peer(*ip),
            None => Self::Connection(connection(extensions)),
        }
    }
}

/// The connection a request came on (jsonrpsee sets it on every request).
pub fn connection(extensions: &Extensions) -> ConnectionId {
    extensions
        .get::<ConnectionId>()
        .copied()
        .unwrap_or_default()
}

/// Accepts connections on `listener` until `stop` says the server stops,
/// handing each, with its peer and its place in `table`, to `serve`; a
/// connection over its client's cap is refused ([`ConnectionTable::refuse`]).
pub async fn accept(
    listener: TcpListener,
    stop: StopHandle,
    table: ConnectionTable,
    mut serve: impl FnMut(TcpStream, Peer, ConnectionSlot) + Send,
) {
    loop {
        let (socket, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, for one: wait before the next try.
                    tracing::debug!("web3: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.clone().shutdown() => return,
        };
        if let Err(e) = socket.set_nodelay(true) {
            tracing::debug!("web3: TCP_NODELAY on a connection from {remote}: {e}");
        }
        match table.admit(remote.ip()) {
            Ok(slot) => serve(socket, Peer(remote.ip()), slot),
            Err(why) => {
                tracing::debug!("web3: a connection from {remote} is over {why:?}; refused");
                table.refuse(socket, why);
            }
        }
    }
}

/// A service that marks each request with its connection's peer, and
/// refuses a body over the server's limit with a JSON-RPC error naming the
/// limit and its flag: one that announces its length before it is read, a
/// chunked one as soon as it is read past the limit.
#[derive(Clone)]
pub struct WithPeer<S> {
    inner: S,
    peer: Peer,
    max_body: u64,
}

impl<S> WithPeer<S> {
    /// `inner`, its requests marked as coming from `peer`, bodies over
    /// `max_body` bytes refused.
    pub fn new(inner: S, peer: Peer, max_body: u64) -> Self {
        Self {
            inner,
            peer,
            max_body,
        }
    }
}

/// An HTTP answer `status` carrying a JSON-RPC error `code`, `message`.
fn json_error(status: u16, code: i32, message: &str) -> HttpResponse {
    let body = error_body(code, message);
    HttpResponse::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(HttpBody::from(body.clone()))
        .unwrap_or_else(|_| HttpResponse::new(HttpBody::from(body)))
}

/// The answer to a body of `announced` bytes over the limit `max`.
fn too_big(announced: u64, max: u64) -> HttpResponse {
    let message = format!(
        "request body of {announced} bytes is over the limit of {max}: send less, or raise --rpc-max-request-bytes"
    );
    json_error(413, OVERSIZED_REQUEST_CODE, &message)
}

/// The answer to a chunked body (its length unannounced) found over the
/// limit `max` while read.
fn too_big_chunked(max: u64) -> HttpResponse {
    let message = format!(
        "request body (chunked) is over the limit of {max} bytes: send less, or raise --rpc-max-request-bytes"
    );
    json_error(413, OVERSIZED_REQUEST_CODE, &message)
}

/// The body length `request` announces, if it does.
fn announced<B>(request: &HttpRequest<B>) -> Option<u64> {
    request
        .headers()
        .get("content-length")?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Reads a body that does not announce its length, at most `max` bytes:
/// `Ok` with the request made whole again, `Err` with the refusal of a
/// body over the limit (jsonrpsee's own read would answer it `500`,
/// naming nothing) or one that could not be read.
async fn read_chunked<B>(
    request: HttpRequest<B>,
    max: u64,
) -> Result<HttpRequest<HttpBody>, HttpResponse>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = request.into_parts();
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    match Limited::new(body, limit).collect().await {
        Ok(whole) => Ok(HttpRequest::from_parts(
            parts,
            HttpBody::from(Vec::from(whole.to_bytes())),
        )),
        Err(e) if e.is::<LengthLimitError>() => Err(too_big_chunked(max)),
        Err(e) => {
            tracing::debug!("web3: a chunked request body could not be read: {e}");
            Err(json_error(
                400,
                INVALID_REQUEST_CODE,
                "the request body could not be read",
            ))
        }
    }
}

/// jsonrpsee's service errors.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What jsonrpsee's per-connection service answers.
type Answer = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

impl<S, B> tower::Service<HttpRequest<B>> for WithPeer<S>
where
    S: tower::Service<
            HttpRequest<HttpBody>,
            Response = HttpResponse,
            Error = BoxError,
            Future = Answer,
        > + Clone
        + Send
        + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: HttpRequest<B>) -> Self::Future {
        request.extensions_mut().insert(self.peer);
        match announced(&request) {
            Some(length) if length > self.max_body => {
                let answer = too_big(length, self.max_body);
                Box::pin(async move { Ok(answer) })
            }
            None if request.method() == "POST" => {
                // The service made ready is the one called (tower's rule).
                let ready = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, ready);
                let max = self.max_body;
                Box::pin(async move {
                    match read_chunked(request, max).await {
                        Ok(whole) => inner.call(whole).await,
                        Err(refused) => Ok(refused),
                    }
                })
            }
            _ => self.inner.call(request.map(HttpBody::new)),
        }
    }
}

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

use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse, StopHandle};
use jsonrpsee::{ConnectionId, Extensions};
use tokio::net::{TcpListener, TcpStream};

use super::conn_cap::{ConnectionSlot, ConnectionTable};
use super::error::error_body;
use jsonrpsee::types::error::OVERSIZED_REQUEST_CODE;

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
/// connection over its client's cap is refused ([`conn_cap::refuse`]).
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
/// refuses a body announced over the server's limit with a JSON-RPC error
/// naming the limit and its flag.
#[derive(Clone)]
pub struct WithPeer<S> {
    inner: S,
    peer: Peer,
    max_body: u64,
}

impl<S> WithPeer<S> {
    /// `inner`, its requests marked as coming from `peer`, bodies announced
    /// over `max_body` bytes refused.
    pub fn new(inner: S, peer: Peer, max_body: u64) -> Self {
        Self {
            inner,
            peer,
            max_body,
        }
    }
}

/// The answer to a body of `announced` bytes over the limit `max`.
fn too_big(announced: u64, max: u64) -> HttpResponse {
    let body = error_body(
        OVERSIZED_REQUEST_CODE,
        &format!(
            "request body of {announced} bytes is over the limit of {max}: send less, or raise --rpc-max-request-bytes"
        ),
    );
    HttpResponse::builder()
        .status(413)
        .header("content-type", "application/json")
        .body(HttpBody::from(body.clone()))
        .unwrap_or_else(|_| HttpResponse::new(HttpBody::from(body)))
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

/// jsonrpsee's service errors.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What jsonrpsee's per-connection service answers.
type Answer = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

impl<S, B> tower::Service<HttpRequest<B>> for WithPeer<S>
where
    S: tower::Service<HttpRequest<B>, Response = HttpResponse, Error = BoxError, Future = Answer>,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: HttpRequest<B>) -> Self::Future {
        if let Some(length) = announced(&request).filter(|n| *n > self.max_body) {
            let answer = too_big(length, self.max_body);
            return Box::pin(async move { Ok(answer) });
        }
        request.extensions_mut().insert(self.peer);
        self.inner.call(request)
    }
}

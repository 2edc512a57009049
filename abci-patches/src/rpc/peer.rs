//! The client a request comes from: its peer address, which jsonrpsee's own
//! server does not hand to methods. [`accept`] hands each TCP connection to
//! jsonrpsee's service, and [`WithPeer`] puts the connection's [`Peer`] in every
//! request's extensions (HTTP and WebSocket alike), so caps can be kept per
//! client rather than per connection: a client that opens a new HTTP
//! connection for each request is still one client.

use std::net::IpAddr;
use std::task::{Context, Poll};
use std::time::Duration;

use jsonrpsee::server::{HttpRequest, StopHandle};
use jsonrpsee::{ConnectionId, Extensions};
use tokio::net::{TcpListener, TcpStream};

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
/// handing each, with its peer, to `serve`.
pub async fn accept(
    listener: TcpListener,
    stop: StopHandle,
    mut serve: impl FnMut(TcpStream, Peer) + Send,
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
        serve(socket, Peer(remote.ip()));
    }
}

/// A service that marks each request with its connection's peer.
#[derive(Clone)]
pub struct WithPeer<S> {
    inner: S,
    peer: Peer,
}

impl<S> WithPeer<S> {
    /// `inner`, its requests marked as coming from `peer`.
    pub fn new(inner: S, peer: Peer) -> Self {
        Self { inner, peer }
    }
}

impl<S, B> tower::Service<HttpRequest<B>> for WithPeer<S>
where
    S: tower::Service<HttpRequest<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: HttpRequest<B>) -> Self::Future {
        request.extensions_mut().insert(self.peer);
        self.inner.call(request)
    }
}

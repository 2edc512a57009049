//! The gRPC listener's connections, counted: at most a server-wide number
//! open at once (CometBFT opens four: consensus, mempool, query, snapshot),
//! and at most a per-address number from one client address, so a client
//! other than CometBFT cannot take the places CometBFT needs. A connection
//! over either is closed as soon as it is accepted, its refusal logged
//! naming the cap and its flag.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::client_caps::{ConnectionCaps, ConnectionSlot, OverCap};

/// An accepted connection holding its places; dropping it frees them.
pub struct Counted {
    stream: TcpStream,
    _slot: ConnectionSlot,
}

/// The refusal of a connection over `cap`, naming the flag that raises it.
fn refusal(cap: OverCap) -> String {
    match cap {
        OverCap::Server(max) => {
            format!("{max} connections open on the server: raise --grpc-max-connections")
        }
        OverCap::Client(max) => format!(
            "{max} connections open from this address: raise --grpc-max-connections-per-client"
        ),
    }
}

/// The connections of `listener`, each admitted by `caps`.
pub fn incoming(
    listener: TcpListener,
    caps: ConnectionCaps,
) -> impl Stream<Item = io::Result<Counted>> + Send + 'static {
    futures::stream::unfold((listener, caps), move |(listener, caps)| async move {
        loop {
            let (stream, remote) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::debug!("gRPC ABCI: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let slot = match caps.admit(remote.ip()) {
                Ok(slot) => slot,
                Err(cap) => {
                    tracing::warn!("gRPC ABCI: {remote} refused: {}", refusal(cap));
                    continue;
                }
            };
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!("gRPC ABCI: TCP_NODELAY on {remote}: {e}");
            }
            let counted = Counted {
                stream,
                _slot: slot,
            };
            return Some((Ok(counted), (listener, caps)));
        }
    })
}

impl Connected for Counted {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::net::SocketAddr;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpSocket;

    /// A connection to `to` from 127.0.0.`n`.
    async fn connect_from(n: u8, to: SocketAddr) -> TcpStream {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(([127, 0, 0, n], 0).into()).unwrap();
        socket.connect(to).await.unwrap()
    }

    /// Whether the server closed `stream` (its client reads the end)
    /// within 10 s; a served connection, never written to, is not.
    async fn closed(stream: &mut TcpStream) -> bool {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await;
        matches!(read, Ok(Ok(0)) | Ok(Err(_)))
    }

    /// The next connection served, within 10 s.
    async fn next(taken: &mut tokio::sync::mpsc::UnboundedReceiver<Counted>) -> Counted {
        let next = tokio::time::timeout(Duration::from_secs(10), taken.recv());
        next.await.expect("accepted within 10 s").unwrap()
    }

    #[tokio::test]
    async fn connections_over_the_address_or_the_server_cap_are_closed_and_a_closed_one_frees_its_place(
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut accepted = Box::pin(incoming(listener, ConnectionCaps::new(3, 2)));
        let (served, mut taken) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(connection) = accepted.next().await {
                let _ = served.send(connection.unwrap());
            }
        });
        let _a = connect_from(1, addr).await;
        let first = next(&mut taken).await;
        let _b = connect_from(1, addr).await;
        let _second = next(&mut taken).await;
        // The address holds its two: a third from it is closed at accept.
        let mut over_address = connect_from(1, addr).await;
        assert!(closed(&mut over_address).await);
        // Another address has places of its own, up to the server's three.
        let _own = connect_from(2, addr).await;
        let _third = next(&mut taken).await;
        let mut over_server = connect_from(3, addr).await;
        assert!(closed(&mut over_server).await);
        // One served connection closes: its address's next is accepted.
        drop(first);
        let _d = connect_from(1, addr).await;
        let _fourth = next(&mut taken).await;
    }

    #[test]
    fn each_refusal_names_its_flag() {
        assert!(refusal(OverCap::Server(8)).ends_with("raise --grpc-max-connections"));
        assert!(refusal(OverCap::Client(4)).ends_with("raise --grpc-max-connections-per-client"));
    }
}

//! The gRPC listener's connections, counted: at most `max` open at once
//! (CometBFT opens four: consensus, mempool, query, snapshot); one more is
//! closed as soon as it is accepted, so a local client cannot open
//! connections without bound.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// An accepted connection holding its place; dropping it frees the place.
pub struct Counted {
    stream: TcpStream,
    open: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Takes a place among `max`, or says there is none.
fn take(open: &AtomicUsize, max: usize) -> bool {
    open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < max).then_some(n + 1)
    })
    .is_ok()
}

/// The connections of `listener`, at most `max` (at least one) open at once.
pub fn incoming(
    listener: TcpListener,
    max: usize,
) -> impl Stream<Item = io::Result<Counted>> + Send + 'static {
    let open = Arc::new(AtomicUsize::new(0));
    let max = max.max(1);
    futures::stream::unfold((listener, open), move |(listener, open)| async move {
        loop {
            let (stream, remote) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::debug!("gRPC ABCI: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if !take(&open, max) {
                tracing::warn!(
                    "gRPC ABCI: {remote} refused: {max} connections open (--grpc-max-connections)"
                );
                continue;
            }
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!("gRPC ABCI: TCP_NODELAY on {remote}: {e}");
            }
            let counted = Counted {
                stream,
                open: open.clone(),
            };
            return Some((Ok(counted), (listener, open)));
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
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_connection_over_the_cap_is_closed_and_a_closed_one_frees_its_place() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut accepted = Box::pin(incoming(listener, 2));
        let _a = TcpStream::connect(addr).await.unwrap();
        let first = accepted.next().await.unwrap().unwrap();
        let _b = TcpStream::connect(addr).await.unwrap();
        let _second = accepted.next().await.unwrap().unwrap();
        // The third is closed at accept: its client reads the end.
        let mut third = TcpStream::connect(addr).await.unwrap();
        let accepting = tokio::spawn(async move {
            let next = accepted.next().await.map(|c| c.is_ok());
            (next, accepted)
        });
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), third.read(&mut byte)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
        // One served connection closes: the next one is accepted.
        drop(first);
        let _d = TcpStream::connect(addr).await.unwrap();
        let (next, _accepted) = tokio::time::timeout(Duration::from_secs(10), accepting)
            .await
            .expect("accepted within 10 s")
            .unwrap();
        assert_eq!(next, Some(true));
    }
}

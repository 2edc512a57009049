//! A minimal HTTP listener for a Prometheus scrape: `GET /metrics` answers
//! with whatever text `render` returns (a metrics crate's encoding), any
//! other path with 404. One request per connection. `feth load --metrics`
//! and `abcid --metrics` both serve through it (one crate, so that neither
//! depends on the other).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The content type of prometheus-client's text encoding.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a scrape returns.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Binds `addr` and serves scrapes until the returned task is aborted;
/// returns the address bound (a port of 0 picks a free one).
pub async fn serve(addr: SocketAddr, render: Render) -> Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for metrics on {addr}"))?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let render = render.clone();
            tokio::spawn(async move {
                if let Err(e) = answer(stream, render).await {
                    tracing::debug!("metrics request: {e:#}");
                }
            });
        }
    });
    Ok((bound, task))
}

/// Reads one request head (at most 8 KiB, 5 s) and answers it.
async fn answer(mut stream: TcpStream, render: Render) -> Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .context("request head took over 5 s")??;
    let line = String::from_utf8_lossy(&head);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, content_type, body) =
        if method == "GET" && path.split('?').next() == Some("/metrics") {
            ("200 OK", CONTENT_TYPE, render())
        } else {
            (
                "404 Not Found",
                "text/plain",
                "metrics are at /metrics\n".to_string(),
            )
        };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn metrics_are_served_at_their_path_only() {
        let render: Render = Arc::new(|| "a_total 1\n# EOF\n".to_string());
        let (addr, task) = serve("127.0.0.1:0".parse().unwrap(), render).await.unwrap();
        let get = |path: &'static str| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        };
        let ok = get("/metrics").await;
        assert!(
            ok.starts_with("HTTP/1.1 200 OK") && ok.ends_with("a_total 1\n# EOF\n"),
            "{ok}"
        );
        assert!(get("/other").await.starts_with("HTTP/1.1 404"));
        task.abort();
    }
}

//! A JSON-RPC node for unit tests: HTTP/1.1 on a loopback port, each
//! request's JSON answered by the test's own function.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Serves `answer` (a request's JSON to the reply's body) on a loopback
/// port until the test ends; returns its URL.
pub async fn serve<F, Fut>(answer: F) -> String
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = String> + Send,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = BufReader::new(read);
                while let Some(request) = read_request(&mut reader).await {
                    let reply = answer(request).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        reply.len()
                    );
                    write.write_all(head.as_bytes()).await.unwrap();
                    write.write_all(reply.as_bytes()).await.unwrap();
                }
            });
        }
    });
    url
}

/// The next request's JSON body; `None` when the client is done.
async fn read_request(reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Option<Value> {
    let mut length = 0;
    let mut line = String::new();
    while reader.read_line(&mut line).await.unwrap_or(0) > 0 {
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        line.clear();
    }
    if length == 0 {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.unwrap();
    Some(serde_json::from_slice(&body).unwrap())
}

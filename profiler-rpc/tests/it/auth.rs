//! Off loopback the server needs a bearer token, and then every request must carry it;
//! on loopback it answers loopback Host names only.
//! The server binds 0.0.0.0 but the tests only ever send to 127.0.0.1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use feth_profiler_rpc::{
    serve, ClientError, EnableParams, ProfilerClient, ProfilerConfig, ServeError, ServerConfig,
};

use crate::common::{new_profiler, serial, TOKEN};

/// Sends a raw JSON-RPC POST to 127.0.0.1:`port`; returns the whole HTTP response.
fn raw_post(port: u16, authorization: Option<&str>) -> String {
    raw_post_as(port, &format!("127.0.0.1:{port}"), authorization)
}

/// Same, with a chosen `Host` header.
fn raw_post_as(port: u16, host: &str, authorization: Option<&str>) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"profiler_status"}"#;
    let mut request = format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(value) = authorization {
        request.push_str(&format!("Authorization: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_off_loopback_and_host_filter_on_loopback() {
    let _turn = serial().await;
    let out = tempfile::tempdir().expect("tempdir");
    let profiler = new_profiler(ProfilerConfig::new("auth-chain", out.path())).await;
    let any: SocketAddr = "0.0.0.0:0".parse().expect("addr");

    let refused = serve(
        profiler.clone(),
        ServerConfig {
            addr: any,
            token: None,
        },
    )
    .await;
    assert!(
        matches!(refused, Err(ServeError::TokenRequired { .. })),
        "{refused:?}"
    );

    let server = serve(
        profiler.clone(),
        ServerConfig {
            addr: any,
            token: Some(TOKEN.into()),
        },
    )
    .await
    .expect("serve with token");
    assert!(server.local_addr().ip().is_unspecified());
    let port = server.local_addr().port();
    let url = format!("http://127.0.0.1:{port}");

    let anonymous = ProfilerClient::new(&url, None).expect("client");
    for result in [
        anonymous.status().await.map(drop),
        anonymous.enable(EnableParams::default()).await.map(drop),
    ] {
        assert!(
            matches!(result, Err(ClientError::Unauthorized { status: 401, .. })),
            "{result:?}"
        );
    }
    let wrong = ProfilerClient::new(&url, Some("wrong-token-0123456789abcdef")).expect("client");
    assert!(matches!(
        wrong.list().await,
        Err(ClientError::Unauthorized { .. })
    ));

    let response = tokio::task::spawn_blocking(move || {
        (
            raw_post(port, None),
            raw_post(port, Some("Bearer not-the-token")),
            raw_post(port, Some(&format!("Bearer {TOKEN}"))),
        )
    })
    .await
    .expect("raw requests");
    assert!(response.0.starts_with("HTTP/1.1 401"), "{}", response.0);
    assert!(response
        .0
        .to_ascii_lowercase()
        .contains("www-authenticate: bearer"));
    assert!(response.1.starts_with("HTTP/1.1 401"), "{}", response.1);
    assert!(response.2.starts_with("HTTP/1.1 200"), "{}", response.2);
    assert!(
        response.2.contains("\"chain_id\":\"auth-chain\""),
        "{}",
        response.2
    );

    // The rejected enable armed nothing; with the token everything works.
    let authorized = ProfilerClient::new(&url, Some(TOKEN)).expect("client");
    let status = authorized.status().await.expect("status with token");
    assert!(!status.armed && status.session.is_none());
    authorized
        .enable(EnableParams::default())
        .await
        .expect("enable with token");
    assert!(authorized.disable().await.expect("disable").was_armed);

    server.stop().await;

    // On loopback without a token, only loopback Host names are answered (no DNS
    // rebinding from a browser).
    let loopback: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let server = serve(
        profiler.clone(),
        ServerConfig {
            addr: loopback,
            token: None,
        },
    )
    .await
    .expect("serve on loopback");
    let port = server.local_addr().port();
    let responses = tokio::task::spawn_blocking(move || {
        (
            raw_post_as(port, &format!("attacker.example:{port}"), None),
            raw_post_as(port, &format!("localhost:{port}"), None),
            raw_post(port, None),
        )
    })
    .await
    .expect("raw requests");
    assert!(responses.0.starts_with("HTTP/1.1 403"), "{}", responses.0);
    assert!(responses.1.starts_with("HTTP/1.1 200"), "{}", responses.1);
    assert!(responses.2.starts_with("HTTP/1.1 200"), "{}", responses.2);
    server.stop().await;
    drop(profiler);
}

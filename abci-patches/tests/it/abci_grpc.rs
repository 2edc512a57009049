//! abcid's gRPC ABCI service (`abcid --abci-protocol grpc`) as CometBFT's
//! gRPC client calls it: `tendermint.abci.ABCI` methods over HTTP/2, checks
//! arriving together, a block finalised and committed, and a stray Commit
//! refused with the node still serving.

use abcid::grpc_server::{GrpcAbci, GrpcBounds};
use alloy_primitives::Bytes;
use tendermint_proto::v0_38::abci::{
    RequestCheckTx, RequestCommit, RequestEcho, RequestFinalizeBlock, RequestInfo, ResponseCheckTx,
    ResponseCommit, ResponseEcho, ResponseFinalizeBlock, ResponseInfo,
};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::common::*;

/// A gRPC client of the service, as CometBFT's `grpcClient` is one.
#[derive(Clone)]
struct Client(tonic::client::Grpc<Channel>);

impl Client {
    async fn connect(port: u16) -> Self {
        let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect_timeout(std::time::Duration::from_secs(10))
            .connect()
            .await
            .expect("the gRPC server accepts");
        Self(tonic::client::Grpc::new(channel))
    }

    /// Calls `/tendermint.abci.ABCI/<method>`.
    async fn call<Q, R>(&mut self, method: &'static str, request: Q) -> Result<R, Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        R: prost::Message + Default + Send + Sync + 'static,
    {
        self.0.ready().await.expect("the channel is ready");
        let path = PathAndQuery::from_static(method);
        let codec = tonic_prost::ProstCodec::default();
        let response = self.0.unary(tonic::Request::new(request), path, codec);
        response.await.map(tonic::Response::into_inner)
    }

    async fn check(&mut self, raw: &Bytes) -> ResponseCheckTx {
        let request = RequestCheckTx {
            tx: raw.0.clone(),
            r#type: 0,
        };
        self.call("/tendermint.abci.ABCI/CheckTx", request)
            .await
            .expect("CheckTx answers")
    }

    async fn echo(&mut self) -> Result<ResponseEcho, Status> {
        let request = RequestEcho {
            message: "hello".into(),
        };
        self.call("/tendermint.abci.ABCI/Echo", request).await
    }

    async fn commit(&mut self) -> Result<ResponseCommit, Status> {
        self.call("/tendermint.abci.ABCI/Commit", RequestCommit {})
            .await
    }
}

/// Serves `node`'s application on a free loopback port.
async fn serve(node: &TestNode) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(GrpcAbci::new(node.app.clone()).serve(listener, GrpcBounds::default()));
    port
}

/// Each connection is told how many calls it may have in flight, HTTP/2's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` (tonic's default sets none): a client
/// past it waits, as grpc-go's (CometBFT's) does, or has its call refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connection_is_told_its_bound_on_calls_in_flight() {
    let node = TestNode::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let bounds = GrpcBounds {
        max_calls_per_connection: 3,
        ..GrpcBounds::default()
    };
    tokio::spawn(GrpcAbci::new(node.app.clone()).serve(listener, bounds));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut client, mut connection) = h2::client::handshake(tcp).await.unwrap();
    // One Echo, framed by hand (a flag byte, the length, the message).
    let message = prost::Message::encode_to_vec(&RequestEcho {
        message: "hello".into(),
    });
    let mut frame = vec![0u8];
    frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(&message);
    let request =
        tonic::codegen::http::Request::post(format!("http://{addr}/tendermint.abci.ABCI/Echo"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
    let (response, mut body) = client.send_request(request, false).unwrap();
    body.send_data(frame.into(), true).unwrap();
    // The server's SETTINGS come before its answer.
    let response = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        tokio::select! {
            response = response => response.expect("answered"),
            ended = &mut connection => panic!("the connection ended: {ended:?}"),
        }
    })
    .await
    .expect("an answer within 10 s");
    assert_eq!(response.status(), 200);
    assert_eq!(connection.max_concurrent_send_streams(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grpc_checks_finalizes_commits_and_refuses_a_stray_commit() {
    let node = TestNode::new();
    let mut client = Client::connect(serve(&node).await).await;
    assert_eq!(client.echo().await.unwrap().message, "hello");

    // One transfer from each funded key, checked at once.
    let txs: Vec<Bytes> = (1..=3)
        .map(|n| Tx::transfer(0, key(9).address, 1_000 + u128::from(n)).sign(&key(n)))
        .collect();
    let checks = txs.iter().map(|raw| {
        let mut client = client.clone();
        async move { client.check(raw).await }
    });
    for (raw, check) in txs.iter().zip(futures::future::join_all(checks).await) {
        assert_eq!(check.code, 0, "{raw}: {}", check.log);
    }
    let garbage = client.check(&Bytes::from_static(b"\x02not rlp")).await;
    assert_ne!(garbage.code, 0);
    assert!(!garbage.log.is_empty());

    let height = node.next_height();
    let request = RequestFinalizeBlock {
        txs: txs.iter().map(|t| t.0.clone()).collect(),
        hash: block_hash(height).to_vec().into(),
        height: height as i64,
        time: Some(tendermint_proto::google::protobuf::Timestamp {
            seconds: 1_800_000_000 + height as i64,
            nanos: 0,
        }),
        ..Default::default()
    };
    let block: ResponseFinalizeBlock = client
        .call("/tendermint.abci.ABCI/FinalizeBlock", request)
        .await
        .unwrap();
    assert_eq!(block.tx_results.len(), 3);
    assert!(block.tx_results.iter().all(|r| r.code == 0), "{block:?}");
    client.commit().await.expect("the finalised block commits");
    let info: ResponseInfo = client
        .call("/tendermint.abci.ABCI/Info", RequestInfo::default())
        .await
        .unwrap();
    assert_eq!(info.last_block_height, height as i64);
    assert_eq!(info.last_block_app_hash, block.app_hash);
    assert_eq!(
        node.balance(key(9).address),
        alloy_primitives::U256::from(3_006)
    );

    let stray = client.commit().await.expect_err("no block is finalised");
    assert_eq!(stray.code(), Code::FailedPrecondition);
    assert!(
        stray.message().contains("commit without a finalized block"),
        "{stray:?}"
    );
    assert_eq!(
        client.echo().await.unwrap().message,
        "hello",
        "still serving"
    );
}

#[test]
fn grpc_on_a_unix_socket_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_abcid"))
        .arg("--home")
        .arg(dir.path().join("home"))
        .arg("--abci")
        .arg(format!("unix://{}", dir.path().join("abci.sock").display()))
        .args([
            "--abci-protocol",
            "grpc",
            "--web3",
            "127.0.0.1:0",
            "--no-profiler",
        ])
        .output()
        .expect("abcid runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--abci-protocol grpc takes a TCP address"),
        "{stderr}"
    );
}

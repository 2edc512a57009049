//! abcid's ABCI over gRPC: the service CometBFT's `abci = "grpc"` client
//! calls (`tendermint.abci.ABCI`, CometBFT 0.38's protocol), beside the
//! socket server of [`crate::abci_server`].
//!
//! Why a second transport: CometBFT 0.38's socket client arms a flush timer
//! of 20 *nanoseconds* (`flushThrottleMS = 20` passed as a `time.Duration`)
//! on every request, and while its writer is busy the timer re-arms itself,
//! a new goroutine each time. Under load that timer churn is most of
//! CometBFT's CPU (docs/ARCHITECTURE.md, "The ABCI transport"). Its gRPC
//! client has no such timer: each call is one HTTP/2 request, answered in
//! whatever order the calls finish.
//!
//! The application is the same [`AbciApp`], run on the server's own runtime
//! (web3 runs elsewhere): short calls on the worker that received them, the
//! long ones under [`tokio::task::block_in_place`], so a slow call never
//! stalls another connection's. Calls of one
//! connection may arrive together (CometBFT's mempool checks transactions
//! from many RPC requests at once); the application takes them as it takes
//! calls of different socket connections.

use std::time::Duration;

use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::abci_server::{Abci, AbciServer as AbciService};
use tendermint_proto::v0_38::abci::*;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

use crate::abci_server::{ABCI_CONNECTIONS, MAX_REQUEST_BYTES};
use crate::app::AbciApp;
use crate::client_caps::ConnectionCaps;

mod counted;

/// The gRPC ABCI service over an [`AbciApp`].
#[derive(Clone)]
pub struct GrpcAbci {
    app: AbciApp,
}

impl GrpcAbci {
    /// The service answering with `app`.
    pub fn new(app: AbciApp) -> Self {
        Self { app }
    }

    /// Serves the service on `listener` until the runtime stops, within
    /// `bounds` (a connection over a connection cap is closed at once, as
    /// the socket server does past its four); `Err` when the transport
    /// fails.
    pub async fn serve(
        self,
        listener: TcpListener,
        bounds: GrpcBounds,
    ) -> Result<(), tonic::transport::Error> {
        // The largest block CometBFT sends, as on the socket; tonic's
        // default, 4 MiB, would refuse a full block of FinalizeBlock.
        let limit = usize::try_from(MAX_REQUEST_BYTES).unwrap_or(usize::MAX);
        let service = AbciService::new(self)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit);
        let caps = ConnectionCaps::new(bounds.max_connections, bounds.max_connections_per_client);
        let incoming = counted::incoming(listener, caps);
        tonic::transport::Server::builder()
            .max_concurrent_streams(bounds.max_calls_per_connection.max(1))
            // A client gone without closing (its host down) is found and its
            // connection's places freed; CometBFT's client answers pings.
            .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
            .add_service(service)
            .serve_with_incoming(incoming)
            .await
    }
}

/// How often an idle connection is pinged.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
/// How long a ping may go unanswered before its connection is closed.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// The gRPC listener's bounds (`abcid --grpc-max-…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcBounds {
    /// Most connections open at once (`--grpc-max-connections`).
    pub max_connections: usize,
    /// Most connections from one client address
    /// (`--grpc-max-connections-per-client`): as many as CometBFT opens, so
    /// a client elsewhere cannot take the places CometBFT needs.
    pub max_connections_per_client: usize,
    /// Most calls in flight on one connection, HTTP/2's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (`--grpc-max-calls-per-connection`):
    /// a client past it waits for a call to end (grpc-go's, CometBFT's,
    /// does), or has the call refused. tonic sets no bound of its own.
    pub max_calls_per_connection: u32,
}

impl Default for GrpcBounds {
    /// CometBFT's four connections, twice, four from one address; hyper's
    /// own 200 calls a connection (which tonic's default removes).
    fn default() -> Self {
        Self {
            max_connections: 2 * ABCI_CONNECTIONS,
            max_connections_per_client: ABCI_CONNECTIONS,
            max_calls_per_connection: 200,
        }
    }
}

/// Answers a short call (CheckTx, Query, Info, Echo, Flush) on the async
/// worker that received it: handing it to another thread would cost more
/// than the call (a thread wake-up each way, measured as most of the
/// server's CPU under load).
fn inline<T>(call: impl FnOnce() -> T) -> Result<Response<T>, Status> {
    Ok(Response::new(call()))
}

/// Runs a long call (the consensus connection's, the snapshots') with
/// [`tokio::task::block_in_place`], so the worker's other tasks (the
/// connections' HTTP/2 streams) move to another thread meanwhile.
fn blocking<T>(call: impl FnOnce() -> T) -> Result<Response<T>, Status> {
    Ok(Response::new(tokio::task::block_in_place(call)))
}

/// The service: one gRPC method per ABCI call, each handing the request to
/// the application's method of the same name, and the three calls without
/// a request body. (`async_trait` must see every method, so the whole impl
/// is generated here.)
macro_rules! service {
    ($($how:ident $method:ident($req:ty) -> $resp:ty;)*) => {
        #[tonic::async_trait]
        impl Abci for GrpcAbci {
            $(
                async fn $method(&self, request: Request<$req>) -> Result<Response<$resp>, Status> {
                    $how(|| self.app.$method(request.into_inner()))
                }
            )*

            async fn flush(&self, _: Request<RequestFlush>) -> Result<Response<ResponseFlush>, Status> {
                inline(|| self.app.flush())
            }

            async fn list_snapshots(
                &self,
                _: Request<RequestListSnapshots>,
            ) -> Result<Response<ResponseListSnapshots>, Status> {
                blocking(|| self.app.list_snapshots())
            }

            /// A Commit with no block finalised is refused (as the socket
            /// server answers it with an exception), and the node keeps
            /// serving.
            async fn commit(&self, _: Request<RequestCommit>) -> Result<Response<ResponseCommit>, Status> {
                tokio::task::block_in_place(|| self.app.try_commit())
                    .map(Response::new)
                    .map_err(|refused| {
                        tracing::error!("{refused}");
                        Status::failed_precondition(refused)
                    })
            }
        }
    };
}

service! {
    inline echo(RequestEcho) -> ResponseEcho;
    inline info(RequestInfo) -> ResponseInfo;
    inline check_tx(RequestCheckTx) -> ResponseCheckTx;
    inline query(RequestQuery) -> ResponseQuery;
    blocking init_chain(RequestInitChain) -> ResponseInitChain;
    blocking offer_snapshot(RequestOfferSnapshot) -> ResponseOfferSnapshot;
    blocking load_snapshot_chunk(RequestLoadSnapshotChunk) -> ResponseLoadSnapshotChunk;
    blocking apply_snapshot_chunk(RequestApplySnapshotChunk) -> ResponseApplySnapshotChunk;
    blocking prepare_proposal(RequestPrepareProposal) -> ResponsePrepareProposal;
    blocking process_proposal(RequestProcessProposal) -> ResponseProcessProposal;
    blocking extend_vote(RequestExtendVote) -> ResponseExtendVote;
    blocking verify_vote_extension(RequestVerifyVoteExtension) -> ResponseVerifyVoteExtension;
    blocking finalize_block(RequestFinalizeBlock) -> ResponseFinalizeBlock;
}

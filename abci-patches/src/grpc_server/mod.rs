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

use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::abci_server::{Abci, AbciServer as AbciService};
use tendermint_proto::v0_38::abci::*;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

use crate::abci_server::MAX_REQUEST_BYTES;
use crate::app::AbciApp;

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

    /// Serves the service on `listener` until the runtime stops, at most
    /// `max_connections` connections at once (a connection over it is
    /// closed at once, as the socket server does past its four); `Err` when
    /// the transport fails.
    pub async fn serve(
        self,
        listener: TcpListener,
        max_connections: usize,
    ) -> Result<(), tonic::transport::Error> {
        // The largest block CometBFT sends, as on the socket; tonic's
        // default, 4 MiB, would refuse a full block of FinalizeBlock.
        let limit = usize::try_from(MAX_REQUEST_BYTES).unwrap_or(usize::MAX);
        let service = AbciService::new(self)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit);
        let incoming = counted::incoming(listener, max_connections);
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await
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

//! abcid's ABCI socket server: CometBFT's socket protocol (each message a
//! varint length, then the protobuf) over a unix socket or TCP, one thread
//! per connection, as tendermint-abci's server, with what that server lacks:
//!
//! - a unix socket, created with mode 0600 (bound under a temporary name,
//!   restricted, then renamed into place, so it is never reachable wider);
//! - at most [`ABCI_CONNECTIONS`] clients at once: CometBFT opens four
//!   (consensus, mempool, query, snapshot); a fifth is closed on accept;
//! - bounded messages, an empty request answered with an exception instead
//!   of a panic, and a stray Commit answered with an exception while the
//!   node keeps serving.

use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use prost::Message;
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::request::Value as Req;
use tendermint_proto::v0_38::abci::response::Value as Resp;
use tendermint_proto::v0_38::abci::{Request, Response, ResponseException};

use crate::app::AbciApp;

/// How many ABCI clients may be connected at once: CometBFT's four.
pub const ABCI_CONNECTIONS: usize = 4;
/// The largest request accepted, in bytes (a block of CometBFT's largest
/// `max_bytes`, 100 MiB, with room for its envelope).
pub const MAX_REQUEST_BYTES: u64 = 128 << 20;

/// Where the ABCI server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbciAddr {
    /// A TCP address (`tcp://host:port` in CometBFT's `proxy_app`).
    Tcp(SocketAddr),
    /// A unix socket path (`unix://PATH`).
    Unix(PathBuf),
}

impl std::str::FromStr for AbciAddr {
    type Err = String;

    /// `unix://PATH`, `tcp://HOST:PORT` or `HOST:PORT`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(
                    "`unix://` needs a socket path, e.g. unix:///home/me/abcid.sock".into(),
                );
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        let tcp = s.strip_prefix("tcp://").unwrap_or(s);
        tcp.parse()
            .map(Self::Tcp)
            .map_err(|e| format!("`{s}` is neither unix://PATH nor a TCP address HOST:PORT ({e})"))
    }
}

impl std::fmt::Display for AbciAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "tcp://{addr}"),
            Self::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A bound ABCI server; [`Self::listen`] serves it.
pub struct AbciServer {
    listener: Listener,
    app: AbciApp,
    max_connections: usize,
    active: Arc<AtomicUsize>,
}

impl AbciServer {
    /// Binds `addr` for `app`, accepting at most `max_connections` clients
    /// at once. A unix socket replaces a stale socket at the same path (never
    /// another kind of file) and is made mode 0600.
    pub fn bind(addr: &AbciAddr, app: AbciApp, max_connections: usize) -> io::Result<Self> {
        let listener = match addr {
            AbciAddr::Tcp(addr) => Listener::Tcp(TcpListener::bind(addr)?),
            AbciAddr::Unix(path) => Listener::Unix(bind_private(path)?),
        };
        Ok(Self {
            listener,
            app,
            max_connections,
            active: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The bound address (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> io::Result<AbciAddr> {
        match &self.listener {
            Listener::Tcp(l) => l.local_addr().map(AbciAddr::Tcp),
            Listener::Unix(l) => {
                let addr = l.local_addr()?;
                let path = addr.as_pathname().map(Path::to_path_buf);
                path.map(AbciAddr::Unix)
                    .ok_or_else(|| io::Error::other("the unix socket has no path"))
            }
        }
    }

    /// Accepts clients forever, each served on a thread of its own. A
    /// failed accept (a client gone before it was accepted, no file
    /// descriptor left) is logged, and accepting goes on 50 ms later.
    pub fn listen(self) {
        loop {
            let accepted = match &self.listener {
                Listener::Tcp(l) => l.accept().map(|(stream, peer)| {
                    // Latency, not throughput: ABCI is request-response.
                    let _ = stream.set_nodelay(true);
                    self.serve(stream, peer.to_string());
                }),
                Listener::Unix(l) => l
                    .accept()
                    .map(|(stream, _)| self.serve(stream, "unix socket".to_string())),
            };
            if let Err(e) = accepted {
                tracing::warn!(error = %e, "cannot accept an ABCI connection");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }

    /// Serves `stream` on a new thread, or closes it when the server has as
    /// many clients as it takes.
    fn serve<S: Read + Write + Send + 'static>(&self, stream: S, peer: String) {
        let slot = match Slot::take(&self.active, self.max_connections) {
            Some(slot) => slot,
            None => {
                tracing::warn!(
                    %peer,
                    max = self.max_connections,
                    "ABCI connection refused: CometBFT's connections are all open already"
                );
                drop(stream);
                return;
            }
        };
        tracing::info!(%peer, "ABCI client connected");
        let app = self.app.clone();
        let spawned = std::thread::Builder::new()
            .name("abci-conn".to_string())
            .spawn(move || {
                let _slot = slot;
                match serve_client(stream, &app) {
                    Ok(()) => tracing::info!(%peer, "ABCI client disconnected"),
                    Err(e) => tracing::warn!(%peer, error = %e, "ABCI connection closed"),
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start a thread for an ABCI connection");
        }
    }
}

/// One of the server's connection slots, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(active.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Binds a unix socket at `path` that only this user can connect to.
fn bind_private(path: &Path) -> io::Result<UnixListener> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a socket; remove it or choose another path",
                    path.display()
                ),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut staging = path.as_os_str().to_owned();
    staging.push(format!(".{}.tmp", std::process::id()));
    let staging = PathBuf::from(staging);
    let _ = std::fs::remove_file(&staging);
    let listener = UnixListener::bind(&staging)?;
    std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&staging, path)?;
    Ok(listener)
}

/// Reads requests from `stream` and answers each until the client leaves.
fn serve_client<S: Read + Write>(stream: S, app: &AbciApp) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let mut out = Vec::new();
    while let Some(request) = read_message::<Request, _>(&mut reader)? {
        let response = dispatch(app, request);
        out.clear();
        response
            .encode_length_delimited(&mut out)
            .map_err(io::Error::other)?;
        let stream = reader.get_mut();
        stream.write_all(&out)?;
        stream.flush()?;
    }
    Ok(())
}

/// The next length-delimited message (a request here; a client reads
/// responses with it); `None` when the peer closed the connection between
/// two messages.
pub fn read_message<M: Message + Default, R: Read>(reader: &mut R) -> io::Result<Option<M>> {
    let Some(len) = read_varint(reader)? else {
        return Ok(None);
    };
    if len > MAX_REQUEST_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("ABCI message of {len} bytes, beyond the {MAX_REQUEST_BYTES}-byte limit"),
        ));
    }
    let mut body = Vec::new();
    reader.take(len).read_to_end(&mut body)?;
    if body.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    M::decode(body.as_slice())
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// A protobuf varint (at most 10 bytes); `None` on end of stream before it.
fn read_varint<R: Read>(reader: &mut R) -> io::Result<Option<u64>> {
    let mut value = 0u64;
    for i in 0..10 {
        let mut byte = [0u8];
        if reader.read(&mut byte)? == 0 {
            return if i == 0 {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        value |= u64::from(byte[0] & 0x7f) << (7 * i);
        if byte[0] & 0x80 == 0 {
            return Ok(Some(value));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "ABCI length prefix longer than 10 bytes",
    ))
}

fn exception(error: String) -> Resp {
    Resp::Exception(ResponseException { error })
}

/// Hands `request` to `app`, as tendermint-abci's dispatcher does, except
/// for an empty request and a stray Commit, answered with an exception.
fn dispatch(app: &AbciApp, request: Request) -> Response {
    let value = match request.value {
        None => exception("empty ABCI request".to_string()),
        Some(Req::Echo(r)) => Resp::Echo(app.echo(r)),
        Some(Req::Flush(_)) => Resp::Flush(app.flush()),
        Some(Req::Info(r)) => Resp::Info(app.info(r)),
        Some(Req::InitChain(r)) => Resp::InitChain(app.init_chain(r)),
        Some(Req::Query(r)) => Resp::Query(app.query(r)),
        Some(Req::CheckTx(r)) => Resp::CheckTx(app.check_tx(r)),
        Some(Req::Commit(_)) => match app.try_commit() {
            Ok(r) => Resp::Commit(r),
            Err(refused) => {
                tracing::error!("{refused}");
                exception(refused)
            }
        },
        Some(Req::ListSnapshots(_)) => Resp::ListSnapshots(app.list_snapshots()),
        Some(Req::OfferSnapshot(r)) => Resp::OfferSnapshot(app.offer_snapshot(r)),
        Some(Req::LoadSnapshotChunk(r)) => Resp::LoadSnapshotChunk(app.load_snapshot_chunk(r)),
        Some(Req::ApplySnapshotChunk(r)) => Resp::ApplySnapshotChunk(app.apply_snapshot_chunk(r)),
        Some(Req::PrepareProposal(r)) => Resp::PrepareProposal(app.prepare_proposal(r)),
        Some(Req::ProcessProposal(r)) => Resp::ProcessProposal(app.process_proposal(r)),
        Some(Req::ExtendVote(r)) => Resp::ExtendVote(app.extend_vote(r)),
        Some(Req::VerifyVoteExtension(r)) => {
            Resp::VerifyVoteExtension(app.verify_vote_extension(r))
        }
        Some(Req::FinalizeBlock(r)) => Resp::FinalizeBlock(app.finalize_block(r)),
    };
    Response { value: Some(value) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unix_and_tcp_addresses_or_says_what_is_wrong() {
        assert_eq!(
            "unix:///tmp/a.sock".parse::<AbciAddr>(),
            Ok(AbciAddr::Unix(PathBuf::from("/tmp/a.sock")))
        );
        let tcp = Ok(AbciAddr::Tcp("127.0.0.1:26658".parse().unwrap()));
        assert_eq!("tcp://127.0.0.1:26658".parse::<AbciAddr>(), tcp);
        assert_eq!("127.0.0.1:26658".parse::<AbciAddr>(), tcp);
        assert!("unix://".parse::<AbciAddr>().unwrap_err().contains("path"));
        assert!("localhost"
            .parse::<AbciAddr>()
            .unwrap_err()
            .contains("neither unix://PATH"));
    }

    fn read_request(reader: &mut &[u8]) -> io::Result<Option<Request>> {
        read_message(reader)
    }

    #[test]
    fn reads_framed_requests_and_refuses_oversized_or_truncated_ones() {
        let request = Request {
            value: Some(Req::Flush(Default::default())),
        };
        let mut wire = Vec::new();
        request.encode_length_delimited(&mut wire).unwrap();
        wire.extend_from_slice(&wire.clone());
        let mut reader = wire.as_slice();
        assert_eq!(read_request(&mut reader).unwrap(), Some(request.clone()));
        assert_eq!(read_request(&mut reader).unwrap(), Some(request));
        assert_eq!(read_request(&mut reader).unwrap(), None);
        let mut huge = Vec::new();
        prost::encoding::encode_varint(MAX_REQUEST_BYTES + 1, &mut huge);
        let err = read_request(&mut huge.as_slice()).unwrap_err();
        assert!(err.to_string().contains("beyond"), "{err}");
        let truncated = [5u8, 1, 2];
        let err = read_request(&mut truncated.as_slice()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let endless = [0xffu8; 11];
        assert!(read_request(&mut endless.as_slice()).is_err());
    }

    #[test]
    fn slots_are_bounded_and_given_back() {
        let active = Arc::new(AtomicUsize::new(0));
        let a = Slot::take(&active, 2).unwrap();
        let _b = Slot::take(&active, 2).unwrap();
        assert!(Slot::take(&active, 2).is_none());
        drop(a);
        assert!(Slot::take(&active, 2).is_some());
    }
}

//! The `abcid` binary's ABCI socket as a stranger on the machine meets it: a
//! unix socket of mode 0600, at most CometBFT's four clients, a stray Commit
//! refused while the node keeps serving, and a replayed FinalizeBlock
//! stopping the node with a clear error.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use abcid::abci_server::read_message;
use alloy_primitives::{Address, U256};
use prost::Message;
use tendermint_proto::google::protobuf::Timestamp;
use tendermint_proto::v0_38::abci::request::Value as Req;
use tendermint_proto::v0_38::abci::response::Value as Resp;
use tendermint_proto::v0_38::abci::{
    Request, RequestCommit, RequestEcho, RequestFinalizeBlock, RequestInfo, RequestInitChain,
    Response,
};

use crate::common::*;

/// How long anything here may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// An `abcid` process serving ABCI on a unix socket; killed when dropped.
struct Abcid {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Abcid {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let socket = dir.path().join("abci.sock");
        let log = dir.path().join("abcid.log");
        let child = Command::new(env!("CARGO_BIN_EXE_abcid"))
            .arg("--home")
            .arg(dir.path().join("home"))
            .arg("--abci")
            .arg(format!("unix://{}", socket.display()))
            .args(["--web3", "127.0.0.1:0", "--no-profiler", "--cometbft-rpc"])
            .arg(closed_port_url())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log file"))
            .spawn()
            .expect("abcid starts");
        let mut abcid = Self {
            child,
            socket,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + DEADLINE;
        while !is_socket(&abcid.socket) {
            assert!(abcid.exited().is_none(), "abcid exited: {}", abcid.log());
            assert!(Instant::now() < deadline, "no socket: {}", abcid.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        abcid
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("waitpid")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn connect(&self) -> UnixStream {
        let stream = UnixStream::connect(&self.socket).expect("the socket accepts");
        stream.set_read_timeout(Some(DEADLINE)).expect("a timeout");
        stream
    }
}

impl Drop for Abcid {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// Sends `request` and reads one response; `None` when abcid closed the
/// connection.
fn ask(stream: &mut UnixStream, request: Req) -> Option<Resp> {
    let mut wire = Vec::new();
    Request {
        value: Some(request),
    }
    .encode_length_delimited(&mut wire)
    .expect("encodable");
    if stream.write_all(&wire).is_err() {
        return None;
    }
    match read_message::<Response, _>(stream) {
        Ok(response) => response.and_then(|r| r.value),
        Err(_) => None,
    }
}

fn echo(stream: &mut UnixStream) -> Option<Resp> {
    ask(
        stream,
        Req::Echo(RequestEcho {
            message: "hello".into(),
        }),
    )
}

fn is_echo(response: Option<Resp>) -> bool {
    matches!(response, Some(Resp::Echo(e)) if e.message == "hello")
}

#[test]
fn the_unix_socket_is_private_and_takes_cometbfts_four_clients_only() {
    let abcid = Abcid::start();
    let mode = std::fs::metadata(&abcid.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let mut clients: Vec<UnixStream> = (0..4).map(|_| abcid.connect()).collect();
    for client in &mut clients {
        assert!(is_echo(echo(client)), "{}", abcid.log());
    }
    let mut fifth = abcid.connect();
    assert_eq!(echo(&mut fifth), None, "a fifth client is refused");
    assert!(abcid.log().contains("ABCI connection refused"));
    // A client leaving frees its place.
    drop(clients.pop());
    let deadline = Instant::now() + DEADLINE;
    loop {
        if is_echo(echo(&mut abcid.connect())) {
            break;
        }
        assert!(Instant::now() < deadline, "{}", abcid.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    for client in &mut clients {
        assert!(is_echo(echo(client)), "the others are still served");
    }
}

fn finalize(height: i64) -> Req {
    Req::FinalizeBlock(RequestFinalizeBlock {
        height,
        hash: block_hash(height as u64).to_vec().into(),
        time: Some(Timestamp {
            seconds: 1_800_000_000 + height,
            nanos: 0,
        }),
        ..Default::default()
    })
}

#[test]
fn a_stray_commit_is_refused_and_a_replayed_block_stops_the_node() {
    let mut abcid = Abcid::start();
    let mut client = abcid.connect();
    let alloc = [(Address::repeat_byte(1), U256::from(FUNDED))];
    let init = ask(
        &mut client,
        Req::InitChain(RequestInitChain {
            chain_id: "feth-test".into(),
            app_state_bytes: app_state(&alloc).into_bytes().into(),
            initial_height: 1,
            ..Default::default()
        }),
    );
    assert!(matches!(init, Some(Resp::InitChain(_))), "{init:?}");

    let stray = ask(&mut client, Req::Commit(RequestCommit {}));
    match stray {
        Some(Resp::Exception(e)) => {
            assert!(
                e.error.contains("commit without a finalized block"),
                "{e:?}"
            )
        }
        other => panic!("a stray Commit answered {other:?}"),
    }
    assert!(is_echo(echo(&mut client)), "still serving");
    assert!(matches!(
        ask(&mut client, finalize(1)),
        Some(Resp::FinalizeBlock(_))
    ));
    assert!(matches!(
        ask(&mut client, Req::Commit(RequestCommit {})),
        Some(Resp::Commit(_))
    ));
    match ask(&mut client, Req::Info(RequestInfo::default())) {
        Some(Resp::Info(info)) => assert_eq!(info.last_block_height, 1),
        other => panic!("Info answered {other:?}"),
    }

    // Block 1 again: refused, and abcid stops rather than execute it.
    assert_eq!(ask(&mut client, finalize(1)), None);
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = abcid.exited() {
            break status;
        }
        assert!(Instant::now() < deadline, "abcid still runs");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
    let log = abcid.log();
    assert!(
        log.contains("FinalizeBlock of height 1 refused: the last committed block is 1"),
        "{log}"
    );
}

//! What a line is and what it says: the parser's public types.

use feth_comet::time::Civil;

/// Which shape a line had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Tendermint/CometBFT plain (`I[…] msg k=v`).
    Plain,
    /// Tendermint/CometBFT JSON (`{"_msg":…}`).
    Json,
    /// tracing-subscriber plain (abcid).
    TracingPlain,
    /// tracing-subscriber JSON (abcid).
    TracingJson,
    /// Cosmos SDK console (zerolog: `4:53AM INF msg k=v`, colour codes or not).
    SdkConsole,
    /// Cosmos SDK JSON (zerolog: `{"level":…,"time":…,"message":…}`).
    SdkJson,
}

/// Something a line says about a block or the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// Consensus decided the block (`finalizing commit of block`): logged
    /// only when the node commits through consensus, never in block sync or
    /// handshake replay, so its time is the node's commit time.
    CommitDecided {
        /// Block height.
        height: u64,
        /// Transactions in the block.
        txs: u64,
    },
    /// Tendermint 0.34 / CometBFT 0.37 `executed block` with result counts.
    Executed {
        /// Block height.
        height: u64,
        /// Transactions with result code 0.
        valid: u64,
        /// Transactions with a non-zero result code.
        invalid: u64,
        /// Logged by the handshake replay after a restart (`module=consensus`).
        replay: bool,
    },
    /// CometBFT 0.38 / 1.0 `finalized block`.
    Finalized {
        /// Block height.
        height: u64,
        /// Transaction results, i.e. transactions in the block.
        txs: u64,
        /// Spelled `Finalized block` (CometBFT 1.0).
        capitalized: bool,
    },
    /// `committed state`: the block is applied and committed by the app.
    StateCommitted {
        /// Block height.
        height: u64,
        /// Transactions (Tendermint 0.34 / CometBFT 0.37 only).
        txs: Option<u64>,
    },
    /// abcid's per-block line (`docs/abcid-log-format.md`).
    Abcid {
        /// Block height.
        height: u64,
        /// Transactions in the block.
        txs: u64,
        /// Transactions with result code 0.
        valid: u64,
        /// Transactions with a non-zero result code.
        invalid: u64,
        /// Block header time (UTC).
        block_time: Civil,
    },
    /// `Version info`: the node software version.
    Version(&'a str),
    /// `Started node`: the chain id (`network`).
    Network(&'a str),
}

/// A line that carries an [`Event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The line's shape.
    pub format: Format,
    /// Node name from a line prefix (`node0  | …`, `[node0] …`), if any.
    pub node: Option<&'a str>,
    /// When the line was written; `None` when the line's clock has no date
    /// (Cosmos SDK console stamps such as `4:53AM`): no day is guessed.
    pub time: Option<Civil>,
    /// What it says.
    pub event: Event<'a>,
}

/// Why a line that looked like a node log line could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Cut short (e.g. the last line of a log being written).
    Truncated,
    /// The timestamp is not in the expected form.
    BadTimestamp,
    /// A field the message always has is missing.
    MissingField(&'static str),
    /// A field's value is not what it should be.
    BadValue(&'static str),
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated => f.write_str("line cut short"),
            Self::BadTimestamp => f.write_str("unreadable timestamp"),
            Self::MissingField(k) => write!(f, "missing field `{k}`"),
            Self::BadValue(k) => write!(f, "bad value for `{k}`"),
        }
    }
}

/// What a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// A block or node event.
    Event(Record<'a>),
    /// A well-formed log line of no interest here.
    Other(Format),
    /// Empty or whitespace only.
    Blank,
    /// Looks like a node log line but cannot be read.
    Malformed(Malformed),
    /// Not in any format known here.
    Foreign,
}

/// The [`Line`] of a record: its event, a line of no interest, or malformed.
pub(super) fn done<'a>(
    format: Format,
    node: Option<&'a str>,
    time: Option<Civil>,
    ev: Result<Option<Event<'a>>, Malformed>,
) -> Line<'a> {
    match ev {
        Ok(Some(event)) => Line::Event(Record {
            format,
            node,
            time,
            event,
        }),
        Ok(None) => Line::Other(format),
        Err(m) => Line::Malformed(m),
    }
}

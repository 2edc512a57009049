//! What is known of one block, chain-wide, and where its time came from.

/// Where a block's header time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeSource {
    /// The node's RPC (`/blockchain` header times).
    Rpc,
    /// abcid's per-block line (`block_time`, the header time).
    Abcid,
}

impl TimeSource {
    /// Its name, as the etl stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Abcid => "abcid",
        }
    }

    /// The source named `s`, if it is one.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "rpc" => Some(Self::Rpc),
            "abcid" => Some(Self::Abcid),
            _ => None,
        }
    }
}

/// What is known about one block (chain-wide facts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockFacts {
    /// Transactions in the block.
    pub txs: Option<u64>,
    /// Transactions with result code 0.
    pub valid: Option<u64>,
    /// Transactions with a non-zero result code.
    pub invalid: Option<u64>,
    /// Header time, Unix ns.
    pub time_ns: Option<i64>,
    /// Where `time_ns` came from.
    pub time_src: Option<TimeSource>,
}

impl BlockFacts {
    /// Takes every field `other` knows.
    pub fn merge(&mut self, other: &BlockFacts) {
        self.txs = other.txs.or(self.txs);
        self.valid = other.valid.or(self.valid);
        self.invalid = other.invalid.or(self.invalid);
        if other.time_ns.is_some() {
            self.time_ns = other.time_ns;
            self.time_src = other.time_src;
        }
    }
}

//! One log line → at most one block event. The hot path: no allocation, no
//! copy (except into a reused scratch buffer when a line carries ANSI colour
//! codes), and no work beyond a few byte comparisons for lines of no interest.
//!
//! Understood line shapes (each may follow a prefix such as docker compose's
//! `node0  | ` or kubectl's `[pod/node0/app] `, which names the node, and may
//! end in `\r`):
//!
//! * Tendermint/CometBFT plain: `I[2026-11-21|20:30:00.123] message   k=v k="v w"`
//!   (the message is left-aligned in 44 columns);
//! * Tendermint/CometBFT JSON: `{"_msg":"…","height":1,…,"ts":"…Z"}`;
//! * abcid (tracing-subscriber) plain: `2026-…Z  INFO abcid::block: block committed k=v…`;
//! * abcid JSON: `{"timestamp":"…","fields":{"message":"block committed",…},"target":"abcid::block"}`;
//! * Cosmos SDK console (zerolog): `4:53AM INF message k=v…` (the stamp may
//!   have no date: such records carry no time);
//! * Cosmos SDK JSON (zerolog): `{"level":"info","height":40,"time":"…","message":"…"}`.
//!
//! Messages read (wording checked against each version's source and real
//! runs, see `tests/fixtures/README.md`):
//!
//! | message | versions | gives |
//! |---|---|---|
//! | `finalizing commit of block` (1.0: `Finalizing …`) | all | height, `num_txs`; consensus committed it here |
//! | `executed block` with `num_valid_txs`/`num_invalid_txs` | 0.34, 0.37 | valid/invalid |
//! | `finalized block` (1.0: `Finalized block`) | 0.38, 1.0 | height, `num_txs_res` |
//! | `committed state` (1.0: `Committed state`) | all | height (0.34/0.37 also `num_txs`) |
//! | `Version info` | all | `tendermint_version` |
//! | `Started node` | all | the chain id (`Network:` in `nodeInfo`) |
//! | abcid `block committed` | abcid | height, txs, valid, invalid, header time |
//!
//! Modules: `framing` (colour codes, prefixes, which format), `tendermint`
//! (the node's messages, plain and JSON), `sdk` (the same messages through
//! the Cosmos SDK logger), `abcid` (its per-block line),
//! `scan` (numbers, `k=v` pairs, JSON objects), `event` (the types returned).

mod abcid;
mod event;
mod framing;
mod scan;
mod sdk;
#[cfg(test)]
mod sdk_tests;
mod tendermint;
#[cfg(test)]
mod tests;

pub use event::{Event, Format, Line, Malformed, Record};

/// Parses lines; keeps a scratch buffer for lines with ANSI colour codes.
pub struct Parser {
    scratch: Vec<u8>,
    framing: framing::Framing,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    /// A parser.
    pub fn new() -> Self {
        Self {
            scratch: Vec::new(),
            framing: framing::Framing::new(),
        }
    }

    /// Parses one line (with or without its `\n` / `\r\n`).
    pub fn parse<'a>(&'a mut self, line: &'a [u8]) -> Line<'a> {
        let mut line = line;
        while let [rest @ .., b'\n' | b'\r'] = line {
            line = rest;
        }
        if memchr::memchr(0x1b, line).is_some() {
            framing::strip_ansi(line, &mut self.scratch);
            return self.framing.line(&self.scratch);
        }
        self.framing.line(line)
    }
}

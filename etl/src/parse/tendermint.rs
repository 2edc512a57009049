//! Tendermint/CometBFT lines, plain (`I[stamp] message k=v…`) and JSON
//! (`{"_msg":"…",…}`): the consensus and state messages read.

use memchr::memmem::Finder;

use super::event::{done, Event, Format, Line, Malformed};
use super::scan::{parse_u64, utf8, JObj, JVal, Kvs};
use feth_comet::time;

/// Messages of interest; the first letter is compared case-insensitively
/// (CometBFT 1.0 capitalises it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Msg {
    CommitDecided,
    Finalized,
    Executed,
    StateCommitted,
    Version,
    Started,
}

const MESSAGES: [(&[u8], Msg); 6] = [
    (b"finalizing commit of block", Msg::CommitDecided),
    (b"finalized block", Msg::Finalized),
    (b"executed block", Msg::Executed),
    (b"committed state", Msg::StateCommitted),
    (b"version info", Msg::Version),
    (b"started node", Msg::Started),
];

/// Which message `msg` starts with, its length and whether its first letter
/// was upper case. `msg` must end there (end of slice, space or `"`).
#[inline]
pub(super) fn classify(msg: &[u8]) -> Option<(Msg, usize, bool)> {
    let first = *msg.first()?;
    let lower = first.to_ascii_lowercase();
    if !matches!(lower, b'f' | b'e' | b'c' | b'v' | b's') {
        return None;
    }
    for (m, kind) in MESSAGES {
        if m[0] == lower && msg.len() >= m.len() && msg[1..m.len()].eq_ignore_ascii_case(&m[1..]) {
            // Only "Version info"/"Started node" are spelled with more capitals.
            if !matches!(kind, Msg::Version | Msg::Started) && msg[1..m.len()] != m[1..] {
                return None;
            }
            match msg.get(m.len()) {
                None | Some(b' ' | b'"') => {
                    return Some((kind, m.len(), first.is_ascii_uppercase()))
                }
                Some(_) => return None,
            }
        }
    }
    None
}

/// Fields a message may carry, gathered in one pass over its key/values.
#[derive(Default)]
pub(super) struct Fields<'a> {
    height: Option<u64>,
    num_txs: Option<u64>,
    num_txs_res: Option<u64>,
    num_valid: Option<u64>,
    num_invalid: Option<u64>,
    consensus_module: bool,
    version: Option<&'a [u8]>,
    bad: Option<&'static str>,
}

impl<'a> Fields<'a> {
    fn num(&mut self, key: &'static str, v: Option<u64>, slot: fn(&mut Self) -> &mut Option<u64>) {
        match v {
            Some(n) => *slot(self) = Some(n),
            None => self.bad = Some(key),
        }
    }

    pub(super) fn take(&mut self, key: &[u8], val: Option<u64>, raw: Option<&'a [u8]>) {
        match key {
            b"height" => self.num("height", val, |f| &mut f.height),
            b"num_txs" => self.num("num_txs", val, |f| &mut f.num_txs),
            b"num_txs_res" => self.num("num_txs_res", val, |f| &mut f.num_txs_res),
            b"num_valid_txs" => self.num("num_valid_txs", val, |f| &mut f.num_valid),
            b"num_invalid_txs" => self.num("num_invalid_txs", val, |f| &mut f.num_invalid),
            b"module" => self.consensus_module = raw == Some(b"consensus"),
            b"tendermint_version" | b"cometbft_version" => self.version = raw,
            _ => {}
        }
    }
}

/// Builds the event for a Tendermint/CometBFT message from its fields.
pub(super) fn tm_event<'a>(
    msg: Msg,
    capitalized: bool,
    f: &Fields<'a>,
    network: Option<&'a [u8]>,
) -> Result<Option<Event<'a>>, Malformed> {
    if let Some(k) = f.bad {
        return Err(Malformed::BadValue(k));
    }
    let height = || f.height.ok_or(Malformed::MissingField("height"));
    Ok(Some(match msg {
        Msg::CommitDecided => Event::CommitDecided {
            height: height()?,
            txs: f.num_txs.ok_or(Malformed::MissingField("num_txs"))?,
        },
        Msg::Finalized => Event::Finalized {
            height: height()?,
            txs: f
                .num_txs_res
                .ok_or(Malformed::MissingField("num_txs_res"))?,
            capitalized,
        },
        Msg::Executed => match (f.num_valid, f.num_invalid) {
            (Some(valid), Some(invalid)) => Event::Executed {
                height: height()?,
                valid,
                invalid,
                replay: f.consensus_module,
            },
            // 0.38 and later: `executed block height=… app_hash=…`, nothing new.
            (None, None) => {
                height()?;
                return Ok(None);
            }
            (None, Some(_)) => return Err(Malformed::MissingField("num_valid_txs")),
            (Some(_), None) => return Err(Malformed::MissingField("num_invalid_txs")),
        },
        Msg::StateCommitted => Event::StateCommitted {
            height: height()?,
            txs: f.num_txs,
        },
        Msg::Version => match f.version.and_then(utf8) {
            Some(v) => Event::Version(v),
            None => return Ok(None),
        },
        Msg::Started => match network.and_then(utf8) {
            Some(n) => Event::Network(n),
            None => return Err(Malformed::MissingField("network")),
        },
    }))
}

/// Finds what Tendermint/CometBFT lines are read for.
pub(super) struct Messages {
    json_msg: Finder<'static>,
    network: Finder<'static>,
    json_network: Finder<'static>,
}

impl Messages {
    pub(super) fn new() -> Self {
        Self {
            json_msg: Finder::new(b"\"_msg\":\"").into_owned(),
            network: Finder::new(b"Network:").into_owned(),
            json_network: Finder::new(b"\"network\":\"").into_owned(),
        }
    }

    /// A plain record (`I[2026-11-21|20:30:00.123] message   k=v…`).
    pub(super) fn plain<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
        // I[2026-11-21|20:30:00.123] message…
        if line.len() < 27 {
            return Line::Malformed(Malformed::Truncated);
        }
        if line[25] != b']' || line[26] != b' ' {
            return Line::Malformed(Malformed::BadTimestamp);
        }
        let msg = &line[27..];
        let Some((kind, len, capitalized)) = classify(msg) else {
            return Line::Other(Format::Plain);
        };
        let Some(time) = time::parse_plain(&line[2..25]) else {
            return Line::Malformed(Malformed::BadTimestamp);
        };
        // The message is padded to 44 columns: the padding must be blank, or
        // this is a longer message that merely starts like ours.
        let pad_end = msg.len().min(44);
        if len < pad_end && msg[len..pad_end].iter().any(|&c| c != b' ') {
            return Line::Other(Format::Plain);
        }
        let kvs = &msg[len..];
        let mut f = Fields::default();
        let mut network = None;
        for (k, v) in Kvs::new(kvs) {
            if k == b"nodeInfo" {
                if let Some(p) = self.network.find(v) {
                    let rest = &v[p + 8..];
                    let end = memchr::memchr2(b' ', b'}', rest).unwrap_or(rest.len());
                    network = Some(&rest[..end]);
                }
                continue;
            }
            f.take(k, parse_u64(v), Some(v));
        }
        done(
            Format::Plain,
            node,
            Some(time),
            tm_event(kind, capitalized, &f, network),
        )
    }

    /// A JSON record (trimmed), if it has a `_msg` (else `None`).
    pub(super) fn json<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Option<Line<'a>> {
        let p = self.json_msg.find(line)?;
        Some(self.json_message(line, p + 8, node))
    }

    /// A JSON record whose message starts at `at`.
    fn json_message<'a>(&self, line: &'a [u8], at: usize, node: Option<&'a str>) -> Line<'a> {
        let msg = &line[at..];
        let Some((kind, _, capitalized)) =
            classify(msg).filter(|(_, len, _)| msg.get(*len) == Some(&b'"'))
        else {
            return if line.last() == Some(&b'}') {
                Line::Other(Format::Json)
            } else {
                Line::Malformed(Malformed::Truncated)
            };
        };
        let mut f = Fields::default();
        let mut ts = None;
        let mut network = None;
        let mut obj = JObj::new(line);
        for (k, v) in obj.by_ref() {
            match k {
                b"ts" | b"time" | b"timestamp" => ts = v.bytes(),
                b"nodeInfo" | b"node_info" => {
                    if let JVal::Obj(o) = v {
                        if let Some(p) = self.json_network.find(o) {
                            let rest = &o[p + 11..];
                            network = memchr::memchr(b'"', rest).map(|e| &rest[..e]);
                        }
                    }
                }
                _ => f.take(k, v.u64(), v.bytes()),
            }
        }
        if obj.bad {
            return Line::Malformed(Malformed::Truncated);
        }
        let Some(ts) = ts else {
            return Line::Malformed(Malformed::MissingField("ts"));
        };
        let Some(time) = time::parse_rfc3339(ts) else {
            return Line::Malformed(Malformed::BadTimestamp);
        };
        done(
            Format::Json,
            node,
            Some(time),
            tm_event(kind, capitalized, &f, network),
        )
    }
}

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
//! * abcid JSON: `{"timestamp":"…","fields":{"message":"block committed",…},"target":"abcid::block"}`.
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

use memchr::memmem::Finder;

use crate::time::{self, Civil};

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
    /// When the line was written.
    pub time: Civil,
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

/// Parses lines; keeps a scratch buffer for lines with ANSI colour codes.
pub struct Parser {
    scratch: Vec<u8>,
    finders: Finders,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

/// Messages of interest; the first letter is compared case-insensitively
/// (CometBFT 1.0 capitalises it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
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
fn classify(msg: &[u8]) -> Option<(Msg, usize, bool)> {
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

/// Parses a decimal u64 (no sign, no spaces, at most 20 digits).
#[inline]
fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

fn trim_ascii_space(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// Iterates `key=value` pairs of a plain line; values may be `"quoted"`.
struct Kvs<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Iterator for Kvs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.s;
        loop {
            while self.i < s.len() && s[self.i] == b' ' {
                self.i += 1;
            }
            if self.i >= s.len() {
                return None;
            }
            let start = self.i;
            // Key: up to '=' or a space (a bare word is skipped).
            while self.i < s.len() && s[self.i] != b'=' && s[self.i] != b' ' {
                self.i += 1;
            }
            if self.i >= s.len() || s[self.i] == b' ' {
                continue;
            }
            let key = &s[start..self.i];
            self.i += 1;
            if s.get(self.i) == Some(&b'"') {
                let vstart = self.i + 1;
                let mut j = vstart;
                while j < s.len() && s[j] != b'"' {
                    j += if s[j] == b'\\' { 2 } else { 1 };
                }
                let vend = j.min(s.len());
                self.i = (j + 1).min(s.len());
                return Some((key, &s[vstart..vend]));
            }
            let vstart = self.i;
            self.i = memchr::memchr(b' ', &s[vstart..]).map_or(s.len(), |p| vstart + p);
            return Some((key, &s[vstart..self.i]));
        }
    }
}

/// A JSON value, borrowed raw (strings without their quotes, unescaped only
/// as far as this module needs: not at all).
#[derive(Debug, Clone, Copy)]
enum JVal<'a> {
    Str(&'a [u8]),
    Num(&'a [u8]),
    Obj(&'a [u8]),
    Other,
}

impl<'a> JVal<'a> {
    fn u64(self) -> Option<u64> {
        match self {
            JVal::Num(b) | JVal::Str(b) => parse_u64(b),
            _ => None,
        }
    }

    fn bytes(self) -> Option<&'a [u8]> {
        match self {
            JVal::Str(b) => Some(b),
            _ => None,
        }
    }
}

/// Iterates the members of one JSON object, skipping nested values.
struct JObj<'a> {
    s: &'a [u8],
    i: usize,
    bad: bool,
}

impl<'a> JObj<'a> {
    /// `s` must start with `{` (after optional whitespace).
    fn new(s: &'a [u8]) -> Self {
        let mut o = JObj {
            s,
            i: 0,
            bad: false,
        };
        o.ws();
        if o.s.get(o.i) == Some(&b'{') {
            o.i += 1;
        } else {
            o.bad = true;
        }
        o
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// A string starting at `self.i` (on the quote): returns its raw content.
    fn string(&mut self) -> Option<&'a [u8]> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        loop {
            let p = memchr::memchr2(b'"', b'\\', self.s.get(j..)?)?;
            j += p;
            if self.s[j] == b'\\' {
                j += 2;
            } else {
                self.i = j + 1;
                return Some(&self.s[start..j]);
            }
        }
    }

    /// Skips a nested object or array starting at `self.i`.
    fn skip_nested(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        let mut depth = 0usize;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.i += 1;
                        return Some(&self.s[start..self.i]);
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        None
    }
}

impl<'a> Iterator for JObj<'a> {
    type Item = (&'a [u8], JVal<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.bad {
            return None;
        }
        self.ws();
        match self.s.get(self.i) {
            Some(b'}') => return None,
            Some(b',') => {
                self.i += 1;
                self.ws();
            }
            _ => {}
        }
        let r = (|| {
            let key = self.string()?;
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return None;
            }
            self.i += 1;
            self.ws();
            let val = match *self.s.get(self.i)? {
                b'"' => JVal::Str(self.string()?),
                b'{' => JVal::Obj(self.skip_nested()?),
                b'[' => {
                    self.skip_nested()?;
                    JVal::Other
                }
                _ => {
                    let start = self.i;
                    while self.i < self.s.len()
                        && !matches!(self.s[self.i], b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
                    {
                        self.i += 1;
                    }
                    let raw = &self.s[start..self.i];
                    if raw
                        .first()
                        .is_some_and(|c| c.is_ascii_digit() || *c == b'-')
                    {
                        JVal::Num(raw)
                    } else {
                        JVal::Other
                    }
                }
            };
            Some((key, val))
        })();
        if r.is_none() {
            self.bad = true;
        }
        r
    }
}

/// Fields a message may carry, gathered in one pass over its key/values.
#[derive(Default)]
struct Fields<'a> {
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

    fn take(&mut self, key: &[u8], val: Option<u64>, raw: Option<&'a [u8]>) {
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

fn utf8(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b).ok().filter(|s| !s.is_empty())
}

/// Builds the event for a Tendermint/CometBFT message from its fields.
fn tm_event<'a>(
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

fn done<'a>(
    format: Format,
    node: Option<&'a str>,
    time: Civil,
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

impl Parser {
    /// A parser.
    pub fn new() -> Self {
        Self {
            scratch: Vec::new(),
            finders: Finders {
                json_msg: Finder::new(b"\"_msg\":\"").into_owned(),
                tracing_target: Finder::new(b"\"target\":").into_owned(),
                abcid_plain_target: Finder::new(b"abcid::block: ").into_owned(),
                network: Finder::new(b"Network:").into_owned(),
                json_network: Finder::new(b"\"network\":\"").into_owned(),
            },
        }
    }

    /// Parses one line (with or without its `\n` / `\r\n`).
    pub fn parse<'a>(&'a mut self, line: &'a [u8]) -> Line<'a> {
        let mut line = line;
        while let [rest @ .., b'\n' | b'\r'] = line {
            line = rest;
        }
        if memchr::memchr(0x1b, line).is_some() {
            strip_ansi(line, &mut self.scratch);
            return self.finders.line(&self.scratch);
        }
        self.finders.line(line)
    }
}

/// Removes ANSI escape sequences (CSI `ESC [ … final` and two-byte `ESC x`).
fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < line.len() {
        if line[i] == 0x1b {
            if line.get(i + 1) == Some(&b'[') {
                i += 2;
                while i < line.len() && !(0x40..=0x7e).contains(&line[i]) {
                    i += 1;
                }
                i += 1;
            } else {
                i += 2;
            }
            continue;
        }
        out.push(line[i]);
        i += 1;
    }
}

struct Finders {
    json_msg: Finder<'static>,
    tracing_target: Finder<'static>,
    abcid_plain_target: Finder<'static>,
    network: Finder<'static>,
    json_network: Finder<'static>,
}

#[inline]
fn is_level(c: u8) -> bool {
    matches!(c, b'I' | b'D' | b'E' | b'W')
}

/// Where a record starts in `s` (no prefix handling), if `s` starts with one.
#[inline]
fn starts_record(s: &[u8]) -> bool {
    match s {
        [b'{', ..] => true,
        [l, b'[', d, ..] if is_level(*l) && d.is_ascii_digit() => true,
        [a, b, c, d, b'-', ..] => [a, b, c, d].iter().all(|x| x.is_ascii_digit()),
        _ => false,
    }
}

impl Finders {
    fn line<'a>(&self, line: &'a [u8]) -> Line<'a> {
        match line.first() {
            None => Line::Blank,
            Some(b'{') => self.json(line, None),
            Some(&c) if is_level(c) && line.get(1) == Some(&b'[') => self.plain(line, None),
            Some(c) if c.is_ascii_digit() => self.tracing_plain(line, None),
            Some(_) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    return Line::Blank;
                }
                self.prefixed(line)
            }
        }
    }

    /// A record after a prefix: docker compose `name  | `, kubectl
    /// `[pod/name/container] ` (both name the node), or anything else before
    /// `I[`/`{`/a stamp (e.g. journald's; names nothing).
    fn prefixed<'a>(&self, line: &'a [u8]) -> Line<'a> {
        let named = |name: &'a [u8], rest: &'a [u8]| -> Option<(Option<&'a str>, &'a [u8])> {
            let rest = rest.trim_ascii_start();
            if !starts_record(rest) {
                return None;
            }
            Some((utf8(trim_ascii_space(name)), rest))
        };
        let found = (|| {
            if let Some(p) = memchr::memchr(b'|', &line[..line.len().min(128)]) {
                if let Some(r) = named(&line[..p], &line[p + 1..]) {
                    return Some(r);
                }
            }
            if line[0] == b'[' {
                if let Some(p) = memchr::memchr(b']', &line[..line.len().min(256)]) {
                    let inner = &line[1..p];
                    let name = inner
                        .rsplit(|&c| c == b'/')
                        .nth(1)
                        .filter(|_| inner.contains(&b'/'))
                        .unwrap_or(inner);
                    if let Some(r) = named(name, &line[p + 1..]) {
                        return Some(r);
                    }
                }
            }
            // Anything else: find a record start after a space.
            let mut from = 0;
            while let Some(p) = memchr::memchr(b' ', &line[from..]) {
                let at = from + p + 1;
                if starts_record(&line[at..]) {
                    return Some((None, &line[at..]));
                }
                from = at;
            }
            None
        })();
        match found {
            Some((node, rest)) => match rest[0] {
                b'{' => self.json(rest, node),
                c if is_level(c) => self.plain(rest, node),
                _ => self.tracing_plain(rest, node),
            },
            None => Line::Foreign,
        }
    }

    fn plain<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
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
        for (k, v) in (Kvs { s: kvs, i: 0 }) {
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
            time,
            tm_event(kind, capitalized, &f, network),
        )
    }

    fn json<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
        let line = line.trim_ascii_end();
        let Some(p) = self.json_msg.find(line) else {
            if self.tracing_target.find(line).is_some() {
                return self.tracing_json(line, node);
            }
            return if line.last() == Some(&b'}') {
                Line::Foreign
            } else {
                Line::Malformed(Malformed::Truncated)
            };
        };
        let msg = &line[p + 8..];
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
            time,
            tm_event(kind, capitalized, &f, network),
        )
    }

    /// tracing-subscriber's plain line: `STAMP LEVEL [spans:] target: message k=v…`.
    fn tracing_plain<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
        let Some(sp) = memchr::memchr(b' ', line) else {
            return Line::Foreign;
        };
        let Some(time) = time::parse_rfc3339(&line[..sp]) else {
            return Line::Foreign;
        };
        let rest = &line[sp..];
        let Some(p) = self.abcid_plain_target.find(rest) else {
            return Line::Other(Format::TracingPlain);
        };
        let Some(kvs) = rest[p + 14..].strip_prefix(b"block committed") else {
            return Line::Other(Format::TracingPlain);
        };
        let mut a = AbcidFields::default();
        for (k, v) in (Kvs { s: kvs, i: 0 }) {
            a.take(k, JVal::Str(v));
        }
        done(Format::TracingPlain, node, time, a.event())
    }

    /// tracing-subscriber's JSON line, nested (`"fields":{…}`) or flattened.
    fn tracing_json<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
        let mut a = AbcidFields::default();
        let mut ts = None;
        let mut nested = None;
        let mut obj = JObj::new(line);
        for (k, v) in obj.by_ref() {
            match k {
                b"timestamp" => ts = v.bytes(),
                b"fields" => {
                    if let JVal::Obj(o) = v {
                        nested = Some(o);
                    }
                }
                b"target" => a.target_ok = v.bytes() == Some(b"abcid::block"),
                _ => a.take(k, v),
            }
        }
        if obj.bad {
            return Line::Malformed(Malformed::Truncated);
        }
        if let Some(o) = nested {
            let mut inner = JObj::new(o);
            for (k, v) in inner.by_ref() {
                a.take(k, v);
            }
            if inner.bad {
                return Line::Malformed(Malformed::Truncated);
            }
        }
        if !a.target_ok || !a.message_ok {
            // Another tracing line (of abcid or any tracing-subscriber app).
            return if ts.is_some() {
                Line::Other(Format::TracingJson)
            } else {
                Line::Foreign
            };
        }
        let Some(time) = ts.and_then(time::parse_rfc3339) else {
            return Line::Malformed(Malformed::BadTimestamp);
        };
        done(Format::TracingJson, node, time, a.event())
    }
}

#[derive(Default)]
struct AbcidFields<'a> {
    height: Option<u64>,
    txs: Option<u64>,
    valid: Option<u64>,
    invalid: Option<u64>,
    block_time: Option<&'a [u8]>,
    target_ok: bool,
    message_ok: bool,
    bad: Option<&'static str>,
}

impl<'a> AbcidFields<'a> {
    fn take(&mut self, key: &[u8], v: JVal<'a>) {
        let mut num = |name: &'static str, slot: &mut Option<u64>| match v.u64() {
            Some(n) => *slot = Some(n),
            None => self.bad = Some(name),
        };
        match key {
            b"height" => num("height", &mut self.height),
            b"txs" => num("txs", &mut self.txs),
            b"valid" => num("valid", &mut self.valid),
            b"invalid" => num("invalid", &mut self.invalid),
            b"block_time" => self.block_time = v.bytes(),
            b"message" => self.message_ok = v.bytes() == Some(b"block committed"),
            _ => {}
        }
    }

    fn event(&self) -> Result<Option<Event<'a>>, Malformed> {
        if let Some(k) = self.bad {
            return Err(Malformed::BadValue(k));
        }
        let height = self.height.ok_or(Malformed::MissingField("height"))?;
        let valid = self.valid.ok_or(Malformed::MissingField("valid"))?;
        let invalid = self.invalid.ok_or(Malformed::MissingField("invalid"))?;
        let sum = valid
            .checked_add(invalid)
            .ok_or(Malformed::BadValue("valid"))?;
        let txs = self.txs.unwrap_or(sum);
        if txs != sum {
            return Err(Malformed::BadValue("txs"));
        }
        let bt = self
            .block_time
            .ok_or(Malformed::MissingField("block_time"))?;
        let block_time = time::parse_rfc3339(bt).ok_or(Malformed::BadValue("block_time"))?;
        Ok(Some(Event::Abcid {
            height,
            txs,
            valid,
            invalid,
            block_time,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(p: &mut Parser, l: &str) -> Option<(Event<'static>, Option<String>, Format)> {
        match p.parse(l.as_bytes()) {
            Line::Event(r) => {
                let e = match r.event {
                    Event::Version(v) => Event::Version(Box::leak(v.to_string().into_boxed_str())),
                    Event::Network(v) => Event::Network(Box::leak(v.to_string().into_boxed_str())),
                    Event::CommitDecided { height, txs } => Event::CommitDecided { height, txs },
                    Event::Executed {
                        height,
                        valid,
                        invalid,
                        replay,
                    } => Event::Executed {
                        height,
                        valid,
                        invalid,
                        replay,
                    },
                    Event::Finalized {
                        height,
                        txs,
                        capitalized,
                    } => Event::Finalized {
                        height,
                        txs,
                        capitalized,
                    },
                    Event::StateCommitted { height, txs } => Event::StateCommitted { height, txs },
                    Event::Abcid {
                        height,
                        txs,
                        valid,
                        invalid,
                        block_time,
                    } => Event::Abcid {
                        height,
                        txs,
                        valid,
                        invalid,
                        block_time,
                    },
                };
                Some((e, r.node.map(str::to_string), r.format))
            }
            _ => None,
        }
    }

    // Lines below are copied from the fixture runs (tests/fixtures/README.md).
    const TM034_EXEC: &str = "I[2026-11-21|20:32:26.794] executed block                               module=state height=3 num_valid_txs=6 num_invalid_txs=1";
    const CB038_FIN: &str = "I[2026-11-21|20:31:30.505] finalized block                              module=state height=1 num_txs_res=7 num_val_updates=0 block_app_hash=0E00000000000000";
    const CB100_FIN: &str = "I[2026-11-21|20:35:23.591] Finalized block                              module=state height=1 num_txs_res=7 num_val_updates=0 block_app_hash=0E00000000000000 syncing_to_height=1";

    #[test]
    fn plain_messages_of_each_version() {
        let mut p = Parser::new();
        assert_eq!(
            ev(&mut p, TM034_EXEC).map(|e| e.0),
            Some(Event::Executed {
                height: 3,
                valid: 6,
                invalid: 1,
                replay: false
            })
        );
        assert_eq!(
            ev(&mut p, CB038_FIN).map(|e| e.0),
            Some(Event::Finalized {
                height: 1,
                txs: 7,
                capitalized: false
            })
        );
        assert_eq!(
            ev(&mut p, CB100_FIN).map(|e| e.0),
            Some(Event::Finalized {
                height: 1,
                txs: 7,
                capitalized: true
            })
        );
        // Handshake replay after a restart logs from module=consensus.
        let replay = "I[2026-11-21|20:32:16.357] executed block                               module=consensus height=1 num_valid_txs=7 num_invalid_txs=0";
        assert!(matches!(
            ev(&mut p, replay).map(|e| e.0),
            Some(Event::Executed { replay: true, .. })
        ));
        // 0.38's `executed block` has no counts: nothing new, but well-formed.
        let exec038 = "I[2026-11-21|20:31:30.505] executed block                               module=state height=1 app_hash=0E00000000000000";
        assert_eq!(p.parse(exec038.as_bytes()), Line::Other(Format::Plain));
    }

    #[test]
    fn generalises_beyond_the_fixtures() {
        let mut p = Parser::new();
        let want = Some(Event::Finalized {
            height: 1,
            txs: 7,
            capitalized: false,
        });
        // CRLF, extra and reordered key/values, another module name, quoted values.
        let variants = [
            format!("{CB038_FIN}\r\n"),
            "I[2026-11-21|20:31:30.505] finalized block                              num_txs_res=7 chain=\"my chain\" module=state/exec height=1 extra=\"a \\\"q\\\" b\"".to_string(),
            format!("\x1b[32m{CB038_FIN}\x1b[0m"),
        ];
        for v in &variants {
            assert_eq!(ev(&mut p, v).map(|e| e.0), want, "{v:?}");
        }
        // Docker compose and kubectl prefixes name the node; journald's names nothing.
        let (e, node, _) =
            ev(&mut p, &format!("validator-3  | {CB038_FIN}")).expect("compose line");
        assert_eq!((Some(e), node.as_deref()), (want, Some("validator-3")));
        let (_, node, _) =
            ev(&mut p, &format!("\x1b[36mnode1 |\x1b[0m {CB038_FIN}")).expect("coloured compose");
        assert_eq!(node.as_deref(), Some("node1"));
        let (_, node, _) =
            ev(&mut p, &format!("[pod/val-0/cometbft] {CB038_FIN}")).expect("kubectl line");
        assert_eq!(node.as_deref(), Some("val-0"));
        let (_, node, _) = ev(
            &mut p,
            &format!("Nov 21 20:31:30 host cometbft[812]: {CB038_FIN}"),
        )
        .expect("journald line");
        assert_eq!(node, None);
    }

    #[test]
    fn bad_lines_are_classified_not_fatal() {
        let mut p = Parser::new();
        assert_eq!(p.parse(b""), Line::Blank);
        assert_eq!(p.parse(b"   \r\n"), Line::Blank);
        assert_eq!(
            p.parse(b"panic: runtime error: index out of range"),
            Line::Foreign
        );
        assert_eq!(p.parse(b"\xff\xfe garbage \x00"), Line::Foreign);
        assert_eq!(
            p.parse(b"I[2026-11-21|20:31"),
            Line::Malformed(Malformed::Truncated)
        );
        let cut = &CB038_FIN[..CB038_FIN.find("num_txs_res").expect("field") + 5];
        assert_eq!(
            p.parse(cut.as_bytes()),
            Line::Malformed(Malformed::MissingField("num_txs_res"))
        );
        let bad = CB038_FIN.replace("height=1", "height=1x");
        assert_eq!(
            p.parse(bad.as_bytes()),
            Line::Malformed(Malformed::BadValue("height"))
        );
        let bad_ts = CB038_FIN.replace("20:31:30.505", "20:31:30,505");
        assert_eq!(
            p.parse(bad_ts.as_bytes()),
            Line::Malformed(Malformed::BadTimestamp)
        );
        // A longer message that starts like ours is not ours.
        let other = "I[2026-11-21|20:31:30.505] finalized block with a longer message    height=1";
        assert_eq!(p.parse(other.as_bytes()), Line::Other(Format::Plain));
        let json_cut =
            r#"{"_msg":"finalized block","block_app_hash":"0E00000000000000","height":1,"lev"#;
        assert_eq!(
            p.parse(json_cut.as_bytes()),
            Line::Malformed(Malformed::Truncated)
        );
        assert_eq!(p.parse(br#"{"some":"other json"}"#), Line::Foreign);
        let overflow = CB038_FIN.replace("height=1", "height=99999999999999999999999");
        assert_eq!(
            p.parse(overflow.as_bytes()),
            Line::Malformed(Malformed::BadValue("height"))
        );
    }

    #[test]
    fn json_lines_any_key_order_and_fraction() {
        let mut p = Parser::new();
        let real = r#"{"_msg":"finalized block","block_app_hash":"0E00000000000000","height":1,"level":"info","module":"state","num_txs_res":7,"num_val_updates":0,"ts":"2026-11-21T20:32:45.883765751Z"}"#;
        let reordered = r#"{ "ts" : "2026-11-21T20:32:45.8Z", "height": "1", "extra": {"a": [1, {"b": "}"}]}, "num_txs_res": 7, "_msg":"finalized block" }"#;
        for l in [real, reordered] {
            let (e, _, f) = ev(&mut p, l).expect("event");
            assert_eq!(f, Format::Json);
            assert_eq!(
                e,
                Event::Finalized {
                    height: 1,
                    txs: 7,
                    capitalized: false
                }
            );
        }
        let started = r#"{"_msg":"Started node","level":"info","module":"main","nodeInfo":{"protocol_version":{"p2p":8,"block":11,"app":1},"id":"f7ad","network":"test-chain-65GWbL","version":"0.38.17","other":{"tx_index":"on"}},"ts":"2026-11-21T20:32:45.508567446Z"}"#;
        assert_eq!(
            ev(&mut p, started).map(|e| e.0),
            Some(Event::Network("test-chain-65GWbL"))
        );
    }

    #[test]
    fn abcid_contract_examples() {
        // The examples of docs/abcid-log-format.md, with a full-length app hash.
        let hash = format!("0x{}", "5f0c".repeat(16));
        let plain = format!(
            "2026-11-21T20:30:00.123456Z  INFO abcid::block: block committed height=123 txs=500 valid=498 invalid=2 finalize_ms=12.345 commit_ms=3.210 block_time=2026-11-21T20:29:59.987654321Z app_hash={hash}"
        );
        let json = format!(
            r#"{{"timestamp":"2026-11-21T20:30:00.123456Z","level":"INFO","fields":{{"message":"block committed","height":123,"txs":500,"valid":498,"invalid":2,"finalize_ms":"12.345","commit_ms":"3.210","block_time":"2026-11-21T20:29:59.987654321Z","app_hash":"{hash}"}},"target":"abcid::block"}}"#
        );
        let mut p = Parser::new();
        for (l, fmt) in [(plain, Format::TracingPlain), (json, Format::TracingJson)] {
            let (e, _, f) = ev(&mut p, &l).expect("abcid event");
            assert_eq!(f, fmt);
            let Event::Abcid {
                height,
                txs,
                valid,
                invalid,
                block_time,
            } = e
            else {
                panic!("not an abcid event: {e:?}");
            };
            assert_eq!((height, txs, valid, invalid), (123, 500, 498, 2));
            assert_eq!(
                block_time,
                time::parse_rfc3339(b"2026-11-21T20:29:59.987654321Z").expect("stamp")
            );
        }
        // Another abcid target or message is a well-formed line of no interest.
        let other_json = r#"{"timestamp":"2026-11-21T20:54:31.055630Z","level":"INFO","fields":{"message":"unrelated line"},"target":"abcid::rpc"}"#;
        assert_eq!(
            p.parse(other_json.as_bytes()),
            Line::Other(Format::TracingJson)
        );
        let other = "2026-11-21T20:30:00.123456Z  INFO abcid::rpc: listening addr=127.0.0.1:8545";
        assert_eq!(p.parse(other.as_bytes()), Line::Other(Format::TracingPlain));
        let wrong_sum = "2026-11-21T20:30:00Z  INFO abcid::block: block committed height=1 txs=3 valid=1 invalid=1 block_time=2026-11-21T20:30:00Z";
        assert_eq!(
            p.parse(wrong_sum.as_bytes()),
            Line::Malformed(Malformed::BadValue("txs"))
        );
    }
}

//! Cosmos SDK application lines. An SDK app logs CometBFT's messages (and
//! its own) through the SDK logger (zerolog), in one of two shapes:
//!
//! * console (the default): `TIME LVL message k=v…`, fields sorted by key,
//!   string values with spaces quoted. `TIME` is Go's `time.Kitchen`
//!   (`4:53AM`: no date, no seconds) unless the app chose another layout,
//!   and may be absent; `LVL` is `TRC`/`DBG`/`INF`/`WRN`/`ERR`/`FTL`/`PNC`.
//!   Colour codes (on by default, `--log_no_color` turns them off) are
//!   stripped before this module sees the line.
//! * JSON (`--log_format json`): one object per line, keyed by `level`,
//!   `time` (RFC 3339), `message` and the message's fields (`height`, …).
//!
//! The messages read are CometBFT's, as for a bare node ([`super::tendermint`]).
//! A console stamp without a date gives a record without a time: no day is
//! guessed (block times then come from the RPC).

use memchr::memmem::Finder;

use super::event::{done, Format, Line, Malformed};
use super::scan::{parse_u64, JObj, JVal, Kvs};
use super::tendermint::{classify, tm_event, Fields};
use feth_comet::time::{self, Civil};

/// zerolog's console level names.
const LEVELS: [&[u8]; 8] = [
    b"TRC", b"DBG", b"INF", b"WRN", b"ERR", b"FTL", b"PNC", b"???",
];
/// Longest time text before the level (Go's `time.RFC1123Z` with a long
/// zone, or RFC 3339 with nanoseconds and an offset, stay below this).
const MAX_STAMP: usize = 40;

/// Whether a level name starts at `i` of `s`, followed by a space or the end.
#[inline]
pub(super) fn level_at(s: &[u8], i: usize) -> bool {
    s.get(i..i + 3).is_some_and(|l| LEVELS.contains(&l))
        && matches!(s.get(i + 3), None | Some(b' '))
}

/// Where the level of a zerolog console line starts, if `s` is one: at 0
/// (timestamps off), or after a time text of at most [`MAX_STAMP`] bytes
/// holding a digit and a `:` (every Go time layout has them) and one space.
/// `stamped` demands the time text (used after an unknown prefix, where a
/// bare level name could be any word).
pub(super) fn console_level(s: &[u8], stamped: bool) -> Option<usize> {
    if !stamped && level_at(s, 0) {
        return Some(0);
    }
    let head = &s[..s.len().min(MAX_STAMP + 1)];
    let mut from = 1;
    while let Some(p) = memchr::memchr(b' ', head.get(from..)?) {
        let sp = from + p;
        if level_at(s, sp + 1) {
            let stamp = &s[..sp];
            let timeish = stamp.contains(&b':') && stamp.iter().any(u8::is_ascii_digit);
            return timeish.then_some(sp + 1);
        }
        from = sp + 1;
    }
    None
}

/// The date and time of a console stamp: RFC 3339 (the whole text or its
/// last word) is dated; anything else (`4:53AM`, `15:04:05`) is not.
/// A stamp that starts like an RFC 3339 date but is not one is an error.
fn console_time(stamp: &[u8]) -> Result<Option<Civil>, Malformed> {
    let last = stamp.rsplit(|&c| c == b' ').next().unwrap_or(stamp);
    for s in [stamp, last] {
        if let Some(c) = time::parse_rfc3339(s) {
            return Ok(Some(c));
        }
    }
    let dated = |s: &[u8]| s.len() > 4 && s[..4].iter().all(u8::is_ascii_digit) && s[4] == b'-';
    if dated(last) {
        return Err(Malformed::BadTimestamp);
    }
    Ok(None)
}

/// Whether `rest` (what follows a known message) is empty or starts with a
/// `key=value` field: otherwise the message only starts like ours.
fn fields_follow(rest: &[u8]) -> bool {
    match rest {
        [] => true,
        [b' ', tail @ ..] => {
            let word = tail.split(|&c| c == b' ').next().unwrap_or_default();
            word.len() > 1 && word[1..].contains(&b'=')
        }
        _ => false,
    }
}

/// Reads Cosmos SDK (zerolog) console and JSON lines.
pub(super) struct SdkLines {
    json_message: Finder<'static>,
    json_network: Finder<'static>,
}

impl SdkLines {
    pub(super) fn new() -> Self {
        Self {
            json_message: Finder::new(b"\"message\":\"").into_owned(),
            json_network: Finder::new(b"\"network\":\"").into_owned(),
        }
    }

    /// The chain id in a `nodeInfo` value (zerolog writes it as JSON).
    fn network<'a>(&self, v: &'a [u8]) -> Option<&'a [u8]> {
        let p = self.json_network.find(v)?;
        let rest = &v[p + 11..];
        memchr::memchr(b'"', rest).map(|e| &rest[..e])
    }

    /// A console line whose level starts at `level` ([`console_level`]).
    pub(super) fn console<'a>(
        &self,
        line: &'a [u8],
        level: usize,
        node: Option<&'a str>,
    ) -> Line<'a> {
        let msg = line.get(level + 4..).unwrap_or_default();
        let Some((kind, len, capitalized)) = classify(msg) else {
            return Line::Other(Format::SdkConsole);
        };
        let kvs = &msg[len..];
        if !fields_follow(kvs) {
            return Line::Other(Format::SdkConsole);
        }
        let time = match console_time(line[..level].trim_ascii_end()) {
            Ok(t) => t,
            Err(m) => return Line::Malformed(m),
        };
        let mut f = Fields::default();
        let mut network = None;
        for (k, v) in Kvs::new(kvs) {
            if k == b"nodeInfo" {
                network = self.network(v);
                continue;
            }
            f.take(k, parse_u64(v), Some(v));
        }
        done(
            Format::SdkConsole,
            node,
            time,
            tm_event(kind, capitalized, &f, network),
        )
    }

    /// A JSON record (trimmed) with a `message`, else `None`.
    pub(super) fn json<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Option<Line<'a>> {
        let p = self.json_message.find(line)?;
        let msg = &line[p + 11..];
        let Some((kind, _, capitalized)) =
            classify(msg).filter(|(_, len, _)| msg.get(*len) == Some(&b'"'))
        else {
            return Some(if line.last() == Some(&b'}') {
                Line::Other(Format::SdkJson)
            } else {
                Line::Malformed(Malformed::Truncated)
            });
        };
        let mut f = Fields::default();
        let mut stamp = None;
        let mut network = None;
        let mut obj = JObj::new(line);
        for (k, v) in obj.by_ref() {
            match (k, v) {
                (b"time", JVal::Str(s)) => stamp = Some(s),
                (b"nodeInfo" | b"node_info", JVal::Obj(o)) => network = self.network(o),
                _ => f.take(k, v.u64(), v.bytes()),
            }
        }
        if obj.bad {
            return Some(Line::Malformed(Malformed::Truncated));
        }
        // zerolog's default `time` is RFC 3339; a logger without timestamps
        // (or with Unix numbers) leaves the record undated.
        let time = match stamp {
            Some(s) => match time::parse_rfc3339(s) {
                Some(c) => Some(c),
                None => return Some(Line::Malformed(Malformed::BadTimestamp)),
            },
            None => None,
        };
        Some(done(
            Format::SdkJson,
            node,
            time,
            tm_event(kind, capitalized, &f, network),
        ))
    }
}

//! Line framing: colour codes stripped, prefixes (docker compose, kubectl,
//! journald) read, and each record sent to the parser of its format.

use super::abcid;
use super::event::{Line, Malformed};
use super::scan::utf8;
use super::sdk;
use super::tendermint;

/// Removes ANSI escape sequences (CSI `ESC [ … final` and two-byte `ESC x`).
pub(super) fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
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

/// Reads a line's frame and hands the record to its format's parser.
pub(super) struct Framing {
    tendermint: tendermint::Messages,
    abcid: abcid::BlockLines,
    sdk: sdk::SdkLines,
}

#[inline]
fn is_level(c: u8) -> bool {
    matches!(c, b'I' | b'D' | b'E' | b'W')
}

/// Whether a record starts at `s` (no prefix handling). `strict` (after a
/// prefix of unknown shape): a JSON record must open with a key (`{"`, not
/// e.g. a Go stack trace's `{0x4ee0750, …}`), and a Cosmos SDK console
/// record must carry its time (see [`sdk::console_level`]).
#[inline]
fn starts_record(s: &[u8], strict: bool) -> bool {
    match s {
        [b'{', b'"', ..] => true,
        [b'{', ..] => !strict,
        [l, b'[', d, ..] if is_level(*l) && d.is_ascii_digit() => true,
        [a, b, c, d, b'-', ..] if [a, b, c, d].iter().all(|x| x.is_ascii_digit()) => true,
        _ => sdk::console_level(s, strict).is_some(),
    }
}

impl Framing {
    pub(super) fn new() -> Self {
        Self {
            tendermint: tendermint::Messages::new(),
            abcid: abcid::BlockLines::new(),
            sdk: sdk::SdkLines::new(),
        }
    }

    /// What `line` (without its line break) is.
    pub(super) fn line<'a>(&self, line: &'a [u8]) -> Line<'a> {
        match line.first() {
            None => Line::Blank,
            Some(b'{') => self.json(line, None),
            Some(&c) if is_level(c) && line.get(1) == Some(&b'[') => {
                self.tendermint.plain(line, None)
            }
            Some(c) if c.is_ascii_digit() => match sdk::console_level(line, true) {
                Some(at) => self.sdk.console(line, at, None),
                None => self.abcid.plain(line, None),
            },
            Some(_) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    return Line::Blank;
                }
                // A Cosmos SDK console line without a timestamp.
                if sdk::level_at(line, 0) {
                    return self.sdk.console(line, 0, None);
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
            if !starts_record(rest, false) {
                return None;
            }
            Some((utf8(name.trim_ascii()), rest))
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
                if starts_record(&line[at..], true) {
                    return Some((None, &line[at..]));
                }
                from = at;
            }
            None
        })();
        match found {
            Some((node, rest)) => match rest {
                [b'{', ..] => self.json(rest, node),
                [c, b'[', ..] if is_level(*c) => self.tendermint.plain(rest, node),
                _ => match sdk::console_level(rest, false) {
                    Some(at) => self.sdk.console(rest, at, node),
                    None => self.abcid.plain(rest, node),
                },
            },
            None => Line::Foreign,
        }
    }

    /// A JSON record: Tendermint/CometBFT's (`_msg`), tracing-subscriber's
    /// (`target`) or the Cosmos SDK logger's (`message`).
    fn json<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
        let line = line.trim_ascii_end();
        if let Some(l) = self.tendermint.json(line, node) {
            return l;
        }
        if self.abcid.is_tracing_json(line) {
            return self.abcid.json(line, node);
        }
        if let Some(l) = self.sdk.json(line, node) {
            return l;
        }
        if line.last() == Some(&b'}') {
            Line::Foreign
        } else {
            Line::Malformed(Malformed::Truncated)
        }
    }
}

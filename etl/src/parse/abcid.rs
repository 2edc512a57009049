//! abcid's per-block line (`block committed`), as tracing-subscriber writes
//! it: plain (`STAMP LEVEL abcid::block: block committed k=v…`) or JSON.

use memchr::memmem::Finder;

use super::event::{done, Event, Format, Line, Malformed};
use super::scan::{JObj, JVal, Kvs};
use feth_comet::time;

/// Finds abcid's per-block lines.
pub(super) struct BlockLines {
    tracing_target: Finder<'static>,
    abcid_plain_target: Finder<'static>,
}

impl BlockLines {
    pub(super) fn new() -> Self {
        Self {
            tracing_target: Finder::new(b"\"target\":").into_owned(),
            abcid_plain_target: Finder::new(b"abcid::block: ").into_owned(),
        }
    }

    /// Whether a JSON record is tracing-subscriber's (it has a `target`).
    pub(super) fn is_tracing_json(&self, line: &[u8]) -> bool {
        self.tracing_target.find(line).is_some()
    }

    /// tracing-subscriber's plain line: `STAMP LEVEL [spans:] target: message k=v…`.
    pub(super) fn plain<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
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
        for (k, v) in Kvs::new(kvs) {
            a.take(k, JVal::Str(v));
        }
        done(Format::TracingPlain, node, Some(time), a.event())
    }

    /// tracing-subscriber's JSON line, nested (`"fields":{…}`) or flattened.
    pub(super) fn json<'a>(&self, line: &'a [u8], node: Option<&'a str>) -> Line<'a> {
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
        done(Format::TracingJson, node, Some(time), a.event())
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

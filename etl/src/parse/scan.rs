//! Byte scanners shared by the line formats: decimal numbers, plain
//! `key=value` pairs and JSON objects, all borrowed from the line.

/// Parses a decimal u64 (no sign, no spaces, at most 20 digits).
#[inline]
pub(super) fn parse_u64(b: &[u8]) -> Option<u64> {
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

/// Iterates `key=value` pairs of a plain line; values may be `"quoted"`.
pub(super) struct Kvs<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Kvs<'a> {
    /// The pairs of `s`.
    pub(super) fn new(s: &'a [u8]) -> Self {
        Self { s, i: 0 }
    }
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
pub(super) enum JVal<'a> {
    Str(&'a [u8]),
    Num(&'a [u8]),
    Obj(&'a [u8]),
    Other,
}

impl<'a> JVal<'a> {
    pub(super) fn u64(self) -> Option<u64> {
        match self {
            JVal::Num(b) | JVal::Str(b) => parse_u64(b),
            _ => None,
        }
    }

    pub(super) fn bytes(self) -> Option<&'a [u8]> {
        match self {
            JVal::Str(b) => Some(b),
            _ => None,
        }
    }
}

/// Iterates the members of one JSON object, skipping nested values.
pub(super) struct JObj<'a> {
    s: &'a [u8],
    i: usize,
    /// Not an object, or cut short: iteration stopped early.
    pub(super) bad: bool,
}

impl<'a> JObj<'a> {
    /// `s` must start with `{` (after optional whitespace).
    pub(super) fn new(s: &'a [u8]) -> Self {
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

/// `b` as a non-empty UTF-8 string.
pub(super) fn utf8(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b).ok().filter(|s| !s.is_empty())
}

//! A sans-I/O RESP2 request parser and reply encoder (the Redis serialization protocol,
//! <https://redis.io/docs/reference/protocol-spec/>).
//!
//! Requests come in the two forms the spec describes: *multibulk* arrays of bulk strings
//! (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and *inline* commands (`GET k\r\n`, split on blanks with
//! the quoting rules of `redis-cli`: `"..."` with `\n \r \t \b \a \xHH` escapes, `'...'` with
//! `\'`). Many requests may share one buffer (pipelining) and a request may arrive in pieces;
//! the parser keeps its position and resumes.
//!
//! The parser reproduces Redis 7.0's reading of malformed input byte for byte (its
//! `processInlineBuffer` / `processMultibulkBuffer`), because clients and tests see the
//! difference: the same `-ERR Protocol error: ...` replies, the same leniencies (a length line
//! ends at the first `\r`, the byte after it is not checked; the two bytes after a bulk are
//! not checked; a zero or negative multibulk count is an empty request), and the same quirk
//! that a NUL byte hides the line end that follows it. A protocol error is final: the
//! connection gets the error reply and is closed, as Redis does.
//!
//! Memory stays bounded: a line without its end may grow to [`ProtoLimits::max_inline_len`]
//! before it is refused, a bulk may announce at most [`ProtoLimits::max_bulk_len`] bytes, an
//! array at most [`ProtoLimits::max_multibulk_len`] elements, and everything buffered for one
//! connection (unparsed bytes plus the arguments of the request being read) at most
//! [`ProtoLimits::max_query_buffer`].

use std::fmt;

/// Limits on what one connection may send (Redis's `proto-max-bulk-len`,
/// `client-query-buffer-limit` and its inline size limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtoLimits {
    /// Largest bulk string a request may announce (`$<len>`); larger is
    /// `-ERR Protocol error: invalid bulk length`. Redis's `proto-max-bulk-len`: 512 MB.
    pub max_bulk_len: u64,
    /// Longest line kept while its end has not arrived: an inline request, or the `*<n>` /
    /// `$<len>` line of a multibulk one. Beyond it: `too big inline request` (or `too big
    /// mbulk count string` / `too big bulk count string`). Redis uses 64 KB; default 1 MB.
    pub max_inline_len: usize,
    /// Most elements a multibulk request may announce (`*<n>`); more is `invalid multibulk
    /// length`. Redis 7.0 accepts up to `INT_MAX`.
    pub max_multibulk_len: u64,
    /// Most bytes buffered for one connection: unparsed input plus the arguments of the
    /// request being assembled. Beyond it the connection is closed without a reply, as Redis
    /// does past `client-query-buffer-limit` (1 GB).
    pub max_query_buffer: usize,
}

impl Default for ProtoLimits {
    fn default() -> Self {
        ProtoLimits {
            max_bulk_len: 512 << 20,
            max_inline_len: 1 << 20,
            max_multibulk_len: i32::MAX as u64,
            max_query_buffer: 1 << 30,
        }
    }
}

/// A protocol error: the request stream cannot be read further. [`ProtoError::reply`] is what
/// Redis answers before closing the connection (`None`: it closes without a reply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtoError {
    /// An inline request longer than the inline limit without its `\n`.
    TooBigInline,
    /// A `*<n>` line longer than the inline limit without its `\r`.
    TooBigMbulkCount,
    /// A `$<len>` line longer than the inline limit without its `\r`.
    TooBigBulkCount,
    /// `*<n>` where `n` is not an integer or too large.
    InvalidMultibulkLength,
    /// An element of a multibulk request that does not start with `$` (the byte found).
    ExpectedDollar(u8),
    /// `$<len>` where `len` is not an integer, negative or too large.
    InvalidBulkLength,
    /// An inline request with unbalanced quotes, or a closing quote not followed by a blank.
    UnbalancedQuotes,
    /// More buffered than [`ProtoLimits::max_query_buffer`] (closed without a reply).
    QueryBufferLimit,
}

impl ProtoError {
    /// The error reply Redis sends for this error, if any (it then closes the connection).
    pub fn reply(&self) -> Option<Vec<u8>> {
        let msg: Vec<u8> = match self {
            ProtoError::TooBigInline => b"Protocol error: too big inline request".to_vec(),
            ProtoError::TooBigMbulkCount => b"Protocol error: too big mbulk count string".to_vec(),
            ProtoError::TooBigBulkCount => b"Protocol error: too big bulk count string".to_vec(),
            ProtoError::InvalidMultibulkLength => {
                b"Protocol error: invalid multibulk length".to_vec()
            }
            ProtoError::ExpectedDollar(c) => {
                let mut m = b"Protocol error: expected '$', got '".to_vec();
                m.push(*c);
                m.push(b'\'');
                m
            }
            ProtoError::InvalidBulkLength => b"Protocol error: invalid bulk length".to_vec(),
            ProtoError::UnbalancedQuotes => {
                b"Protocol error: unbalanced quotes in request".to_vec()
            }
            ProtoError::QueryBufferLimit => return None,
        };
        let mut out = Vec::with_capacity(msg.len() + 8);
        error_fmt(&mut out, &msg);
        Some(out)
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reply() {
            Some(r) => write!(f, "{}", String::from_utf8_lossy(&r[1..r.len() - 2])),
            None => write!(f, "query buffer limit reached"),
        }
    }
}

impl std::error::Error for ProtoError {}

/// One request: its arguments (the command name first).
pub type Args = Vec<Vec<u8>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReqType {
    Unknown,
    Inline,
    Multibulk,
}

/// The incremental request parser of one connection. Feed it bytes with [`Parser::feed`],
/// take complete requests with [`Parser::next_request`].
#[derive(Debug)]
pub struct Parser {
    limits: ProtoLimits,
    buf: Vec<u8>,
    pos: usize,
    /// How far from `pos` a line end was already looked for in vain.
    scanned: usize,
    reqtype: ReqType,
    /// Elements of the current multibulk request still to read.
    multibulk: u64,
    /// Length of the bulk being read, once its `$<len>` line is in.
    bulklen: Option<usize>,
    args: Args,
    args_bytes: usize,
    failed: Option<ProtoError>,
    /// Emptied argument buffers of executed requests ([`Parser::recycle`]), reused for the
    /// next arguments instead of allocating: at most [`SPARE_ARGS`], each of at most
    /// [`SPARE_ARG_CAPACITY`] bytes, so an idle connection holds little.
    spare: Vec<Vec<u8>>,
}

/// Argument buffers a parser keeps for reuse.
const SPARE_ARGS: usize = 8;
/// The largest argument buffer a parser keeps for reuse.
const SPARE_ARG_CAPACITY: usize = 256;

impl Parser {
    /// A parser with limits `limits`.
    pub fn new(limits: ProtoLimits) -> Self {
        Parser {
            limits,
            buf: Vec::new(),
            pos: 0,
            scanned: 0,
            reqtype: ReqType::Unknown,
            multibulk: 0,
            bulklen: None,
            args: Vec::new(),
            args_bytes: 0,
            failed: None,
            spare: Vec::new(),
        }
    }

    /// Takes back the arguments of a request [`Parser::next_request`] returned, once it
    /// was executed, so that the next requests' arguments reuse their buffers (a request's
    /// arguments were each an allocation and a free).
    pub fn recycle(&mut self, mut argv: Args) {
        for mut a in argv.drain(..) {
            if self.spare.len() < SPARE_ARGS && a.capacity() <= SPARE_ARG_CAPACITY {
                a.clear();
                self.spare.push(a);
            }
        }
        if self.args.capacity() == 0 {
            self.args = argv;
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &ProtoLimits {
        &self.limits
    }

    /// Changes the bulk length and query buffer limits (CONFIG SET proto-max-bulk-len,
    /// client-query-buffer-limit); they apply from the next request on.
    pub fn set_limits(&mut self, max_bulk_len: u64, max_query_buffer: usize) {
        self.limits.max_bulk_len = max_bulk_len;
        self.limits.max_query_buffer = max_query_buffer;
    }

    /// Bytes held for this connection: unparsed input plus the arguments of the request
    /// being assembled.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos + self.args_bytes
    }

    /// Room left before [`ProtoLimits::max_query_buffer`] (what a reader may take in now).
    pub fn room(&self) -> usize {
        self.limits.max_query_buffer.saturating_sub(self.buffered())
    }

    /// Appends received bytes. Fails (for good) when the connection would hold more than
    /// [`ProtoLimits::max_query_buffer`]; the bytes are then not kept.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), ProtoError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.buffered().saturating_add(data.len()) > self.limits.max_query_buffer {
            self.failed = Some(ProtoError::QueryBufferLimit);
            return Err(ProtoError::QueryBufferLimit);
        }
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// The next complete request, `Ok(None)` when more input is needed. Empty requests
    /// (a blank inline line, `*0`, `*-1`) are skipped, as Redis does. After an error every
    /// later call returns the same error.
    pub fn next_request(&mut self) -> Result<Option<Args>, ProtoError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let r = self.parse();
        if let Err(e) = r {
            self.failed = Some(e);
            self.buf = Vec::new();
            self.pos = 0;
            self.args = Vec::new();
            self.args_bytes = 0;
        }
        r
    }

    fn parse(&mut self) -> Result<Option<Args>, ProtoError> {
        while self.pos < self.buf.len() {
            if self.reqtype == ReqType::Unknown {
                self.reqtype = if self.buf[self.pos] == b'*' {
                    ReqType::Multibulk
                } else {
                    ReqType::Inline
                };
            }
            let done = match self.reqtype {
                ReqType::Inline => self.inline()?,
                _ => self.multibulk()?,
            };
            if !done {
                break;
            }
            self.reqtype = ReqType::Unknown;
            self.multibulk = 0;
            self.bulklen = None;
            self.args_bytes = 0;
            let args = std::mem::take(&mut self.args);
            if !args.is_empty() {
                return Ok(Some(args));
            }
        }
        if self.pos == self.buf.len() && self.pos > 0 {
            self.buf.clear();
            self.pos = 0;
            self.scanned = 0;
        }
        Ok(None)
    }

    /// Finds `want` from `pos` the way C's `strchr` on Redis's NUL-terminated buffer does:
    /// a NUL byte first means "not found".
    fn find_line_end(&mut self, want: u8) -> Option<usize> {
        let from = self.pos + self.scanned;
        match self.buf[from..].iter().position(|&b| b == want || b == 0) {
            Some(i) if self.buf[from + i] == want => Some(from + i),
            Some(i) => {
                // Everything from the NUL on stays hidden until the request is refused;
                // remember not to scan again.
                self.scanned = from + i - self.pos;
                None
            }
            None => {
                self.scanned = self.buf.len() - self.pos;
                None
            }
        }
    }

    fn advance(&mut self, to: usize) {
        self.pos = to;
        self.scanned = 0;
    }

    fn push_arg(&mut self, a: Vec<u8>) {
        self.args_bytes += a.len();
        self.args.push(a);
    }

    /// Redis's `processInlineBuffer`.
    fn inline(&mut self) -> Result<bool, ProtoError> {
        let Some(nl) = self.find_line_end(b'\n') else {
            if self.buf.len() - self.pos > self.limits.max_inline_len {
                return Err(ProtoError::TooBigInline);
            }
            return Ok(false);
        };
        let mut end = nl;
        if end != self.pos && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        let args = split_args(&self.buf[self.pos..end]).ok_or(ProtoError::UnbalancedQuotes)?;
        self.advance(nl + 1);
        for a in args {
            self.push_arg(a);
        }
        Ok(true)
    }

    /// Redis's `processMultibulkBuffer`.
    fn multibulk(&mut self) -> Result<bool, ProtoError> {
        if self.multibulk == 0 {
            let Some(cr) = self.find_line_end(b'\r') else {
                if self.buf.len() - self.pos > self.limits.max_inline_len {
                    return Err(ProtoError::TooBigMbulkCount);
                }
                return Ok(false);
            };
            // The byte after '\r' must be there (it is not checked to be '\n').
            if cr + 2 > self.buf.len() {
                return Ok(false);
            }
            let n = string2ll(&self.buf[self.pos + 1..cr])
                .filter(|&n| {
                    n <= i32::MAX as i64 && (n <= 0 || n as u64 <= self.limits.max_multibulk_len)
                })
                .ok_or(ProtoError::InvalidMultibulkLength)?;
            self.advance(cr + 2);
            if n <= 0 {
                return Ok(true);
            }
            self.multibulk = n as u64;
        }
        while self.multibulk > 0 {
            let len = match self.bulklen {
                Some(l) => l,
                None => {
                    let Some(cr) = self.find_line_end(b'\r') else {
                        if self.buf.len() - self.pos > self.limits.max_inline_len {
                            return Err(ProtoError::TooBigBulkCount);
                        }
                        return Ok(false);
                    };
                    if cr + 2 > self.buf.len() {
                        return Ok(false);
                    }
                    let c = self.buf[self.pos];
                    if c != b'$' {
                        return Err(ProtoError::ExpectedDollar(c));
                    }
                    let l = string2ll(&self.buf[self.pos + 1..cr])
                        .filter(|&l| l >= 0 && l as u64 <= self.limits.max_bulk_len)
                        .ok_or(ProtoError::InvalidBulkLength)?;
                    let l = usize::try_from(l).map_err(|_| ProtoError::InvalidBulkLength)?;
                    self.advance(cr + 2);
                    self.bulklen = Some(l);
                    l
                }
            };
            if self.buf.len() - self.pos < len.saturating_add(2) {
                return Ok(false);
            }
            let bytes = &self.buf[self.pos..self.pos + len];
            let a = match self.spare.pop() {
                Some(mut a) => {
                    a.extend_from_slice(bytes);
                    a
                }
                None => bytes.to_vec(),
            };
            self.advance(self.pos + len + 2);
            self.push_arg(a);
            self.bulklen = None;
            self.multibulk -= 1;
        }
        Ok(true)
    }
}

/// Redis's `string2ll`: a strict decimal `long long` (no sign but `-`, no leading zeros, no
/// blanks, at most 20 bytes).
pub fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// C's `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Redis's `sdssplitargs`: splits an inline request into arguments. Blanks separate
/// arguments; `"..."` takes the escapes `\xHH \n \r \t \b \a` (any other escaped byte stands
/// for itself); `'...'` takes `\'`; a closing quote must be followed by a blank or the end.
/// `None` on unbalanced quotes. The line stops at a NUL byte (it cannot hold one: the
/// parser never finds a line end past a NUL).
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let at = |i: usize| -> u8 { line.get(i).copied().unwrap_or(0) };
    let mut p = 0usize;
    let mut out = Vec::new();
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq, mut done) = (false, false, false);
        while !done {
            let c = at(p);
            if inq {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && hex_val(at(p + 2)).is_some()
                    && hex_val(at(p + 3)).is_some()
                {
                    let hi = hex_val(at(p + 2)).unwrap_or(0);
                    let lo = hex_val(at(p + 3)).unwrap_or(0);
                    cur.push(hi * 16 + lo);
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        o => o,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => cur.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        out.push(cur);
    }
}

// ---------------------------------------------------------------------------------------
// Reply encoding (RESP2).

/// `+<s>\r\n`: a simple string.
pub fn simple(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'+');
    out.extend_from_slice(s);
    out.extend_from_slice(b"\r\n");
}

/// An error reply, as Redis's `addReplyError`: `-ERR <msg>\r\n`, or `<msg>\r\n` as is when
/// `msg` starts with `-` (it names its own error code, e.g. `-WRONGTYPE ...`).
pub fn error(out: &mut Vec<u8>, msg: &[u8]) {
    if msg.first() != Some(&b'-') {
        out.extend_from_slice(b"-ERR ");
    }
    out.extend_from_slice(msg);
    out.extend_from_slice(b"\r\n");
}

/// An error reply built from user input, as Redis's `addReplyErrorFormat`: line ends at the
/// ends are trimmed and those inside become spaces, so the reply stays one line.
pub fn error_fmt(out: &mut Vec<u8>, msg: &[u8]) {
    let mut s = msg;
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    let clean: Vec<u8> = s
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect();
    error(out, &clean);
}

/// `:<n>\r\n`: an integer.
pub fn int(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    decimal(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal (what `n.to_string()` writes, without its allocation: replies
/// carry a length or a count each).
pub fn decimal(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    let mut v = n.unsigned_abs();
    let mut d = [0u8; 20];
    let mut i = d.len();
    loop {
        i -= 1;
        d[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&d[i..]);
}

/// `$<len>\r\n<bytes>\r\n`: a bulk string.
pub fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'$');
    decimal(out, b.len() as i64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// `$-1\r\n`: the RESP2 null bulk string.
pub fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"$-1\r\n");
}

/// `*<n>\r\n`: the header of an array of `n` elements.
pub fn array_len(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    decimal(out, n as i64);
    out.extend_from_slice(b"\r\n");
}

/// `*-1\r\n`: the RESP2 null array.
pub fn null_array(out: &mut Vec<u8>) {
    out.extend_from_slice(b"*-1\r\n");
}

/// Encodes `args` as a multibulk request (what clients send).
pub fn encode_request<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    array_len(&mut out, args.len());
    for a in args {
        bulk(&mut out, a.as_ref());
    }
    out
}

/// How long the first complete RESP2 or RESP3 reply in `buf` is (`None`: incomplete or
/// malformed); for clients and tests that split a reply stream. RESP3 (what a session gets
/// after `HELLO 3`): the line types null `_`, double `,`, boolean `#` and big number `(`; the
/// blob types verbatim `=` and error `!`, framed as a bulk; the aggregates set `~` and push
/// `>` of n replies, map `%` of 2n, and attribute `|` of 2n followed by the reply it
/// annotates.
pub fn reply_len(buf: &[u8]) -> Option<usize> {
    fn line(buf: &[u8], from: usize) -> Option<usize> {
        buf.get(from..)?
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|i| from + i)
    }
    fn one(buf: &[u8], at: usize, depth: u32) -> Option<usize> {
        if depth > 64 {
            return None;
        }
        let kind = *buf.get(at)?;
        let end = line(buf, at + 1)?;
        let count = || string2ll(&buf[at + 1..end]);
        // The elements of an aggregate of `n` replies, from `p`.
        let elements = |n: i64, mut p: usize| {
            for _ in 0..n.max(0) {
                p = one(buf, p, depth + 1)?;
            }
            Some(p)
        };
        match kind {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(end + 2),
            b'$' | b'=' | b'!' => {
                let n = count()?;
                if n < 0 {
                    return Some(end + 2);
                }
                let stop = end + 2 + n as usize + 2;
                (buf.len() >= stop).then_some(stop)
            }
            b'*' | b'~' | b'>' => elements(count()?, end + 2),
            b'%' => elements(count()?.checked_mul(2)?, end + 2),
            b'|' => one(buf, elements(count()?.checked_mul(2)?, end + 2)?, depth + 1),
            _ => None,
        }
    }
    one(buf, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_writes_what_to_string_does() {
        for n in [
            0,
            1,
            -1,
            9,
            10,
            99,
            100,
            12345,
            -98765,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            let mut out = b"x".to_vec();
            decimal(&mut out, n);
            assert_eq!(&out[1..], n.to_string().as_bytes(), "{n}");
        }
    }

    fn all(p: &mut Parser) -> Result<Vec<Args>, ProtoError> {
        let mut v = Vec::new();
        while let Some(a) = p.next_request()? {
            v.push(a);
        }
        Ok(v)
    }

    fn args(v: &[&str]) -> Args {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn kv_multibulk_pipelined_and_split_anywhere() {
        let stream =
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\nPING\r\n";
        for split in 0..stream.len() {
            let mut p = Parser::new(ProtoLimits::default());
            p.feed(&stream[..split]).unwrap();
            let mut got = all(&mut p).unwrap();
            p.feed(&stream[split..]).unwrap();
            got.extend(all(&mut p).unwrap());
            assert_eq!(
                got,
                vec![
                    args(&["GET", "k"]),
                    args(&["SET", "k", ""]),
                    args(&["PING"])
                ],
                "split at {split}"
            );
            assert_eq!(p.buffered(), 0);
        }
    }

    #[test]
    fn kv_inline_quoting_like_sdssplitargs() {
        assert_eq!(
            split_args(b"set \"a b\\x41\\n\" 'it\\'s'  x").unwrap(),
            vec![
                b"set".to_vec(),
                b"a bA\n".to_vec(),
                b"it's".to_vec(),
                b"x".to_vec()
            ]
        );
        assert_eq!(split_args(b"  ").unwrap(), Vec::<Vec<u8>>::new());
        assert!(split_args(b"\"abc").is_none());
        assert!(split_args(b"\"abc\"d").is_none());
        assert!(split_args(b"'abc").is_none());
        // \v is a blank before a token, but not a separator inside one.
        assert_eq!(split_args(b"\x0ba\x0bb").unwrap(), vec![b"a\x0bb".to_vec()]);
        assert_eq!(split_args(b"\"\\q\"").unwrap(), vec![b"q".to_vec()]);
    }

    #[test]
    fn kv_protocol_errors_word_for_word() {
        let cases: &[(&[u8], &[u8])] = &[
            (
                b"*x\r\n",
                b"-ERR Protocol error: invalid multibulk length\r\n",
            ),
            (
                b"*1\r\nx\r\n",
                b"-ERR Protocol error: expected '$', got 'x'\r\n",
            ),
            (
                b"*1\r\n\r\n",
                b"-ERR Protocol error: expected '$', got ' '\r\n",
            ),
            (
                b"*1\r\n$-1\r\n",
                b"-ERR Protocol error: invalid bulk length\r\n",
            ),
            (
                b"*1\r\n$01\r\n",
                b"-ERR Protocol error: invalid bulk length\r\n",
            ),
            (
                b"GET \"k\r\n",
                b"-ERR Protocol error: unbalanced quotes in request\r\n",
            ),
            (
                b"*3000000000\r\n",
                b"-ERR Protocol error: invalid multibulk length\r\n",
            ),
        ];
        for (input, reply) in cases {
            let mut p = Parser::new(ProtoLimits::default());
            p.feed(input).unwrap();
            let e = p.next_request().unwrap_err();
            assert_eq!(
                e.reply().unwrap(),
                *reply,
                "{:?}",
                String::from_utf8_lossy(input)
            );
            assert_eq!(p.next_request(), Err(e));
        }
    }

    #[test]
    fn kv_limits_refuse_oversized_input() {
        let lim = ProtoLimits {
            max_bulk_len: 10,
            max_inline_len: 16,
            max_multibulk_len: 3,
            max_query_buffer: 64,
        };
        let mut p = Parser::new(lim);
        p.feed(&[b'a'; 17]).unwrap();
        assert_eq!(p.next_request(), Err(ProtoError::TooBigInline));
        let mut p = Parser::new(lim);
        p.feed(b"*1\r\n$11\r\n").unwrap();
        assert_eq!(p.next_request(), Err(ProtoError::InvalidBulkLength));
        let mut p = Parser::new(lim);
        p.feed(b"*4\r\n").unwrap();
        assert_eq!(p.next_request(), Err(ProtoError::InvalidMultibulkLength));
        let mut p = Parser::new(lim);
        p.feed(b"*00000000000000000").unwrap();
        assert_eq!(p.next_request(), Err(ProtoError::TooBigMbulkCount));
        let mut p = Parser::new(lim);
        p.feed(&[b'x'; 65]).unwrap_err();
        assert_eq!(p.next_request(), Err(ProtoError::QueryBufferLimit));
        assert!(ProtoError::QueryBufferLimit.reply().is_none());
    }

    #[test]
    fn kv_empty_requests_are_skipped_and_nul_hides_line_ends() {
        let mut p = Parser::new(ProtoLimits::default());
        p.feed(b"\r\n*0\r\n*-1\r\n   \nPING\r\n").unwrap();
        assert_eq!(all(&mut p).unwrap(), vec![args(&["PING"])]);
        let mut p = Parser::new(ProtoLimits::default());
        p.feed(b"PI\0NG\r\nPING\r\n").unwrap();
        assert_eq!(all(&mut p).unwrap(), Vec::<Args>::new());
        // The byte after a length line's '\r' is not checked.
        let mut p = Parser::new(ProtoLimits::default());
        p.feed(b"*1\rX$4\rYPINGzz").unwrap();
        assert_eq!(all(&mut p).unwrap(), vec![args(&["PING"])]);
    }

    #[test]
    fn kv_string2ll_is_strict() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b"9223372036854775808"[..],
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"-",
        ] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn kv_reply_len_splits_replies() {
        let s = b"+OK\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n-ERR x\r\n";
        assert_eq!(reply_len(s), Some(5));
        assert_eq!(reply_len(&s[5..]), Some(9));
        assert_eq!(reply_len(&s[14..]), Some(13));
        assert_eq!(reply_len(&s[27..]), Some(8));
        assert_eq!(reply_len(b"$3\r\nab"), None);
        // RESP3 (after HELLO 3): a map of 2 pairs, a set, a push, null, double, boolean.
        let m = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n";
        assert_eq!(reply_len(m), Some(m.len()));
        assert_eq!(reply_len(&m[..m.len() - 1]), None);
        let set = b"~2\r\n$1\r\na\r\n$1\r\nb\r\n";
        assert_eq!(reply_len(set), Some(set.len()));
        let push = b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n";
        assert_eq!(reply_len(push), Some(push.len()));
        for line in [
            &b"_\r\n"[..],
            b",1.5\r\n",
            b"#t\r\n",
            b"(12345678901234567890\r\n",
        ] {
            assert_eq!(reply_len(line), Some(line.len()));
        }
        let verbatim = b"=8\r\ntxt:abcd\r\n";
        assert_eq!(reply_len(verbatim), Some(verbatim.len()));
        // An attribute, then the reply it annotates.
        let attr = b"|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n";
        assert_eq!(reply_len(attr), Some(attr.len()));
        assert_eq!(reply_len(b"|1\r\n+ttl\r\n:3600\r\n"), None);
    }
}

//! A sans-I/O, bounded HTTP/1.1 request-head parser (RFC 9112 §2–§3, §5–§6, §9.3), and the
//! head rewrite the proxy does before it forwards a request (one added header field).
//!
//! The parser sees the bytes a client sent so far and answers: the head is not complete yet
//! ([`Parse::Partial`]), it is complete ([`Parse::Complete`] with a [`RequestHead`]), or the
//! request is to be refused ([`Parse::Error`] with the status to answer). It never reads past
//! `max_head` bytes: a head longer than that is refused with 431 (RFC 6585 §5). It never
//! panics on any input (a property test feeds it random bytes).
//!
//! What is checked, as a proxy that forwards the head must (request smuggling is the risk):
//! the request line (`method SP request-target SP HTTP-version`, RFC 9112 §3), each field
//! line (`field-name ":" OWS field-value OWS`, §5, no whitespace before the colon, §5.1, no
//! obs-fold, §5.2), Host (exactly one in HTTP/1.1, §3.2), Content-Length (digits, equal values
//! when repeated, RFC 9110 §8.6), Transfer-Encoding (chunked last, not together with
//! Content-Length, not in HTTP/1.0: RFC 9112 §6.1, §6.3) and Connection (keep-alive defaults
//! of 1.0 and 1.1, §9.3).

use std::fmt::Write as _;

/// The head size limit used when none is configured (16 KiB).
pub const DEFAULT_MAX_HEAD: usize = 16 * 1024;

/// The HTTP version of a request (RFC 9112 §2.3). Only 1.0 and 1.1 are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0: connections close after the response unless `Connection: keep-alive`.
    Http10,
    /// HTTP/1.1: connections persist unless `Connection: close` (RFC 9112 §9.3).
    Http11,
}

impl Version {
    /// The version as it appears on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// Why a request is refused, with the status code the proxy answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// 400 Bad Request: malformed request line or field, or framing the proxy cannot
    /// forward safely. The text says what.
    BadRequest(&'static str),
    /// 431 Request Header Fields Too Large (RFC 6585 §5): the head did not end within the
    /// limit.
    HeadTooLarge,
    /// 505 HTTP Version Not Supported (RFC 9110 §15.6.6): a well-formed version other than
    /// 1.0 and 1.1.
    VersionNotSupported,
}

impl HttpError {
    /// The status code to answer with.
    pub fn status(self) -> u16 {
        match self {
            HttpError::BadRequest(_) => 400,
            HttpError::HeadTooLarge => 431,
            HttpError::VersionNotSupported => 505,
        }
    }

    /// A short explanation for logs and the response body.
    pub fn reason(self) -> &'static str {
        match self {
            HttpError::BadRequest(why) => why,
            HttpError::HeadTooLarge => "request head too large",
            HttpError::VersionNotSupported => "only HTTP/1.0 and HTTP/1.1 are supported",
        }
    }
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// The method token (case-sensitive, RFC 9110 §9.1).
    pub method: String,
    /// The request-target, as sent (RFC 9112 §3.2).
    pub target: String,
    /// The version.
    pub version: Version,
    /// The field lines in order: name as sent, value without surrounding whitespace.
    pub headers: Vec<(String, Vec<u8>)>,
    /// Bytes of the head in the input, through the empty line that ends it (leading empty
    /// lines included); the body (if any) starts there.
    pub head_len: usize,
    /// The Host field's value (RFC 9112 §3.2), if present.
    pub host: Option<String>,
    /// The Content-Length (RFC 9112 §6.2), if present.
    pub content_length: Option<u64>,
    /// True when Transfer-Encoding ends with `chunked` (RFC 9112 §6.1).
    pub chunked: bool,
    /// Whether the client wants the connection kept open after the response (RFC 9112
    /// §9.3).
    pub keep_alive: bool,
}

/// What [`parse_head`] makes of the bytes so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parse {
    /// The head has not ended yet: read more (the limit is not reached).
    Partial,
    /// The head is complete.
    Complete(RequestHead),
    /// The request is refused.
    Error(HttpError),
}

/// tchar (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

pub(super) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// Field-value octets (RFC 9110 §5.5): VCHAR, obs-text, SP and HTAB; CR, LF, NUL and the
/// other controls are refused.
pub(super) fn is_field_byte(b: u8) -> bool {
    b == b'\t' || b == b' ' || (0x21..=0x7e).contains(&b) || b >= 0x80
}

/// Where the head ends in `buf`: the index just past the empty line that ends it, looking
/// from `from` (a resume point: bytes before it were already scanned and held no end; pass
/// 0 the first time). Lines end with CRLF or a bare LF (RFC 9112 §2.2). Leading empty lines
/// (RFC 9112 §2.2: a server SHOULD ignore at least one) are skipped and do not end the head.
pub fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    // Skip leading empty lines to find where the request line starts.
    let start = skip_empty_lines(buf);
    if start >= buf.len() {
        return None;
    }
    let mut i = from.saturating_sub(3).max(start);
    while let Some(off) = buf.get(i..)?.iter().position(|&b| b == b'\n') {
        let lf = i + off;
        // The line after this LF is empty: LF or CRLF follows.
        match buf.get(lf + 1) {
            Some(b'\n') => return Some(lf + 2),
            Some(b'\r') if buf.get(lf + 2) == Some(&b'\n') => return Some(lf + 3),
            _ => {}
        }
        i = lf + 1;
    }
    None
}

pub(super) fn skip_empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    loop {
        match buf.get(i..) {
            Some([b'\r', b'\n', ..]) => i += 2,
            Some([b'\n', ..]) => i += 1,
            _ => return i,
        }
    }
}

/// Splits `buf` into lines at LF, dropping a CR before it.
pub(super) fn lines(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    buf.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// Parses the request head at the start of `buf` (the bytes read from a client so far);
/// `max_head` bounds it (431 when the head has not ended within that many bytes).
pub fn parse_head(buf: &[u8], max_head: usize) -> Parse {
    parse_head_from(buf, 0, max_head)
}

/// [`parse_head`], resuming the search for the head's end at `scanned` (bytes before it
/// held no end: see [`find_head_end`]).
pub fn parse_head_from(buf: &[u8], scanned: usize, max_head: usize) -> Parse {
    let Some(end) = find_head_end(buf, scanned) else {
        // Refuse early when the request line is complete and already wrong.
        let start = skip_empty_lines(buf);
        if let Some(off) = buf
            .get(start..)
            .and_then(|b| b.iter().position(|&c| c == b'\n'))
        {
            let line = &buf[start..start + off];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Err(e) = request_line(line) {
                return Parse::Error(e);
            }
        }
        return if buf.len() >= max_head {
            Parse::Error(HttpError::HeadTooLarge)
        } else {
            Parse::Partial
        };
    };
    if end > max_head {
        return Parse::Error(HttpError::HeadTooLarge);
    }
    match parse_complete(&buf[..end]) {
        Ok(h) => Parse::Complete(h),
        Err(e) => Parse::Error(e),
    }
}

/// The request line (RFC 9112 §3): method, target, version.
fn request_line(line: &[u8]) -> Result<(String, String, Version), HttpError> {
    const BAD: HttpError = HttpError::BadRequest("malformed request line");
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BAD);
    };
    if !is_token(method) {
        return Err(BAD);
    }
    // request-target: visible ASCII only (RFC 9112 §3.2; RFC 3986 characters).
    if target.is_empty() || !target.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(BAD);
    }
    let version = match version {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        [b'H', b'T', b'T', b'P', b'/', d1, b'.', d2]
            if d1.is_ascii_digit() && d2.is_ascii_digit() =>
        {
            return Err(HttpError::VersionNotSupported)
        }
        [b'H', b'T', b'T', b'P', b'/', d1] if d1.is_ascii_digit() => {
            return Err(HttpError::VersionNotSupported)
        }
        _ => return Err(BAD),
    };
    // Both are ASCII by the checks above.
    Ok((
        String::from_utf8_lossy(method).into_owned(),
        String::from_utf8_lossy(target).into_owned(),
        version,
    ))
}

/// Trims optional whitespace (OWS: SP / HTAB, RFC 9110 §5.6.3) at both ends.
pub(super) fn trim_ows(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(s, |p| p + 1);
    &v[s..e.max(s)]
}

/// The comma-separated list elements of a field value, trimmed, empty ones dropped (RFC
/// 9110 §5.6.1).
pub(super) fn list(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// A complete head: `head` ends with the empty line.
fn parse_complete(head: &[u8]) -> Result<RequestHead, HttpError> {
    let start = skip_empty_lines(head);
    let mut it = lines(&head[start..]);
    let (method, target, version) = request_line(it.next().unwrap_or_default())?;
    let mut headers = Vec::new();
    let mut host: Option<String> = None;
    let mut hosts = 0usize;
    let mut content_length: Option<u64> = None;
    let mut te: Option<Vec<u8>> = None;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    for line in it {
        if line.is_empty() {
            break; // the empty line that ends the head
        }
        if line[0] == b' ' || line[0] == b'\t' {
            // obs-fold (RFC 9112 §5.2): refused.
            return Err(HttpError::BadRequest("obsolete line folding"));
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(HttpError::BadRequest("field line without a colon"));
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if !is_token(name) {
            // Includes whitespace before the colon (RFC 9112 §5.1: MUST be refused).
            return Err(HttpError::BadRequest("malformed field name"));
        }
        if !value.iter().all(|&b| is_field_byte(b)) {
            return Err(HttpError::BadRequest("control character in a field value"));
        }
        let value = trim_ows(value);
        let lname = name.to_ascii_lowercase();
        match lname.as_slice() {
            b"host" => {
                hosts += 1;
                host = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"content-length" => {
                // RFC 9110 §8.6: a list of equal values may be taken as one; anything else
                // is unrecoverable framing.
                // Every element must be digits (an empty one is not).
                for v in value.split(|&b| b == b',').map(trim_ows) {
                    let n =
                        parse_decimal(v).ok_or(HttpError::BadRequest("invalid Content-Length"))?;
                    if content_length.is_some_and(|c| c != n) {
                        return Err(HttpError::BadRequest("conflicting Content-Length"));
                    }
                    content_length = Some(n);
                }
            }
            b"transfer-encoding" => {
                let t = te.get_or_insert_with(Vec::new);
                if !t.is_empty() {
                    t.push(b',');
                }
                t.extend_from_slice(value);
            }
            b"connection" => {
                for opt in list(value) {
                    if opt.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if opt.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep_alive = true;
                    }
                }
            }
            _ => {}
        }
        headers.push((String::from_utf8_lossy(name).into_owned(), value.to_vec()));
    }
    if version == Version::Http11 && hosts != 1 {
        return Err(HttpError::BadRequest(if hosts == 0 {
            "missing Host"
        } else {
            "more than one Host"
        }));
    }
    if hosts > 1 {
        return Err(HttpError::BadRequest("more than one Host"));
    }
    let mut chunked = false;
    if let Some(t) = te {
        if version == Version::Http10 {
            // RFC 9112 §6.1: the framing of a 1.0 message with Transfer-Encoding is faulty.
            return Err(HttpError::BadRequest("Transfer-Encoding in HTTP/1.0"));
        }
        if content_length.is_some() {
            // RFC 9112 §6.3 (3): a server MAY reject such a request (smuggling risk).
            return Err(HttpError::BadRequest(
                "both Transfer-Encoding and Content-Length",
            ));
        }
        let last = list(&t).last();
        match last {
            Some(c) if c.eq_ignore_ascii_case(b"chunked") => chunked = true,
            // RFC 9112 §6.3 (4): chunked not last in a request → 400.
            _ => {
                return Err(HttpError::BadRequest(
                    "chunked is not the final transfer coding",
                ))
            }
        }
    }
    let keep_alive = match version {
        Version::Http11 => !conn_close,
        Version::Http10 => conn_keep_alive && !conn_close,
    };
    Ok(RequestHead {
        method,
        target,
        version,
        headers,
        head_len: head.len(),
        host,
        content_length,
        chunked,
        keep_alive,
    })
}

/// 1*DIGIT as a u64; None when empty, not digits, or too large.
pub(super) fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &b| {
        b.is_ascii_digit()
            .then(|| acc.checked_mul(10)?.checked_add((b - b'0') as u64))
            .flatten()
    })
}

impl RequestHead {
    /// The value of the first field named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The head in canonical form: request line and field lines ending in CRLF, `name:
    /// value`, and the empty line (RFC 9112 §2.1). Parsing the result gives back this head
    /// (with `head_len` its length).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.write_with(None, false)
    }

    /// The head as [`RequestHead::to_bytes`] writes it, with one field added: when a field
    /// named `name` exists, `value` is appended to the last one as a list element (`old,
    /// value`: RFC 9110 §5.3, as proxies do with X-Forwarded-For); otherwise a field line
    /// `name: value` goes after the others. `name` must be a token and `value` field
    /// bytes; otherwise nothing is added.
    pub fn rewrite(&self, name: &str, value: &str) -> Vec<u8> {
        if !is_token(name.as_bytes()) || !value.bytes().all(is_field_byte) {
            return self.to_bytes();
        }
        self.write_with(Some((name, value.trim_matches([' ', '\t']))), false)
    }

    /// The head as [`RequestHead::to_bytes`] writes it, with every field named `name`
    /// removed and one field line `name: value` added after the others: what a client
    /// sent under that name is not passed on (a forged X-Forwarded-For is dropped). Same
    /// checks on `name` and `value` as [`RequestHead::rewrite`].
    pub fn rewrite_replacing(&self, name: &str, value: &str) -> Vec<u8> {
        if !is_token(name.as_bytes()) || !value.bytes().all(is_field_byte) {
            return self.to_bytes();
        }
        self.write_with(Some((name, value.trim_matches([' ', '\t']))), true)
    }

    fn write_with(&self, add: Option<(&str, &str)>, replace: bool) -> Vec<u8> {
        let mut s = String::new();
        let _ = write!(
            s,
            "{} {} {}\r\n",
            self.method,
            self.target,
            self.version.as_str()
        );
        let mut out = s.into_bytes();
        let named = |h: &str| add.is_some_and(|(n, _)| h.eq_ignore_ascii_case(n));
        let last = if replace {
            None
        } else {
            self.headers.iter().rposition(|(h, _)| named(h))
        };
        for (i, (n, v)) in self.headers.iter().enumerate() {
            if replace && named(n) {
                continue;
            }
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v);
            if last == Some(i) {
                if let Some((_, add)) = add {
                    if !v.is_empty() {
                        out.extend_from_slice(b", ");
                    }
                    out.extend_from_slice(add.as_bytes());
                }
            }
            out.extend_from_slice(b"\r\n");
        }
        if let (Some((n, v)), None) = (add, last) {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// The reason phrase of the statuses the proxy sends itself.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// A complete error response the proxy sends itself: status line, `Content-Type`,
/// `Content-Length`, `Connection: close` (RFC 9112 §9.6: the proxy closes after it), and a
/// one-line text body.
pub fn error_response(status: u16, detail: &str) -> Vec<u8> {
    let body = format!("{status} {}: {detail}\n", reason_phrase(status));
    format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        reason_phrase(status),
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn complete(s: &str) -> RequestHead {
        match parse_head(s.as_bytes(), DEFAULT_MAX_HEAD) {
            Parse::Complete(h) => h,
            other => panic!("{s:?}: {other:?}"),
        }
    }

    fn error(s: &[u8]) -> u16 {
        match parse_head(s, DEFAULT_MAX_HEAD) {
            Parse::Error(e) => e.status(),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(s)),
        }
    }

    #[test]
    fn simple_get() {
        let s = "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\nBODY";
        let h = complete(s);
        assert_eq!(h.method, "GET");
        assert_eq!(h.target, "/a/b?c=d");
        assert_eq!(h.version, Version::Http11);
        assert_eq!(h.host.as_deref(), Some("example.com"));
        assert_eq!(h.head_len, s.len() - 4);
        assert!(h.keep_alive);
        assert!(!h.chunked);
        assert_eq!(h.content_length, None);
        assert_eq!(h.header("accept"), Some(&b"*/*"[..]));
    }

    #[test]
    fn partial_until_the_empty_line() {
        let s = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        for n in 0..s.len() {
            assert_eq!(parse_head(&s[..n], 1024), Parse::Partial, "{n}");
        }
        assert!(matches!(parse_head(s, 1024), Parse::Complete(_)));
    }

    #[test]
    fn bare_lf_and_leading_empty_lines() {
        let h = complete("\r\n\nGET / HTTP/1.0\nX: 1\n\n");
        assert_eq!(h.version, Version::Http10);
        assert_eq!(h.head_len, "\r\n\nGET / HTTP/1.0\nX: 1\n\n".len());
        assert!(!h.keep_alive);
    }

    #[test]
    fn keep_alive_defaults_rfc9112_9_3() {
        assert!(complete("GET / HTTP/1.1\r\nHost: a\r\n\r\n").keep_alive);
        assert!(!complete("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(
            !complete("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n").keep_alive
        );
        assert!(!complete("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(complete("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
    }

    #[test]
    fn content_length_and_chunked() {
        let h = complete("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n");
        assert_eq!(h.content_length, Some(12));
        let h = complete("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n");
        assert_eq!(h.content_length, Some(5));
        let h = complete("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert!(h.chunked);
        for bad in [
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            assert_eq!(error(bad.as_bytes()), 400, "{bad:?}");
        }
    }

    #[test]
    fn malformed_is_400() {
        for bad in [
            &b"GARBAGE\r\n\r\n"[..],
            b"GET /\r\n\r\n",
            b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1 x\r\nHost: a\r\n\r\n",
            b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / FTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  folded\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
        ] {
            assert_eq!(error(bad), 400, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn malformed_request_line_is_refused_before_the_head_ends() {
        assert_eq!(error(b"NOT AN HTTP REQUEST\r\n"), 400);
        assert_eq!(
            error(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n"),
            400
        );
    }

    #[test]
    fn other_versions_are_505() {
        assert_eq!(error(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
        assert_eq!(error(b"GET / HTTP/3\r\n\r\n"), 505);
    }

    #[test]
    fn too_large_is_431() {
        let mut s = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        while s.len() < 200 {
            s.extend_from_slice(b"X-Pad: aaaaaaaaaaaaaaaa\r\n");
        }
        assert_eq!(parse_head(&s, 200), Parse::Error(HttpError::HeadTooLarge));
        assert_eq!(parse_head(&s, 4096), Parse::Partial);
        s.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&s, 200), Parse::Error(HttpError::HeadTooLarge));
        assert!(matches!(parse_head(&s, s.len()), Parse::Complete(_)));
    }

    #[test]
    fn resumed_scan_finds_the_end() {
        let s = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for split in 0..s.len() {
            // Scanned up to `split` with no end found, then the rest arrives.
            assert_eq!(find_head_end(s, split), Some(s.len()), "{split}");
        }
    }

    #[test]
    fn rewrite_adds_or_appends() {
        let h = complete("GET /x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
        assert_eq!(
            h.rewrite("X-Forwarded-For", "192.0.2.7"),
            b"GET /x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n"
        );
        let h = complete("GET /x HTTP/1.1\r\nX-Forwarded-For: 10.1.1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            h.rewrite("x-forwarded-for", "192.0.2.7"),
            b"GET /x HTTP/1.1\r\nX-Forwarded-For: 10.1.1.1, 192.0.2.7\r\nHost: a\r\n\r\n"
        );
        // Not a token / not field bytes: nothing added.
        assert_eq!(h.rewrite("Bad Name", "v"), h.to_bytes());
        assert_eq!(h.rewrite("X", "a\r\nInjected: 1"), h.to_bytes());
        let re = complete(std::str::from_utf8(&h.rewrite("X-Forwarded-For", "1.2.3.4")).unwrap());
        assert_eq!(
            re.header("x-forwarded-for"),
            Some(&b"10.1.1.1, 1.2.3.4"[..])
        );
    }

    #[test]
    fn rewrite_replacing_drops_forged_values() {
        let h = complete(
            "GET /x HTTP/1.1\r\nX-Forwarded-For: 6.6.6.6\r\nHost: a\r\nx-forwarded-for: 7.7.7.7\r\n\r\n",
        );
        assert_eq!(
            h.rewrite_replacing("X-Forwarded-For", "192.0.2.7"),
            b"GET /x HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n"
        );
        let h = complete("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            h.rewrite_replacing("X-Forwarded-For", "192.0.2.7"),
            h.rewrite("X-Forwarded-For", "192.0.2.7")
        );
    }

    #[test]
    fn error_responses_are_complete() {
        let r = error_response(502, "no backend is up");
        let s = String::from_utf8(r).unwrap();
        assert!(s.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{s}");
        assert!(s.contains("Connection: close\r\n"));
        let (head, body) = s.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
    }

    fn token() -> impl Strategy<Value = String> {
        "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}"
    }

    fn head_strategy() -> impl Strategy<Value = RequestHead> {
        (
            token(),
            "/[!-~]{0,40}",
            prop::bool::ANY,
            prop::collection::vec(
                (
                    token().prop_filter("framing fields are generated apart", |n| {
                        !["host", "content-length", "transfer-encoding", "connection"]
                            .contains(&n.to_ascii_lowercase().as_str())
                    }),
                    // A field value: no surrounding whitespace.
                    "([!-~\u{80}-\u{ff}]([ -~\t]{0,20}[!-~])?)?",
                ),
                0..8,
            ),
            prop::option::of(0u64..1 << 40),
        )
            .prop_map(|(method, target, v11, fields, cl)| {
                let version = if v11 {
                    Version::Http11
                } else {
                    Version::Http10
                };
                let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
                if v11 {
                    headers.push(("Host".into(), b"example.org".to_vec()));
                }
                for (n, v) in fields {
                    // The strategy's chars 0x80..=0xff stand for single obs-text bytes.
                    headers.push((n, v.chars().map(|c| c as u32 as u8).collect()));
                }
                if let Some(n) = cl {
                    headers.push(("Content-Length".into(), n.to_string().into_bytes()));
                }
                let mut h = RequestHead {
                    method,
                    target,
                    version,
                    host: v11.then(|| "example.org".into()),
                    content_length: cl,
                    chunked: false,
                    keep_alive: v11,
                    headers,
                    head_len: 0,
                };
                h.head_len = h.to_bytes().len();
                h
            })
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600), max in 0usize..700, from in 0usize..700) {
            let _ = parse_head(&bytes, max);
            let _ = parse_head_from(&bytes, from, max);
            let _ = find_head_end(&bytes, from);
        }

        #[test]
        fn http_like_bytes_never_panic(parts in prop::collection::vec(prop::sample::select(vec![
            &b"GET "[..], b"/", b" HTTP/1.1", b" HTTP/1.0", b"\r\n", b"\n", b"\r", b":", b" ", b"\t",
            b"Host", b"Content-Length", b"Transfer-Encoding", b"chunked", b",", b"5", b"Connection",
            b"close", b"keep-alive", b"\x00", b"\xff"]), 0..60)) {
            let bytes: Vec<u8> = parts.concat();
            let _ = parse_head(&bytes, 256);
            if let Parse::Complete(h) = parse_head(&bytes, 4096) {
                // What parses must re-parse to the same fields after a rewrite.
                let again = parse_head(&h.rewrite("X-Forwarded-For", "1.2.3.4"), 8192);
                prop_assert!(matches!(again, Parse::Complete(_)), "{:?}", again);
            }
        }

        #[test]
        fn valid_heads_round_trip(h in head_strategy()) {
            let bytes = h.to_bytes();
            prop_assert_eq!(parse_head(&bytes, bytes.len()), Parse::Complete(h.clone()));
            // With a body after it, and fed in two parts.
            let mut with_body = bytes.clone();
            with_body.extend_from_slice(b"body bytes");
            prop_assert_eq!(parse_head(&with_body, DEFAULT_MAX_HEAD.max(bytes.len())), Parse::Complete(h.clone()));
            // The rewrite keeps every field and adds one.
            let re = h.rewrite("X-Forwarded-For", "192.0.2.9");
            match parse_head(&re, re.len()) {
                Parse::Complete(r) => {
                    prop_assert_eq!(r.headers.len(), h.headers.len() + usize::from(h.header("x-forwarded-for").is_none()));
                    prop_assert_eq!(&r.method, &h.method);
                    prop_assert_eq!(&r.target, &h.target);
                }
                other => prop_assert!(false, "{:?}", other),
            }
            // One byte short of the end is partial; a limit one short is 431.
            prop_assert_eq!(parse_head(&bytes[..bytes.len() - 1], bytes.len()), Parse::Partial);
            prop_assert_eq!(parse_head(&bytes, bytes.len() - 1), Parse::Error(HttpError::HeadTooLarge));
        }
    }
}

//! Message framing for the proxy's per-request relay, sans-I/O: where a request or
//! response body ends (RFC 9112 §6.3: none, Content-Length, chunked, or until the
//! connection closes), tracked over the bytes as they pass ([`Body`]), and the response
//! head the proxy reads from a backend ([`parse_response_head`], RFC 9112 §4).
//!
//! The proxy never changes body bytes; it only needs to know where each message ends so
//! that the next request head is parsed (and checked, and given X-Forwarded-For) before it
//! reaches a backend, and so that it knows when a response is complete. Chunked framing is
//! checked strictly (hex size, CRLF line ends, CRLF after each chunk's data, bounded chunk
//! lines and trailers): a malformed body is an error, never a guess, because a proxy and a
//! backend that disagree on where a body ends are the request-smuggling gap.

use super::http::{
    find_head_end, is_token, lines, list, parse_decimal, skip_empty_lines, trim_ows,
};

/// The longest chunk-size line (size, extensions) and the longest trailer section accepted.
const MAX_CHUNK_LINE: usize = 4096;

/// Why a body's framing is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingError {
    /// A chunk-size line that is not hex digits with optional extensions, or too long.
    ChunkSize,
    /// A chunk's data not followed by CRLF.
    ChunkEnd,
    /// A trailer section longer than the limit.
    Trailers,
}

/// Where a chunked body is (RFC 9112 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Reading the chunk-size hex digits: the value so far and its digit count.
    Size { value: u64, digits: u8 },
    /// After the size: extensions up to the line's CR; `len` bytes of the line seen.
    Ext { value: u64, len: usize },
    /// The CR of the size line was seen: LF next.
    SizeLf { value: u64 },
    /// `left` bytes of chunk data to come.
    Data { left: u64 },
    /// The CR after the data next.
    DataCr,
    /// The LF after the data next.
    DataLf,
    /// Trailer section (after the last chunk): `line` bytes into the current line, `total`
    /// bytes in all, `cr` when the last byte was CR.
    Trailer { line: usize, total: usize, cr: bool },
    /// The body has ended.
    Done,
}

/// A message body being relayed: how many more bytes belong to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// No body, or its end was reached.
    Done,
    /// `n` bytes left (Content-Length framing).
    Length(u64),
    /// Chunked transfer coding.
    Chunked(ChunkState),
    /// A response delimited by the backend closing the connection (RFC 9112 §6.3 (8)).
    UntilClose,
}

/// The state of a chunked body (opaque).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkState(Chunk);

impl Body {
    /// A chunked body at its start.
    pub fn chunked() -> Body {
        Body::Chunked(ChunkState(Chunk::Size {
            value: 0,
            digits: 0,
        }))
    }

    /// A body of `n` bytes (`Done` when 0).
    pub fn length(n: u64) -> Body {
        if n == 0 {
            Body::Done
        } else {
            Body::Length(n)
        }
    }

    /// Whether the body has ended.
    pub fn done(&self) -> bool {
        matches!(self, Body::Done)
    }

    /// Takes the bytes of `data` that belong to the body: returns how many (a prefix of
    /// `data`; the rest is the next message). An `UntilClose` body takes everything.
    pub fn feed(&mut self, data: &[u8]) -> Result<usize, FramingError> {
        match self {
            Body::Done => Ok(0),
            Body::UntilClose => Ok(data.len()),
            Body::Length(left) => {
                let n = (*left).min(data.len() as u64);
                *left -= n;
                if *left == 0 {
                    *self = Body::Done;
                }
                Ok(n as usize)
            }
            Body::Chunked(ChunkState(c)) => {
                let n = feed_chunked(c, data)?;
                if *c == Chunk::Done {
                    *self = Body::Done;
                }
                Ok(n)
            }
        }
    }
}

/// Runs the chunked state machine over `data`; returns the bytes it took (all of them,
/// or up to the end of the body).
fn feed_chunked(c: &mut Chunk, data: &[u8]) -> Result<usize, FramingError> {
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        match *c {
            Chunk::Done => return Ok(i),
            Chunk::Data { left } => {
                let n = left.min((data.len() - i) as u64);
                *c = if n == left {
                    Chunk::DataCr
                } else {
                    Chunk::Data { left: left - n }
                };
                i += n as usize;
                continue;
            }
            Chunk::Size { value, digits } => {
                if let Some(d) = (b as char).to_digit(16) {
                    if digits >= 15 {
                        return Err(FramingError::ChunkSize);
                    }
                    *c = Chunk::Size {
                        value: value * 16 + u64::from(d),
                        digits: digits + 1,
                    };
                } else if digits == 0 {
                    return Err(FramingError::ChunkSize);
                } else if b == b'\r' {
                    *c = Chunk::SizeLf { value };
                } else if b == b';' || b == b' ' || b == b'\t' {
                    // chunk-ext, with BWS before the ';' (RFC 9112 §7.1.1).
                    *c = Chunk::Ext {
                        value,
                        len: usize::from(digits) + 1,
                    };
                } else {
                    return Err(FramingError::ChunkSize);
                }
            }
            Chunk::Ext { value, len } => {
                if b == b'\r' {
                    *c = Chunk::SizeLf { value };
                } else if b == b'\n' || len >= MAX_CHUNK_LINE || !(b == b'\t' || b >= 0x20) {
                    return Err(FramingError::ChunkSize);
                } else {
                    *c = Chunk::Ext {
                        value,
                        len: len + 1,
                    };
                }
            }
            Chunk::SizeLf { value } => {
                if b != b'\n' {
                    return Err(FramingError::ChunkSize);
                }
                *c = if value == 0 {
                    Chunk::Trailer {
                        line: 0,
                        total: 0,
                        cr: false,
                    }
                } else {
                    Chunk::Data { left: value }
                };
            }
            Chunk::DataCr => {
                if b != b'\r' {
                    return Err(FramingError::ChunkEnd);
                }
                *c = Chunk::DataLf;
            }
            Chunk::DataLf => {
                if b != b'\n' {
                    return Err(FramingError::ChunkEnd);
                }
                *c = Chunk::Size {
                    value: 0,
                    digits: 0,
                };
            }
            Chunk::Trailer { line, total, cr } => {
                if total >= MAX_CHUNK_LINE {
                    return Err(FramingError::Trailers);
                }
                *c = match b {
                    b'\n' if cr && line == 0 => Chunk::Done,
                    b'\n' if cr => Chunk::Trailer {
                        line: 0,
                        total: total + 1,
                        cr: false,
                    },
                    b'\r' if !cr => Chunk::Trailer {
                        line,
                        total: total + 1,
                        cr: true,
                    },
                    b'\r' | b'\n' => return Err(FramingError::Trailers),
                    _ if cr => return Err(FramingError::Trailers),
                    _ => Chunk::Trailer {
                        line: line + 1,
                        total: total + 1,
                        cr: false,
                    },
                };
            }
        }
        i += 1;
    }
    Ok(i)
}

/// A backend's response head, as far as the proxy needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    /// The status code.
    pub status: u16,
    /// Bytes of the head, through the empty line.
    pub head_len: usize,
    /// How the body is framed (for a response to a request that allows one).
    pub body: Body,
    /// Whether the backend keeps the connection open after this response (RFC 9112 §9.3).
    pub keep_alive: bool,
}

/// Why a backend's response head is refused (the proxy answers 502).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseError {
    /// Not `HTTP/1.x NNN reason`, a malformed field, or framing the proxy cannot follow.
    Malformed(&'static str),
    /// The head did not end within the limit.
    TooLarge,
}

/// What [`parse_response_head`] makes of the bytes so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseParse {
    /// Read more.
    Partial,
    /// The head is complete.
    Complete(ResponseHead),
    /// The response is refused.
    Error(ResponseError),
}

/// Parses a response head at the start of `buf`, for a request whose method was HEAD when
/// `head_request` (no body follows then, RFC 9112 §6.3 (1)); `max_head` bounds it.
pub fn parse_response_head(buf: &[u8], head_request: bool, max_head: usize) -> ResponseParse {
    let Some(end) = find_head_end(buf, 0) else {
        return if buf.len() >= max_head {
            ResponseParse::Error(ResponseError::TooLarge)
        } else {
            ResponseParse::Partial
        };
    };
    if end > max_head {
        return ResponseParse::Error(ResponseError::TooLarge);
    }
    match response_head(&buf[..end], head_request) {
        Ok(h) => ResponseParse::Complete(h),
        Err(e) => ResponseParse::Error(ResponseError::Malformed(e)),
    }
}

fn response_head(head: &[u8], head_request: bool) -> Result<ResponseHead, &'static str> {
    let mut it = lines(&head[skip_empty_lines(head)..]);
    let line = it.next().unwrap_or_default();
    // status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4).
    let http11 = match line.get(..9) {
        Some(b"HTTP/1.1 ") => true,
        Some(b"HTTP/1.0 ") => false,
        _ => return Err("malformed status line"),
    };
    let status = match line.get(9..12) {
        Some(d)
            if d.iter().all(u8::is_ascii_digit) && matches!(line.get(12), None | Some(b' ')) =>
        {
            d.iter().fold(0u16, |a, &b| a * 10 + u16::from(b - b'0'))
        }
        _ => return Err("malformed status line"),
    };
    let mut length: Option<u64> = None;
    let mut te: Option<Vec<u8>> = None;
    let (mut close, mut keep) = (false, false);
    for line in it.take_while(|l| !l.is_empty()) {
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or("field line without a colon")?;
        if !is_token(&line[..colon]) {
            return Err("malformed field name");
        }
        let value = trim_ows(&line[colon + 1..]);
        let name = line[..colon].to_ascii_lowercase();
        match name.as_slice() {
            b"content-length" => {
                for v in value.split(|&b| b == b',').map(trim_ows) {
                    let n = parse_decimal(v).ok_or("invalid Content-Length")?;
                    if length.is_some_and(|l| l != n) {
                        return Err("conflicting Content-Length");
                    }
                    length = Some(n);
                }
            }
            b"transfer-encoding" => {
                let t = te.get_or_insert_with(Vec::new);
                t.push(b',');
                t.extend_from_slice(value);
            }
            b"connection" => {
                for opt in list(value) {
                    close |= opt.eq_ignore_ascii_case(b"close");
                    keep |= opt.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            _ => {}
        }
    }
    let mut keep_alive = if http11 { !close } else { keep && !close };
    // RFC 9112 §6.3: no body after HEAD, 1xx, 204 and 304; else chunked, length, or close.
    let body = if head_request || status < 200 || status == 204 || status == 304 {
        Body::Done
    } else if let Some(t) = te {
        if length.is_some() {
            // §6.3 (3): both at once is how responses are smuggled; refuse, not guess.
            return Err("both Transfer-Encoding and Content-Length");
        }
        if list(&t)
            .last()
            .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"))
        {
            Body::chunked()
        } else {
            keep_alive = false;
            Body::UntilClose
        }
    } else if let Some(n) = length {
        Body::length(n)
    } else {
        keep_alive = false;
        Body::UntilClose
    };
    Ok(ResponseHead {
        status,
        head_len: head.len(),
        body,
        keep_alive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed_all(mut b: Body, data: &[u8]) -> (Body, Result<usize, FramingError>) {
        let r = b.feed(data);
        (b, r)
    }

    #[test]
    fn length_takes_its_bytes_and_stops() {
        let (b, n) = feed_all(Body::length(5), b"helloGET /");
        assert_eq!(n, Ok(5));
        assert!(b.done());
        let mut b = Body::length(5);
        assert_eq!(b.feed(b"he"), Ok(2));
        assert_eq!(b.feed(b"llo!"), Ok(3));
        assert!(b.done());
        assert!(Body::length(0).done());
    }

    #[test]
    fn chunked_ends_after_the_last_chunk_and_trailers() {
        let msg =
            b"5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1";
        let body_len = msg.len() - b"GET / HTTP/1.1".len();
        let (b, n) = feed_all(Body::chunked(), msg);
        assert_eq!(n, Ok(body_len));
        assert!(b.done());
        // Byte by byte, the same.
        let mut b = Body::chunked();
        let mut taken = 0;
        for k in msg.iter() {
            taken += b.feed(std::slice::from_ref(k)).unwrap();
        }
        assert_eq!(taken, body_len);
        let (b, n) = feed_all(Body::chunked(), b"0\r\n\r\n");
        assert_eq!((b.done(), n), (true, Ok(5)));
    }

    #[test]
    fn chunked_refuses_malformed_framing() {
        for bad in [
            &b"x\r\n"[..],
            b"\r\n",
            b"5\nhello\r\n",
            b"5\r\nhelloX\r\n",
            b"1234567890abcdef0\r\n",
            b"0\r\nX\rY\r\n\r\n",
            b"-5\r\n",
        ] {
            assert!(Body::chunked().feed(bad).is_err(), "{bad:?}");
        }
    }

    fn complete(s: &str, head_request: bool) -> ResponseHead {
        match parse_response_head(s.as_bytes(), head_request, 4096) {
            ResponseParse::Complete(h) => h,
            other => panic!("{s:?}: {other:?}"),
        }
    }

    #[test]
    fn response_framing_rfc9112_6_3() {
        let h = complete("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", false);
        assert_eq!(
            (h.status, h.body, h.keep_alive),
            (200, Body::Length(3), true)
        );
        assert_eq!(h.head_len, 38);
        let h = complete("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", true);
        assert_eq!(h.body, Body::Done);
        let h = complete("HTTP/1.1 204 No Content\r\n\r\n", false);
        assert_eq!((h.body, h.keep_alive), (Body::Done, true));
        let h = complete("HTTP/1.1 100 Continue\r\n\r\n", false);
        assert_eq!((h.status, h.body), (100, Body::Done));
        let h = complete(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            false,
        );
        assert_eq!(h.body, Body::chunked());
        let h = complete("HTTP/1.1 200 OK\r\n\r\n", false);
        assert_eq!((h.body, h.keep_alive), (Body::UntilClose, false));
        let h = complete(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        );
        assert_eq!((h.body, h.keep_alive), (Body::Done, false));
        let h = complete("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", false);
        assert!(!h.keep_alive);
        let h = complete(
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
            false,
        );
        assert!(h.keep_alive);
    }

    #[test]
    fn bad_responses_are_refused() {
        for bad in [
            "HTTP/2 200 OK\r\n\r\n",
            "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/1.1 20 OK\r\n\r\n",
            "SSH-2.0-OpenSSH\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n",
        ] {
            assert!(
                matches!(
                    parse_response_head(bad.as_bytes(), false, 4096),
                    ResponseParse::Error(ResponseError::Malformed(_))
                ),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\r\n", false, 4096),
            ResponseParse::Partial
        );
        assert_eq!(
            parse_response_head(&[b'a'; 100], false, 64),
            ResponseParse::Error(ResponseError::TooLarge)
        );
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..400), split in 0usize..400) {
            let mut b = Body::chunked();
            let k = split.min(data.len());
            if let Ok(n) = b.feed(&data[..k]) {
                prop_assert!(n <= k);
                if n == k {
                    let _ = b.feed(&data[k..]);
                }
            }
            let _ = parse_response_head(&data, split % 2 == 0, 256);
        }

        #[test]
        fn chunked_split_anywhere_gives_the_same_end(sizes in prop::collection::vec(1usize..40, 0..5), split in 0usize..300) {
            let mut msg = Vec::new();
            for s in &sizes {
                msg.extend_from_slice(format!("{s:x}\r\n").as_bytes());
                msg.extend(std::iter::repeat_n(b'z', *s));
                msg.extend_from_slice(b"\r\n");
            }
            msg.extend_from_slice(b"0\r\n\r\n");
            let total = msg.len();
            msg.extend_from_slice(b"NEXT");
            let k = split.min(msg.len());
            let mut b = Body::chunked();
            let first = b.feed(&msg[..k]).unwrap();
            let second = if first == k { b.feed(&msg[k..]).unwrap() } else { 0 };
            prop_assert_eq!(first + second, total);
            prop_assert!(b.done());
        }
    }
}

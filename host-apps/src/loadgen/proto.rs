//! What the load generator says and what it expects back: fixed-size echoes, HTTP/1.1 GETs
//! (RFC 9112 message framing) and Redis GET/SET (RESP2). Sans-I/O: requests are built into a
//! buffer, responses are checked as bytes arrive.

/// The protocol the load generator speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Writes `size` bytes and expects the same bytes back (AccelTCP's msg_test).
    Echo,
    /// `GET <path> HTTP/1.1` with a `Host` header; expects a 2xx response framed by
    /// Content-Length (RFC 9112 §6.3) and reads its body (mTCP's epwget).
    Http {
        /// Request target.
        path: String,
        /// Host header value.
        host: String,
    },
    /// Alternates `SET key value` (a `size`-byte value) and `GET key` on a key of its own per
    /// connection, and checks the replies (`+OK`, then the value it set), as
    /// redis-benchmark's SET/GET tests do.
    Redis,
}

impl Proto {
    /// The protocol called `name` (`echo`, `http`, `redis`), HTTP with `path` and `host`.
    pub fn parse(name: &str, path: &str, host: &str) -> Result<Proto, String> {
        match name {
            "echo" => Ok(Proto::Echo),
            "http" => Ok(Proto::Http {
                path: path.into(),
                host: host.into(),
            }),
            "redis" | "resp" => Ok(Proto::Redis),
            other => Err(format!(
                "unknown protocol {other:?} (expected echo, http or redis)"
            )),
        }
    }
}

/// Why a response was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadResponse {
    /// Bytes that are not what the protocol allows (a broken status line, RESP type byte).
    Malformed,
    /// Well formed, but not what was asked for (an echo that differs, a GET returning
    /// another value, a Redis error reply).
    Wrong,
    /// An HTTP status outside 2xx.
    Status(u16),
    /// Longer than any answer to this request can be.
    TooLong,
}

/// Longest HTTP response head accepted.
pub const MAX_HEAD: usize = 64 * 1024;

/// The `n`-th byte of the payload of transaction `txn` on slot `slot`: both ends can
/// recompute it, so every echoed or stored byte is checked.
#[inline]
pub fn payload_byte(slot: usize, txn: u64, n: usize) -> u8 {
    (slot as u8)
        .wrapping_mul(31)
        .wrapping_add(txn as u8)
        .wrapping_add(n as u8)
}

/// Writes the request of transaction `txn` on slot `slot` into `out` (cleared first); an
/// HTTP request with `close` says `Connection: close`.
pub fn request(proto: &Proto, size: usize, slot: usize, txn: u64, close: bool, out: &mut Vec<u8>) {
    out.clear();
    match proto {
        Proto::Echo => out.extend((0..size).map(|n| payload_byte(slot, txn, n))),
        Proto::Http { path, host } => {
            out.extend_from_slice(b"GET ");
            out.extend_from_slice(path.as_bytes());
            out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
            out.extend_from_slice(host.as_bytes());
            out.extend_from_slice(b"\r\nUser-Agent: nicemu-loadgen\r\n");
            if close {
                out.extend_from_slice(b"Connection: close\r\n");
            }
            out.extend_from_slice(b"\r\n");
        }
        Proto::Redis => {
            let key = format!("key:{slot:08}");
            if txn.is_multiple_of(2) {
                out.extend_from_slice(
                    format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${size}\r\n", key.len()).as_bytes(),
                );
                out.extend((0..size).map(|n| payload_byte(slot, txn, n)));
                out.extend_from_slice(b"\r\n");
            } else {
                out.extend_from_slice(
                    format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes(),
                );
            }
        }
    }
}

/// Checks the bytes received so far for transaction `txn` of slot `slot`: `Ok(Some(n))` when
/// the first `n` bytes are a whole, correct response; `Ok(None)` when more bytes are needed.
pub fn response(
    proto: &Proto,
    size: usize,
    slot: usize,
    txn: u64,
    got: &[u8],
) -> Result<Option<usize>, BadResponse> {
    match proto {
        Proto::Echo => {
            let n = got.len().min(size);
            if got[..n]
                .iter()
                .enumerate()
                .any(|(i, &b)| b != payload_byte(slot, txn, i))
            {
                return Err(BadResponse::Wrong);
            }
            Ok((got.len() >= size).then_some(size))
        }
        Proto::Http { .. } => http_response(got),
        Proto::Redis => {
            let Some((reply, n)) = resp_reply(got)? else {
                return Ok(None);
            };
            let ok = if txn.is_multiple_of(2) {
                reply == Reply::Simple(b"OK")
            } else {
                // The GET reads what this slot's previous SET stored.
                match reply {
                    Reply::Bulk(Some(v)) => {
                        v.len() == size
                            && v.iter()
                                .enumerate()
                                .all(|(i, &b)| b == payload_byte(slot, txn - 1, i))
                    }
                    _ => false,
                }
            };
            if ok {
                Ok(Some(n))
            } else {
                Err(BadResponse::Wrong)
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// An HTTP/1.1 response framed by Content-Length (RFC 9112 §4 status line, §6.3 length).
fn http_response(got: &[u8]) -> Result<Option<usize>, BadResponse> {
    let Some(end) = find(got, b"\r\n\r\n") else {
        return if got.len() > MAX_HEAD {
            Err(BadResponse::TooLong)
        } else {
            Ok(None)
        };
    };
    let head = std::str::from_utf8(&got[..end]).map_err(|_| BadResponse::Malformed)?;
    let mut lines = head.split("\r\n");
    let status = lines.next().ok_or(BadResponse::Malformed)?;
    let mut parts = status.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(BadResponse::Malformed);
    }
    let code: u16 = parts
        .next()
        .and_then(|c| c.parse().ok())
        .ok_or(BadResponse::Malformed)?;
    let mut len = None;
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            return Err(BadResponse::Malformed);
        };
        if name.eq_ignore_ascii_case("content-length") {
            len = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| BadResponse::Malformed)?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked bodies are not counted; servers of static files send a length.
            return Err(BadResponse::Malformed);
        }
    }
    let total = end + 4 + len.unwrap_or(0);
    if !(200..300).contains(&code) {
        return Err(BadResponse::Status(code));
    }
    Ok((got.len() >= total).then_some(total))
}

/// One RESP2 reply.
#[derive(Debug, PartialEq, Eq)]
enum Reply<'a> {
    Simple(&'a [u8]),
    Error,
    Integer,
    Bulk(Option<&'a [u8]>),
    Array,
}

/// The first whole RESP2 reply in `b` and its length (Redis protocol specification:
/// `+`, `-`, `:`, `$`, `*`); nested arrays are skipped whole.
fn resp_reply(b: &[u8]) -> Result<Option<(Reply<'_>, usize)>, BadResponse> {
    let Some(eol) = find(b, b"\r\n") else {
        return if b.len() > MAX_HEAD {
            Err(BadResponse::TooLong)
        } else {
            Ok(None)
        };
    };
    let line = &b[1..eol];
    let num = || -> Result<i64, BadResponse> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(BadResponse::Malformed)
    };
    match b.first() {
        Some(b'+') => Ok(Some((Reply::Simple(line), eol + 2))),
        Some(b'-') => Ok(Some((Reply::Error, eol + 2))),
        Some(b':') => {
            num()?;
            Ok(Some((Reply::Integer, eol + 2)))
        }
        Some(b'$') => {
            let n = num()?;
            if n < 0 {
                return Ok(Some((Reply::Bulk(None), eol + 2)));
            }
            let n = n as usize;
            let end = eol + 2 + n;
            if b.len() < end + 2 {
                return Ok(None);
            }
            if &b[end..end + 2] != b"\r\n" {
                return Err(BadResponse::Malformed);
            }
            Ok(Some((Reply::Bulk(Some(&b[eol + 2..end])), end + 2)))
        }
        Some(b'*') => {
            let n = num()?;
            let mut off = eol + 2;
            for _ in 0..n.max(0) {
                match resp_reply(&b[off..])? {
                    Some((_, k)) => off += k,
                    None => return Ok(None),
                }
            }
            Ok(Some((Reply::Array, off)))
        }
        _ => Err(BadResponse::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_checks_every_byte() {
        let mut req = Vec::new();
        request(&Proto::Echo, 64, 3, 7, false, &mut req);
        assert_eq!(response(&Proto::Echo, 64, 3, 7, &req[..10]), Ok(None));
        assert_eq!(response(&Proto::Echo, 64, 3, 7, &req), Ok(Some(64)));
        req[40] ^= 1;
        assert_eq!(
            response(&Proto::Echo, 64, 3, 7, &req),
            Err(BadResponse::Wrong)
        );
    }

    #[test]
    fn http_responses_are_framed_by_content_length() {
        let p = Proto::Http {
            path: "/".into(),
            host: "x".into(),
        };
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: t\r\n\r\nhello";
        assert_eq!(response(&p, 0, 0, 0, &ok[..20]), Ok(None));
        assert_eq!(response(&p, 0, 0, 0, &ok[..ok.len() - 1]), Ok(None));
        assert_eq!(response(&p, 0, 0, 0, ok), Ok(Some(ok.len())));
        assert_eq!(
            response(
                &p,
                0,
                0,
                0,
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
            ),
            Err(BadResponse::Status(404))
        );
        assert_eq!(
            response(&p, 0, 0, 0, b"SSH-2.0\r\n\r\n"),
            Err(BadResponse::Malformed)
        );
        let mut req = Vec::new();
        request(&p, 0, 0, 0, false, &mut req);
        assert!(req.starts_with(b"GET / HTTP/1.1\r\nHost: x\r\n"));
        assert!(req.ends_with(b"\r\n\r\n"));
        assert!(!req.windows(17).any(|w| w == b"Connection: close"));
        request(&p, 0, 0, 0, true, &mut req);
        assert!(req.ends_with(b"\r\nConnection: close\r\n\r\n"));
    }

    #[test]
    fn redis_set_then_get_of_the_same_value() {
        let mut req = Vec::new();
        request(&Proto::Redis, 4, 2, 0, false, &mut req);
        assert!(req.starts_with(b"*3\r\n$3\r\nSET\r\n$12\r\nkey:00000002\r\n$4\r\n"));
        assert_eq!(response(&Proto::Redis, 4, 2, 0, b"+OK\r\n"), Ok(Some(5)));
        assert_eq!(response(&Proto::Redis, 4, 2, 0, b"+O"), Ok(None));
        let v: Vec<u8> = (0..4).map(|n| payload_byte(2, 0, n)).collect();
        let mut get = b"$4\r\n".to_vec();
        get.extend_from_slice(&v);
        get.extend_from_slice(b"\r\n");
        assert_eq!(response(&Proto::Redis, 4, 2, 1, &get), Ok(Some(10)));
        assert_eq!(
            response(&Proto::Redis, 4, 2, 1, b"$-1\r\n"),
            Err(BadResponse::Wrong)
        );
        assert_eq!(
            response(&Proto::Redis, 4, 2, 0, b"-ERR no\r\n"),
            Err(BadResponse::Wrong)
        );
        assert_eq!(
            response(&Proto::Redis, 4, 2, 0, b"?\r\n"),
            Err(BadResponse::Malformed)
        );
    }
}

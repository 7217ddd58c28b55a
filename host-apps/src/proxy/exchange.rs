//! One request–response exchange relayed on the host in `http` mode: the request's head
//! (already parsed and rewritten) and its body go to the backend, framed so that the bytes
//! after the body (the next request) stay with the proxy to be parsed; the response head
//! is read and parsed (502 material when it never comes or is malformed), then its body is
//! relayed, framed, to the client.
//!
//! Requests are not pipelined to the backend: the next request is parsed and forwarded
//! once this response is complete (HAProxy does the same), so a response always belongs
//! to the request before it.

use hoststack::frame::HostLink;
use hoststack::{Context, Errno, Fd};

use super::framing::{parse_response_head, Body, ResponseHead, ResponseParse};
use hoststack::stack::{EPOLLIN, EPOLLOUT};

/// The least response body, still to come when its head is in, for which the last
/// exchange is spliced: a splice costs an install and a closure report over the PCIe link
/// and a teardown on the NIC, more than relaying a few segments on the host. Measured with
/// `nicemu bench proxy --http --sizes 1500 --per-conn 8`: splicing the last exchanges whose
/// second segment was still to come made the proxy 0.88x as fast as relaying them.
pub const SPLICE_MIN_BODY: u64 = 16 * 1024;

/// Read/write rounds per event (fairness between connections).
const ROUNDS: usize = 16;

/// The state of one exchange.
pub(super) struct Exchange {
    /// Bytes for the backend (the head, then body bytes) and how many are written.
    pub(super) to_server: Vec<u8>,
    sent: usize,
    /// What is left of the request body to read from the client.
    req_body: Body,
    /// Client bytes past this request (the start of the next one), parsed after it.
    pub(super) leftover: Vec<u8>,
    /// The request was HEAD: its response has no body.
    head_request: bool,
    /// The client asked to close after this exchange (RFC 9112 §9.6).
    pub(super) req_close: bool,
    /// Response bytes while the head is incomplete.
    rbuf: Vec<u8>,
    /// The final response head, once read.
    pub(super) resp: Option<ResponseHead>,
    resp_body: Body,
    /// Bytes for the client and how many are written.
    to_client: Vec<u8>,
    csent: usize,
    /// The backend sent more than the response: its connection is not reused.
    pub(super) server_spoiled: bool,
    /// Splicing was tried for this exchange (not again when the stack refused).
    pub(super) splice_refused: bool,
    /// Bytes written to the backend (head and body) and to the client (response).
    pub(super) bytes_c2s: u64,
    pub(super) bytes_s2c: u64,
}

/// What a pump step ended with.
pub(super) enum ExStep {
    /// Waiting: the readiness to ask for on the client and on the backend.
    Wait { client: u32, server: u32 },
    /// Request and response complete, and everything written.
    Done,
    /// The backend closed or reset before a complete response head (502).
    NoResponse,
    /// The backend's response head is malformed (502).
    BadResponse,
    /// The request body's framing is malformed (400 before the response started).
    BadRequest,
    /// A failure after the response started, or the client went away: reset both.
    Broken,
}

impl Exchange {
    /// An exchange whose head and first body bytes are `to_server`; `req_body` is what is
    /// left of the body, `leftover` the client bytes after it.
    pub(super) fn new(
        to_server: Vec<u8>,
        req_body: Body,
        leftover: Vec<u8>,
        head_request: bool,
        req_close: bool,
    ) -> Exchange {
        Exchange {
            to_server,
            sent: 0,
            req_body,
            leftover,
            head_request,
            req_close,
            rbuf: Vec::new(),
            resp: None,
            resp_body: Body::Done,
            to_client: Vec::new(),
            csent: 0,
            server_spoiled: false,
            splice_refused: false,
            bytes_c2s: 0,
            bytes_s2c: 0,
        }
    }

    /// Marks `n` bytes of `to_server` written (the connect probe's write).
    pub(super) fn wrote(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.to_server.len());
        self.bytes_c2s += n as u64;
    }

    /// The connection ends with this exchange: the client or the backend said close, or
    /// the response runs until the backend closes.
    pub(super) fn last(&self) -> bool {
        self.req_close || self.resp.is_some_and(|r| !r.keep_alive)
    }

    /// Everything read so far is written, the request is complete, nothing of the client's
    /// is held and enough of the response body is still to come to pay for the hand-over
    /// ([`SPLICE_MIN_BODY`]): the NIC may take over the pair.
    pub(super) fn spliceable(&self) -> bool {
        self.resp.is_some()
            && match self.resp_body {
                Body::Done => false,
                Body::Length(left) => left >= SPLICE_MIN_BODY,
                Body::Chunked(_) | Body::UntilClose => true,
            }
            && self.req_body.done()
            && self.leftover.is_empty()
            && self.sent == self.to_server.len()
            && self.csent == self.to_client.len()
    }

    fn response_done(&self) -> bool {
        self.resp.is_some() && self.resp_body.done()
    }

    /// Takes response bytes `data` from the backend; Err when the head is malformed.
    fn take_response(&mut self, data: &[u8], max_head: usize) -> Result<(), ExStep> {
        if self.resp.is_some() {
            return self.take_body(data);
        }
        self.rbuf.extend_from_slice(data);
        loop {
            match parse_response_head(&self.rbuf, self.head_request, max_head) {
                ResponseParse::Partial => return Ok(()),
                ResponseParse::Error(_) => return Err(ExStep::BadResponse),
                ResponseParse::Complete(h) => {
                    let rest = self.rbuf.split_off(h.head_len);
                    self.to_client.append(&mut self.rbuf);
                    if (100..200).contains(&h.status) && h.status != 101 {
                        // Interim (RFC 9110 §15.2): passed on; the final head follows.
                        self.rbuf = rest;
                        continue;
                    }
                    let mut h = h;
                    if h.status == 101 {
                        // Another protocol follows: `tunnel` mode serves that; here the
                        // connection ends after the head.
                        h.keep_alive = false;
                    }
                    self.resp = Some(h);
                    self.resp_body = h.body;
                    return self.take_body(&rest);
                }
            }
        }
    }

    fn take_body(&mut self, data: &[u8]) -> Result<(), ExStep> {
        let k = self.resp_body.feed(data).map_err(|_| ExStep::Broken)?;
        self.to_client.extend_from_slice(&data[..k]);
        if k < data.len() {
            // Bytes after the response that nothing asked for: dropped, and the backend
            // connection is not used again.
            self.server_spoiled = true;
        }
        Ok(())
    }

    /// Moves bytes both ways as far as they go (bounded), through `scratch`; a response
    /// head may take `max_head` bytes, and a side is not read while `cap` bytes wait for
    /// the other (the configured `relay_buffer`).
    pub(super) fn pump<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        (client, server): (Fd, Fd),
        scratch: &mut [u8],
        max_head: usize,
        cap: usize,
    ) -> ExStep {
        for _ in 0..ROUNDS {
            let mut progress = false;
            // Client → backend: the rest of the request, up to its end.
            if self.sent < self.to_server.len() {
                match flush(ctx, server, &mut self.to_server, &mut self.sent) {
                    Ok(n) => {
                        self.bytes_c2s += n as u64;
                        progress |= n > 0;
                    }
                    Err(_) if self.resp.is_none() => return ExStep::NoResponse,
                    Err(_) => return ExStep::Broken,
                }
            }
            if !self.req_body.done() && self.to_server.len() < cap {
                match ctx.read(client, scratch) {
                    // The client went away in the middle of its request.
                    Ok(0) => return ExStep::Broken,
                    Ok(n) => {
                        let data = &scratch[..n];
                        let Ok(k) = self.req_body.feed(data) else {
                            return if self.resp.is_none() {
                                ExStep::BadRequest
                            } else {
                                ExStep::Broken
                            };
                        };
                        self.to_server.extend_from_slice(&data[..k]);
                        self.leftover.extend_from_slice(&data[k..]);
                        progress = true;
                    }
                    Err(Errno::Again) => {}
                    Err(_) => return ExStep::Broken,
                }
            }
            // Backend → client: the response, up to its end.
            if !self.response_done() && self.to_client.len() - self.csent < cap {
                match ctx.read(server, scratch) {
                    Ok(0) if self.resp_body == Body::UntilClose => {
                        self.resp_body = Body::Done;
                        progress = true;
                    }
                    Ok(0) | Err(Errno::ConnReset | Errno::ConnRefused | Errno::TimedOut)
                        if self.resp.is_none() =>
                    {
                        return ExStep::NoResponse
                    }
                    Ok(0) => return ExStep::Broken,
                    Ok(n) => {
                        let data = scratch[..n].to_vec();
                        if let Err(e) = self.take_response(&data, max_head) {
                            return e;
                        }
                        progress = true;
                    }
                    Err(Errno::Again) => {}
                    Err(_) if self.resp.is_none() => return ExStep::NoResponse,
                    Err(_) => return ExStep::Broken,
                }
            }
            if self.csent < self.to_client.len() {
                match flush(ctx, client, &mut self.to_client, &mut self.csent) {
                    Ok(n) => {
                        self.bytes_s2c += n as u64;
                        progress |= n > 0;
                    }
                    Err(_) => return ExStep::Broken,
                }
            }
            if !progress {
                break;
            }
        }
        let flushed = self.sent == self.to_server.len() && self.csent == self.to_client.len();
        if self.req_body.done() && self.response_done() && flushed {
            return ExStep::Done;
        }
        let reading_client = !self.req_body.done() && self.to_server.len() < cap;
        let reading_server = !self.response_done() && self.to_client.len() - self.csent < cap;
        ExStep::Wait {
            client: (u32::from(reading_client) * EPOLLIN)
                | (u32::from(self.csent < self.to_client.len()) * EPOLLOUT),
            server: (u32::from(reading_server) * EPOLLIN)
                | (u32::from(self.sent < self.to_server.len()) * EPOLLOUT),
        }
    }
}

/// Writes `buf[*off..]` to `fd` as far as it goes; `buf` empties once all of it is
/// written. Returns the bytes written (0 when the socket is full).
fn flush<L: HostLink>(
    ctx: &mut Context<L>,
    fd: Fd,
    buf: &mut Vec<u8>,
    off: &mut usize,
) -> Result<usize, Errno> {
    let n = match ctx.write(fd, &buf[*off..]) {
        Ok(n) => n,
        Err(Errno::Again) => 0,
        Err(e) => return Err(e),
    };
    *off += n;
    if *off == buf.len() {
        buf.clear();
        *off = 0;
    }
    Ok(n)
}

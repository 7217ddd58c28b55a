//! Relaying a pair on the host: one bounded buffer per direction, half-close passed on,
//! failures reported so the caller can reset the other side.

use hoststack::frame::HostLink;
use hoststack::stack::Shutdown;
use hoststack::{Context, Errno, Fd};

/// Read/write rounds per direction and event (fairness between connections).
const PUMP_ROUNDS: usize = 16;

/// One direction of a relayed pair: a bounded buffer between a read side and a write side.
pub(super) struct Pipe {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The read side gave end of stream.
    pub(super) eof: bool,
    /// The write side was shut (after `eof` and an empty buffer).
    pub(super) shut: bool,
    /// Bytes written to the write side.
    pub(super) bytes: u64,
}

impl Pipe {
    pub(super) fn new(cap: usize) -> Pipe {
        Pipe {
            buf: vec![0; cap],
            start: 0,
            end: 0,
            eof: false,
            shut: false,
            bytes: 0,
        }
    }

    pub(super) fn pending(&self) -> bool {
        self.start < self.end
    }

    pub(super) fn room(&self) -> bool {
        self.end < self.buf.len() || self.start > 0
    }
}

/// What ended a relay step.
pub(super) enum PumpEnd {
    /// Both sockets are fine.
    Open,
    /// The read side or the write side failed: reset or gone.
    Failed,
}

/// Moves bytes from `src` to `dst` through `p` until neither can make progress (bounded).
pub(super) fn pump<L: HostLink>(ctx: &mut Context<L>, src: Fd, dst: Fd, p: &mut Pipe) -> PumpEnd {
    for _ in 0..PUMP_ROUNDS {
        let mut progress = false;
        if !p.eof && p.room() {
            if p.end == p.buf.len() {
                p.buf.copy_within(p.start..p.end, 0);
                p.end -= p.start;
                p.start = 0;
            }
            match ctx.read(src, &mut p.buf[p.end..]) {
                Ok(0) => {
                    p.eof = true;
                    progress = true;
                }
                Ok(n) => {
                    p.end += n;
                    progress = true;
                }
                Err(Errno::Again) => {}
                Err(_) => return PumpEnd::Failed,
            }
        }
        if p.pending() {
            match ctx.write(dst, &p.buf[p.start..p.end]) {
                Ok(n) => {
                    p.start += n;
                    p.bytes += n as u64;
                    if p.start == p.end {
                        p.start = 0;
                        p.end = 0;
                    }
                    progress |= n > 0;
                }
                Err(Errno::Again) => {}
                Err(_) => return PumpEnd::Failed,
            }
        }
        if p.eof && !p.pending() && !p.shut {
            // Half-close: the peer's FIN goes on to the other side (RFC 9293 §3.6).
            p.shut = true;
            if ctx.shutdown(dst, Shutdown::Write).is_err() {
                return PumpEnd::Failed;
            }
        }
        if !progress {
            break;
        }
    }
    PumpEnd::Open
}

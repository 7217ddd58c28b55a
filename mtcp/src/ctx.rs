//! One mTCP context (`mctx_t`) in safe Rust: a host stack ([`hoststack::Context`]) and the
//! NIC side it runs with, and mTCP's call semantics on top (blocking calls, descriptor
//! flags, epoll with timeouts, signals, splice callbacks).
//!
//! mTCP runs its stack in a thread of its own per core and the application's calls wait on
//! it (mTCP, NSDI '14, §4.2). nicemu runs to completion instead, as AccelTCP's host stack
//! does (§5.1): the application's thread runs the stack, and on a `shared` lcore the NIC
//! too, inside `mtcp_epoll_wait` and the blocking calls. Every socket of the stack is
//! non-blocking; blocking is this layer's loop of NIC iteration, stack poll and the
//! lcore's adaptive idle backoff, until the call completes or a signal arrives (EINTR).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::io::{IoSlice, IoSliceMut};
use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hoststack::frame::HostLink;
use hoststack::stack::Fd;
use hoststack::stack::SpliceReport;
use hoststack::stack::{EpollEvent, EpollOp, EPOLLERR, EPOLLHUP, EPOLLOUT};
use hoststack::stack::{Shutdown, SockOpt, SockOptName};
use hoststack::tcp::tcb::State;
use hoststack::{Context, Errno};

use crate::err::{E, R};
use crate::signal;

/// How long `mtcp_destroy_context` runs a context on for its last FINs to be acknowledged.
pub const WIND_DOWN: Duration = Duration::from_millis(250);

/// What a context runs besides its stack: the NIC lcore of a `shared` lcore, or only an
/// idle policy when the NIC lcore has a thread of its own.
pub trait NicSide: Send {
    /// One NIC iteration; whether it did any work.
    fn poll(&mut self) -> bool;
    /// After a round (NIC and stack) that did `busy` work: spin, yield or sleep as the idle
    /// policy says (`dataplane::idle::Backoff`).
    fn idle(&mut self, busy: bool);
}

/// The TCP level options of AccelTCP (§5.1), with AccelTCP's values.
pub const TCP_SETUP_OFFLOAD: i32 = 0x10;
/// See [`TCP_SETUP_OFFLOAD`].
pub const TCP_TEARDOWN_OFFLOAD: i32 = 0x11;

/// Splice reports waiting for their C callback, with the callback's address.
pub type PendingSplices = Arc<Mutex<Vec<(usize, SpliceReport)>>>;

/// Not an errno: a wait stopped so that the C layer can run due timer callbacks outside the
/// context's lock (or let another thread take the lock while a blocking pipe end waits),
/// then call again. It never reaches C.
pub const RESUME: E = E(-1);

/// A timer of `mtcp_settimer`: when, in the order set, its id and the C callback's address.
type Timer = Reverse<(Instant, u64, i32, usize)>;

/// How long `mtcp_epoll_wait` may wait, fixed when the C call starts (a wait that stops to
/// run timer callbacks resumes with the same deadline).
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    timeout_ms: i32,
    deadline: Option<Instant>,
}

impl Wait {
    /// A wait of `timeout_ms` (−1 or any negative value: no limit; 0: one round) from now.
    pub fn new(timeout_ms: i32) -> Wait {
        Wait {
            timeout_ms,
            deadline: (timeout_ms > 0)
                .then(|| Instant::now() + Duration::from_millis(timeout_ms as u64)),
        }
    }
}

/// One context.
pub struct Ctx<L: HostLink> {
    /// The host stack.
    pub stack: Context<L>,
    nic: Box<dyn NicSide>,
    /// Descriptors the application made non-blocking (the stack's all are).
    nonblock: HashSet<Fd>,
    /// Reports of ended splices, for the C layer to deliver outside the context's lock.
    pub pending: PendingSplices,
    /// `mtcp_epoll_wait`'s events before they are copied out (kept: no allocation per call).
    events: Vec<EpollEvent>,
    /// Timers of `mtcp_settimer`, earliest first.
    timers: BinaryHeap<Timer>,
    timer_seq: u64,
    /// Whether waits stop for due timers: false while the C layer runs a timer callback
    /// (a wait inside it must not stop for timers that cannot run until it returns).
    pub deliver_timers: bool,
    /// Blocking connects that stopped for timer callbacks and continue when called again.
    connecting: HashSet<Fd>,
}

/// A socket option's value as C passes it: an `int`, or `struct linger`.
pub fn int_opt(v: &[u8]) -> R<i32> {
    let b: [u8; 4] = v.get(..4).and_then(|b| b.try_into().ok()).ok_or(E::INVAL)?;
    Ok(i32::from_ne_bytes(b))
}

/// The stack's option for C's `(level, optname, value)`.
pub fn parse_sockopt(level: i32, name: i32, v: &[u8]) -> R<SockOpt> {
    let buf = |n: i32| usize::try_from(n).map_err(|_| E::INVAL);
    Ok(match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR) => SockOpt::ReuseAddr(int_opt(v)? != 0),
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => SockOpt::SndBuf(buf(int_opt(v)?)?),
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => SockOpt::RcvBuf(buf(int_opt(v)?)?),
        (libc::SOL_SOCKET, libc::SO_LINGER) => {
            // struct linger { int l_onoff; int l_linger; }
            let on = int_opt(v)?;
            let secs = int_opt(v.get(4..).ok_or(E::INVAL)?)?;
            SockOpt::Linger((on != 0).then_some(u32::try_from(secs).map_err(|_| E::INVAL)?))
        }
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => SockOpt::NoDelay(int_opt(v)? != 0),
        (libc::IPPROTO_TCP, TCP_SETUP_OFFLOAD) => SockOpt::SetupOffload(int_opt(v)? != 0),
        (libc::IPPROTO_TCP, TCP_TEARDOWN_OFFLOAD) => SockOpt::TeardownOffload(int_opt(v)? != 0),
        (libc::SOL_SOCKET | libc::IPPROTO_TCP, _) => return Err(E::NOPROTOOPT),
        _ => return Err(E::INVAL),
    })
}

/// The stack's option name for C's `(level, optname)`; `None` for SO_TYPE (answered here).
fn sockopt_name(level: i32, name: i32) -> R<Option<SockOptName>> {
    Ok(Some(match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR) => SockOptName::ReuseAddr,
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => SockOptName::SndBuf,
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => SockOptName::RcvBuf,
        (libc::SOL_SOCKET, libc::SO_LINGER) => SockOptName::Linger,
        (libc::SOL_SOCKET, libc::SO_ERROR) => SockOptName::Error,
        (libc::SOL_SOCKET, libc::SO_TYPE) => return Ok(None),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => SockOptName::NoDelay,
        (libc::IPPROTO_TCP, TCP_SETUP_OFFLOAD) => SockOptName::SetupOffload,
        (libc::IPPROTO_TCP, TCP_TEARDOWN_OFFLOAD) => SockOptName::TeardownOffload,
        (libc::SOL_SOCKET | libc::IPPROTO_TCP, _) => return Err(E::NOPROTOOPT),
        _ => return Err(E::INVAL),
    }))
}

/// The bytes C receives for a stack option value: an `int`, or `struct linger`.
fn encode_sockopt(o: SockOpt) -> Vec<u8> {
    let int = |v: i64| {
        (v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
            .to_ne_bytes()
            .to_vec()
    };
    match o {
        SockOpt::ReuseAddr(b)
        | SockOpt::NoDelay(b)
        | SockOpt::SetupOffload(b)
        | SockOpt::TeardownOffload(b) => int(b as i64),
        SockOpt::SndBuf(n) | SockOpt::RcvBuf(n) => int(n as i64),
        SockOpt::Error(e) => int(e.map_or(0, |e| e.code() as i64)),
        SockOpt::Linger(l) => {
            let mut v = int(l.is_some() as i64);
            v.extend(int(l.unwrap_or(0) as i64));
            v
        }
        SockOpt::Tonic(m) => int(m.is_some() as i64),
    }
}

impl<L: HostLink> Ctx<L> {
    /// A context over `stack`, running `nic` beside it.
    pub fn new(stack: Context<L>, nic: Box<dyn NicSide>) -> Self {
        Ctx {
            stack,
            nic,
            nonblock: HashSet::new(),
            pending: Arc::default(),
            events: Vec::new(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            deliver_timers: true,
            connecting: HashSet::new(),
        }
    }

    /// mtcp_settimer: `callback` (a C function's address) runs once with `id` after
    /// `after`, from the C layer outside the context's lock.
    pub fn settimer(&mut self, id: i32, after: Duration, callback: usize) {
        let at = Instant::now() + after;
        self.timer_seq += 1;
        self.timers
            .push(Reverse((at, self.timer_seq, id, callback)));
    }

    /// Whether a timer is due and may run now.
    pub fn timer_due(&self) -> bool {
        self.deliver_timers && self.timers.peek().is_some_and(|t| t.0 .0 <= Instant::now())
    }

    /// The timers due now, in the order they fall due (and were set): `(id, callback)`.
    pub fn take_due_timers(&mut self) -> Vec<(i32, usize)> {
        // Every call of the C API ends here: no clock read unless a timer is set.
        if self.timers.is_empty() {
            return Vec::new();
        }
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(t) = self.timers.peek() {
            if t.0 .0 > now {
                break;
            }
            let Reverse((_, _, id, cb)) = self.timers.pop().expect("peeked");
            due.push((id, cb));
        }
        due
    }

    /// Timers set and not yet run.
    pub fn timers_pending(&self) -> usize {
        self.timers.len()
    }

    /// One round: NIC iteration, then the stack's poll; whether either did work.
    fn round(&mut self) -> bool {
        let nic = self.nic.poll();
        self.stack.poll() > 0 || nic
    }

    /// Ends the context as a process exit ends its sockets: closes every descriptor still
    /// open, then runs rounds until no connection waits for the ACK of its FIN and the NIC
    /// has taken every frame from the link, for at most [`WIND_DOWN`], so that the last FINs
    /// and resets (and the data before them) leave the NIC.
    pub fn wind_down(&mut self) {
        for fd in self.stack.descriptors() {
            let _ = self.stack.close(fd);
        }
        self.nonblock.clear();
        let until = Instant::now() + WIND_DOWN;
        while Instant::now() < until {
            let busy = self.round();
            let closing = self
                .stack
                .connection_states()
                .iter()
                .any(|(s, _)| matches!(s, State::FinWait1 | State::Closing | State::LastAck));
            if !closing && self.stack.link().tx_pending() == 0 {
                break;
            }
            self.nic.idle(busy);
        }
    }

    /// Runs `op` until it does not fail with `Again`: at most once more after one round
    /// when `fd` is non-blocking (so that a program that polls with non-blocking calls
    /// moves the stack), else until it completes or a signal interrupts the wait (EINTR).
    /// A blocking wait stops with [`RESUME`] when a timer is due, and after each round on
    /// a pipe end (whose other end another thread may hold).
    fn block<T>(
        &mut self,
        fd: Fd,
        mut op: impl FnMut(&mut Context<L>) -> Result<T, Errno>,
    ) -> R<T> {
        let nonblocking = self.nonblock.contains(&fd);
        let yields = !nonblocking && self.stack.is_pipe(fd);
        let sig = signal::count();
        let mut tries = 0u32;
        loop {
            match op(&mut self.stack) {
                Err(Errno::Again) => {}
                r => return r.map_err(E::from),
            }
            if nonblocking && tries > 0 {
                return Err(Errno::Again.into());
            }
            if signal::count() != sig {
                return Err(E::INTR);
            }
            if !nonblocking && self.timer_due() {
                return Err(RESUME);
            }
            tries = tries.saturating_add(1);
            let busy = self.round();
            if !nonblocking {
                self.nic.idle(busy);
                if yields {
                    return Err(RESUME);
                }
            }
        }
    }

    /// mtcp_pipe: `(read end, write end)`, blocking until `mtcp_setsock_nonblock`.
    pub fn pipe(&mut self) -> R<(Fd, Fd)> {
        let (r, w) = self.stack.pipe()?;
        self.stack.set_nonblocking(r, true)?;
        self.stack.set_nonblocking(w, true)?;
        Ok((r, w))
    }

    /// mtcp_socket.
    pub fn socket(&mut self, domain: i32, ty: i32, protocol: i32) -> R<Fd> {
        if domain != libc::AF_INET {
            return Err(E::AFNOSUPPORT);
        }
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        if ty & !flags != libc::SOCK_STREAM || !(protocol == 0 || protocol == libc::IPPROTO_TCP) {
            return Err(E::PROTONOSUPPORT);
        }
        let fd = self.stack.socket()?;
        self.stack.set_nonblocking(fd, true)?;
        if ty & libc::SOCK_NONBLOCK != 0 {
            self.nonblock.insert(fd);
        }
        Ok(fd)
    }

    /// mtcp_setsock_nonblock.
    pub fn set_nonblock(&mut self, fd: Fd) -> R<()> {
        if !self.stack.is_pipe(fd) {
            self.stack.getsockname(fd)?;
        }
        self.nonblock.insert(fd);
        Ok(())
    }

    /// mtcp_bind.
    pub fn bind(&mut self, fd: Fd, addr: SocketAddrV4) -> R<()> {
        Ok(self.stack.bind(fd, addr)?)
    }

    /// mtcp_listen: mTCP refuses a backlog that is not positive.
    pub fn listen(&mut self, fd: Fd, backlog: i32) -> R<()> {
        let backlog = usize::try_from(backlog)
            .ok()
            .filter(|b| *b > 0)
            .ok_or(E::INVAL)?;
        Ok(self.stack.listen(fd, backlog)?)
    }

    /// mtcp_accept: the new descriptor (blocking unless set otherwise) and the peer.
    pub fn accept(&mut self, fd: Fd) -> R<(Fd, SocketAddrV4)> {
        let (c, peer) = self.block(fd, |s| s.accept(fd))?;
        self.stack.set_nonblocking(c, true)?;
        self.nonblock.remove(&c);
        Ok((c, peer))
    }

    /// mtcp_connect: EINPROGRESS when non-blocking; else waits for the handshake's end.
    /// A blocking connect that stops for timer callbacks continues when called again.
    pub fn connect(&mut self, fd: Fd, addr: SocketAddrV4) -> R<()> {
        if !self.connecting.remove(&fd) {
            match self.stack.connect(fd, addr) {
                Err(Errno::InProgress) if !self.nonblock.contains(&fd) => {}
                r => return r.map_err(E::from),
            }
        }
        let sig = signal::count();
        while self.stack.readiness(fd) & (EPOLLOUT | EPOLLERR | EPOLLHUP) == 0 {
            if signal::count() != sig {
                return Err(E::INTR);
            }
            if self.timer_due() {
                self.connecting.insert(fd);
                return Err(RESUME);
            }
            let busy = self.round();
            self.nic.idle(busy);
        }
        match self.stack.getsockopt(fd, SockOptName::Error)? {
            SockOpt::Error(Some(e)) => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// mtcp_read / mtcp_recv without flags.
    pub fn read(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        self.block(fd, |s| s.read(fd, buf))
    }

    /// mtcp_recv with MSG_PEEK: copies what is readable without consuming it.
    pub fn peek(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        self.block(fd, |s| {
            let mut n = 0;
            let r = s.read_with(fd, |a, b| {
                let k = a.len().min(buf.len());
                buf[..k].copy_from_slice(&a[..k]);
                let j = b.len().min(buf.len() - k);
                buf[k..k + j].copy_from_slice(&b[..j]);
                n = k + j;
                0
            });
            r.map(|_| n)
        })
    }

    /// mtcp_socket_ioctl(FIONREAD): bytes readable now.
    pub fn fionread(&mut self, fd: Fd) -> R<usize> {
        if let Some(n) = self.stack.pipe_buffered(fd) {
            return Ok(n);
        }
        let mut n = 0;
        match self.stack.read_with(fd, |a, b| {
            n = a.len() + b.len();
            0
        }) {
            Ok(_) | Err(Errno::Again) => Ok(n),
            Err(e) => Err(e.into()),
        }
    }

    /// mtcp_readv.
    pub fn readv(&mut self, fd: Fd, bufs: &mut [IoSliceMut<'_>]) -> R<usize> {
        self.block(fd, |s| s.readv(fd, bufs))
    }

    /// mtcp_write: what fit (blocking: at least one byte, when any was asked for).
    pub fn write(&mut self, fd: Fd, data: &[u8]) -> R<usize> {
        self.block(fd, |s| s.write(fd, data))
    }

    /// mtcp_writev.
    pub fn writev(&mut self, fd: Fd, bufs: &[IoSlice<'_>]) -> R<usize> {
        self.block(fd, |s| s.writev(fd, bufs))
    }

    /// mtcp_close (sockets and epoll descriptors).
    pub fn close(&mut self, fd: Fd) -> R<()> {
        self.stack.close(fd)?;
        self.nonblock.remove(&fd);
        self.connecting.remove(&fd);
        Ok(())
    }

    /// The context's counters in one line: connections opened and still held, refusals at
    /// the connection bound, frames, and the TCP totals (retransmissions, resets).
    pub fn summary(&self) -> String {
        let s = self.stack.stats();
        let t = self.stack.tcp_totals();
        let held: Vec<String> = self
            .stack
            .connection_states()
            .iter()
            .map(|(st, n)| format!("{n} {st:?}"))
            .collect();
        format!(
            "context {}: connections {} active + {} passive opened, {} held ({}), {} refused \
             at max_concurrency; frames {} in, {} out, {} link full; segments {} in, {} out, \
             {} retransmitted; {} resets sent",
            self.stack.config().core,
            s.active_opens,
            s.passive_opens,
            self.stack.connections(),
            if held.is_empty() {
                "none".to_string()
            } else {
                held.join(", ")
            },
            s.conn_limit,
            s.frames_in,
            s.frames_out,
            s.link_full,
            t.segs_in,
            t.segs_out,
            t.retransmits,
            s.rst_sent
        )
    }

    /// mtcp_abort: a RST instead of a FIN (SO_LINGER 0, then close).
    pub fn abort(&mut self, fd: Fd) -> R<()> {
        self.stack.setsockopt(fd, SockOpt::Linger(Some(0)))?;
        self.close(fd)
    }

    /// mtcp_shutdown.
    pub fn shutdown(&mut self, fd: Fd, how: i32) -> R<()> {
        let how = match how {
            libc::SHUT_RD => Shutdown::Read,
            libc::SHUT_WR => Shutdown::Write,
            libc::SHUT_RDWR => Shutdown::Both,
            _ => return Err(E::INVAL),
        };
        Ok(self.stack.shutdown(fd, how)?)
    }

    /// mtcp_setsockopt.
    pub fn setsockopt(&mut self, fd: Fd, level: i32, name: i32, v: &[u8]) -> R<()> {
        self.stack.getsockname(fd)?;
        let o = parse_sockopt(level, name, v)?;
        Ok(self.stack.setsockopt(fd, o)?)
    }

    /// mtcp_getsockopt: the value's bytes.
    pub fn getsockopt(&mut self, fd: Fd, level: i32, name: i32) -> R<Vec<u8>> {
        self.stack.getsockname(fd)?;
        match sockopt_name(level, name)? {
            None => Ok(libc::SOCK_STREAM.to_ne_bytes().to_vec()),
            Some(n) => Ok(encode_sockopt(self.stack.getsockopt(fd, n)?)),
        }
    }

    /// mtcp_getsockname.
    pub fn getsockname(&mut self, fd: Fd) -> R<SocketAddrV4> {
        Ok(self.stack.getsockname(fd)?)
    }

    /// mtcp_getpeername.
    pub fn getpeername(&mut self, fd: Fd) -> R<SocketAddrV4> {
        Ok(self.stack.getpeername(fd)?)
    }

    /// mtcp_epoll_create: `size` must be positive (a hint, as in Linux).
    pub fn epoll_create(&mut self, size: i32) -> R<Fd> {
        if size <= 0 {
            return Err(E::INVAL);
        }
        Ok(self.stack.epoll_create()?)
    }

    /// mtcp_epoll_ctl; `ev` may be absent for MTCP_EPOLL_CTL_DEL only.
    pub fn epoll_ctl(&mut self, epfd: Fd, op: i32, fd: Fd, ev: Option<EpollEvent>) -> R<()> {
        let op = match op {
            1 => EpollOp::Add,
            2 => EpollOp::Del,
            3 => EpollOp::Mod,
            _ => return Err(E::INVAL),
        };
        let ev = match (op, ev) {
            (EpollOp::Del, e) => e.unwrap_or_default(),
            (_, Some(e)) => e,
            (_, None) => return Err(E::FAULT),
        };
        Ok(self.stack.epoll_ctl(epfd, op, fd, ev)?)
    }

    /// mtcp_epoll_wait: runs rounds until an event, the wait's end (`timeout_ms` −1: none;
    /// 0: one round), a signal (EINTR) or a splice report waiting for its callback (then 0
    /// events, so the callback runs now rather than at the next event). A due timer stops
    /// it with [`RESUME`]: the C layer runs the callback and calls again with the same
    /// `wait`, so timers fire while the application waits and the wait goes on.
    pub fn epoll_wait(&mut self, epfd: Fd, out: &mut [EpollEvent], wait: &Wait) -> R<usize> {
        if out.is_empty() {
            return Err(E::INVAL);
        }
        let (timeout_ms, deadline) = (wait.timeout_ms, wait.deadline);
        let sig = signal::count();
        loop {
            let busy = self.round();
            let n = self.stack.epoll_wait(epfd, out, 0)?;
            if n > 0 || timeout_ms == 0 {
                return Ok(n);
            }
            if signal::count() != sig {
                return Err(E::INTR);
            }
            if self.timer_due() {
                return Err(RESUME);
            }
            if deadline.is_some_and(|d| Instant::now() >= d)
                || self.pending.lock().is_ok_and(|p| !p.is_empty())
            {
                return Ok(0);
            }
            self.nic.idle(busy);
        }
    }

    /// [`Ctx::epoll_wait`] into the context's own buffer of `max` events: the events.
    pub fn epoll_wait_buffered(&mut self, epfd: Fd, max: usize, wait: &Wait) -> R<&[EpollEvent]> {
        let mut out = std::mem::take(&mut self.events);
        out.resize(max, EpollEvent::default());
        let r = self.epoll_wait(epfd, &mut out, wait);
        self.events = out;
        Ok(&self.events[..r?])
    }

    /// mtcp_splice (AccelTCP's nsplice, §4.3): `callback` is the C callback's address,
    /// called with the pair's report once it ends.
    pub fn splice(&mut self, from: Fd, to: Fd, callback: usize) -> R<()> {
        let pending = self.pending.clone();
        self.stack.nsplice(
            from,
            to,
            Box::new(move |r: &SpliceReport| {
                if let Ok(mut p) = pending.lock() {
                    p.push((callback, *r));
                }
            }),
        )?;
        self.nonblock.remove(&from);
        self.nonblock.remove(&to);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hoststack::memlink::{self, MemLink};
    use hoststack::stack::{EpollOp, EPOLLIN};
    use hoststack::HostConfig;

    /// No NIC: idle rounds sleep a little.
    struct NoNic;
    impl NicSide for NoNic {
        fn poll(&mut self) -> bool {
            false
        }
        fn idle(&mut self, busy: bool) {
            if !busy {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }

    fn ctx() -> Ctx<MemLink> {
        let (a, _b) = memlink::pair(64);
        let start = Instant::now();
        let now: hoststack::stack::Now = Arc::new(move || start.elapsed().as_nanos() as u64);
        Ctx::new(
            Context::new(HostConfig::new([10, 0, 0, 1], 0), a, now),
            Box::new(NoNic),
        )
    }

    #[test]
    fn a_due_timer_stops_an_endless_epoll_wait_which_then_goes_on() {
        let mut c = ctx();
        let ep = c.epoll_create(1).unwrap();
        let (r, w) = c.pipe().unwrap();
        let ev = EpollEvent {
            events: EPOLLIN,
            data: 4,
        };
        c.epoll_ctl(ep, 1, r, Some(ev)).unwrap();
        let wait = Wait::new(-1);
        let t0 = Instant::now();
        c.settimer(7, Duration::from_millis(30), 0x1234);
        c.settimer(8, Duration::from_millis(10), 0x5678);
        assert_eq!(c.timers_pending(), 2);
        let mut out = [EpollEvent::default(); 4];
        assert_eq!(c.epoll_wait(ep, &mut out, &wait), Err(RESUME));
        assert!(t0.elapsed() >= Duration::from_millis(10));
        assert!(
            t0.elapsed() < Duration::from_millis(500),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(c.take_due_timers(), [(8, 0x5678)]);
        assert_eq!(c.epoll_wait(ep, &mut out, &wait), Err(RESUME));
        assert!(t0.elapsed() >= Duration::from_millis(30));
        assert_eq!(c.take_due_timers(), [(7, 0x1234)]);
        assert_eq!(c.timers_pending(), 0);
        // No timer: the same wait reports the pipe's bytes.
        c.write(w, b"x").unwrap();
        assert_eq!(c.epoll_wait(ep, &mut out, &wait), Ok(1));
        assert_eq!(out[0], ev);
        // While a callback runs, waits do not stop for timers.
        c.deliver_timers = false;
        c.settimer(9, Duration::ZERO, 1);
        assert!(!c.timer_due());
        assert_eq!(c.epoll_wait(ep, &mut out, &Wait::new(20)), Ok(1));
        let _ = c.stack.epoll_ctl(ep, EpollOp::Del, r, ev);
        assert_eq!(c.epoll_wait(ep, &mut out, &Wait::new(20)), Ok(0));
    }

    #[test]
    fn pipe_ends_block_nonblock_and_report_eof_and_epipe() {
        let mut c = ctx();
        let (r, w) = c.pipe().unwrap();
        let mut buf = [0u8; 8];
        // A blocking read of an empty pipe gives the lock back after a round.
        assert_eq!(c.read(r, &mut buf), Err(RESUME));
        c.set_nonblock(r).unwrap();
        assert_eq!(c.read(r, &mut buf), Err(E(libc::EAGAIN)));
        assert_eq!(c.write(w, b"abc"), Ok(3));
        assert_eq!(c.fionread(r), Ok(3));
        assert_eq!(c.fionread(w), Ok(3));
        assert_eq!(c.peek(r, &mut buf), Ok(3));
        assert_eq!(c.read(r, &mut buf), Ok(3));
        assert_eq!(c.read(w, &mut buf), Err(E::BADF));
        assert_eq!(c.write(r, b"x"), Err(E::BADF));
        assert_eq!(
            c.getsockopt(r, libc::SOL_SOCKET, libc::SO_TYPE),
            Err(E(libc::ENOTSOCK))
        );
        assert_eq!(
            c.connect(w, "10.0.0.2:80".parse().unwrap()),
            Err(E(libc::ENOTSOCK))
        );
        assert_eq!(c.shutdown(w, libc::SHUT_WR), Err(E(libc::ENOTSOCK)));
        assert_eq!(
            c.bind(r, "10.9.9.9:80".parse().unwrap()),
            Err(E(libc::ENOTSOCK))
        );
        assert_eq!(c.listen(r, 4), Err(E(libc::ENOTSOCK)));
        assert_eq!(c.accept(r).map(|_| ()), Err(E(libc::ENOTSOCK)));
        assert_eq!(c.set_nonblock(w), Ok(()));
        c.close(w).unwrap();
        assert_eq!(c.read(r, &mut buf), Ok(0));
        let (r2, w2) = c.pipe().unwrap();
        c.close(r2).unwrap();
        assert_eq!(c.write(w2, b"x"), Err(E(libc::EPIPE)));
        c.close(r).unwrap();
        c.close(w2).unwrap();
    }

    #[test]
    fn socket_options_parse_from_c_values() {
        let one = 1i32.to_ne_bytes();
        let zero = 0i32.to_ne_bytes();
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_REUSEADDR, &one),
            Ok(SockOpt::ReuseAddr(true))
        );
        assert_eq!(
            parse_sockopt(libc::IPPROTO_TCP, libc::TCP_NODELAY, &zero),
            Ok(SockOpt::NoDelay(false))
        );
        assert_eq!(
            parse_sockopt(libc::IPPROTO_TCP, 0x10, &one),
            Ok(SockOpt::SetupOffload(true))
        );
        assert_eq!(
            parse_sockopt(libc::IPPROTO_TCP, 0x11, &one),
            Ok(SockOpt::TeardownOffload(true))
        );
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_SNDBUF, &65536i32.to_ne_bytes()),
            Ok(SockOpt::SndBuf(65536))
        );
        let linger: Vec<u8> = [1i32, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_LINGER, &linger),
            Ok(SockOpt::Linger(Some(0)))
        );
        // Short values, negative sizes, unknown names and levels.
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_REUSEADDR, &one[..2]),
            Err(E::INVAL)
        );
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_LINGER, &one),
            Err(E::INVAL)
        );
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, &(-1i32).to_ne_bytes()),
            Err(E::INVAL)
        );
        assert_eq!(
            parse_sockopt(libc::SOL_SOCKET, libc::SO_KEEPALIVE, &one),
            Err(E::NOPROTOOPT)
        );
        assert_eq!(parse_sockopt(12345, 1, &one), Err(E::INVAL));
    }

    #[test]
    fn option_values_encode_as_c_reads_them() {
        assert_eq!(encode_sockopt(SockOpt::NoDelay(true)), 1i32.to_ne_bytes());
        assert_eq!(
            encode_sockopt(SockOpt::Error(Some(Errno::ConnRefused))),
            libc::ECONNREFUSED.to_ne_bytes()
        );
        assert_eq!(encode_sockopt(SockOpt::Error(None)), 0i32.to_ne_bytes());
        let l = encode_sockopt(SockOpt::Linger(Some(3)));
        assert_eq!((int_opt(&l), int_opt(&l[4..])), (Ok(1), Ok(3)));
    }
}

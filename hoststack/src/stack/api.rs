//! The mTCP socket calls (AccelTCP §5.1): socket, bind, listen, accept, connect, read,
//! readv, write, writev, close, shutdown, getsockname, getpeername, setsockopt, getsockopt.
//!
//! Sockets are blocking by default, as POSIX says; a blocking call runs the stack
//! ([`Context::poll`]) until it can complete, for at most `block_timeout_ns`. Run-to-completion
//! applications set sockets non-blocking and use epoll.

use std::io::{IoSlice, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddrV4};

use super::quasi::{Upgrade, QUASI};
use super::{key, Context, Entry, Fd, Listener, Sock, SockOpts, SockState};
use crate::frame::HostLink;
use crate::tcp::tcb::{Endpoints, State, Tcb};
use crate::Errno;

/// Which side(s) [`Context::shutdown`] closes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shutdown {
    /// SHUT_RD: further reads return end of stream; arriving data is discarded.
    Read,
    /// SHUT_WR: a FIN follows the queued data.
    Write,
    /// SHUT_RDWR: both.
    Both,
}

/// A socket option with its value (`setsockopt`), or the value `getsockopt` returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SockOpt {
    /// SO_REUSEADDR: bind to a port other sockets hold, as long as at most one listens.
    ReuseAddr(bool),
    /// TCP_NODELAY: Nagle's algorithm off.
    NoDelay(bool),
    /// SO_LINGER: `Some(0)` makes close abort with a RST; other values close normally (a
    /// run-to-completion stack does not block in close).
    Linger(Option<u32>),
    /// SO_SNDBUF, bytes; applies to connections created after it is set (for a listener: to
    /// the connections it accepts).
    SndBuf(usize),
    /// SO_RCVBUF, bytes; as SndBuf.
    RcvBuf(usize),
    /// SO_ERROR (get only): the pending error, cleared by reading it.
    Error(Option<Errno>),
    /// AccelTCP TCP_SETUP_OFFLOAD (§4.1, §5.1), on a listener: the NIC answers its SYNs that
    /// carry timestamps with SYN cookies and hands the host each completed connection
    /// ESTABLISHED (0x090A). Registered with the NIC when the socket listens with the option
    /// on; removed when it is turned off or the listener closes.
    SetupOffload(bool),
    /// AccelTCP TCP_TEARDOWN_OFFLOAD (§4.2, §5.1): stored; nothing acts on it yet.
    TeardownOffload(bool),
    /// TCP_TONIC (Tonic §5): once established, the connection's sender side runs in the NIC's
    /// Tonic engines with the named protocol module (`newreno`, `sack`, ...); `None` turns it
    /// off. Set before connect (or on a listener, for the connections it accepts). Such
    /// connections do not offer timestamps (see `stack/tonic.rs`).
    Tonic(Option<offload_api::msg::ModuleName>),
}

/// The name of an option to read with [`Context::getsockopt`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SockOptName {
    /// SO_REUSEADDR.
    ReuseAddr,
    /// TCP_NODELAY.
    NoDelay,
    /// SO_LINGER.
    Linger,
    /// SO_SNDBUF.
    SndBuf,
    /// SO_RCVBUF.
    RcvBuf,
    /// SO_ERROR.
    Error,
    /// TCP_SETUP_OFFLOAD.
    SetupOffload,
    /// TCP_TEARDOWN_OFFLOAD.
    TeardownOffload,
    /// TCP_TONIC.
    Tonic,
}

/// Buffer sizes accepted by SO_SNDBUF / SO_RCVBUF.
const MIN_BUF: usize = 2048;
const MAX_BUF: usize = 64 << 20;

impl<L: HostLink> Context<L> {
    /// socket(AF_INET, SOCK_STREAM, 0).
    pub fn socket(&mut self) -> Result<Fd, Errno> {
        self.alloc_fd(Entry::Sock(Box::new(Sock {
            opts: SockOpts::default(),
            nonblocking: false,
            local: None,
            state: SockState::Fresh,
            reg: None,
            read_shut: false,
            error_reported: false,
        })))
    }

    /// O_NONBLOCK on or off.
    pub fn set_nonblocking(&mut self, fd: Fd, on: bool) -> Result<(), Errno> {
        if let Some(e) = self.pipe_end_mut(fd) {
            e.nonblocking = on;
            return Ok(());
        }
        self.sock_mut(fd)?.nonblocking = on;
        Ok(())
    }

    /// bind: `addr`'s IP must be ours or 0.0.0.0; port 0 picks an ephemeral port.
    pub fn bind(&mut self, fd: Fd, addr: SocketAddrV4) -> Result<(), Errno> {
        // The descriptor first, as Linux: EBADF or ENOTSOCK before the address.
        let s = self.sock(fd)?;
        let ip = addr.ip().octets();
        if ip != self.cfg.ip && ip != [0; 4] {
            return Err(Errno::AddrNotAvail);
        }
        if s.local.is_some() || !matches!(s.state, SockState::Fresh) {
            return Err(Errno::Inval);
        }
        let reuse = s.opts.reuseaddr;
        let port = if addr.port() == 0 {
            self.pick_port(None)?
        } else {
            addr.port()
        };
        let held = self.bound.get(&port).copied().unwrap_or(0);
        if held > 0 && (!reuse || self.listeners.contains_key(&port)) {
            return Err(Errno::AddrInUse);
        }
        *self.bound.entry(port).or_insert(0) += 1;
        let ipaddr = Ipv4Addr::from(self.cfg.ip);
        self.sock_mut(fd)?.local = Some(SocketAddrV4::new(ipaddr, port));
        Ok(())
    }

    /// listen with `backlog` (at least 1): the accept queue bound.
    pub fn listen(&mut self, fd: Fd, backlog: usize) -> Result<(), Errno> {
        let s = self.sock(fd)?;
        if let SockState::Listening(_) = s.state {
            if let SockState::Listening(l) = &mut self.sock_mut(fd)?.state {
                l.backlog = backlog.max(1);
            }
            return Ok(());
        }
        if !matches!(s.state, SockState::Fresh) {
            return Err(Errno::Inval);
        }
        if s.local.is_none() {
            self.bind(fd, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
        }
        let port = self.sock(fd)?.local.expect("bound").port();
        if self.listeners.contains_key(&port) {
            return Err(Errno::AddrInUse);
        }
        self.listeners.insert(port, fd);
        self.sock_mut(fd)?.state = SockState::Listening(Listener {
            backlog: backlog.max(1),
            accept_queue: Default::default(),
            half_open: 0,
        });
        self.setup_register(fd);
        Ok(())
    }

    /// accept: a new connected socket and the peer's address. Non-blocking: `Again` when
    /// none is queued.
    pub fn accept(&mut self, fd: Fd) -> Result<(Fd, SocketAddrV4), Errno> {
        let deadline = self.deadline();
        loop {
            let s = self.sock_mut(fd)?;
            let nonblocking = s.nonblocking;
            let SockState::Listening(l) = &mut s.state else {
                return Err(Errno::Inval);
            };
            if let Some(cid) = l.accept_queue.pop_front() {
                // The accepted socket inherits the listener's options, as on Linux: its
                // connection was built from them at the SYN (buffer sizes, offloads,
                // TCP_TONIC: `input.rs`), so getsockopt must report them.
                let opts = s.opts;
                let quasi = cid & QUASI != 0;
                let ep = if quasi {
                    self.quasi_endpoints(cid & !QUASI)
                        .expect("queued quasi-TCB")
                } else {
                    self.conns[cid as usize]
                        .as_ref()
                        .expect("queued conn")
                        .tcb
                        .endpoints()
                };
                let nfd = match self.alloc_fd(Entry::Sock(Box::new(Sock {
                    opts,
                    nonblocking: false,
                    local: Some(SocketAddrV4::new(ep.local_ip.into(), ep.local_port)),
                    state: if quasi {
                        SockState::Quasi(cid & !QUASI)
                    } else {
                        SockState::Conn(cid)
                    },
                    reg: None,
                    read_shut: false,
                    error_reported: false,
                }))) {
                    Ok(nfd) => nfd,
                    Err(e) => {
                        // No descriptor: put it back for a later accept.
                        if let Ok(s) = self.sock_mut(fd) {
                            if let SockState::Listening(l) = &mut s.state {
                                l.accept_queue.push_front(cid);
                            }
                        }
                        return Err(e);
                    }
                };
                if quasi {
                    self.quasi_accepted(cid & !QUASI, nfd);
                    return Ok((nfd, SocketAddrV4::new(ep.remote_ip.into(), ep.remote_port)));
                }
                let c = self.conns[cid as usize].as_mut().expect("queued conn");
                c.fd = Some(nfd);
                c.listener = None;
                return Ok((nfd, SocketAddrV4::new(ep.remote_ip.into(), ep.remote_port)));
            }
            if nonblocking {
                return Err(Errno::Again);
            }
            self.block(deadline)?;
        }
    }

    /// connect to `addr`. Non-blocking: `InProgress`; completion shows as EPOLLOUT, failure
    /// as SO_ERROR.
    pub fn connect(&mut self, fd: Fd, addr: SocketAddrV4) -> Result<(), Errno> {
        let s = self.sock(fd)?;
        match s.state {
            SockState::Fresh => {}
            SockState::Conn(cid) => {
                let st = self.conns[cid as usize].as_ref().map(|c| c.tcb.state());
                return Err(match st {
                    Some(State::SynSent) => Errno::Already,
                    _ => Errno::IsConn,
                });
            }
            SockState::Quasi(_) => return Err(Errno::IsConn),
            SockState::Listening(_) => return Err(Errno::Inval),
        }
        if addr.port() == 0 || addr.ip().is_unspecified() {
            return Err(Errno::Inval);
        }
        let bound_local = s.local;
        if self.at_conn_limit() {
            return Err(Errno::Again);
        }
        let remote_ip = addr.ip().octets();
        let (local_ip, local_port) = match bound_local {
            Some(l) => {
                if self.tuple_taken(key(remote_ip, addr.port(), self.cfg.ip, l.port())) {
                    return Err(Errno::AddrInUse);
                }
                (self.cfg.ip, l.port())
            }
            None if self.cfg.extra_ips.is_empty() => {
                let p = self.pick_port(Some((remote_ip, addr.port())))?;
                *self.bound.entry(p).or_insert(0) += 1;
                (self.cfg.ip, p)
            }
            None => self.pick_local(remote_ip, addr.port())?,
        };
        let ep = Endpoints {
            local_ip,
            local_port,
            remote_ip,
            remote_port: addr.port(),
        };
        let now = (self.now)();
        let cfg = self.tcp_config_for(&self.sock(fd)?.opts);
        let iss = self
            .isn
            .isn((ep.local_ip, local_port), (remote_ip, addr.port()), now);
        let tonic = self.sock(fd)?.opts.tonic;
        let mut tcb = Tcb::connect(&cfg, ep, iss, now);
        if tonic.is_some() {
            tcb.prepare_tonic_sender();
        }
        let cid = self.alloc_conn(tcb);
        let c = self.conns[cid as usize].as_mut().expect("new");
        c.fd = Some(fd);
        c.owner = tonic.map_or(super::Owner::Host, super::Owner::tonic);
        self.demux
            .insert(key(remote_ip, addr.port(), local_ip, local_port), cid);
        self.stats.active_opens += 1;
        self.mark_dirty(cid);
        let s = self.sock_mut(fd)?;
        s.local = Some(SocketAddrV4::new(ep.local_ip.into(), local_port));
        s.state = SockState::Conn(cid);
        if s.nonblocking {
            self.flush((self.now)());
            return Err(Errno::InProgress);
        }
        let deadline = self.deadline();
        loop {
            let tcb = &self.conns[cid as usize].as_ref().expect("conn").tcb;
            if let Some(e) = tcb.error() {
                self.sock_mut(fd)?.error_reported = true;
                return Err(e.into());
            }
            if tcb.state() != State::SynSent {
                return Ok(());
            }
            self.block(deadline)?;
        }
    }

    /// read: bytes into `buf`; `Ok(0)` at end of stream; `Again` when nothing is there yet
    /// (non-blocking).
    pub fn read(&mut self, fd: Fd, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut one = [IoSliceMut::new(buf)];
        self.readv(fd, &mut one)
    }

    /// readv: scatter read.
    pub fn readv(&mut self, fd: Fd, bufs: &mut [IoSliceMut<'_>]) -> Result<usize, Errno> {
        if let Some(r) = self.pipe_readv(fd, bufs) {
            return r;
        }
        if let Some(r) = self.quasi_readv(fd, bufs) {
            return r;
        }
        let deadline = self.deadline();
        loop {
            let s = self.sock(fd)?;
            let SockState::Conn(cid) = s.state else {
                return Err(Errno::NotConn);
            };
            if s.read_shut {
                return Ok(0);
            }
            let nonblocking = s.nonblocking;
            let c = self.conns[cid as usize].as_mut().expect("socket's conn");
            let mut n = 0;
            for b in bufs.iter_mut() {
                if b.is_empty() {
                    continue;
                }
                let got = c.tcb.recv(b)?;
                n += got;
                if got < b.len() {
                    break;
                }
            }
            if n > 0 {
                self.mark_dirty(cid);
                return Ok(n);
            }
            if bufs.iter().all(|b| b.is_empty()) {
                return Ok(0);
            }
            if c.tcb.fin_received() {
                return Ok(0);
            }
            if let Some(e) = c.tcb.error() {
                self.sock_mut(fd)?.error_reported = true;
                return Err(e.into());
            }
            if c.tcb.state() == State::Closed {
                return Ok(0);
            }
            if nonblocking {
                return Err(Errno::Again);
            }
            self.block(deadline)?;
        }
    }

    /// Zero-copy read: calls `f` with the readable bytes in place (one or two slices) and
    /// consumes as many as it returns. `Ok(0)` at end of stream, `Again` when empty.
    pub fn read_with(
        &mut self,
        fd: Fd,
        f: impl FnOnce(&[u8], &[u8]) -> usize,
    ) -> Result<usize, Errno> {
        if self.is_pipe(fd) {
            return self.pipe_read_with(fd, f).expect("a pipe end");
        }
        let s = self.sock(fd)?;
        if let SockState::Quasi(qid) = s.state {
            let q = self.quasi_mut(qid).expect("socket's quasi-TCB");
            let a = q.unread();
            if a.is_empty() {
                return if q.fin_received() {
                    Ok(0)
                } else {
                    Err(Errno::Again)
                };
            }
            let n = f(a, &[]).min(a.len());
            q.recv_consume(n);
            return Ok(n);
        }
        let SockState::Conn(cid) = s.state else {
            return Err(Errno::NotConn);
        };
        let c = self.conns[cid as usize].as_mut().expect("socket's conn");
        let (a, b) = c.tcb.recv_peek();
        if a.is_empty() && b.is_empty() {
            if c.tcb.fin_received() || c.tcb.state() == State::Closed && c.tcb.error().is_none() {
                return Ok(0);
            }
            if let Some(e) = c.tcb.error() {
                return Err(e.into());
            }
            return Err(Errno::Again);
        }
        let avail = a.len() + b.len();
        let n = f(a, b).min(avail);
        c.tcb.recv_consume(n);
        self.mark_dirty(cid);
        Ok(n)
    }

    /// write: queues bytes; returns how many fit (`Again` when none do, non-blocking).
    pub fn write(&mut self, fd: Fd, data: &[u8]) -> Result<usize, Errno> {
        self.writev(fd, &[IoSlice::new(data)])
    }

    /// writev: gather write.
    pub fn writev(&mut self, fd: Fd, bufs: &[IoSlice<'_>]) -> Result<usize, Errno> {
        if let Some(r) = self.pipe_writev(fd, bufs) {
            return r;
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if let SockState::Quasi(qid) = self.sock(fd)?.state {
            if self.quasi_write(qid, bufs) {
                return Ok(total);
            }
            self.quasi_upgrade(qid, Upgrade::Write, (self.now)());
        }
        let deadline = self.deadline();
        let mut done = 0;
        loop {
            let s = self.sock(fd)?;
            let SockState::Conn(cid) = s.state else {
                return Err(Errno::NotConn);
            };
            let nonblocking = s.nonblocking;
            let c = self.conns[cid as usize].as_mut().expect("socket's conn");
            if let Some(e) = c.tcb.error() {
                self.sock_mut(fd)?.error_reported = true;
                return Err(e.into());
            }
            match c.tcb.state() {
                State::SynSent | State::SynReceived => {}
                State::Established | State::CloseWait => {
                    let mut skip = done;
                    for b in bufs {
                        if skip >= b.len() {
                            skip -= b.len();
                            continue;
                        }
                        let part = &b[skip..];
                        skip = 0;
                        let n = c.tcb.send(part)?;
                        done += n;
                        if n < part.len() {
                            break;
                        }
                    }
                    if done > 0 {
                        self.mark_dirty(cid);
                    }
                }
                _ => return Err(Errno::Pipe),
            }
            if done == total || (done > 0 && nonblocking) || total == 0 {
                return Ok(done);
            }
            if nonblocking {
                return Err(Errno::Again);
            }
            if let Err(e) = self.block(deadline) {
                return if done > 0 { Ok(done) } else { Err(e) };
            }
        }
    }

    /// shutdown.
    pub fn shutdown(&mut self, fd: Fd, how: Shutdown) -> Result<(), Errno> {
        if let SockState::Quasi(qid) = self.sock(fd)?.state {
            self.quasi_upgrade(qid, Upgrade::Api, (self.now)());
        }
        let s = self.sock_mut(fd)?;
        let SockState::Conn(cid) = s.state else {
            return Err(Errno::NotConn);
        };
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            s.read_shut = true;
        }
        let c = self.conns[cid as usize].as_mut().expect("socket's conn");
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            let (a, b) = c.tcb.recv_peek();
            let n = a.len() + b.len();
            c.tcb.recv_consume(n);
        }
        if matches!(how, Shutdown::Write | Shutdown::Both) {
            c.tcb.shutdown_write();
        }
        self.mark_dirty(cid);
        Ok(())
    }

    /// close: the descriptor is released at once; the connection finishes its close in the
    /// background (FIN, or RST with SO_LINGER 0 or unread data).
    pub fn close(&mut self, fd: Fd) -> Result<(), Errno> {
        let idx = usize::try_from(fd).map_err(|_| Errno::BadF)?;
        match self.entries.get(idx) {
            Some(Entry::Sock(_)) => {}
            Some(Entry::Epoll(_)) => {
                self.close_epoll(fd);
                return Ok(());
            }
            Some(Entry::Pipe(_)) => {
                let Entry::Pipe(e) = std::mem::replace(&mut self.entries[idx], Entry::Free) else {
                    unreachable!("checked above")
                };
                self.release_fd(fd);
                self.pipe_close(e);
                return Ok(());
            }
            _ => return Err(Errno::BadF),
        }
        let Entry::Sock(s) = std::mem::replace(&mut self.entries[idx], Entry::Free) else {
            unreachable!("checked above")
        };
        self.release_fd(fd);
        if let Some(l) = s.local.filter(|l| l.ip().octets() == self.cfg.ip) {
            let p = l.port();
            if let Some(n) = self.bound.get_mut(&p) {
                *n -= 1;
                if *n == 0 {
                    self.bound.remove(&p);
                }
            }
        }
        match s.state {
            SockState::Fresh => {}
            SockState::Listening(l) => {
                let port = s.local.expect("listener is bound").port();
                self.listeners.remove(&port);
                if s.opts.setup_offload {
                    self.setup_unregister(port);
                }
                // Pending connections die with the listener (reset, as Linux does).
                let queued: Vec<u32> = l
                    .accept_queue
                    .iter()
                    .map(|&cid| {
                        if cid & QUASI == 0 {
                            return cid;
                        }
                        let now = (self.now)();
                        self.quasi_upgrade(cid & !QUASI, Upgrade::Api, now)
                            .unwrap_or(u32::MAX)
                    })
                    .filter(|&cid| cid != u32::MAX)
                    .collect();
                let pending: Vec<u32> = self
                    .conns
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| match c {
                        Some(c) if c.listener == Some(fd) => Some(i as u32),
                        _ => None,
                    })
                    .chain(queued)
                    .collect();
                for cid in pending {
                    if let Some(c) = self.conns[cid as usize].as_mut() {
                        c.listener = None;
                        c.half_open = false;
                        c.tcb.abort();
                        self.mark_dirty(cid);
                    }
                }
            }
            SockState::Quasi(qid) => {
                if s.opts.teardown_offload && self.quasi_close(qid, &s.opts) {
                    return Ok(()); // the NIC closes it (AccelTCP §4.2, §5.2)
                }
                let Some(cid) = self.quasi_upgrade(qid, Upgrade::Api, (self.now)()) else {
                    return Ok(());
                };
                let c = self.conns[cid as usize].as_mut().expect("just grown");
                c.fd = None;
                if s.opts.linger == Some(0) {
                    c.tcb.abort();
                } else {
                    c.tcb.close();
                }
                self.mark_dirty(cid);
            }
            SockState::Conn(cid) => {
                if s.opts.teardown_offload && self.teardown_offload(cid, &s.opts) {
                    return Ok(()); // the NIC closes it (AccelTCP §4.2)
                }
                let c = self.conns[cid as usize].as_mut().expect("socket's conn");
                c.fd = None;
                if s.opts.linger == Some(0) {
                    c.tcb.abort();
                } else {
                    c.tcb.close();
                }
                self.mark_dirty(cid);
            }
        }
        Ok(())
    }

    /// getsockname.
    pub fn getsockname(&self, fd: Fd) -> Result<SocketAddrV4, Errno> {
        Ok(self
            .sock(fd)?
            .local
            .unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)))
    }

    /// getpeername.
    pub fn getpeername(&self, fd: Fd) -> Result<SocketAddrV4, Errno> {
        if let SockState::Quasi(qid) = self.sock(fd)?.state {
            let ep = self.quasi_endpoints(qid).expect("socket's quasi-TCB");
            return Ok(SocketAddrV4::new(ep.remote_ip.into(), ep.remote_port));
        }
        let SockState::Conn(cid) = self.sock(fd)?.state else {
            return Err(Errno::NotConn);
        };
        let ep = self.conns[cid as usize]
            .as_ref()
            .expect("conn")
            .tcb
            .endpoints();
        Ok(SocketAddrV4::new(ep.remote_ip.into(), ep.remote_port))
    }

    /// setsockopt.
    pub fn setsockopt(&mut self, fd: Fd, opt: SockOpt) -> Result<(), Errno> {
        let s = self.sock_mut(fd)?;
        match opt {
            SockOpt::ReuseAddr(v) => s.opts.reuseaddr = v,
            SockOpt::NoDelay(v) => {
                s.opts.nodelay = v;
                if let SockState::Conn(cid) = s.state {
                    if let Some(c) = self.conns[cid as usize].as_mut() {
                        c.tcb.set_nodelay(v);
                    }
                    self.mark_dirty(cid);
                }
            }
            SockOpt::Linger(v) => s.opts.linger = v,
            SockOpt::SndBuf(v) | SockOpt::RcvBuf(v) if !(MIN_BUF..=MAX_BUF).contains(&v) => {
                return Err(Errno::Inval)
            }
            SockOpt::SndBuf(v) => s.opts.sndbuf = Some(v),
            SockOpt::RcvBuf(v) => s.opts.rcvbuf = Some(v),
            SockOpt::Error(_) => return Err(Errno::NoProtoOpt),
            SockOpt::SetupOffload(v) => {
                let was = std::mem::replace(&mut s.opts.setup_offload, v);
                if let (SockState::Listening(_), Some(local)) = (&s.state, s.local) {
                    match (was, v) {
                        (false, true) => self.setup_register(fd),
                        (true, false) => self.setup_unregister(local.port()),
                        _ => {}
                    }
                }
            }
            SockOpt::TeardownOffload(v) => s.opts.teardown_offload = v,
            SockOpt::Tonic(m) => s.opts.tonic = m,
        }
        Ok(())
    }

    /// getsockopt. Reading [`SockOptName::Error`] clears the pending error.
    pub fn getsockopt(&mut self, fd: Fd, name: SockOptName) -> Result<SockOpt, Errno> {
        let tcp = self.cfg.tcp.clone();
        let s = self.sock_mut(fd)?;
        Ok(match name {
            SockOptName::ReuseAddr => SockOpt::ReuseAddr(s.opts.reuseaddr),
            SockOptName::NoDelay => SockOpt::NoDelay(s.opts.nodelay),
            SockOptName::Linger => SockOpt::Linger(s.opts.linger),
            SockOptName::SndBuf => SockOpt::SndBuf(s.opts.sndbuf.unwrap_or(tcp.send_buffer)),
            SockOptName::RcvBuf => SockOpt::RcvBuf(s.opts.rcvbuf.unwrap_or(tcp.recv_buffer)),
            SockOptName::SetupOffload => SockOpt::SetupOffload(s.opts.setup_offload),
            SockOptName::TeardownOffload => SockOpt::TeardownOffload(s.opts.teardown_offload),
            SockOptName::Tonic => SockOpt::Tonic(s.opts.tonic),
            SockOptName::Error => {
                let SockState::Conn(cid) = s.state else {
                    return Ok(SockOpt::Error(None));
                };
                if s.error_reported {
                    return Ok(SockOpt::Error(None));
                }
                let e = self.conns[cid as usize]
                    .as_ref()
                    .and_then(|c| c.tcb.error())
                    .map(Errno::from);
                if e.is_some() {
                    self.sock_mut(fd)?.error_reported = true;
                }
                SockOpt::Error(e)
            }
        })
    }

    /// readv on a quasi-TCB socket (AccelTCP §5.2): the bytes it took, end of stream after
    /// the peer's FIN, `Again` when non-blocking. None when `fd` is not one, or it grew
    /// because a blocking read would block (the caller reads from the TCB).
    fn quasi_readv(&mut self, fd: Fd, bufs: &mut [IoSliceMut<'_>]) -> Option<Result<usize, Errno>> {
        let s = self.sock(fd).ok()?;
        let SockState::Quasi(qid) = s.state else {
            return None;
        };
        if s.read_shut {
            return Some(Ok(0));
        }
        let nonblocking = s.nonblocking;
        let q = self.quasi_mut(qid)?;
        let mut n = 0;
        for b in bufs.iter_mut() {
            if b.is_empty() {
                continue;
            }
            let got = q.recv(b);
            n += got;
            if got < b.len() {
                break;
            }
        }
        if n > 0 || bufs.iter().all(|b| b.is_empty()) || q.fin_received() {
            return Some(Ok(n));
        }
        if nonblocking {
            return Some(Err(Errno::Again));
        }
        self.quasi_upgrade(qid, Upgrade::Api, (self.now)());
        None
    }

    pub(super) fn deadline(&self) -> Option<u64> {
        self.cfg
            .block_timeout_ns
            .map(|t| (self.now)().saturating_add(t))
    }

    /// One wait step of a blocking call: run the stack, fail with `Again` past the deadline.
    pub(super) fn block(&mut self, deadline: Option<u64>) -> Result<(), Errno> {
        if self.poll() == 0 {
            std::hint::spin_loop();
        }
        match deadline {
            Some(d) if (self.now)() >= d => Err(Errno::Again),
            _ => Ok(()),
        }
    }

    /// A local address and port for a connection to `remote_ip:remote_port` when the
    /// context has several addresses ([`super::HostConfig::extra_ips`]): the addresses take
    /// turns, and on each any ephemeral port not already connected to that remote will do
    /// (as Linux's `IP_BIND_ADDRESS_NO_PORT`); on the primary address the port must also be
    /// unbound. With a flow map, only ports whose replies reach this core.
    fn pick_local(
        &mut self,
        remote_ip: [u8; 4],
        remote_port: u16,
    ) -> Result<([u8; 4], u16), Errno> {
        let n = self.cfg.extra_ips.len() + 1;
        let (lo, hi) = self.cfg.ephemeral;
        let span = (hi as u32).saturating_sub(lo as u32) + 1;
        for _ in 0..n {
            let i = self.next_local_ip % n;
            self.next_local_ip = (i + 1) % n;
            if i == 0 {
                if let Ok(p) = self.pick_port(Some((remote_ip, remote_port))) {
                    *self.bound.entry(p).or_insert(0) += 1;
                    return Ok((self.cfg.ip, p));
                }
                continue;
            }
            let ip = self.cfg.extra_ips[i - 1];
            let mut p = self.next_ephemeral.clamp(lo, hi);
            for _ in 0..span {
                let cand = p;
                p = if p >= hi { lo } else { p + 1 };
                if self.tuple_taken(key(remote_ip, remote_port, ip, cand)) {
                    continue;
                }
                if let Some(map) = &self.cfg.flow_core {
                    let ep = Endpoints {
                        local_ip: ip,
                        local_port: cand,
                        remote_ip,
                        remote_port,
                    };
                    if map(&ep) != self.cfg.core {
                        continue;
                    }
                }
                self.next_ephemeral = p;
                return Ok((ip, cand));
            }
        }
        Err(Errno::AddrNotAvail)
    }

    /// Whether a connection with demux key `k` exists here, or is a pair the NIC splices
    /// (from its install ack to its closure report, AccelTCP §4.3): a new connection on
    /// such a 4-tuple would have its segments translated as the pair's.
    fn tuple_taken(&self, k: super::Key) -> bool {
        self.demux.contains_key(&k)
            || (!self.splice_keys.is_empty() && self.splice_keys.contains_key(&k))
    }

    /// An ephemeral port: free for `remote` (or entirely free when none) and, with a flow
    /// map, one whose replies reach this core (mTCP's `mtcp_init_rss`).
    fn pick_port(&mut self, remote: Option<([u8; 4], u16)>) -> Result<u16, Errno> {
        let (lo, hi) = self.cfg.ephemeral;
        let span = (hi as u32).saturating_sub(lo as u32) + 1;
        let mut p = self.next_ephemeral.clamp(lo, hi);
        for _ in 0..span {
            let cand = p;
            p = if p >= hi { lo } else { p + 1 };
            let free = match remote {
                Some((rip, rport)) => {
                    !self.tuple_taken(key(rip, rport, self.cfg.ip, cand))
                        && !self.listeners.contains_key(&cand)
                        && !self.bound.contains_key(&cand)
                }
                None => !self.bound.contains_key(&cand) && !self.listeners.contains_key(&cand),
            };
            if !free {
                continue;
            }
            if let (Some(map), Some((rip, rport))) = (&self.cfg.flow_core, remote) {
                let ep = Endpoints {
                    local_ip: self.cfg.ip,
                    local_port: cand,
                    remote_ip: rip,
                    remote_port: rport,
                };
                if map(&ep) != self.cfg.core {
                    continue;
                }
            }
            self.next_ephemeral = p;
            return Ok(cand);
        }
        Err(Errno::AddrNotAvail)
    }
}

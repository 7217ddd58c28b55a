//! The mTCP socket calls (AccelTCP §5.1) that open and close connections: socket, bind,
//! listen, accept, connect, shutdown, close; and the wait step of blocking calls. The data
//! calls are in `io.rs`, the option and address calls in `sockopt.rs`, the choice of local
//! ports in `ports.rs`.
//!
//! Sockets are blocking by default, as POSIX says; a blocking call runs the stack
//! ([`Context::poll`]) until it can complete, for at most `block_timeout_ns`. Run-to-completion
//! applications set sockets non-blocking and use epoll.

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

    /// bind: `addr`'s IP must be ours or 0.0.0.0; port 0 picks an ephemeral port.
    ///
    /// With a flow map ([`super::HostConfig::flow_core`]) port 0 is chosen later, as with
    /// Linux's `IP_BIND_ADDRESS_NO_PORT`: by `connect`, among the ports whose replies reach
    /// this core for that remote (mTCP's `mtcp_init_rss`), or by `listen`. Until then
    /// `getsockname` reports port 0. A port picked here could hash to another core's queue,
    /// and that connection's segments would never reach it.
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
        if addr.port() == 0 && self.cfg.flow_core.is_some() {
            let ipaddr = Ipv4Addr::from(self.cfg.ip);
            self.sock_mut(fd)?.local = Some(SocketAddrV4::new(ipaddr, 0));
            return Ok(());
        }
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
        match s.local {
            None => self.bind(fd, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?,
            // Bound to port 0 with the choice deferred (a flow map): any free port, since
            // the frames to a listening port are not steered by the port.
            Some(l) if l.port() == 0 => {
                let p = self.pick_port(None)?;
                *self.bound.entry(p).or_insert(0) += 1;
                self.sock_mut(fd)?.local = Some(SocketAddrV4::new(*l.ip(), p));
            }
            Some(_) => {}
        }
        let port = self.sock(fd)?.local.expect("bound").port();
        if self.listeners.contains_key(&port) {
            return Err(Errno::AddrInUse);
        }
        if let Some(hook) = &self.cfg.on_listen {
            hook(port);
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
            // Bound to port 0 with the choice deferred to here (see `bind`).
            Some(l) if l.port() == 0 => {
                let p = self.pick_port(Some((remote_ip, addr.port())))?;
                *self.bound.entry(p).or_insert(0) += 1;
                (self.cfg.ip, p)
            }
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
}

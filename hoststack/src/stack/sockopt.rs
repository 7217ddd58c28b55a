//! The option and address calls: setsockopt and getsockopt with their option types
//! ([`SockOpt`], [`SockOptName`]), O_NONBLOCK, getsockname and getpeername.

use std::net::{Ipv4Addr, SocketAddrV4};

use super::{Context, Fd, SockState};
use crate::frame::HostLink;
use crate::Errno;

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
    /// O_NONBLOCK on or off.
    pub fn set_nonblocking(&mut self, fd: Fd, on: bool) -> Result<(), Errno> {
        if let Some(e) = self.pipe_end_mut(fd) {
            e.nonblocking = on;
            return Ok(());
        }
        self.sock_mut(fd)?.nonblocking = on;
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
}

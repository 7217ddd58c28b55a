//! The listening socket every server application opens the same way: non-blocking,
//! `SO_REUSEADDR`, `TCP_NODELAY` inherited by accepted connections, AccelTCP's setup and
//! teardown offloads as asked (§4.1, §4.2), bound to a port of the context's address and
//! registered on an epoll instance.

use std::net::{Ipv4Addr, SocketAddrV4};

use hoststack::frame::HostLink;
use hoststack::stack::{EpollEvent, EpollOp, SockOpt, EPOLLIN};
use hoststack::{Context, Errno, Fd};

/// The AccelTCP offloads a server asks for on its listening socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerOffloads {
    /// `TCP_SETUP_OFFLOAD` (AccelTCP §4.1): the NIC answers SYNs with SYN cookies.
    pub setup: bool,
    /// `TCP_TEARDOWN_OFFLOAD` (AccelTCP §4.2): closes are handed to the NIC.
    pub teardown: bool,
}

/// A listening socket on `port` (any local address) with accept backlog `backlog` and the
/// offloads `off`, registered on `ep` for `EPOLLIN` with `data` as its event tag.
///
/// Errors: the first socket call that failed (e.g. `AddrInUse` for a port already bound).
pub fn listen<L: HostLink>(
    ctx: &mut Context<L>,
    ep: Fd,
    port: u16,
    backlog: usize,
    off: ServerOffloads,
    data: u64,
) -> Result<Fd, Errno> {
    let l = ctx.socket()?;
    ctx.set_nonblocking(l, true)?;
    ctx.setsockopt(l, SockOpt::ReuseAddr(true))?;
    ctx.setsockopt(l, SockOpt::NoDelay(true))?;
    ctx.setsockopt(l, SockOpt::SetupOffload(off.setup))?;
    ctx.setsockopt(l, SockOpt::TeardownOffload(off.teardown))?;
    ctx.bind(l, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port))?;
    ctx.listen(l, backlog)?;
    ctx.epoll_ctl(
        ep,
        EpollOp::Add,
        l,
        EpollEvent {
            events: EPOLLIN,
            data,
        },
    )?;
    Ok(l)
}

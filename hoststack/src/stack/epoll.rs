//! epoll_create, epoll_ctl and epoll_wait, level- and edge-triggered, as mTCP offers them.
//!
//! Each epoll instance keeps a ready queue of descriptors. The stack queues a socket when
//! something happens to it (data, space, connection established, error, a connection to
//! accept) and it is registered; `epoll_wait` checks each queued socket's current readiness
//! against its interest, reports it, and for level-triggered registrations queues it again
//! (as Linux does), so readiness that persists is reported again. One epoll instance per
//! socket (as in mTCP).

use super::{Context, Entry, Epoll, Fd, Reg, SockState};
use crate::frame::HostLink;
use crate::tcp::tcb::State;
use crate::Errno;

/// Readable (or a connection to accept, or end of stream).
pub const EPOLLIN: u32 = 0x001;
/// Writable.
pub const EPOLLOUT: u32 = 0x004;
/// Error (always reported).
pub const EPOLLERR: u32 = 0x008;
/// Hang-up: both directions closed or reset (always reported).
pub const EPOLLHUP: u32 = 0x010;
/// The peer shut its write side.
pub const EPOLLRDHUP: u32 = 0x2000;
/// Report once, then disable until re-armed with `Mod`.
pub const EPOLLONESHOT: u32 = 1 << 30;
/// Edge-triggered.
pub const EPOLLET: u32 = 1 << 31;

/// An event: what happened and the registration's data.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct EpollEvent {
    /// EPOLL* bits.
    pub events: u32,
    /// The value given at registration.
    pub data: u64,
}

/// epoll_ctl operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EpollOp {
    /// EPOLL_CTL_ADD.
    Add,
    /// EPOLL_CTL_MOD.
    Mod,
    /// EPOLL_CTL_DEL.
    Del,
}

impl<L: HostLink> Context<L> {
    /// epoll_create.
    pub fn epoll_create(&mut self) -> Result<Fd, Errno> {
        self.alloc_fd(Entry::Epoll(Epoll {
            ready: Default::default(),
        }))
    }

    /// epoll_ctl: register, change or remove `fd`'s interest in `epfd`.
    pub fn epoll_ctl(
        &mut self,
        epfd: Fd,
        op: EpollOp,
        fd: Fd,
        ev: EpollEvent,
    ) -> Result<(), Errno> {
        match self
            .entries
            .get(usize::try_from(epfd).map_err(|_| Errno::BadF)?)
        {
            Some(Entry::Epoll(_)) => {}
            Some(Entry::Sock(_) | Entry::Pipe(_)) => return Err(Errno::Inval),
            _ => return Err(Errno::BadF),
        }
        let reg = self.reg_mut(fd)?;
        match op {
            EpollOp::Add => {
                if reg.is_some_and(|r| r.epfd == epfd) {
                    return Err(Errno::Exist);
                }
                *reg = Some(Reg {
                    epfd,
                    events: ev.events,
                    data: ev.data,
                    queued: false,
                });
            }
            EpollOp::Mod => match reg.as_mut() {
                Some(r) if r.epfd == epfd => {
                    r.events = ev.events;
                    r.data = ev.data;
                }
                _ => return Err(Errno::NoEnt),
            },
            EpollOp::Del => {
                if reg.is_none_or(|r| r.epfd != epfd) {
                    return Err(Errno::NoEnt);
                }
                *reg = None;
                return Ok(());
            }
        }
        // Readiness that already holds is reported (Linux checks it at ADD and MOD).
        if self.readiness(fd) != 0 {
            self.notify(fd);
        }
        Ok(())
    }

    /// epoll_wait: runs the stack ([`Context::poll`]) and fills `events` with ready
    /// registrations; with `timeout_ms` 0 it returns at once, with −1 it waits until an event,
    /// otherwise at most that long (on the context's clock).
    pub fn epoll_wait(
        &mut self,
        epfd: Fd,
        events: &mut [EpollEvent],
        timeout_ms: i32,
    ) -> Result<usize, Errno> {
        match self
            .entries
            .get(usize::try_from(epfd).map_err(|_| Errno::BadF)?)
        {
            Some(Entry::Epoll(_)) => {}
            Some(Entry::Sock(_) | Entry::Pipe(_)) => return Err(Errno::Inval),
            _ => return Err(Errno::BadF),
        }
        // No clock read for a non-blocking call (a busy-polling loop makes one per turn).
        let start = if timeout_ms > 0 { (self.now)() } else { 0 };
        loop {
            self.poll();
            let n = self.collect(epfd, events);
            if n > 0 || timeout_ms == 0 || events.is_empty() {
                return Ok(n);
            }
            if timeout_ms > 0 && (self.now)().saturating_sub(start) >= timeout_ms as u64 * 1_000_000
            {
                return Ok(0);
            }
            std::hint::spin_loop();
        }
    }

    /// Reports ready registrations of `epfd` into `out`. Only the entries queued when the
    /// call starts are examined; level-triggered ones still ready go back to the end of the
    /// queue for the next call (no allocation per call).
    fn collect(&mut self, epfd: Fd, out: &mut [EpollEvent]) -> usize {
        let pending = match self.entries.get(epfd as usize) {
            Some(Entry::Epoll(ep)) => ep.ready.len(),
            _ => return 0,
        };
        let mut n = 0;
        for _ in 0..pending {
            if n == out.len() {
                break;
            }
            let Some(Entry::Epoll(ep)) = self.entries.get_mut(epfd as usize) else {
                break;
            };
            let Some(fd) = ep.ready.pop_front() else {
                break;
            };
            let ready = self.readiness(fd);
            let Ok(Some(r)) = self.reg_mut(fd).map(|r| r.as_mut()) else {
                continue;
            };
            if r.epfd != epfd || !r.queued {
                continue;
            }
            r.queued = false;
            let hit = ready & (r.events | EPOLLERR | EPOLLHUP);
            if hit == 0 || r.events & !(EPOLLET | EPOLLONESHOT) == 0 {
                continue;
            }
            out[n] = EpollEvent {
                events: hit,
                data: r.data,
            };
            n += 1;
            if r.events & EPOLLONESHOT != 0 {
                r.events = 0;
            } else if r.events & EPOLLET == 0 {
                r.queued = true;
                if let Some(Entry::Epoll(ep)) = self.entries.get_mut(epfd as usize) {
                    ep.ready.push_back(fd);
                }
            }
        }
        n
    }

    /// Queues `fd` on its epoll instance if registered and not queued.
    pub(super) fn notify(&mut self, fd: Fd) {
        let Ok(Some(r)) = self.reg_mut(fd).map(|r| r.as_mut()) else {
            return;
        };
        if r.queued {
            return;
        }
        let epfd = r.epfd;
        match self.entries.get_mut(epfd as usize) {
            Some(Entry::Epoll(ep)) => ep.ready.push_back(fd),
            _ => return,
        }
        if let Ok(Some(r)) = self.reg_mut(fd).map(|r| r.as_mut()) {
            r.queued = true;
        }
    }

    /// The epoll registration slot of a socket or pipe end (`NotSock` for an epoll
    /// descriptor, `BadF` for a free one).
    fn reg_mut(&mut self, fd: Fd) -> Result<&mut Option<Reg>, Errno> {
        match self
            .entries
            .get_mut(usize::try_from(fd).map_err(|_| Errno::BadF)?)
        {
            Some(Entry::Sock(s)) => Ok(&mut s.reg),
            Some(Entry::Pipe(e)) => Ok(&mut e.reg),
            Some(Entry::Epoll(_)) => Err(Errno::NotSock),
            _ => Err(Errno::BadF),
        }
    }

    /// The EPOLL* bits that hold for `fd` now.
    pub fn readiness(&self, fd: Fd) -> u32 {
        if let Some(e) = self.pipe_end(fd) {
            return self.pipe_readiness(e);
        }
        let Ok(s) = self.sock(fd) else { return 0 };
        match &s.state {
            SockState::Fresh => 0,
            SockState::Listening(l) => {
                if l.accept_queue.is_empty() {
                    0
                } else {
                    EPOLLIN
                }
            }
            SockState::Quasi(qid) => {
                let Some(q) = self.quasi_ref(*qid) else {
                    return 0;
                };
                let mut ev = 0;
                if !q.unread().is_empty() || q.fin_received() || s.read_shut {
                    ev |= EPOLLIN;
                }
                if q.fin_received() {
                    ev |= EPOLLRDHUP;
                }
                if q.send_room() > 0 {
                    ev |= EPOLLOUT;
                }
                ev
            }
            SockState::Conn(cid) => {
                let Some(c) = self.conns[*cid as usize].as_ref() else {
                    return 0;
                };
                let t = &c.tcb;
                let mut ev = 0;
                if t.recv_available() > 0 || t.fin_received() || s.read_shut {
                    ev |= EPOLLIN;
                }
                if t.fin_received() {
                    ev |= EPOLLRDHUP;
                }
                match t.state() {
                    State::Established | State::CloseWait if t.send_space() > 0 => ev |= EPOLLOUT,
                    _ => {}
                }
                if t.error().is_some() {
                    ev |= EPOLLERR | EPOLLHUP | EPOLLIN | EPOLLOUT;
                } else if matches!(t.state(), State::Closed | State::TimeWait) {
                    // Both directions are finished.
                    ev |= EPOLLHUP | EPOLLIN;
                }
                ev
            }
        }
    }

    pub(super) fn close_epoll(&mut self, epfd: Fd) {
        for e in self.entries.iter_mut() {
            let reg = match e {
                Entry::Sock(s) => &mut s.reg,
                Entry::Pipe(p) => &mut p.reg,
                _ => continue,
            };
            if reg.is_some_and(|r| r.epfd == epfd) {
                *reg = None;
            }
        }
        self.release_fd(epfd);
    }
}

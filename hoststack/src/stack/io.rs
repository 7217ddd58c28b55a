//! The data calls: read, readv, read_with (zero-copy), write and writev, on connections
//! held by a TCB or as a quasi-TCB (AccelTCP §5.2); pipe ends are served by `pipe.rs`.

use std::io::{IoSlice, IoSliceMut};

use super::quasi::Upgrade;
use super::{Context, Fd, SockState};
use crate::frame::HostLink;
use crate::tcp::tcb::State;
use crate::Errno;

impl<L: HostLink> Context<L> {
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
}

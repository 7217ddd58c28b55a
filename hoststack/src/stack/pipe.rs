//! mTCP's `mtcp_pipe`: two descriptors in the context's table joined by a bounded byte
//! buffer. Bytes written to the write end are read from the read end; both can be
//! registered with epoll like sockets. Socket calls on an end fail with `NotSock`, as Linux
//! answers them on a pipe; reading the write end or writing the read end fails with `BadF`.
//!
//! Readiness (what Linux's `pipe_poll` reports): the read end is EPOLLIN while bytes wait or
//! once the write end is closed (then also EPOLLHUP, and a read returns end of stream); the
//! write end is EPOLLOUT while the buffer has room, and EPOLLERR once the read end is closed
//! (a write then fails with `Pipe`).

use std::collections::VecDeque;
use std::io::{IoSlice, IoSliceMut};

use super::{Context, Entry, Fd, Reg};
use super::{EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT};
use crate::frame::HostLink;
use crate::Errno;

/// One end of a pipe: its entry in the descriptor table.
pub(super) struct PipeEnd {
    /// Index into `Context::pipes`.
    pub(super) pipe: u32,
    /// The write end (else the read end).
    pub(super) write: bool,
    /// O_NONBLOCK.
    pub(super) nonblocking: bool,
    /// Its epoll registration.
    pub(super) reg: Option<Reg>,
}

/// The buffer two ends share, and which ends are still open.
pub(super) struct Pipe {
    buf: VecDeque<u8>,
    cap: usize,
    reader: Option<Fd>,
    writer: Option<Fd>,
}

impl<L: HostLink> Context<L> {
    /// A pipe: `(read end, write end)`, blocking, holding up to the context's send buffer
    /// size (`HostConfig::tcp.send_buffer`). `MFile` when the table has no room for both.
    pub fn pipe(&mut self) -> Result<(Fd, Fd), Errno> {
        if self.open_fds + 2 > self.cfg.max_fds {
            return Err(Errno::MFile);
        }
        let cap = self.cfg.tcp.send_buffer.max(1);
        let id = match self.free_pipes.pop() {
            Some(id) => id,
            None => {
                self.pipes.push(None);
                (self.pipes.len() - 1) as u32
            }
        };
        let end = |write| {
            Entry::Pipe(PipeEnd {
                pipe: id,
                write,
                nonblocking: false,
                reg: None,
            })
        };
        let r = self.alloc_fd(end(false))?;
        let w = self.alloc_fd(end(true))?;
        self.pipes[id as usize] = Some(Pipe {
            buf: VecDeque::new(),
            cap,
            reader: Some(r),
            writer: Some(w),
        });
        Ok((r, w))
    }

    /// Whether `fd` is an end of a pipe.
    pub fn is_pipe(&self, fd: Fd) -> bool {
        self.pipe_end(fd).is_some()
    }

    /// The bytes waiting in the pipe `fd` is an end of (FIONREAD); none when it is not one.
    pub fn pipe_buffered(&self, fd: Fd) -> Option<usize> {
        let e = self.pipe_end(fd)?;
        Some(
            self.pipes[e.pipe as usize]
                .as_ref()
                .map_or(0, |p| p.buf.len()),
        )
    }

    pub(super) fn pipe_end(&self, fd: Fd) -> Option<&PipeEnd> {
        match self.entries.get(usize::try_from(fd).ok()?) {
            Some(Entry::Pipe(e)) => Some(e),
            _ => None,
        }
    }

    pub(super) fn pipe_end_mut(&mut self, fd: Fd) -> Option<&mut PipeEnd> {
        match self.entries.get_mut(usize::try_from(fd).ok()?) {
            Some(Entry::Pipe(e)) => Some(e),
            _ => None,
        }
    }

    /// readv on a pipe end: None when `fd` is not one.
    pub(super) fn pipe_readv(
        &mut self,
        fd: Fd,
        bufs: &mut [IoSliceMut<'_>],
    ) -> Option<Result<usize, Errno>> {
        let e = self.pipe_end(fd)?;
        if e.write {
            return Some(Err(Errno::BadF));
        }
        let (id, nonblocking) = (e.pipe, e.nonblocking);
        let deadline = self.deadline();
        loop {
            let p = self.pipes[id as usize].as_mut().expect("open end's pipe");
            if bufs.iter().all(|b| b.is_empty()) {
                return Some(Ok(0));
            }
            if !p.buf.is_empty() {
                let mut n = 0;
                for b in bufs.iter_mut() {
                    let k = b.len().min(p.buf.len());
                    for (dst, src) in b[..k].iter_mut().zip(p.buf.drain(..k)) {
                        *dst = src;
                    }
                    n += k;
                    if p.buf.is_empty() {
                        break;
                    }
                }
                if let Some(w) = p.writer {
                    self.notify(w);
                }
                return Some(Ok(n));
            }
            if p.writer.is_none() {
                return Some(Ok(0));
            }
            if nonblocking {
                return Some(Err(Errno::Again));
            }
            if let Err(e) = self.block(deadline) {
                return Some(Err(e));
            }
        }
    }

    /// Zero-copy read of a pipe's read end (see [`Context::read_with`]): None when `fd` is
    /// not a pipe end.
    pub(super) fn pipe_read_with(
        &mut self,
        fd: Fd,
        f: impl FnOnce(&[u8], &[u8]) -> usize,
    ) -> Option<Result<usize, Errno>> {
        let e = self.pipe_end(fd)?;
        if e.write {
            return Some(Err(Errno::BadF));
        }
        let id = e.pipe;
        let p = self.pipes[id as usize].as_mut().expect("open end's pipe");
        if p.buf.is_empty() {
            return Some(if p.writer.is_none() {
                Ok(0)
            } else {
                Err(Errno::Again)
            });
        }
        let (a, b) = p.buf.as_slices();
        let n = f(a, b).min(p.buf.len());
        p.buf.drain(..n);
        if let (true, Some(w)) = (n > 0, p.writer) {
            self.notify(w);
        }
        Some(Ok(n))
    }

    /// writev on a pipe end: None when `fd` is not one. Non-blocking: what fits (`Again`
    /// when nothing does); blocking: waits until everything is in.
    pub(super) fn pipe_writev(
        &mut self,
        fd: Fd,
        bufs: &[IoSlice<'_>],
    ) -> Option<Result<usize, Errno>> {
        let e = self.pipe_end(fd)?;
        if !e.write {
            return Some(Err(Errno::BadF));
        }
        let (id, nonblocking) = (e.pipe, e.nonblocking);
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let deadline = self.deadline();
        let mut done = 0;
        loop {
            let p = self.pipes[id as usize].as_mut().expect("open end's pipe");
            if total == 0 {
                return Some(Ok(0));
            }
            if p.reader.is_none() {
                return Some(if done > 0 { Ok(done) } else { Err(Errno::Pipe) });
            }
            let mut skip = done;
            for b in bufs {
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                let part = &b[skip..];
                skip = 0;
                let k = part.len().min(p.cap.saturating_sub(p.buf.len()));
                p.buf.extend(&part[..k]);
                done += k;
                if k < part.len() {
                    break;
                }
            }
            if let (true, Some(r)) = (done > 0, p.reader) {
                self.notify(r);
            }
            if done == total || (done > 0 && nonblocking) {
                return Some(Ok(done));
            }
            if nonblocking {
                return Some(Err(Errno::Again));
            }
            if let Err(e) = self.block(deadline) {
                return Some(if done > 0 { Ok(done) } else { Err(e) });
            }
        }
    }

    /// Releases pipe end `fd` (already taken out of the table as `e`): the other end sees
    /// end of stream or EPOLLERR; the buffer goes once both ends are closed.
    pub(super) fn pipe_close(&mut self, e: PipeEnd) {
        let Some(p) = self.pipes[e.pipe as usize].as_mut() else {
            return;
        };
        let other = if e.write {
            p.writer = None;
            p.reader
        } else {
            p.reader = None;
            p.buf.clear();
            p.writer
        };
        match other {
            Some(o) => self.notify(o),
            None => {
                self.pipes[e.pipe as usize] = None;
                self.free_pipes.push(e.pipe);
            }
        }
    }

    /// The EPOLL* bits that hold for pipe end `e` now.
    pub(super) fn pipe_readiness(&self, e: &PipeEnd) -> u32 {
        let Some(p) = self.pipes[e.pipe as usize].as_ref() else {
            return 0;
        };
        if e.write {
            let mut ev = 0;
            if p.buf.len() < p.cap {
                ev |= EPOLLOUT;
            }
            if p.reader.is_none() {
                ev |= EPOLLERR;
            }
            ev
        } else {
            let mut ev = 0;
            if !p.buf.is_empty() {
                ev |= EPOLLIN;
            }
            if p.writer.is_none() {
                ev |= EPOLLIN | EPOLLHUP;
            }
            ev
        }
    }
}

//! Shared harness: two host contexts joined by an in-memory link, in virtual time.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hoststack::memlink::{self, MemLink};
use hoststack::stack::EPOLLOUT;
use hoststack::{Context, Errno, Fd, HostConfig};

pub const A: [u8; 4] = [10, 0, 0, 1];
pub const B: [u8; 4] = [10, 0, 0, 2];

pub struct Net {
    pub a: Context<MemLink>,
    pub b: Context<MemLink>,
    pub clock: Arc<AtomicU64>,
}

pub fn cfg(ip: [u8; 4]) -> HostConfig {
    let mut c = HostConfig::new(ip, 0);
    c.tcp.time_wait_ns = 2_000_000_000;
    c.block_timeout_ns = Some(5_000_000_000);
    c
}

impl Net {
    pub fn new() -> Self {
        Self::with(cfg(A), cfg(B))
    }

    pub fn with(ca: HostConfig, cb: HostConfig) -> Self {
        Self::with_link(ca, cb, 4096)
    }

    /// Two contexts joined by a link of `depth` frames per direction.
    pub fn with_link(ca: HostConfig, cb: HostConfig, depth: usize) -> Self {
        let (la, lb) = memlink::pair(depth);
        let clock = Arc::new(AtomicU64::new(1_000_000_000));
        let c1 = clock.clone();
        let c2 = clock.clone();
        Net {
            a: Context::new(ca, la, Arc::new(move || c1.load(Ordering::Relaxed))),
            b: Context::new(cb, lb, Arc::new(move || c2.load(Ordering::Relaxed))),
            clock,
        }
    }

    /// Runs both stacks for up to `steps` steps of 10 µs, jumping to the next timer when
    /// nothing is in flight, until `done` holds.
    pub fn run_until(&mut self, steps: usize, mut done: impl FnMut(&mut Net) -> bool) -> bool {
        for _ in 0..steps {
            if done(self) {
                return true;
            }
            let w = self.a.poll() + self.b.poll();
            if w == 0 && self.a.link().pending() == 0 && self.b.link().pending() == 0 {
                let next = [self.a.next_timer(), self.b.next_timer()]
                    .into_iter()
                    .flatten()
                    .min();
                let now = self.clock.load(Ordering::Relaxed);
                match next {
                    Some(t) if t > now => self.clock.store(t, Ordering::Relaxed),
                    _ => {
                        self.clock.fetch_add(10_000, Ordering::Relaxed);
                    }
                }
            } else {
                self.clock.fetch_add(10_000, Ordering::Relaxed);
            }
        }
        done(self)
    }
}

pub fn addr(ip: [u8; 4], port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(ip), port)
}

pub fn listener(ctx: &mut Context<MemLink>, port: u16) -> Fd {
    let l = ctx.socket().unwrap();
    ctx.set_nonblocking(l, true).unwrap();
    ctx.bind(l, addr([0; 4], port)).unwrap();
    ctx.listen(l, 128).unwrap();
    l
}

/// Connects b → a:port; returns (client fd on b, server fd on a).
pub fn connected(net: &mut Net, port: u16) -> (Fd, Fd) {
    let l = listener(&mut net.a, port);
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    assert_eq!(net.b.connect(c, addr(A, port)), Err(Errno::InProgress));
    let mut s = None;
    assert!(net.run_until(10_000, |n| {
        if s.is_none() {
            if let Ok((fd, _)) = n.a.accept(l) {
                s = Some(fd);
            }
        }
        s.is_some() && n.b.readiness(c) & EPOLLOUT != 0
    }));
    let s = s.unwrap();
    net.a.set_nonblocking(s, true).unwrap();
    (c, s)
}

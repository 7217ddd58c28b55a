//! Two `Tcb`s joined by a deterministic virtual-time channel with seeded impairments (loss,
//! reordering, duplication, fixed delay). Segments from `poll_transmit` are serialized with
//! `segment::emit` plus payload, carried as bytes, `segment::parse`d and fed to the peer's
//! `input`. Time jumps to the next event (a delivery, a `poll_at`, an application wake-up).
//! Every loop is bounded in steps and in virtual time.

mod bulk_transfer;
mod closing;
mod handshake_and_options;
mod loss_recovery;
mod rst_syn_hostile;
mod windows_and_timers;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hoststack::tcp::segment::{self, TcpFlags, TcpHeader, TcpOptions, TcpRepr};
use hoststack::tcp::seq::Seq;
use hoststack::tcp::tcb::{reset_for, Endpoints, Events, State, Tcb, TcpError};
use hoststack::tcp::TcpConfig;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;
const A: usize = 0;
const B: usize = 1;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// True with probability `ppm` per million.
    fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.next() % 1_000_000 < ppm as u64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Impairments of one direction.
#[derive(Clone, Copy, Default)]
struct Impair {
    loss_ppm: u32,
    dup_ppm: u32,
    reorder_ppm: u32,
    /// One-way delay.
    delay: u64,
    /// A reordered packet is held up to this much longer.
    reorder_extra: u64,
    /// Everything is lost.
    blackhole: bool,
}

impl Impair {
    fn delay(d: u64) -> Self {
        Impair {
            delay: d,
            ..Impair::default()
        }
    }
}

/// A segment as emitted (before the channel).
#[derive(Clone, Debug)]
struct Rec {
    t: u64,
    from: usize,
    flags: TcpFlags,
    seq: Seq,
    ack: Seq,
    len: usize,
    win: u16,
    opts: TcpOptions,
}

type DropFn = Box<dyn FnMut(&Rec) -> bool>;

/// A packet on the wire: (delivery time, FIFO tie-breaker, destination side, bytes).
type InFlight = (u64, u64, usize, Vec<u8>);

struct Net {
    now: u64,
    t: [Option<Tcb>; 2],
    cfg_b: TcpConfig,
    ep: [Endpoints; 2],
    /// B has no listener: a SYN gets `reset_for`.
    refuse: bool,
    q: BinaryHeap<Reverse<InFlight>>,
    n: u64,
    rng: Rng,
    imp: [Impair; 2],
    recs: Vec<Rec>,
    drop_fn: Option<DropFn>,
    ev: [Events; 2],
    /// Application wake-up time (0: none).
    wake: u64,
    states: [Vec<State>; 2],
    steps: u64,
    /// B's ISS (random unless set).
    iss_b: Option<Seq>,
}

fn cfg() -> TcpConfig {
    TcpConfig {
        time_wait_ns: 2 * SEC,
        fin_wait2_ns: 2 * SEC,
        ..TcpConfig::default()
    }
}

fn serialize(h: &TcpHeader, p: [&[u8]; 2]) -> Vec<u8> {
    let hl = segment::header_len(h);
    let mut b = vec![0u8; hl + p[0].len() + p[1].len()];
    assert_eq!(segment::emit(h, &mut b), hl);
    b[hl..hl + p[0].len()].copy_from_slice(p[0]);
    b[hl + p[0].len()..].copy_from_slice(p[1]);
    b
}

fn merge(e: &mut Events, o: Events) {
    e.readable |= o.readable;
    e.writable |= o.writable;
    e.established |= o.established;
    e.error |= o.error;
}

impl Net {
    fn new(ca: TcpConfig, cb: TcpConfig, imp: [Impair; 2], seed: u64) -> Net {
        let ep_a = Endpoints {
            local_ip: [10, 0, 0, 1],
            local_port: 40_000,
            remote_ip: [10, 0, 0, 2],
            remote_port: 80,
        };
        let ep_b = Endpoints {
            local_ip: ep_a.remote_ip,
            local_port: ep_a.remote_port,
            remote_ip: ep_a.local_ip,
            remote_port: ep_a.local_port,
        };
        let mut rng = Rng(seed);
        let now = SEC;
        let iss = Seq(rng.next() as u32);
        let a = Tcb::connect(&ca, ep_a, iss, now);
        Net {
            now,
            t: [Some(a), None],
            cfg_b: cb,
            ep: [ep_a, ep_b],
            refuse: false,
            q: BinaryHeap::new(),
            n: 0,
            rng,
            imp,
            recs: Vec::new(),
            drop_fn: None,
            ev: [Events::default(); 2],
            wake: 0,
            states: [vec![State::SynSent], vec![]],
            steps: 0,
            iss_b: None,
        }
    }

    fn tcb(&mut self, i: usize) -> &mut Tcb {
        self.t[i].as_mut().expect("tcb exists")
    }

    fn state(&self, i: usize) -> Option<State> {
        self.t[i].as_ref().map(|t| t.state())
    }

    fn note_state(&mut self, i: usize) {
        if let Some(s) = self.state(i) {
            if self.states[i].last() != Some(&s) {
                self.states[i].push(s);
            }
        }
    }

    fn flush(&mut self, i: usize) {
        let now = self.now;
        let Some(t) = self.t[i].as_mut() else {
            return;
        };
        let mut out = Vec::new();
        t.poll_transmit(now, &mut |o| out.push(serialize(&o.header, o.payload)));
        let e = t.take_events();
        merge(&mut self.ev[i], e);
        for b in out {
            self.send(i, b);
        }
        self.note_state(i);
    }

    /// Puts bytes from side `from` on the wire.
    fn send(&mut self, from: usize, b: Vec<u8>) {
        let s = segment::parse(&b).expect("we emit parsable segments");
        let rec = Rec {
            t: self.now,
            from,
            flags: s.flags,
            seq: s.seq,
            ack: s.ack,
            len: s.payload.len(),
            win: s.window,
            opts: s.options,
        };
        let mut dropped = false;
        if let Some(f) = self.drop_fn.as_mut() {
            dropped = f(&rec);
        }
        self.recs.push(rec);
        let imp = self.imp[from];
        if dropped || imp.blackhole || self.rng.chance(imp.loss_ppm) {
            return;
        }
        let copies = if self.rng.chance(imp.dup_ppm) { 2 } else { 1 };
        for _ in 0..copies {
            let mut at = self.now + imp.delay;
            if self.rng.chance(imp.reorder_ppm) {
                at += 1 + self.rng.below(imp.reorder_extra.max(1));
            }
            self.n += 1;
            self.q.push(Reverse((at, self.n, 1 - from, b.clone())));
        }
    }

    /// Feeds bytes to side `to` now (as if they just arrived).
    fn deliver(&mut self, to: usize, b: &[u8]) {
        let Ok(seg) = segment::parse(b) else {
            return;
        };
        let now = self.now;
        match self.t[to].as_mut() {
            Some(t) => {
                let e = t.input(&seg, now);
                merge(&mut self.ev[to], e);
            }
            None => {
                if self.refuse || !seg.flags.has(TcpFlags::SYN) || seg.flags.has(TcpFlags::ACK) {
                    if let Some(h) = reset_for(&seg) {
                        self.send(to, serialize(&h, [&[], &[]]));
                    }
                    return;
                }
                let iss = self.iss_b.unwrap_or(Seq(self.rng.next() as u32));
                self.t[to] = Some(Tcb::accept(&self.cfg_b, self.ep[to], &seg, iss, now));
                self.states[to].push(State::SynReceived);
            }
        }
        self.note_state(to);
        self.flush(to);
    }

    /// Injects a hand-made segment into side `to`.
    fn inject(&mut self, to: usize, h: &TcpHeader, payload: &[u8]) {
        let b = serialize(h, [payload, &[]]);
        self.deliver(to, &b);
    }

    /// One event: transmit, deliver what is due, then move time to the next event. False when
    /// nothing is pending before `deadline`.
    fn step(&mut self, deadline: u64) -> bool {
        self.steps += 1;
        self.flush(A);
        self.flush(B);
        while let Some(Reverse((at, _, _, _))) = self.q.peek() {
            if *at > self.now {
                break;
            }
            let Reverse((_, _, to, b)) = self.q.pop().expect("peeked");
            self.deliver(to, &b);
        }
        let mut next = u64::MAX;
        if let Some(Reverse((at, _, _, _))) = self.q.peek() {
            next = *at;
        }
        for t in self.t.iter().flatten() {
            if let Some(p) = t.poll_at() {
                next = next.min(p);
            }
        }
        if self.wake != 0 {
            next = next.min(self.wake);
        }
        if next == u64::MAX || next > deadline {
            return false;
        }
        if next > self.now {
            self.now = next;
        }
        true
    }

    /// Runs until `cond` (called before every step; it may act as the application) holds.
    fn run_until(&mut self, deadline: u64, mut cond: impl FnMut(&mut Net) -> bool) -> bool {
        let mut same_time = 0u32;
        loop {
            if cond(self) {
                return true;
            }
            let before = self.now;
            if !self.step(deadline) {
                return cond(self);
            }
            if self.now == before {
                same_time += 1;
                assert!(same_time < 10_000, "no progress at t={}", self.now);
            } else {
                same_time = 0;
            }
            assert!(self.steps < 20_000_000, "step bound");
        }
    }

    fn run_for(&mut self, d: u64) {
        let end = self.now + d;
        self.wake = end;
        self.run_until(end, |n| n.now >= end);
        self.wake = 0;
    }

    fn handshake(&mut self) {
        let ok = self.run_until(self.now + 10 * SEC, |n| {
            n.state(A) == Some(State::Established) && n.state(B) == Some(State::Established)
        });
        assert!(ok, "handshake: {:?} {:?}", self.state(A), self.state(B));
    }

    fn data_recs(&self, from: usize) -> impl Iterator<Item = &Rec> {
        self.recs
            .iter()
            .filter(move |r| r.from == from && r.len > 0)
    }
}

/// Deterministic payload for a stream.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Both sides send `len` bytes, read everything, then shut down; checks the bytes.
struct Bulk {
    data: [Vec<u8>; 2],
    sent: [usize; 2],
    got: [usize; 2],
    shut: [bool; 2],
}

impl Bulk {
    fn new(len_a: usize, len_b: usize) -> Bulk {
        Bulk {
            data: [pattern(len_a, 1), pattern(len_b, 2)],
            sent: [0; 2],
            got: [0; 2],
            shut: [false; 2],
        }
    }

    /// One application pass on both sides; true when all bytes arrived both ways.
    fn app(&mut self, net: &mut Net) -> bool {
        for i in 0..2 {
            let Some(t) = net.t[i].as_mut() else {
                continue;
            };
            if !matches!(t.state(), State::Established | State::CloseWait) && !self.shut[i] {
                continue;
            }
            while self.sent[i] < self.data[i].len() {
                let n = t.send(&self.data[i][self.sent[i]..]).expect("send");
                if n == 0 {
                    break;
                }
                self.sent[i] += n;
            }
            if self.sent[i] == self.data[i].len() && !self.shut[i] {
                t.shutdown_write();
                self.shut[i] = true;
            }
            // Side i reads what the other side sent.
            let src = &self.data[1 - i];
            loop {
                let (a, b) = t.recv_peek();
                let n = a.len() + b.len();
                if n == 0 {
                    break;
                }
                let at = self.got[i];
                assert!(at + n <= src.len(), "more bytes than sent");
                assert_eq!(a, &src[at..at + a.len()], "corrupt data at {at}");
                assert_eq!(b, &src[at + a.len()..at + n], "corrupt data");
                t.recv_consume(n);
                self.got[i] += n;
            }
        }
        self.got[0] == self.data[1].len() && self.got[1] == self.data[0].len()
    }
}

/// Handshake, bulk both ways, close both ways; returns the net for inspection.
fn bulk(ca: TcpConfig, cb: TcpConfig, imp: Impair, len: usize, seed: u64) -> Net {
    let mut net = Net::new(ca, cb, [imp, imp], seed);
    net.handshake();
    let mut bulk = Bulk::new(len, len);
    let ok = net.run_until(net.now + 3_000 * SEC, |n| bulk.app(n));
    assert!(
        ok,
        "transfer stalled: got {:?} of {len}; states {:?} {:?}; stats {:?} / {:?}",
        bulk.got,
        net.state(A),
        net.state(B),
        net.t[A].as_ref().map(|t| *t.stats()),
        net.t[B].as_ref().map(|t| *t.stats())
    );
    let t_done = net.now;
    let closed = net.run_until(net.now + 600 * SEC, |n| {
        n.state(A) == Some(State::Closed) && n.state(B) == Some(State::Closed)
    });
    assert!(closed, "close: {:?} {:?}", net.state(A), net.state(B));
    for i in 0..2 {
        assert_eq!(net.tcb(i).error(), None);
        assert!(net.tcb(i).fin_received());
        assert!(net.tcb(i).is_finished());
        assert_eq!(net.tcb(i).stats().bytes_in, len as u64);
        assert_eq!(net.tcb(i).stats().bytes_out, len as u64);
    }
    let (sa, sb) = (*net.tcb(A).stats(), *net.tcb(B).stats());
    eprintln!(
        "bulk {len} B each way in {} ms virtual, {} steps; A {sa:?}; B {sb:?}",
        (t_done - SEC) / MS,
        net.steps,
    );
    net
}

const TEN_MB: usize = 10 * 1024 * 1024;

//! Two `Tcb`s joined by a deterministic virtual-time channel with seeded impairments (loss,
//! reordering, duplication, fixed delay). Segments from `poll_transmit` are serialized with
//! `segment::emit` plus payload, carried as bytes, `segment::parse`d and fed to the peer's
//! `input`. Time jumps to the next event (a delivery, a `poll_at`, an application wake-up).
//! Every loop is bounded in steps and in virtual time.

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

// ---------------------------------------------------------------- handshake and options

#[test]
fn handshake_negotiates_all_options() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 1);
    net.handshake();
    for i in 0..2 {
        let t = net.tcb(i);
        assert_eq!(t.negotiated(), (true, true, true));
        assert_eq!(t.window_scales(), (7, 7));
        assert_eq!(t.send_mss(), 1460 - 12);
        assert_eq!(
            t.buffer_bytes(),
            0,
            "lazy buffers: nothing allocated without data"
        );
        assert!(t.srtt().is_some());
    }
    // SYN: MSS, WS, SACK-permitted, TS; SYN-ACK answers all of them.
    let syn = &net.recs[0];
    assert_eq!(syn.flags, TcpFlags::SYN);
    assert_eq!(syn.opts.mss, Some(1460));
    assert_eq!(syn.opts.window_scale, Some(7));
    assert!(syn.opts.sack_permitted);
    assert_eq!(syn.opts.timestamp.map(|t| t.1), Some(0));
    let sa = &net.recs[1];
    assert_eq!(sa.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(sa.ack, syn.seq + 1);
    assert!(sa.opts.sack_permitted && sa.opts.window_scale == Some(7));
    // SYN-ACK echoes the SYN's TSval.
    assert_eq!(sa.opts.timestamp.unwrap().1, syn.opts.timestamp.unwrap().0);
    // Window fields: unscaled on SYNs (65,535 max), scaled afterwards.
    assert_eq!(syn.win, 65_535);
    let ack = &net.recs[2];
    assert_eq!(ack.flags, TcpFlags::ACK);
    assert_eq!(
        ack.win as usize,
        (256 * 1024 - 127) >> 7,
        "one unit of slack for rounding"
    );
}

#[test]
fn handshake_without_timestamps_or_sack() {
    let mut ca = cfg();
    ca.timestamps = false;
    let mut cb = cfg();
    cb.sack = false;
    let mut net = Net::new(ca, cb, [Impair::delay(MS); 2], 2);
    net.handshake();
    for i in 0..2 {
        assert_eq!(net.tcb(i).negotiated(), (true, false, false));
        assert_eq!(net.tcb(i).send_mss(), 1460);
    }
    let sa = &net.recs[1];
    assert!(!sa.opts.sack_permitted && sa.opts.timestamp.is_none());
    // Data still flows, with no options on data segments.
    let mut bulk = Bulk::new(100_000, 100_000);
    assert!(net.run_until(net.now + 60 * SEC, |n| bulk.app(n)));
    assert!(net
        .data_recs(A)
        .all(|r| r.opts.timestamp.is_none() && r.len <= 1460));
}

#[test]
fn handshake_without_window_scale_from_peer() {
    // A peer that offers nothing: no WS, no SACK, no TS, no MSS (536 applies).
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 3);
    net.flush(A);
    let syn = net.recs[0].clone();
    net.q.clear();
    let peer_iss = Seq(5_000);
    let h = TcpHeader {
        src_port: 80,
        dst_port: 40_000,
        seq: peer_iss,
        ack: syn.seq + 1,
        flags: TcpFlags::SYN | TcpFlags::ACK,
        window: 4_000,
        options: TcpOptions::default(),
    };
    net.inject(A, &h, &[]);
    let t = net.tcb(A);
    assert_eq!(t.state(), State::Established);
    assert_eq!(t.negotiated(), (false, false, false));
    assert_eq!(t.window_scales(), (0, 0));
    assert_eq!(t.send_mss(), 536);
    let ack = net.recs.last().unwrap();
    assert_eq!(ack.ack, peer_iss + 1);
    assert_eq!(ack.win, 65_535, "unscaled window, clamped to the field");
    assert!(ack.opts.timestamp.is_none());
    // Data segments respect the 536-byte MSS and the peer's 4,000-byte window: seven full
    // segments; the 248 bytes left of the window wait (sender SWS avoidance and Nagle).
    net.tcb(A).send(&[7u8; 20_000]).unwrap();
    net.flush(A);
    let data: Vec<_> = net.data_recs(A).cloned().collect();
    assert!(data.iter().all(|r| r.len == 536));
    assert_eq!(data.len(), 7);
}

#[test]
fn passive_side_without_window_scale_or_options() {
    let c = cfg();
    let ep = Endpoints {
        local_ip: [10, 0, 0, 2],
        local_port: 80,
        remote_ip: [10, 0, 0, 1],
        remote_port: 1234,
    };
    let syn = TcpRepr {
        src_port: 1234,
        dst_port: 80,
        seq: Seq(100),
        ack: Seq(0),
        flags: TcpFlags::SYN,
        window: 1000,
        options: TcpOptions {
            mss: Some(1200),
            ..TcpOptions::default()
        },
        payload: &[],
    };
    let mut t = Tcb::accept(&c, ep, &syn, Seq(9_000), SEC);
    let mut out = Vec::new();
    t.poll_transmit(SEC, &mut |o| out.push(o.header));
    assert_eq!(out.len(), 1);
    let sa = out[0];
    assert_eq!(sa.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(sa.ack, Seq(101));
    assert_eq!(sa.options.mss, Some(1460));
    assert_eq!(
        sa.options.window_scale, None,
        "no WS unless the SYN had one"
    );
    assert!(!sa.options.sack_permitted && sa.options.timestamp.is_none());
    assert_eq!(t.send_mss(), 1200);
}

// ---------------------------------------------------------------- bulk transfer

#[test]
fn bulk_10mb_each_way_clean() {
    let net = bulk(cfg(), cfg(), Impair::delay(MS), TEN_MB, 10);
    for i in 0..2 {
        let s = net.t[i].as_ref().unwrap().stats();
        assert_eq!(s.retransmits, 0);
        assert_eq!(s.rto_expiries, 0);
    }
}

#[test]
fn bulk_10mb_each_way_1pct_loss() {
    let imp = Impair {
        loss_ppm: 10_000,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 11);
    let s = net.t[A].as_ref().unwrap().stats();
    assert!(s.retransmits > 0 && s.fast_retransmits > 0, "{s:?}");
    assert!(s.sack_retransmits > 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_10pct_loss() {
    let imp = Impair {
        loss_ppm: 100_000,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 12);
    let s = net.t[A].as_ref().unwrap().stats();
    assert!(s.retransmits > 0 && s.rto_expiries > 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_1pct_loss_newreno_no_timestamps() {
    let mut c = cfg();
    c.sack = false;
    c.timestamps = false;
    let imp = Impair {
        loss_ppm: 10_000,
        ..Impair::delay(MS)
    };
    let net = bulk(c.clone(), c, imp, TEN_MB, 13);
    let s = net.t[A].as_ref().unwrap().stats();
    assert!(s.fast_retransmits > 0 && s.sack_retransmits == 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_reordering() {
    let imp = Impair {
        reorder_ppm: 50_000,
        reorder_extra: 3 * MS,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 14);
    let s = net.t[B].as_ref().unwrap().stats();
    assert!(s.ooo_segments > 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_duplication() {
    let imp = Impair {
        dup_ppm: 50_000,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 15);
    let s = net.t[B].as_ref().unwrap().stats();
    assert!(s.out_of_window > 0, "duplicates are old segments: {s:?}");
}

#[test]
fn bulk_with_everything_and_small_buffers() {
    let mut c = cfg();
    c.send_buffer = 20_000;
    c.recv_buffer = 30_000;
    c.window_scale = 0;
    let imp = Impair {
        loss_ppm: 20_000,
        dup_ppm: 20_000,
        reorder_ppm: 20_000,
        reorder_extra: 2 * MS,
        ..Impair::delay(MS)
    };
    let net = bulk(c.clone(), c, imp, 2 * 1024 * 1024, 16);
    for t in net.t.iter().flatten() {
        assert!(t.buffer_bytes() <= 50_000);
    }
}

#[test]
fn bulk_with_tso_payloads() {
    let mut c = cfg();
    c.max_segment_payload = 64_000;
    let mut net = Net::new(c.clone(), c, [Impair::delay(MS); 2], 17);
    net.handshake();
    let mut bulk = Bulk::new(4 * 1024 * 1024, 0);
    assert!(net.run_until(net.now + 100 * SEC, |n| bulk.app(n)));
    let mss = net.tcb(A).send_mss();
    let big = net.data_recs(A).filter(|r| r.len > mss).count();
    assert!(big > 0, "TSO-sized payloads were emitted");
    assert!(net.data_recs(A).all(|r| r.len <= 64_000));
}

// ---------------------------------------------------------------- loss recovery

/// Drops the first transmission of the data segments of A with the given indexes (counted
/// in MSS units from the first data byte), once each. Returns the net after a 3 MB transfer
/// from A to B.
fn recovery_run(sack: bool, delay: u64, drops: &[u32]) -> Net {
    let mut c = cfg();
    c.sack = sack;
    let mut net = Net::new(c.clone(), c, [Impair::delay(delay); 2], 20);
    net.handshake();
    let iss1 = net.recs[0].seq + 1;
    let mss = net.tcb(A).send_mss() as u32;
    let targets: Vec<Seq> = drops.iter().map(|&k| iss1 + k * mss).collect();
    let mut done = vec![false; targets.len()];
    net.drop_fn = Some(Box::new(move |r: &Rec| {
        if r.from != A || r.len == 0 {
            return false;
        }
        for (k, t) in targets.iter().enumerate() {
            if r.seq == *t && !done[k] {
                done[k] = true;
                return true;
            }
        }
        false
    }));
    let mut bulk = Bulk::new(3 * 1024 * 1024, 0);
    assert!(net.run_until(net.now + 600 * SEC, |n| bulk.app(n)));
    net
}

#[test]
fn sack_repairs_several_losses_in_one_window() {
    // Ten losses in one window of a flow with a 100 ms RTT.
    let drops: Vec<u32> = (0..10).map(|k| 200 + 4 * k).collect();
    let with = recovery_run(true, 50 * MS, &drops);
    let without = recovery_run(false, 50 * MS, &drops);
    let s = *with.t[A].as_ref().unwrap().stats();
    let n = *without.t[A].as_ref().unwrap().stats();
    // The ten lost segments, plus at most the one RFC 6675 rule (4) rescue retransmission.
    assert!((10..=11).contains(&s.retransmits), "{s:?}");
    assert_eq!(s.fast_retransmits, 1, "one recovery episode: {s:?}");
    assert_eq!(s.rto_expiries, 0, "{s:?}");
    assert!(
        s.retransmits < n.retransmits,
        "SACK {} vs NewReno {} retransmissions",
        s.retransmits,
        n.retransmits
    );
    assert!(
        n.rto_expiries > 0,
        "NewReno needs ten RTTs here and times out: {n:?}"
    );
    // All ten holes are repaired within about one RTT of the first retransmission.
    let rx: Vec<u64> = retransmission_times(&with, A);
    assert!(rx.len() >= 10);
    assert!(
        rx[9] - rx[0] <= 110 * MS,
        "repair took {} ms",
        (rx[9] - rx[0]) / MS
    );
}

/// Times of A's retransmitted data segments.
fn retransmission_times(net: &Net, from: usize) -> Vec<u64> {
    let mut high = Seq(0);
    let mut first = true;
    let mut v = Vec::new();
    for r in net.data_recs(from) {
        let end = r.seq + r.len as u32;
        if first {
            high = end;
            first = false;
        } else if r.seq.lt(high) {
            v.push(r.t);
        } else {
            high = high.max(end);
        }
    }
    v
}

#[test]
fn newreno_partial_acks_repair_one_hole_per_rtt() {
    let drops = [300, 305, 310];
    let net = recovery_run(false, 5 * MS, &drops);
    let s = *net.t[A].as_ref().unwrap().stats();
    assert_eq!(s.fast_retransmits, 1, "{s:?}");
    assert_eq!(s.retransmits, 3, "{s:?}");
    assert_eq!(s.rto_expiries, 0, "{s:?}");
    assert_eq!(s.recoveries, 1, "{s:?}");
    // The second and third holes are resent on partial ACKs, one RTT (10 ms) apart.
    let rx = retransmission_times(&net, A);
    assert_eq!(rx.len(), 3);
    for w in rx.windows(2) {
        let gap = w[1] - w[0];
        assert!((9 * MS..=12 * MS).contains(&gap), "gap {gap}");
    }
}

#[test]
fn dup_acks_trigger_fast_retransmit_not_rto() {
    let net = recovery_run(true, 5 * MS, &[150]);
    let s = *net.t[A].as_ref().unwrap().stats();
    assert_eq!(
        (s.fast_retransmits, s.retransmits, s.rto_expiries),
        (1, 1, 0),
        "{s:?}"
    );
    assert!(s.dup_acks >= 3);
}

// ---------------------------------------------------------------- windows and timers

#[test]
fn zero_window_probes_then_window_update() {
    let ca = cfg();
    let mut cb = cfg();
    cb.recv_buffer = 4096;
    let mut net = Net::new(ca, cb, [Impair::delay(MS); 2], 30);
    net.handshake();
    let data = pattern(50_000, 9);
    let mut sent = 0;
    // A sends; B does not read.
    net.run_until(net.now + 2 * SEC, |n| {
        sent += n.tcb(A).send(&data[sent..]).unwrap();
        false
    });
    let held = net.tcb(B).recv_available();
    assert!((4096 - 128..=4096).contains(&held), "{held}");
    net.run_for(60 * SEC);
    let sa = *net.tcb(A).stats();
    assert!(sa.window_probes >= 3, "{sa:?}");
    assert_eq!(net.tcb(A).error(), None);
    assert_eq!(net.tcb(B).recv_available(), held, "never beyond the window");
    // Probes back off exponentially.
    let probes: Vec<u64> = net
        .data_recs(A)
        .filter(|r| r.len == 1)
        .map(|r| r.t)
        .collect();
    assert!(probes.len() >= 3);
    let g1 = probes[1] - probes[0];
    let g2 = probes[2] - probes[1];
    assert!(g2 >= g1 * 3 / 2, "{g1} {g2}");
    // B's answers to probes are out of window; its right edge never moved left.
    assert!(net.tcb(B).stats().out_of_window >= 3);
    // Now B reads: a window update restarts the transfer.
    let mut got = Vec::new();
    let ok = net.run_until(net.now + 60 * SEC, |n| {
        sent += n.tcb(A).send(&data[sent..]).unwrap();
        let mut buf = [0u8; 1000];
        let k = n.tcb(B).recv(&mut buf).unwrap();
        got.extend_from_slice(&buf[..k]);
        got.len() == data.len()
    });
    assert!(ok);
    assert_eq!(got, data);
    assert_eq!(net.tcb(A).stats().rto_expiries, 0);
}

#[test]
fn window_right_edge_never_shrinks() {
    let mut cb = cfg();
    cb.recv_buffer = 10_000;
    cb.window_scale = 2;
    let imp = Impair {
        loss_ppm: 50_000,
        ..Impair::delay(MS)
    };
    let mut net = Net::new(cfg(), cb, [imp; 2], 31);
    net.handshake();
    let data = pattern(300_000, 3);
    let mut sent = 0;
    let mut got = 0;
    let mut r = Rng(5);
    assert!(net.run_until(net.now + 600 * SEC, |n| {
        sent += n.tcb(A).send(&data[sent..]).unwrap();
        // B reads in random small amounts.
        if r.chance(300_000) {
            let mut buf = [0u8; 700];
            let k = (r.below(700) + 1) as usize;
            got += n.tcb(B).recv(&mut buf[..k]).unwrap();
        }
        n.wake = n.now + 3 * MS;
        got == data.len()
    }));
    net.wake = 0;
    let mut edge: Option<Seq> = None;
    for rec in net
        .recs
        .iter()
        .filter(|r| r.from == B && !r.flags.has(TcpFlags::SYN))
    {
        let e = rec.ack + ((rec.win as u32) << 2);
        if let Some(p) = edge {
            assert!(e.ge(p), "right edge moved left: {p:?} -> {e:?}");
        }
        edge = Some(e);
    }
}

#[test]
fn nagle_coalesces_small_writes_nodelay_does_not() {
    let count = |nodelay: bool| {
        let mut c = cfg();
        c.nodelay = nodelay;
        let mut net = Net::new(c.clone(), c, [Impair::delay(MS); 2], 40);
        net.handshake();
        let start = net.now;
        let mut writes = 0;
        net.run_until(start + SEC, |n| {
            if writes < 100 && n.now >= start + writes * 20_000 {
                assert_eq!(n.tcb(A).send(&[b'x'; 10]).unwrap(), 10);
                writes += 1;
            }
            n.wake = if writes < 100 {
                start + writes * 20_000
            } else {
                0
            };
            let mut buf = [0u8; 2000];
            while n.tcb(B).recv(&mut buf).unwrap() > 0 {}
            writes == 100 && n.tcb(A).send_queued() == 0
        });
        net.wake = 0;
        assert_eq!(net.tcb(B).stats().bytes_in, 1000);
        net.data_recs(A).count()
    };
    let nagle = count(false);
    let nodelay = count(true);
    assert!(nagle <= 3, "Nagle: {nagle} segments");
    assert_eq!(nodelay, 100, "nodelay: one segment per write");
}

#[test]
fn delayed_ack_timing() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 50);
    net.handshake();
    let t0 = net.now;
    // One small segment: ACKed after the delayed-ACK timeout (40 ms), not before.
    net.tcb(A).send(&[1u8; 100]).unwrap();
    net.run_for(200 * MS);
    let acks: Vec<&Rec> = net
        .recs
        .iter()
        .filter(|r| r.from == B && r.t > t0 && r.len == 0)
        .collect();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].t, t0 + MS + 40 * MS);
    // Two full-sized segments: ACKed at once when the second arrives.
    let t1 = net.now;
    let mss = net.tcb(A).send_mss();
    net.tcb(A).send(&vec![2u8; 2 * mss]).unwrap();
    net.run_for(200 * MS);
    let acks: Vec<&Rec> = net
        .recs
        .iter()
        .filter(|r| r.from == B && r.t > t1 && r.len == 0)
        .collect();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].t, t1 + MS);
    // Out of order: an immediate duplicate ACK carrying a SACK block.
    let t2 = net.now;
    let snd = net
        .recs
        .iter()
        .rev()
        .find(|r| r.from == A && r.len > 0)
        .unwrap();
    let next = snd.seq + snd.len as u32;
    let h = TcpHeader {
        src_port: 40_000,
        dst_port: 80,
        seq: next + 1000,
        ack: snd.ack,
        flags: TcpFlags::ACK,
        window: 1000,
        options: TcpOptions::default(),
    };
    net.inject(B, &h, &[3u8; 100]);
    let last = net.recs.last().unwrap();
    assert_eq!((last.from, last.t, last.ack), (B, t2, next));
    assert_eq!(last.opts.sack_blocks().len(), 1);
    assert_eq!(last.opts.sack[0].left, next + 1000);
    assert_eq!(last.opts.sack[0].right, next + 1100);
}

// ---------------------------------------------------------------- closing

fn close_run(order: &str) -> Net {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 60);
    net.handshake();
    net.tcb(A).send(b"hello").unwrap();
    net.tcb(B).send(b"world").unwrap();
    net.run_for(100 * MS);
    let mut buf = [0u8; 16];
    assert_eq!(net.tcb(A).recv(&mut buf).unwrap(), 5);
    assert_eq!(net.tcb(B).recv(&mut buf).unwrap(), 5);
    match order {
        "active" => {
            net.tcb(A).close();
            net.run_for(100 * MS);
            assert_eq!(net.state(A), Some(State::FinWait2));
            assert_eq!(net.state(B), Some(State::CloseWait));
            assert!(net.tcb(B).fin_received());
            assert_eq!(net.tcb(B).recv(&mut buf), Ok(0));
            net.tcb(B).close();
        }
        "passive" => {
            net.tcb(B).close();
            net.run_for(100 * MS);
            assert_eq!(net.state(A), Some(State::CloseWait));
            net.tcb(A).close();
        }
        _ => {
            net.tcb(A).close();
            net.tcb(B).close();
        }
    }
    net.run_for(100 * MS);
    net
}

#[test]
fn active_close_goes_through_time_wait() {
    let mut net = close_run("active");
    assert_eq!(net.state(A), Some(State::TimeWait));
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(
        net.states[A],
        [
            State::SynSent,
            State::Established,
            State::FinWait1,
            State::FinWait2,
            State::TimeWait
        ]
    );
    assert_eq!(
        net.states[B],
        [
            State::SynReceived,
            State::Established,
            State::CloseWait,
            State::LastAck,
            State::Closed
        ]
    );
    let t = net.now;
    net.run_for(3 * SEC);
    assert_eq!(net.state(A), Some(State::Closed));
    assert!(net.tcb(A).is_finished() && net.tcb(A).error().is_none());
    // TIME_WAIT lasted 2 s (from the peer's FIN).
    assert!(net.now >= t + 2 * SEC);
}

#[test]
fn passive_close() {
    let mut net = close_run("passive");
    assert_eq!(net.state(B), Some(State::TimeWait));
    assert_eq!(net.state(A), Some(State::Closed));
    assert!(net.states[A].contains(&State::LastAck));
    net.run_for(3 * SEC);
    assert_eq!(net.state(B), Some(State::Closed));
    assert!(net.tcb(B).error().is_none());
}

#[test]
fn simultaneous_close() {
    let mut net = close_run("simultaneous");
    for i in 0..2 {
        assert_eq!(net.state(i), Some(State::TimeWait));
        assert!(
            net.states[i].contains(&State::Closing),
            "{:?}",
            net.states[i]
        );
    }
    net.run_for(3 * SEC);
    for i in 0..2 {
        assert_eq!(net.state(i), Some(State::Closed));
        assert!(net.tcb(i).error().is_none());
    }
}

#[test]
fn time_wait_reacks_retransmitted_fin() {
    let mut net = close_run("active");
    assert_eq!(net.state(A), Some(State::TimeWait));
    // B's FIN again (its ACK got lost, say).
    let fin = net
        .recs
        .iter()
        .rev()
        .find(|r| r.from == B && r.flags.has(TcpFlags::FIN))
        .unwrap()
        .clone();
    let h = TcpHeader {
        src_port: 80,
        dst_port: 40_000,
        seq: fin.seq,
        ack: fin.ack,
        flags: fin.flags,
        window: fin.win,
        options: fin.opts,
    };
    net.now += SEC;
    let n = net.recs.len();
    net.inject(A, &h, &[]);
    let re = &net.recs[n..];
    assert_eq!(re.len(), 1);
    assert_eq!(re[0].ack, fin.seq + 1);
    // The 2·MSL timer restarted.
    net.run_for(1_500 * MS);
    assert_eq!(net.state(A), Some(State::TimeWait));
    net.run_for(SEC);
    assert_eq!(net.state(A), Some(State::Closed));
}

#[test]
fn close_with_unread_data_sends_rst() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 61);
    net.handshake();
    net.tcb(A).send(b"unread").unwrap();
    net.run_for(100 * MS);
    assert_eq!(net.tcb(B).recv_available(), 6);
    net.tcb(B).close();
    net.run_for(100 * MS);
    assert!(net
        .recs
        .iter()
        .any(|r| r.from == B && r.flags.has(TcpFlags::RST)));
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), Some(TcpError::Reset));
    assert!(net.ev[A].error);
    assert_eq!(net.tcb(A).send(b"x"), Err(TcpError::Reset));
}

#[test]
fn data_after_close_gets_rst() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 62);
    net.handshake();
    net.tcb(B).close();
    net.run_for(100 * MS);
    assert_eq!(net.state(B), Some(State::FinWait2));
    net.tcb(A).send(b"late").unwrap();
    net.run_for(100 * MS);
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), Some(TcpError::Reset));
}

#[test]
fn orphaned_fin_wait_2_times_out() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 63);
    net.handshake();
    net.tcb(A).close();
    net.run_for(100 * MS);
    assert_eq!(net.state(A), Some(State::FinWait2));
    net.run_for(3 * SEC);
    assert_eq!(net.state(A), Some(State::Closed));
    assert_eq!(net.state(B), Some(State::CloseWait));
}

#[test]
fn abort_sends_rst() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 64);
    net.handshake();
    net.tcb(A).abort();
    assert_eq!(net.state(A), Some(State::Closed));
    assert!(!net.tcb(A).is_finished(), "the RST is still to be sent");
    net.run_for(100 * MS);
    assert!(net.tcb(A).is_finished());
    assert_eq!(net.tcb(B).error(), Some(TcpError::Reset));
}

// ---------------------------------------------------------------- RST / SYN / hostile input

/// An established pair after some data; returns (net, B's RCV.NXT, A's RCV.NXT).
fn established() -> (Net, Seq, Seq) {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 70);
    net.handshake();
    net.tcb(A).send(&[1u8; 3000]).unwrap();
    net.tcb(B).send(&[2u8; 3000]).unwrap();
    net.run_for(200 * MS);
    let b_rcv = net.recs.iter().rev().find(|r| r.from == B).unwrap().ack;
    let a_rcv = net.recs.iter().rev().find(|r| r.from == A).unwrap().ack;
    (net, b_rcv, a_rcv)
}

fn to_b(seq: Seq, ack: Seq, flags: TcpFlags) -> TcpHeader {
    TcpHeader {
        src_port: 40_000,
        dst_port: 80,
        seq,
        ack,
        flags,
        window: 1000,
        options: TcpOptions::default(),
    }
}

#[test]
fn rst_exact_sequence_resets() {
    let (mut net, b_rcv, _) = established();
    net.inject(B, &to_b(b_rcv, Seq(0), TcpFlags::RST), &[]);
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(net.tcb(B).error(), Some(TcpError::Reset));
    assert!(net.ev[B].error);
    let mut buf = [0u8; 10];
    assert_eq!(net.tcb(B).recv(&mut buf), Err(TcpError::Reset));
}

#[test]
fn rst_in_window_gets_challenge_ack() {
    let (mut net, b_rcv, _) = established();
    let n = net.recs.len();
    net.inject(B, &to_b(b_rcv + 100, Seq(0), TcpFlags::RST), &[]);
    assert_eq!(net.state(B), Some(State::Established));
    assert_eq!(net.tcb(B).stats().challenge_acks, 1);
    let ch = &net.recs[n..];
    assert_eq!(ch.len(), 1);
    assert_eq!((ch[0].flags, ch[0].ack), (TcpFlags::ACK, b_rcv));
    // The peer answers the challenge ACK normally (a duplicate ACK at most): still working.
    net.run_for(100 * MS);
    assert_eq!(net.state(A), Some(State::Established));
}

#[test]
fn rst_out_of_window_is_ignored() {
    let (mut net, b_rcv, _) = established();
    let n = net.recs.len();
    net.inject(B, &to_b(b_rcv + 10_000_000, Seq(0), TcpFlags::RST), &[]);
    net.inject(
        B,
        &to_b(Seq(b_rcv.0.wrapping_sub(1)), Seq(0), TcpFlags::RST),
        &[],
    );
    assert_eq!(net.state(B), Some(State::Established));
    assert_eq!(net.tcb(B).stats().rst_ignored, 2);
    assert_eq!(net.recs.len(), n, "nothing sent");
}

#[test]
fn challenge_acks_are_rate_limited() {
    let (mut net, b_rcv, _) = established();
    for k in 0..100u32 {
        net.inject(B, &to_b(b_rcv + 1 + k, Seq(0), TcpFlags::RST), &[]);
    }
    assert_eq!(net.state(B), Some(State::Established));
    assert_eq!(net.tcb(B).stats().challenge_acks, 10);
    net.now += 2 * SEC;
    net.inject(B, &to_b(b_rcv + 1, Seq(0), TcpFlags::RST), &[]);
    assert_eq!(net.tcb(B).stats().challenge_acks, 11);
}

#[test]
fn syn_in_established_gets_challenge_ack() {
    let (mut net, b_rcv, _) = established();
    let n = net.recs.len();
    net.inject(B, &to_b(b_rcv + 5, Seq(0), TcpFlags::SYN), &[]);
    net.inject(B, &to_b(Seq(12345), Seq(0), TcpFlags::SYN), &[]);
    assert_eq!(net.state(B), Some(State::Established));
    assert_eq!(net.tcb(B).stats().challenge_acks, 2);
    assert!(net.recs[n..]
        .iter()
        .all(|r| r.flags == TcpFlags::ACK && r.ack == b_rcv));
    net.run_for(100 * MS);
    assert_eq!(net.state(A), Some(State::Established));
}

#[test]
fn ack_of_unsent_data_is_acked_and_dropped() {
    let (mut net, b_rcv, a_rcv) = established();
    let n = net.recs.len();
    // A data segment acknowledging 1 GB beyond what B sent.
    net.inject(
        B,
        &to_b(b_rcv, a_rcv + 1_000_000_000, TcpFlags::ACK),
        b"evil",
    );
    assert_eq!(net.tcb(B).recv_available(), 3000, "the data was dropped");
    assert_eq!(net.tcb(B).stats().bad_acks, 1);
    assert_eq!(net.recs.len(), n + 1, "an ACK went back");
    // Too old an ACK (before SND.UNA − MAX.SND.WND) is dropped as well.
    net.inject(
        B,
        &to_b(b_rcv, a_rcv + 2_000_000_000, TcpFlags::ACK),
        b"evil",
    );
    assert_eq!(net.tcb(B).stats().bad_acks, 2);
    assert_eq!(net.tcb(B).recv_available(), 3000);
}

#[test]
fn connect_to_closed_port_is_refused() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 80);
    net.refuse = true;
    net.run_for(SEC);
    assert_eq!(net.state(A), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), Some(TcpError::Refused));
    assert!(net.ev[A].error);
    assert_eq!(net.tcb(A).send(b"x"), Err(TcpError::Refused));
}

#[test]
fn syn_retries_then_timed_out() {
    let mut c = cfg();
    c.syn_retries = 3;
    let imp = Impair {
        blackhole: true,
        ..Impair::delay(MS)
    };
    let mut net = Net::new(c.clone(), c, [imp; 2], 81);
    net.run_for(60 * SEC);
    assert_eq!(net.tcb(A).error(), Some(TcpError::TimedOut));
    let syns: Vec<u64> = net
        .recs
        .iter()
        .filter(|r| r.from == A)
        .map(|r| r.t)
        .collect();
    assert_eq!(syns.len(), 4, "SYN plus 3 retries");
    // Backoff: 1 s, 2 s, 4 s, then 8 s before giving up.
    let gaps: Vec<u64> = syns.windows(2).map(|w| (w[1] - w[0]) / SEC).collect();
    assert_eq!(gaps, [1, 2, 4]);
}

#[test]
fn peer_disappearing_times_out_after_backoff() {
    let mut c = cfg();
    c.max_retransmits = 5;
    // The RTO's backoff alone (the tail-loss probe is tested in the unit tests).
    c.tail_loss_probe = false;
    let mut net = Net::new(c.clone(), c, [Impair::delay(MS); 2], 82);
    net.handshake();
    net.imp = [Impair {
        blackhole: true,
        ..Impair::delay(MS)
    }; 2];
    let t0 = net.now;
    net.tcb(A).send(&[5u8; 1000]).unwrap();
    net.run_for(600 * SEC);
    assert_eq!(net.state(A), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), Some(TcpError::TimedOut));
    assert!(net.ev[A].error);
    let times: Vec<u64> = net.data_recs(A).map(|r| r.t).collect();
    assert_eq!(times.len(), 6, "first send plus 5 retransmissions");
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    for w in gaps.windows(2) {
        assert_eq!(w[1], 2 * w[0], "exponential backoff {gaps:?}");
    }
    // 200 ms doubling five times, and the last wait: 0.2 + 0.4 + ... + 6.4 s.
    assert!(net.ev[A].error && times[0] - t0 < MS);
    assert_eq!(net.tcb(A).stats().rto_expiries, 5);
}

#[test]
fn garbage_and_out_of_window_segments_leave_connection_working() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 90);
    net.handshake();
    let mut bulk = Bulk::new(1024 * 1024, 1024 * 1024);
    let mut rng = Rng(99);
    let mut injected = 0;
    let ok = net.run_until(net.now + 300 * SEC, |n| {
        if injected < 3000 && rng.chance(300_000) {
            injected += 1;
            let to = (rng.next() & 1) as usize;
            let peer = 1 - to;
            // The victim's RCV.NXT and SND.UNA as last seen on the wire.
            let last_to = n.recs.iter().rev().find(|r| r.from == to).cloned();
            let last_peer = n.recs.iter().rev().find(|r| r.from == peer).cloned();
            let (Some(lt), Some(lp)) = (last_to, last_peer) else {
                return bulk.app(n);
            };
            let (sp, dp) = if to == B { (40_000, 80) } else { (80, 40_000) };
            match rng.below(4) {
                0 => {
                    // Random bytes.
                    let len = rng.below(80) as usize;
                    let b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    n.deliver(to, &b);
                }
                1 => {
                    // Data far outside the window, either side.
                    let off = if rng.next() & 1 == 0 {
                        1 << 30
                    } else {
                        (1u32 << 31) + 7
                    };
                    let h = TcpHeader {
                        src_port: sp,
                        dst_port: dp,
                        seq: lt.ack + off,
                        ack: lp.ack,
                        flags: TcpFlags::ACK | TcpFlags::PSH,
                        window: rng.next() as u16,
                        options: TcpOptions::default(),
                    };
                    n.inject(to, &h, &[0xee; 100]);
                }
                2 => {
                    // Old duplicate data (already received), with a bogus SACK block.
                    let mut o = TcpOptions::default();
                    o.sack[0].left = Seq(rng.next() as u32);
                    o.sack[0].right = o.sack[0].left + 1000;
                    o.sack_len = 1;
                    let h = TcpHeader {
                        src_port: sp,
                        dst_port: dp,
                        seq: Seq(lt.ack.0.wrapping_sub(5000)),
                        ack: lp.seq,
                        flags: TcpFlags::ACK,
                        window: 100,
                        options: o,
                    };
                    n.inject(to, &h, &[0xdd; 200]);
                }
                _ => {
                    // In-window RST / SYN: challenged, never accepted.
                    let f = if rng.next() & 1 == 0 {
                        TcpFlags::RST
                    } else {
                        TcpFlags::SYN
                    };
                    let h = TcpHeader {
                        src_port: sp,
                        dst_port: dp,
                        seq: lt.ack + 1 + rng.below(1000) as u32,
                        ack: Seq(0),
                        flags: f,
                        window: 0,
                        options: TcpOptions::default(),
                    };
                    n.inject(to, &h, &[]);
                }
            }
        }
        n.wake = n.now + 20_000;
        bulk.app(n)
    });
    net.wake = 0;
    assert!(ok, "transfer completed despite {injected} hostile segments");
    assert!(injected > 100);
    for i in 0..2 {
        assert_eq!(net.tcb(i).error(), None);
        let s = *net.tcb(i).stats();
        assert!(s.out_of_window > 0 && s.challenge_acks > 0, "{s:?}");
    }
}

#[test]
fn simultaneous_open() {
    // Two active opens crossing: both SYN-SENT → SYN-RECEIVED → ESTABLISHED.
    let c = cfg();
    let mut net = Net::new(c.clone(), c.clone(), [Impair::delay(MS); 2], 91);
    net.t[B] = Some(Tcb::connect(&c, net.ep[B], Seq(777), net.now));
    net.states[B] = vec![State::SynSent];
    net.handshake();
    for i in 0..2 {
        assert!(
            net.states[i].contains(&State::SynReceived),
            "{:?}",
            net.states[i]
        );
        assert_eq!(net.tcb(i).negotiated(), (true, true, true));
    }
    let mut bulk = Bulk::new(100_000, 100_000);
    assert!(net.run_until(net.now + 60 * SEC, |n| bulk.app(n)));
}

#[test]
fn lost_syn_ack_and_lost_handshake_ack() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 92);
    let mut dropped = 0;
    net.drop_fn = Some(Box::new(move |r: &Rec| {
        // Drop the first SYN-ACK and the first pure ACK from A.
        let d = (r.from == B && r.flags.has(TcpFlags::SYN) && dropped & 1 == 0)
            || (r.from == A && r.flags == TcpFlags::ACK && r.len == 0 && dropped & 2 == 0);
        if d {
            dropped |= if r.from == B { 1 } else { 2 };
        }
        d
    }));
    net.handshake();
    let mut bulk = Bulk::new(50_000, 50_000);
    assert!(net.run_until(net.now + 60 * SEC, |n| bulk.app(n)));
    assert!(net.tcb(B).stats().retransmits >= 1);
}

#[test]
fn sequence_numbers_wrap_around() {
    let c = cfg();
    let imp = Impair {
        loss_ppm: 20_000,
        reorder_ppm: 20_000,
        reorder_extra: 2 * MS,
        ..Impair::delay(MS)
    };
    let mut net = Net::new(c.clone(), c.clone(), [imp; 2], 93);
    // Both ISSs just below 2^32: every number crosses the wrap early in the transfer.
    net.t[A] = Some(Tcb::connect(&c, net.ep[A], Seq(u32::MAX - 50_000), net.now));
    net.iss_b = Some(Seq(u32::MAX - 70_000));
    net.handshake();
    let mut bulk = Bulk::new(1024 * 1024, 1024 * 1024);
    assert!(net.run_until(net.now + 600 * SEC, |n| bulk.app(n)));
    let s = *net.tcb(A).stats();
    assert!(s.retransmits > 0, "{s:?}");
}

#[test]
fn time_wait_answers_syn_and_rst() {
    let mut net = close_run("active");
    assert_eq!(net.state(A), Some(State::TimeWait));
    let last = net.recs.iter().rev().find(|r| r.from == A).unwrap().clone();
    let to_a = |seq: Seq, flags: TcpFlags| TcpHeader {
        src_port: 80,
        dst_port: 40_000,
        seq,
        ack: Seq(0),
        flags,
        window: 100,
        options: TcpOptions::default(),
    };
    // A SYN in TIME_WAIT is challenged (RFC 5961 §4), not accepted.
    net.inject(A, &to_a(last.ack + 10, TcpFlags::SYN), &[]);
    assert_eq!(net.tcb(A).stats().challenge_acks, 1);
    assert_eq!(net.state(A), Some(State::TimeWait));
    // An exact RST ends TIME_WAIT early, without error (RFC 9293 §3.10.7.4).
    net.inject(A, &to_a(last.ack, TcpFlags::RST), &[]);
    assert_eq!(net.state(A), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), None);
}

//! Property tests: random (mostly hostile) segment sequences and application calls fed to a
//! `Tcb` never panic, never make it hold more than its configured buffers, and never make it
//! emit segments larger than allowed.

use hoststack::tcp::segment::{self, SackBlock, TcpFlags, TcpOptions, TcpRepr};
use hoststack::tcp::seq::Seq;
use hoststack::tcp::tcb::{Endpoints, State, Tcb};
use hoststack::tcp::TcpConfig;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

const EP: Endpoints = Endpoints {
    local_ip: [10, 0, 0, 1],
    local_port: 1111,
    remote_ip: [10, 0, 0, 2],
    remote_port: 2222,
};

#[derive(Clone, Debug)]
enum Op {
    /// A segment near our numbers: seq relative to our RCV.NXT, ack relative to our SND.NXT.
    Seg {
        seq_off: i32,
        ack_off: i32,
        flags: u8,
        window: u16,
        len: u16,
        ts: Option<(u32, u32)>,
        sack: Vec<(i32, u16)>,
    },
    /// Arbitrary bytes through the parser.
    Raw(Vec<u8>),
    Send(u16),
    Recv(u16),
    Shutdown,
    Close,
    Abort,
    NoDelay(bool),
    /// Time passes (timers fire).
    Wait(u32),
}

fn op() -> impl Strategy<Value = Op> {
    let seq_off = prop_oneof![
        4 => Just(0i32),
        4 => -2000i32..4000,
        1 => any::<i32>(),
        1 => -70_000i32..70_000,
    ];
    let ack_off = prop_oneof![
        4 => Just(0i32),
        3 => -3000i32..3000,
        1 => any::<i32>(),
    ];
    let flags = prop_oneof![
        6 => Just(TcpFlags::ACK.0),
        2 => Just((TcpFlags::ACK | TcpFlags::PSH).0),
        1 => Just((TcpFlags::ACK | TcpFlags::FIN).0),
        2 => any::<u8>(),
    ];
    let seg = (
        seq_off,
        ack_off,
        flags,
        prop_oneof![3 => 1000u16..u16::MAX, 1 => any::<u16>()],
        prop_oneof![3 => 0u16..1500, 1 => 0u16..9000],
        proptest::option::of((any::<u32>(), any::<u32>())),
        proptest::collection::vec((-5000i32..60_000, 0u16..20_000), 0..5),
    )
        .prop_map(|(seq_off, ack_off, flags, window, len, ts, sack)| Op::Seg {
            seq_off,
            ack_off,
            flags,
            window,
            len,
            ts,
            sack,
        });
    prop_oneof![
        20 => seg,
        1 => proptest::collection::vec(any::<u8>(), 0..120).prop_map(Op::Raw),
        4 => any::<u16>().prop_map(Op::Send),
        3 => any::<u16>().prop_map(Op::Recv),
        1 => Just(Op::Shutdown),
        1 => Just(Op::Close),
        1 => Just(Op::Abort),
        1 => any::<bool>().prop_map(Op::NoDelay),
        3 => (0u32..3_000).prop_map(|ms| Op::Wait(ms * 1000)),
    ]
}

#[derive(Clone, Debug)]
struct Setup {
    mss: u16,
    tso: bool,
    ws: u8,
    sack: bool,
    ts: bool,
    sndbuf: usize,
    rcvbuf: usize,
    peer_mss: Option<u16>,
    peer_ws: Option<u8>,
    peer_sack: bool,
    peer_ts: bool,
    passive: bool,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        (
            64u16..1500,
            any::<bool>(),
            0u8..15,
            any::<bool>(),
            any::<bool>(),
        ),
        (1usize..40_000, 1usize..40_000),
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u8>()),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (mss, tso, ws, sack, ts),
                (sndbuf, rcvbuf),
                (peer_mss, peer_ws, peer_sack, peer_ts, passive),
            )| Setup {
                mss,
                tso,
                ws,
                sack,
                ts,
                sndbuf,
                rcvbuf,
                peer_mss,
                peer_ws,
                peer_sack,
                peer_ts,
                passive,
            },
        )
}

struct Harness {
    t: Tcb,
    cfg: TcpConfig,
    now: u64,
    /// Our RCV.NXT and SND.NXT as last seen on the wire.
    rcv_nxt: Seq,
    snd_nxt: Seq,
    fed: u64,
}

impl Harness {
    fn new(s: &Setup) -> Harness {
        let cfg = TcpConfig {
            mss: s.mss,
            max_segment_payload: if s.tso { 16_000 } else { s.mss as usize },
            window_scale: s.ws,
            sack: s.sack,
            timestamps: s.ts,
            send_buffer: s.sndbuf,
            recv_buffer: s.rcvbuf,
            max_retransmits: 4,
            syn_retries: 2,
            time_wait_ns: 2_000 * MS,
            fin_wait2_ns: 2_000 * MS,
            ..TcpConfig::default()
        };
        let opts = TcpOptions {
            mss: s.peer_mss,
            window_scale: s.peer_ws,
            sack_permitted: s.peer_sack,
            timestamp: s.peer_ts.then_some((1000, 0)),
            ..TcpOptions::default()
        };
        let now = 1_000 * MS;
        let peer_iss = Seq(u32::MAX - 3000);
        let t = if s.passive {
            let syn = TcpRepr {
                src_port: 2222,
                dst_port: 1111,
                seq: peer_iss,
                ack: Seq(0),
                flags: TcpFlags::SYN,
                window: 5000,
                options: opts,
                payload: &[],
            };
            Tcb::accept(&cfg, EP, &syn, Seq(7), now)
        } else {
            Tcb::connect(&cfg, EP, Seq(7), now)
        };
        let mut h = Harness {
            t,
            cfg,
            now,
            rcv_nxt: peer_iss + 1,
            snd_nxt: Seq(8),
            fed: 0,
        };
        h.transmit();
        if !s.passive {
            let sa = TcpRepr {
                src_port: 2222,
                dst_port: 1111,
                seq: peer_iss,
                ack: Seq(8),
                flags: TcpFlags::SYN | TcpFlags::ACK,
                window: 5000,
                options: opts,
                payload: &[],
            };
            h.t.input(&sa, now);
        } else {
            let a = TcpRepr {
                src_port: 2222,
                dst_port: 1111,
                seq: peer_iss + 1,
                ack: Seq(8),
                flags: TcpFlags::ACK,
                window: 5000,
                options: opts,
                payload: &[],
            };
            h.t.input(&a, now);
        }
        assert_eq!(h.t.state(), State::Established);
        h.transmit();
        h
    }

    fn transmit(&mut self) {
        let limit = self.cfg.mss.max(64) as usize;
        let tso = self.cfg.max_segment_payload;
        let mut seen = (self.rcv_nxt, self.snd_nxt);
        self.t.poll_transmit(self.now, &mut |o| {
            let len = o.payload[0].len() + o.payload[1].len();
            assert!(len <= limit.max(tso), "payload {len}");
            assert!(segment::header_len(&o.header) <= 60);
            if o.header.flags.has(TcpFlags::ACK) {
                seen.0 = o.header.ack;
            }
            if !o.header.flags.has(TcpFlags::RST) {
                let end = o.header.seq + len as u32;
                if end.gt(seen.1) {
                    seen.1 = end;
                }
            }
        });
        (self.rcv_nxt, self.snd_nxt) = seen;
        self.check();
    }

    fn check(&self) {
        let t = &self.t;
        assert!(t.recv_available() <= self.cfg.recv_buffer);
        assert!(t.send_queued() <= self.cfg.send_buffer);
        assert!(t.buffer_bytes() <= self.cfg.send_buffer + self.cfg.recv_buffer);
        assert!(t.stats().bytes_in <= self.fed);
        // `check` runs right after `poll_transmit(now)`: whatever was due has been done, so
        // the next timer work lies in the future (a deadline at or before `now` left behind
        // would make the caller spin).
        if let Some(at) = t.poll_at() {
            assert!(
                at > self.now,
                "poll_at {at} not after now {} in {:?}",
                self.now,
                t.state()
            );
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Seg {
                seq_off,
                ack_off,
                flags,
                window,
                len,
                ts,
                sack,
            } => {
                let payload = vec![0xa5u8; len as usize];
                let mut o = TcpOptions {
                    timestamp: ts,
                    ..TcpOptions::default()
                };
                for (k, (l, n)) in sack.into_iter().take(4).enumerate() {
                    let left = self.snd_nxt + (l as u32);
                    o.sack[k] = SackBlock {
                        left,
                        right: left + n as u32,
                    };
                    o.sack_len = k as u8 + 1;
                }
                let seg = TcpRepr {
                    src_port: 2222,
                    dst_port: 1111,
                    seq: self.rcv_nxt + seq_off as u32,
                    ack: self.snd_nxt + ack_off as u32,
                    flags: TcpFlags(flags),
                    window,
                    options: o,
                    payload: &payload,
                };
                self.fed += len as u64;
                self.t.input(&seg, self.now);
            }
            Op::Raw(b) => {
                if let Ok(seg) = segment::parse(&b) {
                    self.fed += seg.payload.len() as u64;
                    self.t.input(&seg, self.now);
                }
            }
            Op::Send(n) => {
                let _ = self.t.send(&vec![1u8; n as usize]);
            }
            Op::Recv(n) => {
                let mut buf = vec![0u8; n as usize];
                let _ = self.t.recv(&mut buf);
            }
            Op::Shutdown => self.t.shutdown_write(),
            Op::Close => self.t.close(),
            Op::Abort => self.t.abort(),
            Op::NoDelay(v) => self.t.set_nodelay(v),
            Op::Wait(ns) => {
                self.now += ns as u64;
            }
        }
        self.transmit();
        // Timers that are due run now.
        for _ in 0..4 {
            match self.t.poll_at() {
                Some(at) if at <= self.now => self.transmit(),
                _ => break,
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_segments_never_panic_and_stay_bounded(s in setup(), ops in proptest::collection::vec(op(), 1..120)) {
        let mut h = Harness::new(&s);
        for o in ops {
            h.apply(o);
        }
        // Let every timer run out: the connection ends or idles, never loops. The peer is
        // silent from here on, so every timer (RTO, persist, TIME_WAIT, delayed ACK) has a
        // bounded number of rounds before nothing is left to wait for.
        for _ in 0..200 {
            match h.t.poll_at() {
                Some(at) => {
                    h.now = h.now.max(at);
                    h.transmit();
                }
                None => break,
            }
        }
        prop_assert_eq!(h.t.poll_at(), None, "timers still armed in {:?}", h.t.state());
        if h.t.state() == State::Closed {
            prop_assert!(h.t.is_finished());
        }
    }

    #[test]
    fn raw_bytes_never_panic(s in setup(), frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..50)) {
        let mut h = Harness::new(&s);
        for f in frames {
            h.apply(Op::Raw(f));
        }
    }
}

/// A long deterministic run of near-window segments with data: buffers stay within bounds.
#[test]
fn in_window_flood_stays_within_buffers() {
    let s = Setup {
        mss: 1460,
        tso: false,
        ws: 3,
        sack: true,
        ts: true,
        sndbuf: 8192,
        rcvbuf: 16_384,
        peer_mss: Some(1460),
        peer_ws: Some(3),
        peer_sack: true,
        peer_ts: true,
        passive: false,
    };
    let mut h = Harness::new(&s);
    let mut x = 12345u64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let op = Op::Seg {
            seq_off: (x % 20_000) as i32 - 1000,
            ack_off: 0,
            flags: TcpFlags::ACK.0,
            window: 1000,
            len: (x >> 20) as u16 % 1500,
            ts: Some((2000 + (x >> 40) as u32 % 10, 0)),
            sack: vec![],
        };
        h.apply(op);
        if (x >> 5) & 7 == 0 {
            h.apply(Op::Recv(3000));
        }
        h.apply(Op::Send(700));
    }
    assert_eq!(h.t.state(), State::Established);
}

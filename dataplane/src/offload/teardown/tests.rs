//! The teardown engine against RFC 9293's close transitions, in virtual time.

use offload_api::msg::{FourTuple, Message, TcpState, TeardownRepr, Timestamps};
use offload_api::wire::tcp::{self, parse_options, TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::Seq;

use super::engine::*;
use crate::net::csum;

const L: [u8; 4] = [10, 0, 0, 1];
const R: [u8; 4] = [10, 0, 0, 2];
const LP: u16 = 80;
const RP: u16 = 40_000;
const UNA: u32 = 1000;
const RCV: u32 = 5000;
const MS: u64 = 1_000_000;

const TUPLE: FourTuple = FourTuple {
    local_ip: L,
    local_port: LP,
    remote_ip: R,
    remote_port: RP,
};

/// A segment the engine sent, decoded.
#[derive(Debug, Clone)]
struct Out {
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    len: usize,
    window: u16,
    ts: Option<(u32, u32)>,
}

struct H {
    e: TeardownEngine,
    out: Vec<Vec<u8>>,
    now: u64,
}

fn repr(state: TcpState, wnd: u32) -> TeardownRepr {
    TeardownRepr {
        mss: 100,
        state,
        rto_us: 10_000,
        snd_una: UNA,
        snd_nxt: UNA,
        rcv_nxt: RCV,
        snd_wnd: wnd,
        rcv_wnd: 65_535 << 2,
        snd_wscale: 0,
        rcv_wscale: 2,
        sack_permitted: false,
        timestamps: Some(Timestamps {
            ts_recent: 77,
            ts_val: 1000,
        }),
    }
}

/// A 0x090B frame: the header, then the TSO packet (seq snd.una, `data`, FIN|ACK).
fn teardown_frame(r: &TeardownRepr, data: &[u8]) -> Vec<u8> {
    let h = TcpHeader {
        src_port: LP,
        dst_port: RP,
        seq: Seq(r.snd_una),
        ack: Seq(r.rcv_nxt),
        flags: TcpFlags::ACK | TcpFlags::FIN,
        window: 100,
        options: TcpOptions::default(),
    };
    let mut ip = ip_packet(L, R, &h, data);
    ip.drain(..14);
    let mut out = Vec::new();
    Message::Teardown(*r)
        .write_frame([2; 6], [1; 6], &ip, &mut out)
        .unwrap();
    out
}

/// An Ethernet/IPv4/TCP frame with checksums.
fn ip_packet(src: [u8; 4], dst: [u8; 4], h: &TcpHeader, data: &[u8]) -> Vec<u8> {
    let thl = tcp::header_len(h);
    let mut f = vec![0u8; 34 + thl];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((20 + thl + data.len()) as u16).to_be_bytes());
    f[20] = 0x40;
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    tcp::emit(h, &mut f[34..]);
    f.extend_from_slice(data);
    csum::fill_checksums(&mut f).unwrap();
    f
}

impl H {
    fn new(cfg: TeardownConfig) -> H {
        H {
            e: TeardownEngine::new(cfg).unwrap(),
            out: Vec::new(),
            now: 1_000 * MS,
        }
    }

    fn std() -> H {
        H::new(TeardownConfig {
            time_wait_ns: 1_000 * MS,
            fin_wait2_ns: 3_000 * MS,
            ..TeardownConfig::default()
        })
    }

    fn offload(&mut self, r: &TeardownRepr, data: &[u8]) -> Result<u32, TeardownError> {
        let f = teardown_frame(r, data);
        let out = &mut self.out;
        self.e.offload(0, &f, self.now, &mut |_, f| {
            out.push(f.to_vec());
            true
        })
    }

    /// The peer's segment; `ack` 0 means no ACK flag.
    fn peer(&mut self, seq: u32, ack: u32, flags: TcpFlags, data: &[u8], wnd: u16) -> RxOutcome {
        let h = TcpHeader {
            src_port: RP,
            dst_port: LP,
            seq: Seq(seq),
            ack: Seq(ack),
            flags,
            window: wnd,
            options: TcpOptions {
                timestamp: Some((500, 0)),
                ..TcpOptions::default()
            },
        };
        let f = ip_packet(R, L, &h, data);
        self.raw(&f[34..])
    }

    fn raw(&mut self, seg: &[u8]) -> RxOutcome {
        let out = &mut self.out;
        self.e.rx(R, L, seg, self.now, &mut |_, f| {
            out.push(f.to_vec());
            true
        })
    }

    fn ack(&mut self, ack: u32) -> RxOutcome {
        self.peer(RCV, ack, TcpFlags::ACK, &[], 1000)
    }

    fn advance_to(&mut self, t: u64) {
        self.now = t;
        let out = &mut self.out;
        self.e.advance(t, &mut |_, f| {
            out.push(f.to_vec());
            true
        });
    }

    /// Every frame sent since the last call, decoded; checks both checksums, the addresses
    /// and the ports.
    fn take(&mut self) -> Vec<Out> {
        self.out
            .drain(..)
            .map(|f| {
                assert_eq!(&f[0..12], &[[2u8; 6], [1u8; 6]].concat()[..]);
                assert!(csum::verify(&f[14..34]));
                assert_eq!(&f[26..30], &L);
                assert_eq!(&f[30..34], &R);
                let total = u16::from_be_bytes([f[16], f[17]]) as usize;
                assert_eq!(total + 14, f.len());
                assert!(csum::verify_l4(L, R, 6, &f[34..]));
                let t = TcpPacket::new_checked(&f[34..]).unwrap();
                assert_eq!((t.src_port(), t.dst_port()), (LP, RP));
                Out {
                    seq: t.seq_number().0,
                    ack: t.ack_number().0,
                    flags: t.flags(),
                    len: t.payload().len(),
                    window: t.window_len(),
                    ts: parse_options(t.options()).unwrap().timestamp,
                }
            })
            .collect()
    }

    fn state(&self) -> Option<FlowState> {
        self.e.state_of(TUPLE)
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| i as u8).collect()
}

const FA: TcpFlags = TcpFlags(TcpFlags::FIN.0 | TcpFlags::ACK.0);

#[test]
fn active_close_segments_then_fin_wait_2_time_wait_closed() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(250))
        .unwrap();
    let s = h.take();
    assert_eq!(s.len(), 3);
    assert_eq!(
        s.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
        [(1000, 100), (1100, 100), (1200, 50)]
    );
    assert!(s[2].flags.has(TcpFlags::FIN) && s[2].flags.has(TcpFlags::PSH));
    assert!(!s[0].flags.has(TcpFlags::FIN));
    for o in &s {
        assert_eq!(o.ack, RCV);
        assert_eq!(o.window, 65_535); // rcv_wnd >> rcv_wscale
        assert_eq!(o.ts, Some((1000, 77)));
    }
    assert_eq!(h.state(), Some(FlowState::FinWait1));
    assert_eq!(h.e.in_progress(), 1);
    // 5 ms later the peer acknowledges everything and the FIN.
    h.now += 5 * MS;
    assert_eq!(h.ack(1251), RxOutcome::Consumed);
    assert_eq!(h.state(), Some(FlowState::FinWait2));
    assert!(h.take().is_empty());
    // Its FIN: TIME_WAIT, and the ACK carries the TSval advanced by 5 ticks, echoing the
    // peer's TSval.
    h.peer(RCV, 1251, FA, &[], 1000);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
    let s = h.take();
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].seq, s[0].ack, s[0].len), (1251, RCV + 1, 0));
    assert_eq!(s[0].ts, Some((1005, 500)));
    assert_eq!(h.e.stats().time_wait, 1);
    // TIME_WAIT ends after time_wait_ns.
    let t = h.now;
    h.advance_to(t + 999 * MS);
    assert_eq!(h.e.in_progress(), 1);
    h.advance_to(t + 1_000 * MS);
    assert_eq!(h.e.in_progress(), 0);
    assert_eq!(h.e.stats().completed, 1);
    assert_eq!(h.e.timers_armed(), 0);
    assert_eq!(h.ack(1251), RxOutcome::NotMine);
}

#[test]
fn fin_and_ack_in_one_segment_go_straight_to_time_wait() {
    let mut h = H::std();
    h.offload(&repr(TcpState::Established, 10_000), &data(10))
        .unwrap();
    assert_eq!(h.take().len(), 1);
    h.peer(RCV, 1011, FA, &[], 1000);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
}

#[test]
fn passive_close_last_ack_then_closed() {
    let mut h = H::std();
    h.offload(&repr(TcpState::LastAck, 10_000), &data(100))
        .unwrap();
    let s = h.take();
    assert_eq!(s.len(), 1);
    assert!(s[0].flags.has(TcpFlags::FIN));
    assert_eq!(h.state(), Some(FlowState::LastAck));
    // The peer retransmits its FIN (our ACK of it was lost): acknowledged again.
    h.peer(RCV - 1, UNA, FA, &[], 1000);
    let s = h.take();
    assert_eq!((s.len(), s[0].ack), (1, RCV));
    assert_eq!(h.e.stats().dup_fin_acked, 1);
    // A partial ACK keeps LAST_ACK.
    h.ack(1100);
    assert_eq!(h.state(), Some(FlowState::LastAck));
    h.ack(1101);
    assert_eq!(h.state(), None);
    assert_eq!(h.e.stats().completed, 1);
    assert_eq!(h.e.in_progress(), 0);
    assert_eq!(h.e.timers_armed(), 0);
}

#[test]
fn close_wait_handover_is_a_passive_close() {
    let mut h = H::std();
    h.offload(&repr(TcpState::CloseWait, 10_000), &[]).unwrap();
    let s = h.take();
    assert_eq!((s.len(), s[0].seq, s[0].len), (1, UNA, 0));
    assert!(s[0].flags.has(TcpFlags::FIN));
    h.ack(UNA + 1);
    assert_eq!(h.e.stats().completed, 1);
}

#[test]
fn simultaneous_close_goes_through_closing() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(10))
        .unwrap();
    h.take();
    // The peer's FIN crossed ours: it acknowledges only our data.
    h.peer(RCV, 1010, FA, &[], 1000);
    assert_eq!(h.state(), Some(FlowState::Closing));
    let s = h.take();
    assert_eq!((s.len(), s[0].ack), (1, RCV + 1));
    h.peer(RCV + 1, 1011, TcpFlags::ACK, &[], 1000);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
    h.advance_to(h.now + 1_000 * MS);
    assert_eq!(h.state(), None);
}

#[test]
fn retransmitted_fin_in_time_wait_is_acked_and_restarts_the_timer() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &[]).unwrap();
    h.peer(RCV, UNA + 1, FA, &[], 1000);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
    h.take();
    let t0 = h.now;
    h.now = t0 + 600 * MS;
    h.peer(RCV, UNA + 1, FA, &[], 1000);
    let s = h.take();
    assert_eq!((s.len(), s[0].ack, s[0].seq), (1, RCV + 1, UNA + 1));
    assert_eq!(h.e.stats().dup_fin_acked, 1);
    // The original deadline passes: still in TIME_WAIT; the restarted one ends it.
    h.advance_to(t0 + 1_000 * MS);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
    h.advance_to(t0 + 1_600 * MS);
    assert_eq!(h.state(), None);
    // A RST in TIME_WAIT is ignored (RFC 1337).
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &[]).unwrap();
    h.peer(RCV, UNA + 1, FA, &[], 1000);
    h.peer(RCV + 1, 0, TcpFlags::RST, &[], 0);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
    // A new SYN of the same 4-tuple ends TIME_WAIT and goes on to the host.
    assert_eq!(
        h.peer(RCV + 100_000, 0, TcpFlags::SYN, &[], 1000),
        RxOutcome::NotMine
    );
    assert_eq!(h.state(), None);
    assert_eq!(h.e.stats().tw_reused, 1);
}

#[test]
fn peer_rst_frees_the_flow_only_at_rcv_nxt() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(10))
        .unwrap();
    h.take();
    // In the window but not at rcv.nxt: challenge ACK (RFC 5961 §3.2).
    h.peer(RCV + 10, 0, TcpFlags::RST, &[], 0);
    assert_eq!(h.take().len(), 1);
    assert_eq!(h.e.stats().bad_rst, 1);
    // Outside the window: dropped silently.
    h.peer(RCV.wrapping_sub(1_000_000), 0, TcpFlags::RST, &[], 0);
    assert!(h.take().is_empty());
    assert_eq!(h.state(), Some(FlowState::FinWait1));
    h.peer(RCV, 0, TcpFlags::RST, &[], 0);
    assert_eq!(h.state(), None);
    assert_eq!(h.e.stats().peer_rst, 1);
    assert_eq!(h.e.timers_armed(), 0);
}

#[test]
fn three_duplicate_acks_retransmit_the_first_unacked_segment() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(500))
        .unwrap();
    assert_eq!(h.take().len(), 5);
    h.ack(1100);
    h.ack(1100);
    h.ack(1100);
    assert!(h.take().is_empty());
    h.ack(1100);
    let s = h.take();
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].seq, s[0].len), (1100, 100));
    assert_eq!(h.e.stats().retransmits_fast, 1);
    // More duplicates do not retransmit again until the ACK passes the recovery point.
    h.ack(1100);
    assert!(h.take().is_empty());
    h.ack(1501);
    assert_eq!(h.state(), Some(FlowState::FinWait2));
}

#[test]
fn rto_backs_off_exponentially_then_gives_up_with_a_rst() {
    let mut h = H::new(TeardownConfig {
        max_retries: 3,
        ..TeardownConfig::default()
    });
    let t0 = h.now;
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(150))
        .unwrap();
    assert_eq!(h.take().len(), 2);
    assert_eq!(h.e.next_deadline(), Some(t0 + 10 * MS));
    let mut t = t0;
    for (i, gap) in [10u64, 20, 40].into_iter().enumerate() {
        t += gap * MS;
        h.advance_to(t - 1);
        assert!(h.take().is_empty(), "retry {i} early");
        h.advance_to(t);
        let s = h.take();
        assert_eq!(s.len(), 1, "retry {i}");
        assert_eq!((s[0].seq, s[0].len), (UNA, 100));
    }
    assert_eq!(h.e.stats().retransmits_rto, 3);
    t += 80 * MS;
    h.advance_to(t);
    let s = h.take();
    assert_eq!(s.len(), 1);
    assert!(s[0].flags.has(TcpFlags::RST));
    assert_eq!(s[0].seq, 1151);
    assert_eq!(h.e.stats().gave_up, 1);
    assert_eq!(h.e.in_progress(), 0);
    assert_eq!(h.e.timers_armed(), 0);
}

#[test]
fn after_a_timeout_the_rest_follows_the_ack() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(250))
        .unwrap();
    h.take();
    h.advance_to(h.now + 10 * MS);
    assert_eq!(h.take().len(), 1);
    // The ACK of the first segment: go-back-N sends the remaining two, FIN included.
    h.ack(1100);
    let s = h.take();
    assert_eq!(
        s.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
        [(1100, 100), (1200, 50)]
    );
    assert!(s[1].flags.has(TcpFlags::FIN));
    // A new ACK resets the retry count and restarts the timer with the backed-off RTO.
    let t = h.now;
    h.advance_to(t + 20 * MS - 1);
    assert!(h.take().is_empty());
    h.advance_to(t + 20 * MS);
    assert_eq!(h.take().len(), 1);
}

#[test]
fn sends_within_the_peer_window_only() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 150), &data(250))
        .unwrap();
    let s = h.take();
    assert_eq!(
        s.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
        [(1000, 100), (1100, 50)]
    );
    h.peer(RCV, 1150, TcpFlags::ACK, &[], 1000);
    let s = h.take();
    assert_eq!(
        s.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
        [(1150, 100)]
    );
    assert!(s[0].flags.has(TcpFlags::FIN));
}

#[test]
fn peer_data_after_close_is_acked_and_discarded() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(10))
        .unwrap();
    h.take();
    h.peer(RCV, 1011, TcpFlags::ACK, b"more", 1000);
    let s = h.take();
    assert_eq!((s.len(), s[0].ack), (1, RCV + 4));
    assert_eq!(h.e.stats().peer_data, 1);
    // Out of order: a duplicate ACK, not kept.
    h.peer(RCV + 100, 1011, TcpFlags::ACK, b"x", 1000);
    let s = h.take();
    assert_eq!((s.len(), s[0].ack), (1, RCV + 4));
    assert_eq!(h.e.stats().out_of_order, 1);
    // Its FIN after the data: TIME_WAIT.
    h.peer(RCV + 4, 1011, FA, &[], 1000);
    assert_eq!(h.state(), Some(FlowState::TimeWait));
}

#[test]
fn fin_wait_2_times_out_when_the_peer_never_closes() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &[]).unwrap();
    h.ack(UNA + 1);
    assert_eq!(h.state(), Some(FlowState::FinWait2));
    // Not cut off by the (shorter) TIME_WAIT length: a late FIN still finds the flow.
    h.advance_to(h.now + 2_000 * MS);
    assert_eq!(h.state(), Some(FlowState::FinWait2));
    h.advance_to(h.now + 1_000 * MS);
    assert_eq!(h.state(), None);
    assert_eq!(h.e.stats().fin_wait2_timeouts, 1);
}

#[test]
fn bad_and_unacceptable_segments_are_counted_and_dropped() {
    let mut h = H::std();
    h.offload(&repr(TcpState::FinWait1, 10_000), &data(10))
        .unwrap();
    h.take();
    // Outside the receive window: ACK, drop.
    h.peer(RCV + 10_000_000, 1011, TcpFlags::ACK, b"x", 1000);
    assert_eq!(h.take().len(), 1);
    assert_eq!(h.e.stats().unacceptable, 1);
    // Acknowledges what was never sent: ACK, drop.
    h.peer(RCV, 5000, TcpFlags::ACK, &[], 1000);
    assert_eq!(h.take().len(), 1);
    assert_eq!(h.e.stats().bad_ack, 1);
    // No ACK flag.
    h.peer(RCV, 0, TcpFlags::PSH, b"x", 1000);
    assert_eq!(h.e.stats().no_ack, 1);
    // SYN: challenge ACK.
    h.peer(RCV, 0, TcpFlags::SYN, &[], 1000);
    assert_eq!(h.e.stats().bad_syn, 1);
    h.take();
    // Bad checksum.
    let hd = TcpHeader {
        src_port: RP,
        dst_port: LP,
        seq: Seq(RCV),
        ack: Seq(1011),
        flags: TcpFlags::ACK,
        window: 10,
        options: TcpOptions::default(),
    };
    let mut f = ip_packet(R, L, &hd, &[]);
    f[34 + 16] ^= 0xff;
    assert_eq!(h.raw(&f[34..]), RxOutcome::Consumed);
    assert_eq!(h.e.stats().bad_checksum, 1);
    // Malformed options (length 1), checksum right.
    let mut seg = vec![0u8; 24];
    tcp::emit(&hd, &mut seg);
    seg[12] = 6 << 4;
    seg[20..24].copy_from_slice(&[8, 1, 0, 0]);
    let c = csum::l4_checksum(R, L, 6, &seg);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    assert_eq!(h.raw(&seg), RxOutcome::Consumed);
    assert_eq!(h.e.stats().bad_options, 1);
    // Truncated and garbage: not ours, no panic.
    assert_eq!(h.raw(&seg[..10]), RxOutcome::NotMine);
    let mut x = 0x1234_5678u32;
    for n in 0..300 {
        let bytes: Vec<u8> = (0..n % 80)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let _ = h.raw(&bytes);
        let mut b = bytes.clone();
        if b.len() >= 4 {
            b[0..2].copy_from_slice(&RP.to_be_bytes());
            b[2..4].copy_from_slice(&LP.to_be_bytes());
            let _ = h.raw(&b);
        }
    }
    assert_eq!(h.state(), Some(FlowState::FinWait1));
    // Still works.
    h.ack(1011);
    assert_eq!(h.state(), Some(FlowState::FinWait2));
}

#[test]
fn bad_messages_and_a_full_table_are_refused_without_sending() {
    let mut h = H::new(TeardownConfig {
        max_flows: 1,
        ..TeardownConfig::default()
    });
    assert!(matches!(
        h.offload(&repr(TcpState::SynSent, 10_000), &[]),
        Err(TeardownError::State(TcpState::SynSent))
    ));
    // Payload not at snd.una.
    let mut r = repr(TcpState::FinWait1, 10_000);
    let f = teardown_frame(&r, b"abc");
    r.snd_una += 1;
    let mut g = Vec::new();
    Message::Teardown(r)
        .write_frame([2; 6], [1; 6], &f[58..], &mut g)
        .unwrap();
    let out = &mut h.out;
    assert!(matches!(
        h.e.offload(0, &g, 0, &mut |_, f| {
            out.push(f.to_vec());
            true
        }),
        Err(TeardownError::Payload(_))
    ));
    // Truncated frames of every length.
    let f = teardown_frame(&repr(TcpState::FinWait1, 10_000), b"abc");
    for n in 0..f.len() - 3 {
        let out = &mut h.out;
        assert!(h
            .e
            .offload(0, &f[..n], 0, &mut |_, f| {
                out.push(f.to_vec());
                true
            })
            .is_err());
    }
    assert!(h.take().is_empty());
    assert_eq!(h.e.stats().refused_bad as usize, 2 + f.len() - 3);
    h.offload(&repr(TcpState::FinWait1, 10_000), b"abc")
        .unwrap();
    assert_eq!(h.take().len(), 1);
    // Same 4-tuple again while live: refused.
    assert_eq!(
        h.offload(&repr(TcpState::FinWait1, 10_000), b"abc"),
        Err(TeardownError::Duplicate)
    );
    // Another 4-tuple: the table is full.
    let mut r = repr(TcpState::FinWait1, 10_000);
    r.snd_una = 9;
    let f = teardown_frame(&r, b"x");
    let mut f2 = f.clone();
    f2[58 + 20..58 + 22].copy_from_slice(&81u16.to_be_bytes()); // other local port
    let out = &mut h.out;
    assert_eq!(
        h.e.offload(0, &f2, 0, &mut |_, f| {
            out.push(f.to_vec());
            true
        }),
        Err(TeardownError::Full)
    );
    assert!(h.take().is_empty());
    assert_eq!(h.e.stats().refused_full, 1);
    assert_eq!(h.e.in_progress(), 1);
}

#[test]
fn bytes_the_host_sent_already_are_not_sent_again() {
    let mut h = H::std();
    let mut r = repr(TcpState::FinWait1, 10_000);
    r.snd_nxt = UNA + 100;
    h.offload(&r, &data(250)).unwrap();
    let s = h.take();
    assert_eq!(
        s.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
        [(1100, 100), (1200, 50)]
    );
    // The first one was lost: the retransmission timer resends it.
    h.advance_to(h.now + 10 * MS);
    let s = h.take();
    assert_eq!((s.len(), s[0].seq, s[0].len), (1, 1000, 100));
    h.ack(1251);
    assert_eq!(h.state(), Some(FlowState::FinWait2));
}

//! Unit tests of the state machine against a scripted peer (hand-made segments).

use super::*;
use crate::tcp::segment::SackBlock;

const MS: u64 = 1_000_000;
const T0: u64 = 1_000 * MS;

const EP: Endpoints = Endpoints {
    local_ip: [10, 0, 0, 1],
    local_port: 1111,
    remote_ip: [10, 0, 0, 2],
    remote_port: 2222,
};

fn tx(t: &mut Tcb, now: u64) -> Vec<(TcpHeader, Vec<u8>)> {
    let mut v = Vec::new();
    t.poll_transmit(now, &mut |o| {
        let mut p = o.payload[0].to_vec();
        p.extend_from_slice(o.payload[1]);
        v.push((o.header, p));
    });
    v
}

fn seg(flags: TcpFlags, seq: Seq, ack: Seq, window: u16, payload: &[u8]) -> TcpRepr<'_> {
    TcpRepr {
        src_port: 2222,
        dst_port: 1111,
        seq,
        ack,
        flags,
        window,
        options: TcpOptions::default(),
        payload,
    }
}

fn with_ts<'a>(mut s: TcpRepr<'a>, tsval: u32, tsecr: u32) -> TcpRepr<'a> {
    s.options.timestamp = Some((tsval, tsecr));
    s
}

/// The peer's ISS.
const PISS: Seq = Seq(u32::MAX - 100); // its data wraps around 2^32 quickly

/// An established active connection; returns it with our TSval in the SYN (if any).
fn established(cfg: &TcpConfig, peer: TcpOptions) -> Tcb {
    let mut t = Tcb::connect(cfg, EP, Seq(1000), T0);
    let out = tx(&mut t, T0);
    assert_eq!(out.len(), 1);
    let syn = out[0].0;
    assert_eq!(syn.flags, TcpFlags::SYN);
    let mut sa = seg(TcpFlags::SYN | TcpFlags::ACK, PISS, Seq(1001), 65_535, &[]);
    sa.options = peer;
    if let Some((v, _)) = peer.timestamp {
        sa.options.timestamp = Some((v, syn.options.timestamp.map_or(0, |t| t.0)));
    }
    let ev = t.input(&sa, T0 + MS);
    assert!(ev.established);
    let out = tx(&mut t, T0 + MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.flags, TcpFlags::ACK);
    assert_eq!(out[0].0.ack, PISS + 1);
    t
}

fn full_opts() -> TcpOptions {
    TcpOptions {
        mss: Some(1460),
        window_scale: Some(7),
        sack_permitted: true,
        timestamp: Some((500, 0)),
        ..TcpOptions::default()
    }
}

fn plain_cfg() -> TcpConfig {
    TcpConfig {
        timestamps: false,
        ..TcpConfig::default()
    }
}

#[test]
fn reset_for_the_three_cases() {
    let mut s = seg(TcpFlags::RST, Seq(5), Seq(6), 0, &[]);
    assert!(reset_for(&s).is_none());
    s.flags = TcpFlags::ACK;
    let h = reset_for(&s).unwrap();
    assert_eq!(
        (h.seq, h.flags, h.src_port, h.dst_port),
        (Seq(6), TcpFlags::RST, 1111, 2222)
    );
    s.flags = TcpFlags::SYN;
    let h = reset_for(&s).unwrap();
    assert_eq!(
        (h.seq, h.ack, h.flags),
        (Seq(0), Seq(6), TcpFlags::RST | TcpFlags::ACK)
    );
    let s = seg(TcpFlags::PSH | TcpFlags::FIN, Seq(10), Seq(0), 0, b"abc");
    assert_eq!(reset_for(&s).unwrap().ack, Seq(14));
}

#[test]
fn syn_sent_checks() {
    let c = TcpConfig::default();
    let mut t = Tcb::connect(&c, EP, Seq(1000), T0);
    assert_eq!(t.poll_at(), Some(0));
    let out = tx(&mut t, T0);
    let syn = out[0].0;
    assert_eq!(syn.options.mss, Some(1460));
    assert_eq!(syn.options.window_scale, Some(7));
    assert!(syn.options.sack_permitted && syn.options.timestamp.is_some());
    assert_eq!(t.poll_at(), Some(T0 + c.rto_initial_ns));
    // ACK of something never sent: RST <SEQ=SEG.ACK>, state unchanged.
    t.input(&seg(TcpFlags::ACK, Seq(9), Seq(5000), 100, &[]), T0);
    let out = tx(&mut t, T0);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0.flags, out[0].0.seq), (TcpFlags::RST, Seq(5000)));
    assert_eq!(t.state(), State::SynSent);
    // RST without ACK: ignored. RST with the right ACK: refused.
    t.input(&seg(TcpFlags::RST, Seq(9), Seq(0), 0, &[]), T0);
    assert_eq!(t.state(), State::SynSent);
    let ev = t.input(
        &seg(TcpFlags::RST | TcpFlags::ACK, Seq(0), Seq(1001), 0, &[]),
        T0,
    );
    assert!(ev.error);
    assert_eq!(t.error(), Some(TcpError::Refused));
    assert!(t.is_finished());
}

#[test]
fn lazy_buffers_and_compact_state() {
    let mut t = established(&TcpConfig::default(), full_opts());
    assert_eq!(t.buffer_bytes(), 0);
    assert!(
        std::mem::size_of::<Tcb>() <= 1024,
        "{}",
        std::mem::size_of::<Tcb>()
    );
    t.send(b"hi").unwrap();
    assert!(t.buffer_bytes() > 0 && t.buffer_bytes() <= 4096);
    // Idle established connection without data: no timer at all.
    let mut u = established(&TcpConfig::default(), full_opts());
    assert_eq!(u.poll_at(), None);
    assert!(tx(&mut u, T0 + 10 * MS).is_empty());
}

#[test]
fn window_scale_applies_to_peer_window() {
    let mut t = established(&plain_cfg(), full_opts());
    assert_eq!(t.window_scales(), (7, 7));
    t.send(&[1u8; 20_000]).unwrap();
    // Peer ACK with window field 20: 2,560 bytes, one full segment; the 1,100 bytes left
    // of the window wait (sender SWS avoidance: less than an MSS, less than half the
    // largest window seen).
    t.input(
        &seg(TcpFlags::ACK, PISS + 1, Seq(1001), 20, &[]),
        T0 + 2 * MS,
    );
    let out = tx(&mut t, T0 + 2 * MS);
    let sent: Vec<usize> = out.iter().map(|(_, p)| p.len()).collect();
    assert_eq!(sent, [1460], "window 20 << 7");
    // Our window field is scaled too.
    assert_eq!(out[0].0.window as usize, (256 * 1024 - 127) >> 7);
}

#[test]
fn shift_above_14_is_clamped() {
    let mut o = full_opts();
    o.window_scale = Some(200);
    let t = established(&plain_cfg(), o);
    assert_eq!(t.window_scales(), (7, 14));
}

#[test]
fn paws_drops_old_duplicates() {
    let mut t = established(&TcpConfig::default(), full_opts());
    let mut d = with_ts(
        seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, b"new"),
        600,
        0,
    );
    t.input(&d, T0 + 2 * MS);
    assert_eq!(t.recv_available(), 3);
    // Next segment with an older timestamp: dropped, ACKed.
    d = with_ts(
        seg(TcpFlags::ACK, PISS + 4, Seq(1001), 1000, b"old"),
        590,
        0,
    );
    t.input(&d, T0 + 3 * MS);
    assert_eq!(t.recv_available(), 3);
    assert_eq!(t.stats().paws_rejected, 1);
    let out = tx(&mut t, T0 + 3 * MS);
    assert_eq!(out.len(), 1);
    // Echoes TS.Recent = 600.
    assert_eq!(out[0].0.options.timestamp.unwrap().1, 600);
    // A RST is exempt from PAWS.
    let r = with_ts(seg(TcpFlags::RST, PISS + 4, Seq(0), 0, &[]), 1, 0);
    t.input(&r, T0 + 4 * MS);
    assert_eq!(t.error(), Some(TcpError::Reset));
}

#[test]
fn ts_recent_follows_rfc7323_rules() {
    let mut t = established(&TcpConfig::default(), full_opts());
    // Two segments before our ACK: TS.Recent keeps the first one's (SEG.SEQ <= Last.ACK.sent
    // holds only for it), so the RTT the peer measures covers the delay.
    t.input(
        &with_ts(
            seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, &[1; 100]),
            700,
            0,
        ),
        T0 + 2 * MS,
    );
    t.input(
        &with_ts(
            seg(TcpFlags::ACK, PISS + 101, Seq(1001), 1000, &[1; 100]),
            705,
            0,
        ),
        T0 + 3 * MS,
    );
    let out = tx(&mut t, T0 + 50 * MS); // delayed ACK
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.options.timestamp.unwrap().1, 700);
    assert_eq!(out[0].0.ack, PISS + 201);
}

#[test]
fn delayed_ack_every_second_full_segment() {
    let mut t = established(&plain_cfg(), full_opts());
    let full = vec![7u8; 1460];
    t.input(
        &seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, &full),
        T0 + 2 * MS,
    );
    assert!(tx(&mut t, T0 + 2 * MS).is_empty());
    assert_eq!(t.poll_at(), Some(T0 + 2 * MS + 40 * MS));
    t.input(
        &seg(TcpFlags::ACK, PISS + 1461, Seq(1001), 1000, &full),
        T0 + 3 * MS,
    );
    let out = tx(&mut t, T0 + 3 * MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.ack, PISS + 2921);
    assert_eq!(t.poll_at(), None);
}

#[test]
fn out_of_order_sack_blocks_most_recent_first() {
    let mut t = established(&plain_cfg(), full_opts());
    let d = [9u8; 100];
    let base = PISS + 1;
    for (k, off) in [1000u32, 3000, 5000, 2000].into_iter().enumerate() {
        t.input(
            &seg(TcpFlags::ACK, base + off, Seq(1001), 1000, &d),
            T0 + 2 * MS,
        );
        let out = tx(&mut t, T0 + 2 * MS);
        assert_eq!(out.len(), 1, "immediate ACK for out-of-order data");
        let o = out[0].0.options;
        assert_eq!(out[0].0.ack, base);
        assert_eq!(o.sack_len as usize, k + 1);
        assert_eq!(o.sack[0].left, base + off, "most recent first");
    }
    // Filling the first hole is ACKed at once too.
    t.input(
        &seg(TcpFlags::ACK, base, Seq(1001), 1000, &[9u8; 1000]),
        T0 + 3 * MS,
    );
    let out = tx(&mut t, T0 + 3 * MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.ack, base + 1100);
    assert_eq!(t.stats().ooo_segments, 4);
}

#[test]
fn out_of_order_storage_is_bounded() {
    let mut c = plain_cfg();
    c.recv_buffer = 10_000;
    let mut t = established(&c, full_opts());
    let d = [1u8; 300];
    // Offers far beyond the window are dropped; scattered segments are limited by ranges.
    for k in 0..500u32 {
        let off = (k * 7919) % 40_000 + 1;
        t.input(
            &seg(TcpFlags::ACK, PISS + 1 + off, Seq(1001), 1000, &d),
            T0 + 2 * MS,
        );
        let _ = tx(&mut t, T0 + 2 * MS);
        assert!(t.buffer_bytes() <= 10_000);
    }
    assert_eq!(t.recv_available(), 0);
    assert!(t.stats().out_of_window > 0);
}

#[test]
fn zero_window_still_takes_acks() {
    let mut c = plain_cfg();
    c.recv_buffer = 2000;
    c.window_scale = 0;
    let mut t = established(&c, full_opts());
    t.send(&[5u8; 3000]).unwrap();
    let out = tx(&mut t, T0 + 2 * MS);
    assert!(!out.is_empty());
    // Fill our window completely.
    t.input(
        &seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, &[1u8; 2000]),
        T0 + 3 * MS,
    );
    let out = tx(&mut t, T0 + 50 * MS);
    assert_eq!(out.last().unwrap().0.window, 0);
    // The peer's next data segment is beyond our zero window, but its ACK counts.
    t.input(
        &seg(TcpFlags::ACK, PISS + 2001, Seq(1001 + 1000), 3000, b"x"),
        T0 + 60 * MS,
    );
    assert_eq!(t.send_queued(), 2000, "1,000 bytes acknowledged");
    assert_eq!(t.recv_available(), 2000);
    assert_eq!(t.stats().out_of_window, 1);
}

#[test]
fn retransmitted_syn_gets_syn_ack_again() {
    let c = TcpConfig::default();
    let syn = seg(TcpFlags::SYN, Seq(77), Seq(0), 1000, &[]);
    let mut t = Tcb::accept(&c, EP, &syn, Seq(4000), T0);
    assert_eq!(tx(&mut t, T0).len(), 1);
    t.input(&syn, T0 + 500 * MS);
    let out = tx(&mut t, T0 + 500 * MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(t.stats().retransmits, 1);
    // A wrong ACK in SYN-RECEIVED gets a RST.
    t.input(
        &seg(TcpFlags::ACK, Seq(78), Seq(9999), 1000, &[]),
        T0 + 600 * MS,
    );
    let out = tx(&mut t, T0 + 600 * MS);
    assert_eq!((out[0].0.flags, out[0].0.seq), (TcpFlags::RST, Seq(9999)));
    // The right one completes the handshake, with data.
    let ev = t.input(
        &seg(
            TcpFlags::ACK | TcpFlags::PSH,
            Seq(78),
            Seq(4001),
            1000,
            b"req",
        ),
        T0 + 700 * MS,
    );
    assert!(ev.established && ev.readable);
    assert_eq!(t.state(), State::Established);
    assert_eq!(t.recv_available(), 3);
}

#[test]
fn syn_ack_retries_exhaust() {
    let c = TcpConfig {
        syn_retries: 2,
        ..TcpConfig::default()
    };
    let syn = seg(TcpFlags::SYN, Seq(77), Seq(0), 1000, &[]);
    let mut t = Tcb::accept(&c, EP, &syn, Seq(4000), T0);
    let mut now = T0;
    let mut sent = 0;
    for _ in 0..10 {
        sent += tx(&mut t, now).len();
        match t.poll_at() {
            Some(at) => now = at,
            None => break,
        }
    }
    assert_eq!(sent, 3);
    assert_eq!(t.error(), Some(TcpError::TimedOut));
    assert!(t.take_events().error);
}

#[test]
fn app_calls_by_state() {
    let c = TcpConfig::default();
    let mut t = Tcb::connect(&c, EP, Seq(1000), T0);
    // Queued before the handshake completes: sent after.
    assert_eq!(t.send(b"early"), Ok(5));
    t.close();
    assert_eq!(t.state(), State::Closed);
    assert!(t.is_finished());
    assert_eq!(tx(&mut t, T0).len(), 0, "nothing, not even a SYN");

    let mut t = established(&plain_cfg(), full_opts());
    t.shutdown_write();
    assert_eq!(t.state(), State::FinWait1);
    assert_eq!(t.send(b"x"), Err(TcpError::WriteClosed));
    assert_eq!(t.send_space(), 0);
    let out = tx(&mut t, T0 + 2 * MS);
    assert_eq!(out[0].0.flags, TcpFlags::ACK | TcpFlags::FIN);
    assert_eq!(out[0].0.seq, Seq(1001));

    let mut t = established(&plain_cfg(), full_opts());
    t.send(b"abc").unwrap();
    let _ = tx(&mut t, T0 + 2 * MS);
    t.abort();
    let out = tx(&mut t, T0 + 2 * MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.flags, TcpFlags::RST | TcpFlags::ACK);
    assert_eq!(out[0].0.seq, Seq(1004), "after the data sent");
    assert_eq!(t.send(b"x"), Err(TcpError::NotConnected));
}

#[test]
fn data_before_handshake_and_fin_after_it() {
    let c = plain_cfg();
    let mut t = Tcb::connect(&c, EP, Seq(1000), T0);
    t.send(b"hello").unwrap();
    t.shutdown_write();
    let _ = tx(&mut t, T0);
    let mut sa = seg(TcpFlags::SYN | TcpFlags::ACK, PISS, Seq(1001), 65_535, &[]);
    sa.options = full_opts();
    sa.options.timestamp = None;
    t.input(&sa, T0 + MS);
    assert_eq!(t.state(), State::FinWait1);
    let out = tx(&mut t, T0 + MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1, b"hello");
    assert_eq!(
        out[0].0.flags,
        TcpFlags::ACK | TcpFlags::PSH | TcpFlags::FIN
    );
    t.input(
        &seg(TcpFlags::ACK, PISS + 1, Seq(1007), 1000, &[]),
        T0 + 2 * MS,
    );
    assert_eq!(t.state(), State::FinWait2);
}

#[test]
fn bogus_sack_blocks_are_harmless() {
    let mut t = established(&plain_cfg(), full_opts());
    t.send(&[1u8; 10_000]).unwrap();
    let _ = tx(&mut t, T0 + 2 * MS);
    let mut a = seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, &[]);
    a.options.sack = [
        SackBlock {
            left: Seq(5000),
            right: Seq(4000),
        }, // inverted
        SackBlock {
            left: Seq(1),
            right: Seq(900),
        }, // below SND.UNA
        SackBlock {
            left: Seq(2000),
            right: Seq(99_999),
        }, // beyond SND.MAX
        SackBlock {
            left: Seq(u32::MAX),
            right: Seq(5),
        }, // garbage
    ];
    a.options.sack_len = 4;
    for k in 0..10 {
        t.input(&a, T0 + (3 + k) * MS);
    }
    assert_eq!(
        t.stats().dup_acks,
        0,
        "no new SACK information, no duplicate ACKs"
    );
    assert!(!t.in_recovery());
    // A valid block counts.
    a.options.sack[0] = SackBlock {
        left: Seq(2461),
        right: Seq(3921),
    };
    a.options.sack_len = 1;
    t.input(&a, T0 + 20 * MS);
    assert_eq!(t.stats().dup_acks, 1);
}

#[test]
fn sack_loss_detection_enters_recovery_without_three_dupacks() {
    let mut t = established(&plain_cfg(), full_opts());
    t.send(&[1u8; 14_600]).unwrap();
    let out = tx(&mut t, T0 + 2 * MS);
    assert_eq!(out.len(), 10);
    // Segment 0 lost; one ACK SACKs segments 1..=3 at once: IsLost(SND.UNA) holds.
    let mut a = seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, &[]);
    a.options.sack[0] = SackBlock {
        left: Seq(1001 + 1460),
        right: Seq(1001 + 4 * 1460),
    };
    a.options.sack_len = 1;
    t.input(&a, T0 + 3 * MS);
    assert!(t.in_recovery());
    let out = tx(&mut t, T0 + 3 * MS);
    assert_eq!(out[0].0.seq, Seq(1001));
    assert_eq!(out[0].1.len(), 1460);
    assert_eq!(t.stats().fast_retransmits, 1);
}

#[test]
fn rto_go_back_n_and_karn() {
    let cfg = TcpConfig {
        tail_loss_probe: false,
        ..plain_cfg()
    };
    let mut t = established(&cfg, full_opts());
    let rto = t.rto();
    t.send(&[1u8; 5000]).unwrap();
    let out = tx(&mut t, T0 + 2 * MS);
    assert_eq!(
        out.len(),
        3,
        "three full segments; Nagle holds the last 620 bytes"
    );
    assert_eq!(t.poll_at(), Some(T0 + 2 * MS + rto));
    // Nothing comes back: the RTO resends one segment from SND.UNA, cwnd = 1 SMSS.
    let at = T0 + 2 * MS + rto;
    let out = tx(&mut t, at);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.seq, Seq(1001));
    assert_eq!(t.cwnd().0, 1460);
    assert_eq!(t.stats().rto_expiries, 1);
    assert_eq!(t.rto(), 2 * rto, "backed off");
    // Its ACK is ambiguous (Karn): no RTT sample, backoff stays; slow start resends the rest.
    t.input(
        &seg(TcpFlags::ACK, PISS + 1, Seq(2461), 1000, &[]),
        at + 5 * MS,
    );
    assert_eq!(t.rto(), 2 * rto);
    let out = tx(&mut t, at + 5 * MS);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].0.seq, Seq(2461));
    assert_eq!(t.stats().retransmits, 3);
}

#[test]
fn recv_consume_sends_window_update() {
    let mut c = plain_cfg();
    c.recv_buffer = 8 * 1460;
    c.window_scale = 0;
    let mut t = established(&c, full_opts());
    for k in 0..8u32 {
        t.input(
            &seg(
                TcpFlags::ACK,
                PISS + 1 + k * 1460,
                Seq(1001),
                1000,
                &[3u8; 1460],
            ),
            T0 + 2 * MS,
        );
    }
    let out = tx(&mut t, T0 + 2 * MS);
    assert_eq!(out.last().unwrap().0.window, 0);
    // Reading less than an MSS: not worth an update (receiver SWS avoidance).
    t.recv_consume(1000);
    assert!(tx(&mut t, T0 + 3 * MS).is_empty());
    // A full MSS free: the zero window reopens.
    t.recv_consume(460);
    let out = tx(&mut t, T0 + 4 * MS);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.window, 1460);
    // Then updates only when it grew by 2·MSS.
    t.recv_consume(1460);
    assert!(tx(&mut t, T0 + 5 * MS).is_empty());
    t.recv_consume(1460);
    let out = tx(&mut t, T0 + 6 * MS);
    assert_eq!(out[0].0.window, 3 * 1460);
}

#[test]
fn fin_out_of_order_is_held_until_the_hole_fills() {
    let mut t = established(&plain_cfg(), full_opts());
    let ev = t.input(
        &seg(
            TcpFlags::ACK | TcpFlags::FIN,
            PISS + 11,
            Seq(1001),
            1000,
            b"tail",
        ),
        T0 + 2 * MS,
    );
    assert!(!ev.readable && !t.fin_received());
    assert_eq!(t.state(), State::Established);
    let ev = t.input(
        &seg(TcpFlags::ACK, PISS + 1, Seq(1001), 1000, b"0123456789"),
        T0 + 3 * MS,
    );
    assert!(ev.readable && t.fin_received());
    assert_eq!(t.state(), State::CloseWait);
    assert_eq!(t.recv_available(), 14);
    let out = tx(&mut t, T0 + 3 * MS);
    assert_eq!(out[0].0.ack, PISS + 16);
}

#[test]
fn tail_loss_probe_resends_the_last_segment_before_the_rto() {
    let mut t = established(&plain_cfg(), full_opts());
    let rto = t.rto();
    t.send(&[1u8; 3 * 1460]).unwrap();
    let out = tx(&mut t, T0 + 2 * MS);
    assert_eq!(out.len(), 3);
    // No ACK comes back: the probe is due well before the RTO.
    let pto = t.poll_at().unwrap();
    assert!(pto > T0 + 2 * MS && pto < T0 + 2 * MS + rto, "{pto}");
    let cw = t.cwnd().0;
    let out = tx(&mut t, pto);
    assert_eq!(out.len(), 1, "one probe");
    assert_eq!(out[0].0.seq, Seq(1001 + 2 * 1460), "the last segment");
    assert_eq!(out[0].1.len(), 1460);
    assert_eq!(t.stats().tail_loss_probes, 1);
    assert_eq!(t.stats().rto_expiries, 0);
    assert_eq!(t.cwnd().0, cw, "a probe is not a congestion event");
    // Only one probe per flight: the next thing is the RTO.
    assert_eq!(t.poll_at(), Some(T0 + 2 * MS + rto));
    let out = tx(&mut t, T0 + 2 * MS + rto);
    assert_eq!(out[0].0.seq, Seq(1001));
    assert_eq!(t.stats().rto_expiries, 1);
}

/// RFC 7323 §4.1: a retransmitted SYN is timed by the TSecr of the SYN-ACK that answers it,
/// so the first data does not wait for the handshake's backed-off RTO; without timestamps
/// Karn's rule leaves the RTO backed off.
#[test]
fn a_retransmitted_handshake_is_timed_by_its_timestamp_echo() {
    for ts in [true, false] {
        let c = TcpConfig {
            timestamps: ts,
            ..TcpConfig::default()
        };
        let mut t = Tcb::connect(&c, EP, Seq(1000), T0);
        assert_eq!(tx(&mut t, T0)[0].0.flags, TcpFlags::SYN);
        let again = T0 + c.rto_initial_ns;
        let out = tx(&mut t, again);
        assert_eq!(out.len(), 1, "the SYN again");
        assert_eq!(t.rto(), 2 * c.rto_initial_ns);
        let mut sa = seg(TcpFlags::SYN | TcpFlags::ACK, PISS, Seq(1001), 65_535, &[]);
        if ts {
            sa = with_ts(sa, 9, out[0].0.options.timestamp.unwrap().0);
        }
        assert!(t.input(&sa, again + 30 * MS).established);
        if ts {
            // 30 ms measured; the RTO floor applies.
            assert_eq!(t.rto(), c.rto_min_ns);
        } else {
            assert_eq!(t.rto(), 2 * c.rto_initial_ns);
        }
    }
    // The passive side: its SYN-ACK went twice; the ACK's echo times the second.
    let c = TcpConfig::default();
    let syn = with_ts(seg(TcpFlags::SYN, Seq(77), Seq(0), 1000, &[]), 5, 0);
    let mut t = Tcb::accept(&c, EP, &syn, Seq(4000), T0);
    assert_eq!(tx(&mut t, T0).len(), 1);
    t.input(&syn, T0 + 900 * MS);
    let out = tx(&mut t, T0 + 900 * MS);
    assert_eq!(out[0].0.flags, TcpFlags::SYN | TcpFlags::ACK);
    let ecr = out[0].0.options.timestamp.unwrap().0;
    let ack = with_ts(seg(TcpFlags::ACK, Seq(78), Seq(4001), 1000, &[]), 6, ecr);
    assert!(t.input(&ack, T0 + 920 * MS).established);
    assert_eq!(t.rto(), c.rto_min_ns);
}

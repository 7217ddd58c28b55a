//! RST / SYN / hostile input.

use super::closing::close_run;
use super::*;

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

//! How a pair ends: FIN/FIN after the linger, a RST from either side, the idle timeout; and several lcores closing pairs of one table exactly once.

use super::*;

#[test]
fn fin_fin_close_is_reported_after_the_linger() {
    let mut r = rig(small());
    install(&mut r);
    let fa = TcpFlags::FIN | TcpFlags::ACK;
    // Client: 5 bytes then FIN at 100..105, FIN = 105.
    from_client(&mut r, hdr(fa, 100, 500), b"hello");
    // Server (B space): acks the FIN (106 + SEQ_OFFSET), sends its FIN at 900.
    let ack_fin_a = 106u32.wrapping_add(SEQ_OFFSET);
    from_server(&mut r, hdr(TcpFlags::ACK, 900, ack_fin_a), &[]);
    from_server(&mut r, hdr(fa, 900, ack_fin_a), b"bye");
    // Client acks the server's FIN (A space): 904 - ACK_OFFSET.
    from_client(
        &mut r,
        hdr(TcpFlags::ACK, 106, 904u32.wrapping_sub(ACK_OFFSET)),
        &[],
    );
    assert_eq!(wire_out(&mut r.right).len(), 2);
    assert_eq!(wire_out(&mut r.left).len(), 2);
    assert!(
        from_host(&mut r).is_empty(),
        "no report before the linger ends"
    );
    // A retransmitted last ACK in the linger still translates.
    r.clock.advance(500 * MS);
    from_client(
        &mut r,
        hdr(TcpFlags::ACK, 106, 904u32.wrapping_sub(ACK_OFFSET)),
        &[],
    );
    assert_eq!(wire_out(&mut r.right).len(), 1);
    assert!(from_host(&mut r).is_empty());
    r.clock.advance(600 * MS);
    spin(&mut r);
    let c = report(&mut r);
    assert_eq!(c.reason, CloseReason::Fin);
    assert_eq!(c.rst_side, 0);
    assert_eq!(c.request_id, 7);
    assert_eq!((c.bytes_ab, c.bytes_ba), (5, 3));
    assert_eq!((c.packets_ab, c.packets_ba), (3, 2));
    assert_eq!(c.a.remote_ip, CLIENT_IP);
    assert_eq!(c.b.remote_ip, SERVER_IP);
    assert_eq!(counter(&mut r, "closed_fin"), 1);
    assert_eq!(counter(&mut r, "active_pairs"), 0);
    assert_eq!(counter(&mut r, "reports_sent"), 1);
    // The entries are gone: the next segment goes to the host.
    from_client(&mut r, hdr(TcpFlags::ACK, 106, 1), &[]);
    assert_eq!(from_host(&mut r).len(), 1);
}

/// Closes the installed pair FIN/FIN through `r` (client: 5 bytes and FIN, server: ACK,
/// 3 bytes and FIN, client: the last ACK) and drains what went out on the wires.
fn close_fin_fin(r: &mut Rig) {
    let fa = TcpFlags::FIN | TcpFlags::ACK;
    from_client(r, hdr(fa, 100, 500), b"hello");
    let ack_fin_a = 106u32.wrapping_add(SEQ_OFFSET);
    from_server(r, hdr(TcpFlags::ACK, 900, ack_fin_a), &[]);
    from_server(r, hdr(fa, 900, ack_fin_a), b"bye");
    from_client(
        r,
        hdr(TcpFlags::ACK, 106, 904u32.wrapping_sub(ACK_OFFSET)),
        &[],
    );
    assert_eq!(wire_out(&mut r.right).len(), 2);
    assert_eq!(wire_out(&mut r.left).len(), 2);
}

/// A client may reuse its 4-tuple as soon as it has closed (it got the last ACK, so the
/// NIC saw the close first), while the pair still lingers. Its new SYN must reach the host
/// as a new connection, after the old pair's report (RFC 9293 §3.10.7.4; RFC 6191), not
/// be translated into the old pair.
#[test]
fn a_new_connections_syn_ends_a_lingering_pair_and_follows_its_report_to_the_host() {
    let mut r = rig(small());
    install(&mut r);
    // On a pair that is not closing a SYN is translated: the peers' TCPs answer it.
    from_client(&mut r, hdr(TcpFlags::SYN, 77, 0), &[]);
    assert_eq!(wire_out(&mut r.right).len(), 1);
    assert!(from_host(&mut r).is_empty());
    close_fin_fin(&mut r);
    r.clock.advance(100 * MS);
    // The same 4-tuple, a new incarnation: a bare SYN within the linger.
    from_client(&mut r, hdr(TcpFlags::SYN, 5_000_000, 0), &[]);
    assert!(wire_out(&mut r.right).is_empty(), "not translated");
    let m = from_host(&mut r);
    assert_eq!(m.len(), 2, "the report, then the SYN");
    let Message::SpliceClose(c) = msg::parse_frame(&m[0]).unwrap().message else {
        panic!("the report comes first");
    };
    assert_eq!((c.request_id, c.reason), (7, CloseReason::Fin));
    assert_eq!((c.bytes_ab, c.bytes_ba), (5, 3));
    let t = checked(&m[1], CLIENT_IP, PROXY_A_IP);
    assert_eq!(t.flags(), TcpFlags::SYN);
    assert_eq!((t.src_port(), t.dst_port()), (CLIENT_PORT, PROXY_A_PORT));
    assert_eq!(t.seq_number(), Seq(5_000_000), "untranslated");
    assert_eq!(counter(&mut r, "reopened"), 1);
    assert_eq!(counter(&mut r, "reopen_syn_dropped"), 0);
    assert_eq!(counter(&mut r, "closed_fin"), 1);
    assert_eq!(counter(&mut r, "active_pairs"), 0);
    // The linger's end reports nothing more; the new connection's segments go to the host.
    r.clock.advance(2 * SEC);
    spin(&mut r);
    assert!(from_host(&mut r).is_empty(), "reported once");
    from_client(&mut r, hdr(TcpFlags::ACK, 5_000_001, 1), b"GET");
    assert_eq!(from_host(&mut r).len(), 1);
    assert!(wire_out(&mut r.right).is_empty());
}

/// The same on an lcore that does not own the pair: the SYN is dropped and counted, the
/// owner reports at its next poll without waiting for the linger, and the client's
/// retransmitted SYN reaches the host.
#[test]
fn a_syn_on_another_lcores_lingering_pair_is_dropped_and_the_owner_reports_at_once() {
    let table = SpliceTable::new(small());
    let mut r0 = rig_with(table.clone());
    let mut r1 = rig_with(table.clone());
    install(&mut r0);
    close_fin_fin(&mut r1);
    from_client(&mut r1, hdr(TcpFlags::SYN, 5_000_000, 0), &[]);
    assert!(wire_out(&mut r1.right).is_empty(), "not translated");
    assert!(from_host(&mut r1).is_empty(), "dropped");
    assert_eq!(counter(&mut r1, "reopened"), 1);
    assert_eq!(counter(&mut r1, "reopen_syn_dropped"), 1);
    spin(&mut r0);
    let c = report(&mut r0);
    assert_eq!(c.reason, CloseReason::Fin);
    assert_eq!(table.len(), 0);
    from_client(&mut r1, hdr(TcpFlags::SYN, 5_000_000, 0), &[]);
    assert_eq!(
        from_host(&mut r1).len(),
        1,
        "the retransmission reaches the host"
    );
    assert!(wire_out(&mut r1.right).is_empty());
}

#[test]
fn rst_from_either_side_is_forwarded_and_reported_with_its_side() {
    for (side, code) in [(0, 1u8), (1, 2u8)] {
        let mut r = rig(small());
        install(&mut r);
        from_client(&mut r, hdr(TcpFlags::ACK | TcpFlags::PSH, 100, 20), b"abc");
        assert_eq!(wire_out(&mut r.right).len(), 1);
        if side == 0 {
            from_client(&mut r, hdr(TcpFlags::RST | TcpFlags::ACK, 103, 20), &[]);
            let out = wire_out(&mut r.right);
            assert_eq!(out.len(), 1, "the RST is forwarded");
            let t = checked(&out[0], PROXY_B_IP, SERVER_IP);
            assert!(t.flags().has(TcpFlags::RST));
        } else {
            from_server(&mut r, hdr(TcpFlags::RST, 77, 0), &[]);
            let out = wire_out(&mut r.left);
            assert_eq!(out.len(), 1, "the RST is forwarded");
            let t = checked(&out[0], PROXY_A_IP, CLIENT_IP);
            assert!(t.flags().has(TcpFlags::RST));
            assert_eq!(t.ack_number(), Seq(0), "no ACK flag: ack left alone");
        }
        spin(&mut r);
        assert!(from_host(&mut r).is_empty(), "reported after the linger");
        r.clock.advance(SEC + 1);
        spin(&mut r);
        let c = report(&mut r);
        assert_eq!(c.reason, CloseReason::Rst);
        assert_eq!(c.rst_side, code);
        assert_eq!(c.bytes_ab, 3);
        assert_eq!(counter(&mut r, "closed_rst"), 1);
        assert_eq!(counter(&mut r, "active_pairs"), 0);
    }
}

#[test]
fn idle_pairs_time_out_and_activity_postpones_it() {
    let mut r = rig(small());
    install(&mut r);
    r.clock.advance(20 * SEC);
    from_client(&mut r, hdr(TcpFlags::ACK, 100, 1), b"z");
    r.clock.advance(20 * SEC);
    spin(&mut r);
    assert!(
        from_host(&mut r).is_empty(),
        "activity 20 s ago: not idle yet"
    );
    assert_eq!(
        r.lcore.next_deadline(),
        Some(r.clock.now_ns() + 10 * SEC),
        "re-armed from the last activity"
    );
    r.clock.advance(10 * SEC);
    spin(&mut r);
    let c = report(&mut r);
    assert_eq!(c.reason, CloseReason::Timeout);
    assert_eq!((c.bytes_ab, c.packets_ab, c.packets_ba), (1, 1, 0));
    assert_eq!(counter(&mut r, "closed_idle"), 1);
    assert_eq!(r.lcore.next_deadline(), None);
}

#[test]
fn two_lcores_share_one_table_and_the_installer_reports() {
    let table = SpliceTable::new(small());
    let mut r0 = rig_with(table.clone());
    let mut r1 = rig_with(table.clone());
    install(&mut r0);
    assert_eq!(table.len(), 1);
    // lcore 1 never saw the install but translates the pair's segments.
    from_client(&mut r1, hdr(TcpFlags::ACK, 100, 6), b"hi");
    assert_eq!(wire_out(&mut r1.right).len(), 1);
    // A RST through lcore 1: forwarded there, reported by lcore 0.
    from_server(&mut r1, hdr(TcpFlags::RST | TcpFlags::ACK, 7, 8), &[]);
    assert_eq!(wire_out(&mut r1.left).len(), 1);
    assert!(from_host(&mut r1).is_empty());
    // The entries linger: a segment the client still had in flight reaches the server
    // (which answers it with a RST of its own), not the host.
    assert_eq!(table.len(), 1, "entries linger after a RST");
    from_client(&mut r1, hdr(TcpFlags::ACK, 102, 6), &[]);
    assert_eq!(wire_out(&mut r1.right).len(), 1);
    spin(&mut r0);
    assert!(
        from_host(&mut r0).is_empty(),
        "no report before the linger ends"
    );
    r0.clock.advance(SEC + 1);
    spin(&mut r0);
    assert_eq!(table.len(), 0, "entries removed after the linger");
    let c = report(&mut r0);
    assert_eq!((c.reason, c.rst_side), (CloseReason::Rst, 2));
    assert_eq!((c.bytes_ab, c.packets_ab, c.packets_ba), (2, 2, 1));
}

/// Frames an offload sends, counted (the stress test's lcores have no ports).
#[derive(Default)]
struct CountIo {
    to_host: Vec<Vec<u8>>,
    to_port: usize,
}

impl dataplane::offload::OffloadIo for CountIo {
    fn to_port(&mut self, _port: u16, _frame: &[u8]) -> bool {
        self.to_port += 1;
        true
    }
    fn to_host(&mut self, _port: u16, frame: &[u8]) -> bool {
        self.to_host.push(frame.to_vec());
        true
    }
}

fn bare_stack() -> dataplane::net::stack::NicStack<HeapBuf> {
    use dataplane::net::stack::{IfaceConfig, NicStack, StackConfig};
    NicStack::new(
        vec![
            IfaceConfig::new(wire_mac(0), vec![(PROXY_A_IP, 24)]),
            IfaceConfig::new(wire_mac(1), vec![(PROXY_B_IP, 24)]),
        ],
        StackConfig::default(),
    )
}

/// Offers wire frame `f` (arrived on `port`) to `o`; returns the verdict.
fn offer(
    o: &mut SpliceOffload,
    stack: &mut dataplane::net::stack::NicStack<HeapBuf>,
    io: &mut CountIo,
    now: u64,
    port: usize,
    f: &[u8],
) -> dataplane::offload::Verdict {
    use dataplane::offload::{Offload, OffloadCtx, RxFrame};
    let hdr = dataplane::net::parse::parse_headers(f).unwrap();
    let mut buf = HeapBuf::from_frame(f);
    let mut rx = RxFrame {
        port,
        buf: &mut buf,
        hdr: &hdr,
    };
    let mut cx = OffloadCtx { now, stack, io };
    Offload::<HeapBuf>::wire_rx(o, &mut cx, &mut rx)
}

#[test]
fn lcores_racing_on_one_table_close_every_pair_exactly_once() {
    use dataplane::offload::{Offload, OffloadCtx, Verdict};
    const PAIRS: u16 = 256;
    let table = SpliceTable::new(SpliceConfig {
        max_pairs: 1024,
        idle_timeout_ns: 1 << 60,
        linger_ns: 0,
    });
    let pair = |i: u16| {
        let mut r = install_repr(u32::from(i));
        r.a.tuple.remote_port = CLIENT_PORT + i;
        r.b.tuple.local_port = PROXY_B_PORT + i;
        r
    };
    let mut owner = SpliceOffload::new(table.clone());
    let mut stack = bare_stack();
    let mut io = CountIo::default();
    for i in 0..PAIRS {
        let mut f = Vec::new();
        Message::SpliceInstall(pair(i))
            .write_frame([0; 6], [0; 6], &[], &mut f)
            .unwrap();
        let mut cx = OffloadCtx {
            now: SEC,
            stack: &mut stack,
            io: &mut io,
        };
        Offload::<HeapBuf>::host_control(&mut owner, &mut cx, 0, MsgType::SpliceInstall, &f);
    }
    assert_eq!(io.to_host.len(), usize::from(PAIRS));
    io.to_host.clear();
    assert_eq!(table.len(), usize::from(PAIRS));

    let c = |i: u16, h: TcpHeader, p: &[u8]| {
        let h = TcpHeader {
            src_port: CLIENT_PORT + i,
            dst_port: PROXY_A_PORT,
            ..h
        };
        dataplane::frames::tcp_with(CLIENT_MAC, wire_mac(0), CLIENT_IP, PROXY_A_IP, &h, p)
    };
    let s = |i: u16, h: TcpHeader, p: &[u8]| {
        let h = TcpHeader {
            src_port: SERVER_PORT,
            dst_port: PROXY_B_PORT + i,
            ..h
        };
        dataplane::frames::tcp_with(SERVER_MAC, wire_mac(1), SERVER_IP, PROXY_B_IP, &h, p)
    };
    // Two more lcores: each closes its half of the pairs (even: FIN/FIN, odd: RST), while
    // both send data on every pair in between.
    let workers: Vec<_> = (0..2u16)
        .map(|w| {
            let table = table.clone();
            std::thread::spawn(move || {
                let mut o = SpliceOffload::new(table);
                let mut stack = bare_stack();
                let mut io = CountIo::default();
                let fa = TcpFlags::FIN | TcpFlags::ACK;
                let mut outs = 0usize;
                for round in 0..4u32 {
                    for i in 0..PAIRS {
                        let v = offer(
                            &mut o,
                            &mut stack,
                            &mut io,
                            2 * SEC,
                            0,
                            &c(i, hdr(TcpFlags::ACK, 100 + round, 1), b"d"),
                        );
                        assert!(matches!(v, Verdict::Out(1) | Verdict::Pass));
                        outs += usize::from(v == Verdict::Out(1));
                        let _ = offer(
                            &mut o,
                            &mut stack,
                            &mut io,
                            2 * SEC,
                            1,
                            &s(i, hdr(TcpFlags::ACK, round, 1), b"e"),
                        );
                        if i % 2 != w || round != 2 {
                            continue;
                        }
                        if i % 4 < 2 {
                            let ack_a = 105u32.wrapping_add(SEQ_OFFSET);
                            let ack_b = 904u32.wrapping_sub(ACK_OFFSET);
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                0,
                                &c(i, hdr(fa, 100, 500), b"four"),
                            );
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                1,
                                &s(i, hdr(fa, 900, ack_a), b"bye"),
                            );
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                0,
                                &c(i, hdr(TcpFlags::ACK, 105, ack_b), &[]),
                            );
                        } else {
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                1,
                                &s(i, hdr(TcpFlags::RST, 1, 0), &[]),
                            );
                        }
                    }
                }
                assert!(io.to_host.is_empty(), "only the owner reports");
                outs
            })
        })
        .collect();
    let sent: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    // Rounds 0–2 find every pair installed (closes happen in round 2, after the data).
    assert!(sent >= 2 * 3 * usize::from(PAIRS), "{sent}");
    let mut cx = OffloadCtx {
        now: 3 * SEC,
        stack: &mut stack,
        io: &mut io,
    };
    Offload::<HeapBuf>::poll(&mut owner, &mut cx);
    let mut seen = vec![0u8; usize::from(PAIRS)];
    for f in &io.to_host {
        let Message::SpliceClose(r) = msg::parse_frame(f).unwrap().message else {
            panic!("not a report");
        };
        let i = r.request_id as u16;
        seen[usize::from(i)] += 1;
        if i % 4 < 2 {
            assert_eq!((r.reason, r.rst_side), (CloseReason::Fin, 0), "pair {i}");
        } else {
            assert_eq!((r.reason, r.rst_side), (CloseReason::Rst, 2), "pair {i}");
        }
        assert!(r.packets_ab >= 3 && r.bytes_ab >= 3, "pair {i}: {r:?}");
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    assert_eq!(table.len(), 0);
    assert!(!Offload::<HeapBuf>::active(&owner));
}

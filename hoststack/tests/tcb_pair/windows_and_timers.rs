//! Windows and timers.

use super::*;

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

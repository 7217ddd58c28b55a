//! Tests of the emulated PCIe link: frames intact both ways in both DMA modes, exact
//! counters, refusals, buffer recycling without growth, meshes, and a two-thread stress test.

use std::time::{Duration, Instant};

use offload_api::link::*;
use offload_api::Direction;

fn cfg(depth: usize, dma: DmaMode) -> LinkConfig {
    LinkConfig {
        depth,
        dma,
        ..LinkConfig::default()
    }
}

/// A frame whose bytes depend on `seq` and `len`: 8 bytes of sequence number, then a pattern.
fn frame(seq: u64, len: usize) -> Vec<u8> {
    let mut f = Vec::new();
    fill_frame(&mut f, seq, len);
    f
}

/// Replaces the contents of `f` with `frame(seq, len)`.
fn fill_frame(f: &mut Vec<u8>, seq: u64, len: usize) {
    f.clear();
    f.extend((0..len).map(|i| (seq as usize).wrapping_add(i * 7) as u8));
    let n = len.min(8);
    f[..n].copy_from_slice(&seq.to_le_bytes()[..n]);
}

/// Whether `b` is exactly `frame(seq, len)`, without building it.
fn is_frame(b: &[u8], seq: u64, len: usize) -> bool {
    let n = len.min(8);
    b.len() == len
        && b[..n] == seq.to_le_bytes()[..n]
        && b[n..]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (seq as usize).wrapping_add((i + n) * 7) as u8)
}

/// Length of frame `seq` in the stress test: 60..1600 bytes, with an occasional TSO-sized one.
fn stress_len(seq: u64) -> usize {
    if seq.is_multiple_of(997) {
        30_000
    } else {
        60 + (seq.wrapping_mul(2_654_435_761) % 1540) as usize
    }
}

const SIZES: [usize; 7] = [0, 1, 60, 1514, 9000, 65_549, MAX_FRAME_LEN];

#[test]
fn frames_cross_intact_both_ways_in_both_modes() {
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut host, mut nic) = link(&cfg(16, dma));
        assert_eq!(host.dma_mode(), dma);
        assert_eq!(host.sends(), Direction::HostToNic);
        assert_eq!(nic.sends(), Direction::NicToHost);
        for (i, &len) in SIZES.iter().enumerate() {
            let f = frame(i as u64, len);
            // Slice path, both ways.
            host.send(i as u16, &f).unwrap();
            nic.send(100 + i as u16, &f).unwrap();
            let (port, got) = nic.recv().unwrap();
            assert_eq!((port, &got[..]), (i as u16, &f[..]));
            let (port, got) = host.recv().unwrap();
            assert_eq!((port, &got[..]), (100 + i as u16, &f[..]));
            // Buffer path, both ways.
            let mut b = host.alloc().unwrap();
            assert!(b.is_empty());
            b.extend_from_slice(&f);
            host.send_buf(7, b).unwrap();
            let mut b = nic.alloc().unwrap();
            b.resize(len);
            b.copy_from_slice(&f);
            nic.send_buf(8, b).unwrap();
            let (port, got) = nic.recv().unwrap();
            assert_eq!((port, &got[..]), (7, &f[..]));
            let (port, got) = host.recv().unwrap();
            assert_eq!((port, &got[..]), (8, &f[..]));
        }
        assert!(host.recv().is_none());
        assert!(nic.recv().is_none());
    }
}

#[test]
fn counters_are_exact() {
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut host, mut nic) = link(&cfg(64, dma));
        let mon = host.monitor();
        for i in 0..10u64 {
            host.send(0, &frame(i, 100)).unwrap();
        }
        for i in 0..5u64 {
            let mut b = host.alloc().unwrap();
            b.extend_from_slice(&frame(i, 300));
            host.send_buf(0, b).unwrap();
        }
        nic.send(1, &frame(0, 42)).unwrap();
        let copies_by_buf = if dma == DmaMode::Copy { 5 } else { 0 };
        let h2n = host.tx_counters();
        assert_eq!(h2n.packets, 15);
        assert_eq!(h2n.bytes, 10 * 100 + 5 * 300);
        assert_eq!(h2n.dma_copies, 10 + copies_by_buf);
        assert_eq!(h2n.dma_bytes, 10 * 100 + copies_by_buf * 300);
        assert_eq!(h2n.full_drops + h2n.no_buffer + h2n.oversize_drops, 0);
        // The same numbers from every vantage point.
        assert_eq!(nic.rx_counters(), h2n);
        assert_eq!(mon.host_to_nic(), h2n);
        let n2h = mon.nic_to_host();
        assert_eq!(
            (n2h.packets, n2h.bytes, n2h.dma_copies, n2h.dma_bytes),
            (1, 42, 1, 42)
        );
        assert_eq!(host.rx_counters(), n2h);
        // Receiving changes no counter.
        while nic.recv().is_some() {}
        assert_eq!(mon.host_to_nic(), h2n);

        let mut total = LinkCounters::default();
        total.add(&h2n);
        total += n2h;
        assert_eq!(total.packets, 16);
        assert_eq!(total.bytes, 2500 + 42);
        assert_eq!(total.delta(&h2n), n2h);
    }
}

#[test]
fn full_ring_refuses_and_counts() {
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut host, mut nic) = link(&cfg(4, dma));
        assert_eq!(host.tx_space(), 4);
        for i in 0..4 {
            host.send(i, &frame(u64::from(i), 64)).unwrap();
        }
        assert_eq!(host.tx_space(), 0);
        assert_eq!(nic.rx_pending(), 4);
        assert_eq!(host.send(9, &frame(9, 64)), Err(LinkError::Full));
        let b = host.alloc().unwrap();
        assert_eq!(host.send_buf(9, b), Err(LinkError::Full));
        let c = host.tx_counters();
        assert_eq!((c.packets, c.full_drops), (4, 2));
        assert_eq!(c.dma_copies, 4, "a refused frame is not copied");
        // Room again after one receive; order kept.
        let (port, _) = nic.recv().unwrap();
        assert_eq!(port, 0);
        host.send(4, &frame(4, 64)).unwrap();
        let ports: Vec<u16> = std::iter::from_fn(|| nic.recv().map(|(p, _)| p)).collect();
        assert_eq!(ports, [1, 2, 3, 4]);
        assert_eq!(host.tx_counters().full_drops, 2);
    }
}

#[test]
fn oversize_and_disconnected_are_refused_and_counted() {
    let (mut host, mut nic) = link(&cfg(8, DmaMode::Copy));
    let big = vec![0u8; MAX_FRAME_LEN + 1];
    assert_eq!(
        host.send(0, &big),
        Err(LinkError::TooLarge {
            len: MAX_FRAME_LEN + 1
        })
    );
    let mut b = host.alloc().unwrap();
    b.resize(MAX_FRAME_LEN + 1);
    assert!(matches!(
        host.send_buf(0, b),
        Err(LinkError::TooLarge { .. })
    ));
    assert_eq!(host.tx_counters().oversize_drops, 2);
    assert_eq!(host.tx_counters().packets, 0);

    nic.send(3, b"last words").unwrap();
    assert!(host.is_connected() && nic.is_connected());
    drop(nic);
    assert!(!host.is_connected());
    assert_eq!(host.send(0, b"x"), Err(LinkError::Disconnected));
    assert_eq!(host.tx_counters().disconnected_drops, 1);
    // What was sent before the end went away can still be received.
    let (port, b) = host.recv().unwrap();
    assert_eq!((port, &b[..]), (3, &b"last words"[..]));
    assert!(host.recv().is_none());
}

/// 1e5 frames through each path: the number of buffers ever allocated stays at its warm-up
/// value.
#[test]
fn buffers_are_recycled_without_growth() {
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut host, mut nic) = link(&cfg(32, dma));
        let mut burst = Vec::with_capacity(32);
        let pattern = frame(1, 1500);
        let mut run = |host: &mut HostEnd, nic: &mut NicEnd, rounds: u64| {
            for i in 0..rounds {
                let len = 60 + (i % 1400) as usize;
                // Slice send, received and dropped.
                host.send(0, &pattern[..len]).unwrap();
                let (_, b) = nic.recv().unwrap();
                assert_eq!(b.len(), len);
                drop(b);
                // Buffer send, received and recycled.
                let mut b = host.alloc().unwrap();
                b.extend_from_slice(&pattern[..len]);
                host.send_buf(1, b).unwrap();
                let (_, b) = nic.recv().unwrap();
                nic.recycle(b);
                // NIC → host in bursts of 8, buffers dropped with the burst vector's clear.
                for _ in 0..8 {
                    nic.send(2, &pattern[..64]).unwrap();
                }
                assert_eq!(host.recv_burst(&mut burst, 32), 8);
                burst.clear();
            }
        };
        run(&mut host, &mut nic, 100);
        let warm_h2n = host.tx_counters().buffers_allocated;
        let warm_n2h = nic.tx_counters().buffers_allocated;
        assert!(warm_h2n <= 3, "{warm_h2n}");
        assert!(warm_n2h <= 8, "{warm_n2h}");
        run(&mut host, &mut nic, 100_000);
        assert_eq!(host.tx_counters().buffers_allocated, warm_h2n);
        assert_eq!(nic.tx_counters().buffers_allocated, warm_n2h);
        assert_eq!(host.tx_counters().packets, 2 * 100_100);
        assert_eq!(nic.tx_counters().packets, 8 * 100_100);
    }
}

#[test]
fn exhausted_pool_refuses_and_recovers() {
    let c = LinkConfig {
        depth: 8,
        max_buffers: Some(2),
        ..LinkConfig::default()
    };
    let (mut host, mut nic) = link(&c);
    let a = host.alloc().unwrap();
    let b = host.alloc().unwrap();
    assert!(host.alloc().is_none());
    assert_eq!(host.send(0, b"x"), Err(LinkError::NoBuffer));
    assert_eq!(host.tx_counters().no_buffer, 2);
    drop(a);
    host.send(0, b"y").unwrap();
    let (_, got) = nic.recv().unwrap();
    assert_eq!(&got[..], b"y");
    drop(got);
    host.recycle(b);
    assert!(host.alloc().is_some());
    assert_eq!(host.tx_counters().buffers_allocated, 2);
}

/// A buffer forwarded zero-copy onto another link (or back the other way) returns to the
/// pool it was made for.
#[test]
fn forwarded_buffers_go_home() {
    let (mut host, mut nic) = link(&cfg(8, DmaMode::ZeroCopy));
    let (mut host2, mut nic2) = link(&cfg(8, DmaMode::ZeroCopy));
    for round in 0..1000u64 {
        let mut b = host.alloc().unwrap();
        b.extend_from_slice(&frame(round, 128));
        host.send_buf(0, b).unwrap();
        // The NIC echoes the host's buffer back without a copy...
        let (_, b) = nic.recv().unwrap();
        nic.send_buf(0, b).unwrap();
        let (_, b) = host.recv().unwrap();
        assert_eq!(&b[..], &frame(round, 128)[..]);
        // ...and the host forwards it on another link, whose receiver drops it.
        host2.send_buf(0, b).unwrap();
        let (_, b) = nic2.recv().unwrap();
        assert_eq!(&b[..], &frame(round, 128)[..]);
        drop(b);
    }
    assert_eq!(host.tx_counters().buffers_allocated, 1);
    assert_eq!(nic.tx_counters().buffers_allocated, 0);
    assert_eq!(host2.tx_counters().buffers_allocated, 0);
    assert_eq!(
        host.tx_counters().dma_copies + nic.tx_counters().dma_copies,
        0
    );
}

#[test]
fn buffers_may_outlive_their_link() {
    let (mut host, mut nic) = link(&cfg(8, DmaMode::Copy));
    host.send(0, b"kept").unwrap();
    host.send(0, b"left in the ring").unwrap();
    let (_, kept) = nic.recv().unwrap();
    let spare = nic.alloc().unwrap();
    let mon = nic.monitor();
    drop(host);
    drop(nic);
    assert_eq!(mon.host_to_nic().packets, 2);
    drop(mon);
    assert_eq!(&kept[..], b"kept");
    drop(kept);
    drop(spare);
}

#[test]
fn mesh_builds_one_link_per_pair() {
    let (mut hosts, mut nics) = mesh(2, 3, &LinkConfig::default());
    assert_eq!(hosts.len(), 2);
    assert!(hosts.iter().all(|row| row.len() == 3));
    assert_eq!(nics.len(), 3);
    assert!(nics.iter().all(|row| row.len() == 2));
    for h in 0..2 {
        for n in 0..3 {
            assert_eq!(hosts[h][n].id(), LinkId { host: h, nic: n });
            assert_eq!(nics[n][h].id(), LinkId { host: h, nic: n });
            assert_eq!(hosts[h][n].monitor().id(), LinkId { host: h, nic: n });
        }
    }
    hosts[1][2].send(5, b"to nic 2 from host 1").unwrap();
    nics[0][1].send(6, b"to host 1 from nic 0").unwrap();
    for n in 0..3 {
        for h in 0..2 {
            let got = nics[n][h].recv();
            assert_eq!(got.is_some(), (h, n) == (1, 2));
            let got = hosts[h][n].recv();
            assert_eq!(got.is_some(), (h, n) == (1, 0));
        }
    }
    let mut total = LinkCounters::default();
    for row in &hosts {
        for end in row {
            total.add(&end.tx_counters());
            total.add(&end.rx_counters());
        }
    }
    assert_eq!(total.packets, 2);
}

/// Host and NIC on two threads: the host sends numbered frames, the NIC echoes each back,
/// the host checks order and content of the echoes. Bounded in count and time.
#[test]
fn two_thread_echo_keeps_order_and_integrity() {
    const N: u64 = 50_000;
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut host, mut nic) = link(&cfg(256, dma));
        let mon = host.monitor();
        let deadline = Instant::now() + Duration::from_secs(120);
        let echo = std::thread::spawn(move || {
            let mut burst = Vec::with_capacity(32);
            let mut expect = 0u64;
            while expect < N && Instant::now() < deadline {
                if nic.recv_burst(&mut burst, 32) == 0 {
                    std::thread::yield_now();
                    continue;
                }
                for (port, b) in burst.drain(..) {
                    assert_eq!(port, expect as u16);
                    assert!(is_frame(&b, expect, stress_len(expect)), "frame {expect}");
                    // Echo: room is guaranteed because the host sends no more than the
                    // ring holds ahead of what it has received back.
                    nic.send_buf(port, b).unwrap();
                    expect += 1;
                }
            }
            expect
        });
        let mut scratch = Vec::with_capacity(32 * 1024);
        let mut sent = 0u64;
        let mut got = 0u64;
        let mut last_seen = 0;
        while got < N && Instant::now() < deadline {
            // Keep at most 200 frames in flight: the echo ring (256) never fills.
            while sent < N && sent - got < 200 {
                fill_frame(&mut scratch, sent, stress_len(sent));
                match host.send(sent as u16, &scratch) {
                    Ok(()) => sent += 1,
                    Err(LinkError::Full) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            match host.recv() {
                Some((port, b)) => {
                    assert_eq!(port, got as u16);
                    assert!(is_frame(&b, got, stress_len(got)), "echo {got}");
                    got += 1;
                }
                None => std::thread::yield_now(),
            }
            if got.is_multiple_of(8192) {
                // Counters are readable while the other thread writes them.
                let seen = mon.nic_to_host().packets;
                assert!(seen >= last_seen && seen <= sent);
                last_seen = seen;
            }
        }
        let echoed = echo.join().unwrap();
        assert_eq!((sent, echoed, got), (N, N, N), "ran out of time ({dma:?})");
        let h2n = mon.host_to_nic();
        let n2h = mon.nic_to_host();
        assert_eq!(h2n.packets, N);
        assert_eq!(n2h.packets, N);
        assert_eq!(h2n.bytes, n2h.bytes);
        assert_eq!(h2n.bytes, (0..N).map(|s| stress_len(s) as u64).sum::<u64>());
        let n2h_copies = if dma == DmaMode::Copy { N } else { 0 };
        assert_eq!(n2h.dma_copies, n2h_copies);
        assert_eq!(h2n.dma_copies, N);
        assert!(h2n.buffers_allocated <= 2 * 256 + 64);
    }
}

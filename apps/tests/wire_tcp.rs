//! Two nicemu nodes (NIC lcore + host stack each) on the in-memory wire: 100 MB each way, intact,
//! with 0%, 1% and 10% loss, with reordering and with duplication; and SACK repairing several
//! losses per window with fewer retransmissions than NewReno alone.

mod common;

use std::net::SocketAddrV4;

use apps::node::{pair_specs, wire_pair, Pair, A_IP};
use dataplane::port::wire::Impairments;
use hoststack::stack::SockOpt;
use hoststack::{Errno, Fd};

use common::pattern::Pattern;

const PORT: u16 = 5001;

/// The test streams: one pseudo-random pattern (`common::pattern`); direction `dir` starts
/// at its own offset in it.
fn pattern() -> &'static Pattern {
    static P: std::sync::OnceLock<Pattern> = std::sync::OnceLock::new();
    P.get_or_init(|| Pattern::new(0x9E37_79B9_7F4A_7C15))
}

/// Where direction `dir`'s stream starts in the pattern.
fn origin(dir: u8) -> u64 {
    dir as u64 * 7919
}

fn fill(dir: u8, start: u64, out: &mut [u8]) {
    pattern().fill(origin(dir) + start, out);
}

fn matches(dir: u8, start: u64, got: &[u8]) -> bool {
    pattern().first_mismatch(origin(dir) + start, got).is_none()
}

/// One direction's progress at one end.
#[derive(Default)]
struct Stream {
    sent: u64,
    received: u64,
    bad: u64,
}

fn pump(
    ctx: &mut hoststack::Context<offload_api::link::HostEnd>,
    fd: Fd,
    tx_dir: u8,
    rx_dir: u8,
    total: u64,
    st: &mut Stream,
    buf: &mut [u8],
) -> Result<(), Errno> {
    // Send as much as fits.
    while st.sent < total {
        let space = ctx.tcb(fd).map_or(0, |t| t.send_space());
        let n = ((total - st.sent) as usize).min(buf.len()).min(space);
        if n == 0 {
            break;
        }
        fill(tx_dir, st.sent, &mut buf[..n]);
        match ctx.write(fd, &buf[..n]) {
            Ok(k) => st.sent += k as u64,
            Err(Errno::Again) => break,
            Err(e) => return Err(e),
        }
    }
    // Read and check everything that arrived.
    loop {
        match ctx.read(fd, buf) {
            Ok(0) => break,
            Ok(k) => {
                if !matches(rx_dir, st.received, &buf[..k]) {
                    st.bad += 1;
                }
                st.received += k as u64;
            }
            Err(Errno::Again) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

struct Outcome {
    retransmits: u64,
    steps_ok: bool,
}

/// Client on B sends `total` bytes to the server on A while the server sends `total` back;
/// both check every byte; then both close. Returns the retransmissions of both ends.
fn transfer(pair: &mut Pair, total: u64) -> Outcome {
    let l = pair.a.host.socket().unwrap();
    pair.a.host.set_nonblocking(l, true).unwrap();
    pair.a
        .host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    pair.a.host.listen(l, 16).unwrap();
    let c = pair.b.host.socket().unwrap();
    pair.b.host.set_nonblocking(c, true).unwrap();
    pair.b.host.setsockopt(c, SockOpt::SndBuf(1 << 20)).unwrap();
    pair.b.host.setsockopt(c, SockOpt::RcvBuf(1 << 20)).unwrap();
    assert_eq!(
        pair.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT)),
        Err(Errno::InProgress)
    );
    let mut s: Option<Fd> = None;
    let (mut cs, mut ss) = (Stream::default(), Stream::default());
    let mut buf_a = vec![0u8; 64 * 1024];
    let mut buf_b = vec![0u8; 64 * 1024];
    let ok = pair.run_until(200_000_000, 5_000, |p| {
        if s.is_none() {
            if let Ok((fd, _)) = p.a.host.accept(l) {
                p.a.host.set_nonblocking(fd, true).unwrap();
                s = Some(fd);
            }
        }
        let Some(sfd) = s else { return false };
        if let Err(e) = pump(&mut p.b.host, c, 1, 2, total, &mut cs, &mut buf_b) {
            panic!(
                "client I/O: {e:?}\nclient {:#?}\nserver {:#?}",
                p.b.host.tcb(c),
                p.a.host.tcb(s.unwrap())
            );
        }
        pump(&mut p.a.host, sfd, 2, 1, total, &mut ss, &mut buf_a).expect("server I/O");
        cs.received == total && ss.received == total
    });
    assert!(
        ok,
        "transfer stalled: client sent {} got {}, server sent {} got {}",
        cs.sent, cs.received, ss.sent, ss.received
    );
    assert_eq!(cs.bad + ss.bad, 0, "corrupted bytes");
    let s = s.unwrap();
    let retransmits = pair.a.host.tcb(s).unwrap().stats().retransmits
        + pair.b.host.tcb(c).unwrap().stats().retransmits;
    // Both close; both connections end (TIME_WAIT included) and are freed.
    pair.b.host.close(c).unwrap();
    pair.a.host.close(s).unwrap();
    pair.a.host.close(l).unwrap();
    let steps_ok = pair.run_until(10_000_000, 5_000, |p| {
        p.a.host.connections() == 0 && p.b.host.connections() == 0
    });
    Outcome {
        retransmits,
        steps_ok,
    }
}

fn pair_with(ab: Impairments, ba: Impairments, sack: bool) -> Pair {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 1_000_000_000;
        s.host.tcp.sack = sack;
        s.host.tcp.recv_buffer = 1 << 20;
        s.host.tcp.send_buffer = 1 << 20;
    }
    wire_pair(a, b, ab, ba)
}

fn imp(loss: f64, reorder: f64, duplicate: f64, seed: u64) -> Impairments {
    Impairments {
        loss,
        reorder,
        duplicate,
        delay_ns: 100_000,
        seed,
        ..Impairments::default()
    }
}

const MB100: u64 = 100 * 1000 * 1000;

fn run(ab: Impairments, ba: Impairments) -> Outcome {
    let mut p = pair_with(ab, ba, true);
    let o = transfer(&mut p, MB100);
    eprintln!(
        "100 MB each way: {} retransmissions, wire A->B {:?}",
        o.retransmits,
        p.a.nic
            .report_handle()
            .lock()
            .map(|r| r.ports[0].queue)
            .ok()
    );
    assert!(o.steps_ok, "connections did not close cleanly");
    o
}

#[test]
fn hundred_mb_each_way_clean() {
    let o = run(imp(0.0, 0.0, 0.0, 1), imp(0.0, 0.0, 0.0, 2));
    assert_eq!(o.retransmits, 0);
}

#[test]
fn hundred_mb_each_way_1pct_loss() {
    let o = run(imp(0.01, 0.0, 0.0, 3), imp(0.01, 0.0, 0.0, 4));
    assert!(o.retransmits > 0);
}

#[test]
fn hundred_mb_each_way_10pct_loss() {
    let o = run(imp(0.10, 0.0, 0.0, 5), imp(0.10, 0.0, 0.0, 6));
    assert!(o.retransmits > 0);
}

#[test]
fn hundred_mb_each_way_reordered() {
    run(imp(0.0, 0.05, 0.0, 7), imp(0.0, 0.05, 0.0, 8));
}

#[test]
fn hundred_mb_each_way_duplicated() {
    run(imp(0.0, 0.0, 0.05, 9), imp(0.0, 0.0, 0.05, 10));
}

#[test]
fn hundred_mb_each_way_with_bit_errors() {
    // 1% of frames get a flipped byte: the receiving NIC's checksum checks drop them
    // (counted by reason), TCP retransmits, and not one corrupted byte reaches the
    // application (`transfer` checks every byte).
    let corrupt = |seed| Impairments {
        corrupt: 0.01,
        delay_ns: 100_000,
        seed,
        ..Impairments::default()
    };
    let mut p = pair_with(corrupt(13), corrupt(14), true);
    let o = transfer(&mut p, MB100);
    assert!(o.steps_ok);
    assert!(o.retransmits > 0);
    use dataplane::net::parse::DropReason;
    let drops = |n: &apps::node::Node<dataplane::port::wire::WireQueue>| {
        let d = n.nic.stack().counters().drops;
        d.get(DropReason::BadL4Checksum) + d.get(DropReason::BadIpChecksum)
    };
    let (da, db) = (drops(&p.a), drops(&p.b));
    eprintln!(
        "checksum drops: A {da} B {db}, retransmissions {}",
        o.retransmits
    );
    assert!(da > 100 && db > 100, "A {da} B {db}");
}

#[test]
fn sack_needs_fewer_retransmissions_than_newreno() {
    // A 1 Gb/s bottleneck with a 64 KB buffer and 1 MB windows: slow start overshoots and
    // the buffer drops bursts of segments from one window (several losses per window), the
    // case SACK repairs in one round trip and NewReno one hole per round trip.
    let total = 10 * 1000 * 1000;
    let bottleneck = |seed| Impairments {
        rate_bps: 1_000_000_000,
        buffer_bytes: 64 * 1024,
        delay_ns: 100_000,
        seed,
        ..Impairments::default()
    };
    let mut with = pair_with(bottleneck(11), bottleneck(12), true);
    let mut without = pair_with(bottleneck(11), bottleneck(12), false);
    let t0 = with.clock.now_ns();
    let w = transfer(&mut with, total);
    let t_with = with.clock.now_ns() - t0;
    let t0 = without.clock.now_ns();
    let wo = transfer(&mut without, total);
    let t_without = without.clock.now_ns() - t0;
    eprintln!(
        "retransmissions: SACK {} NewReno {}; virtual time SACK {} ms NewReno {} ms",
        w.retransmits,
        wo.retransmits,
        t_with / 1_000_000,
        t_without / 1_000_000
    );
    assert!(w.retransmits > 0);
    assert!(
        w.retransmits < wo.retransmits,
        "SACK {} vs NewReno {}",
        w.retransmits,
        wo.retransmits
    );
}

#[test]
fn pcie_link_counts_dma_copies_per_model() {
    use offload_api::link::DmaMode;
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut a, mut b) = pair_specs();
        for s in [&mut a, &mut b] {
            s.link.dma = dma;
            s.host.tcp.time_wait_ns = 1_000_000_000;
        }
        let mut p = wire_pair(a, b, imp(0.0, 0.0, 0.0, 1), imp(0.0, 0.0, 0.0, 2));
        transfer(&mut p, 1_000_000);
        let up = p.b.host.link().tx_counters();
        let down = p.b.host.link().rx_counters();
        assert!(up.packets > 500 && down.packets > 500, "{up:?} {down:?}");
        assert!(up.bytes > 1_000_000 && down.bytes > 1_000_000);
        match dma {
            // Every frame crossing costs one copy, whichever way it was built.
            DmaMode::Copy => assert_eq!(up.dma_copies, up.packets),
            // The host builds frames in link buffers: nothing is copied on the way to the NIC.
            DmaMode::ZeroCopy => assert_eq!(up.dma_copies, 0),
        }
    }
}

//! TCP over Tonic on the in-memory wire (issue 4, "What to build" point 6; Tonic §5): node A
//! opens a connection with `TCP_TONIC` and sends 20 MB to node B's ordinary host stack through
//! 1% loss. A's host keeps the handshake, the close and the send buffer; its NIC's Tonic
//! engine (NewReno, then SACK) sends and retransmits every data segment. B receives every
//! byte intact; the counters show the NIC engine sent and retransmitted the segments and A's
//! host TCB sent none.

use std::net::SocketAddrV4;

use apps::node::{pair_specs, wire_pair, Pair, B_IP};
use dataplane::port::wire::Impairments;
use dataplane::tonic_nic::TracePoint;
use hoststack::stack::{Shutdown, SockOpt, SockOptName};
use hoststack::tcp::tcb::State;
use hoststack::{Errno, Fd};
use offload_api::msg::ModuleName;

const PORT: u16 = 5001;
const TOTAL: u64 = 20 * 1000 * 1000;
const PERIOD: usize = 65_521;

/// A pseudo-random table of prime length, twice over (any run up to PERIOD bytes is one
/// slice).
fn table() -> &'static [u8] {
    static T: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut x: u64 = 0xD1B5_4A32_D192_ED03;
        let mut t: Vec<u8> = (0..PERIOD)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        t.extend_from_within(..);
        t
    })
}

fn slice(start: u64, len: usize) -> &'static [u8] {
    let off = (start % PERIOD as u64) as usize;
    &table()[off..off + len]
}

/// Steps both nodes; virtual time moves `quantum` per step and, after a stretch with nothing
/// to do and nothing on the wire, jumps to the next host timer or Tonic retransmission
/// deadline.
fn step(p: &mut Pair, idle: &mut u32, quantum: u64) {
    let w = p.a.step() + p.b.step();
    *idle = if w == 0 { *idle + 1 } else { 0 };
    let now = p.clock.now_ns();
    let next = [
        p.a.host.next_timer(),
        p.b.host.next_timer(),
        p.a.nic.tonic().next_deadline(),
    ]
    .into_iter()
    .flatten()
    .filter(|&t| t > now)
    .min();
    match next {
        Some(t) if *idle > 64 && p.wire_idle() => {
            p.clock.advance(t - now);
            *idle = 0;
        }
        _ => p.clock.advance(quantum),
    }
}

/// B listens on PORT; A opens a non-blocking connection to it with `TCP_TONIC` = `module`.
/// Returns (B's listener, A's socket).
fn open_tonic(p: &mut Pair, module: &str) -> (Fd, Fd) {
    let l = p.b.host.socket().unwrap();
    p.b.host.set_nonblocking(l, true).unwrap();
    p.b.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.b.host.listen(l, 4).unwrap();

    let c = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(c, true).unwrap();
    let m = ModuleName::new(module).unwrap();
    p.a.host.setsockopt(c, SockOpt::Tonic(Some(m))).unwrap();
    assert_eq!(
        p.a.host.getsockopt(c, SockOptName::Tonic),
        Ok(SockOpt::Tonic(Some(m)))
    );
    assert_eq!(
        p.a.host.connect(c, SocketAddrV4::new(B_IP.into(), PORT)),
        Err(Errno::InProgress)
    );
    (l, c)
}

struct Run {
    trace: Vec<TracePoint>,
    csv: std::path::PathBuf,
    nic_tx: u64,
    nic_rtx: u64,
    /// A's negotiated window-scale shifts (ours, the peer's).
    wscales: (u8, u8),
}

/// 20 MB from A (TCP_TONIC) to B through 1% loss on A → B, 50 µs each way.
fn transfer(module: &str, seed: u64) -> Run {
    let lossy = Impairments {
        loss: 0.01,
        delay_ns: 50_000,
        seed,
        ..Impairments::default()
    };
    let clean = Impairments {
        delay_ns: 50_000,
        ..Impairments::default()
    };
    let r = transfer_with(module, lossy, clean, TOTAL);
    assert!(r.nic_rtx > 0, "1% loss and no retransmission");
    r
}

/// `total` bytes from A (TCP_TONIC with `module`) to B over a wire with `ab` and `ba`
/// impairments; checks every byte, that the NIC sent every data segment and A's TCB none,
/// and that both ends close.
fn transfer_with(module: &str, ab: Impairments, ba: Impairments, total: u64) -> Run {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 1_000_000_000;
        s.host.tcp.send_buffer = 1 << 20;
        s.host.tcp.recv_buffer = 1 << 20;
    }
    let mut p = wire_pair(a, b, ab, ba);
    let (l, c) = open_tonic(&mut p, module);

    let mut s: Option<Fd> = None;
    let (mut sent, mut got, mut shut) = (0u64, 0u64, false);
    let mut buf = vec![0u8; 64 * 1024];
    let mut idle = 0;
    let mut flow = None;
    let mut eof = false;
    for _ in 0..20_000_000u64 {
        if s.is_none() {
            if let Ok((fd, _)) = p.b.host.accept(l) {
                p.b.host.set_nonblocking(fd, true).unwrap();
                s = Some(fd);
            }
        }
        flow = flow.or_else(|| p.a.host.tonic_flow(c));
        while sent < total {
            let n = ((total - sent) as usize).min(PERIOD);
            match p.a.host.write(c, slice(sent, n)) {
                Ok(k) => sent += k as u64,
                Err(Errno::Again) => break,
                Err(e) => panic!("write: {e:?}"),
            }
        }
        if sent == total && !shut {
            p.a.host.shutdown(c, Shutdown::Write).unwrap();
            shut = true;
        }
        if let Some(fd) = s {
            loop {
                match p.b.host.read(fd, &mut buf) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(k) => {
                        assert_eq!(&buf[..k], slice(got, k), "byte {got} differs");
                        got += k as u64;
                    }
                    Err(Errno::Again) => break,
                    Err(e) => panic!("read: {e:?}"),
                }
            }
        }
        if eof {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    assert_eq!(
        got, total,
        "B received {got} of {total} bytes (A wrote {sent})"
    );
    assert!(eof, "B saw no end of stream");
    let flow = flow.expect("the connection was handed to the NIC");

    // A's host TCB sent no data: the NIC did (Tonic §5).
    let tcb = p.a.host.tcb(c).unwrap();
    let wscales = tcb.window_scales();
    assert_eq!(tcb.stats().bytes_out, 0, "A's TCB sent data itself");
    assert_eq!(tcb.stats().retransmits, 0, "A's TCB retransmitted");
    assert!(!tcb.nic_owns_sender(), "the sender came back for the FIN");
    let ts = *p.a.host.tonic_stats();
    assert_eq!(
        (ts.flows_added, ts.flows_removed, ts.flows_refused),
        (1, 1, 0)
    );
    assert_eq!(ts.tail_bytes, total);
    let ns = *p.a.nic.tonic().stats();
    let e =
        p.a.nic
            .tonic()
            .engine(module)
            .expect("engine built")
            .stats();
    println!("{module}: host {ts:?}\n  nic {ns:?}\n  engine {e:?}");
    let segs = total.div_ceil(tcb.send_mss() as u64);
    assert!(
        ns.segments_tx >= segs,
        "NIC sent {} segments, need {segs}",
        ns.segments_tx
    );
    assert_eq!(e.retransmitted, ns.retransmits);
    let bstats = p.b.host.tcb(s.unwrap()).unwrap().stats();
    assert_eq!(bstats.bytes_in, total);

    // Both close; both connections end.
    p.a.host.close(c).unwrap();
    p.b.host.close(s.unwrap()).unwrap();
    p.b.host.close(l).unwrap();
    for _ in 0..2_000_000 {
        if p.a.host.connections() == 0 && p.b.host.connections() == 0 {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    assert_eq!(p.a.host.connections() + p.b.host.connections(), 0);
    let trace = p.a.nic.tonic().trace(flow).expect("trace").to_vec();
    let csv = std::env::temp_dir().join(format!("nicemu-tonic-tcp-{module}.csv"));
    let mut f = std::fs::File::create(&csv).unwrap();
    p.a.nic.tonic().write_trace_csv(flow, &mut f).unwrap();
    Run {
        trace,
        csv,
        nic_tx: ns.segments_tx,
        nic_rtx: ns.retransmits,
        wscales,
    }
}

fn check_trace(module: &str, r: &Run) {
    let t = &r.trace;
    assert!(t.len() > 100, "{module}: trace of {} points", t.len());
    // Slow start: the window grows from its initial value before the first retransmission.
    let first_rtx = t.iter().position(|p| p.retransmits > 0).unwrap_or(t.len());
    let init = t[0].cwnd;
    let peak = t[..first_rtx].iter().map(|p| p.cwnd).max().unwrap_or(0);
    assert!(
        peak >= 2 * init,
        "{module}: no slow start ({init} → {peak})"
    );
    // Recovery: the window was cut after a loss.
    let cut = t.windows(2).any(|w| w[1].cwnd * 10 <= w[0].cwnd * 7);
    assert!(cut, "{module}: no window reduction");
    println!(
        "{module}: {} trace points in {}; {} segments sent, {} retransmitted",
        t.len(),
        r.csv.display(),
        r.nic_tx,
        r.nic_rtx
    );
}

#[test]
fn tonic_newreno_sends_20_mb_through_1_percent_loss() {
    let r = transfer("newreno", 7);
    check_trace("newreno", &r);
}

#[test]
fn tonic_sack_sends_20_mb_through_1_percent_loss() {
    let r = transfer("sack", 11);
    check_trace("sack", &r);
}

/// Window scaling is negotiated on TCP_TONIC connections and the NIC applies the peer's
/// shift: over a 10 ms round trip with B's 1 MB receive buffer, A's NIC keeps more than the
/// 65,535 bytes an unscaled window field allows in flight (RFC 7323 §2).
#[test]
fn tonic_flow_uses_the_peers_scaled_window() {
    let slow = Impairments {
        delay_ns: 5_000_000,
        ..Impairments::default()
    };
    let r = transfer_with("newreno", slow.clone(), slow, 4_000_000);
    let (ours, peers) = r.wscales;
    assert!(
        ours > 0 && peers > 0,
        "window scaling not negotiated: {:?}",
        r.wscales
    );
    let in_flight = r
        .trace
        .iter()
        .map(|p| p.snd_nxt - p.snd_una)
        .max()
        .unwrap_or(0);
    assert!(
        in_flight > 65_535,
        "at most {in_flight} bytes in flight: the peer's window was read unscaled"
    );
    println!(
        "window scales {:?}, up to {in_flight} bytes in flight, {} segments",
        r.wscales, r.nic_tx
    );
}

#[test]
fn unknown_module_falls_back_to_the_host_sender() {
    let mut p = {
        let (a, b) = pair_specs();
        wire_pair(a, b, Impairments::default(), Impairments::default())
    };
    let (l, c) = open_tonic(&mut p, "nosuchmodule");
    let data = slice(0, 50_000);
    let mut sent = 0;
    let mut got = Vec::new();
    let mut s = None;
    let mut idle = 0;
    for _ in 0..200_000 {
        if s.is_none() {
            if let Ok((fd, _)) = p.b.host.accept(l) {
                p.b.host.set_nonblocking(fd, true).unwrap();
                s = Some(fd);
            }
        }
        if sent < data.len() {
            if let Ok(k) = p.a.host.write(c, &data[sent..]) {
                sent += k;
            }
        }
        if let Some(fd) = s {
            let mut b = [0u8; 8192];
            while let Ok(k) = p.b.host.read(fd, &mut b) {
                if k == 0 {
                    break;
                }
                got.extend_from_slice(&b[..k]);
            }
        }
        if got.len() == data.len() {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    assert_eq!(got, data);
    assert_eq!(p.a.host.tonic_stats().flows_refused, 1);
    let tcb = p.a.host.tcb(c).unwrap();
    assert_eq!(tcb.state(), State::Established);
    assert!(!tcb.nic_owns_sender());
    assert_eq!(tcb.stats().bytes_out, data.len() as u64);
}

/// Writes to A's socket `c` until `total` bytes are written or its buffer is full.
fn write_some(p: &mut Pair, c: Fd, sent: &mut u64, total: u64) {
    while *sent < total {
        let n = ((total - *sent) as usize).min(PERIOD);
        match p.a.host.write(c, slice(*sent, n)) {
            Ok(k) => *sent += k as u64,
            Err(Errno::Again) => break,
            Err(e) => panic!("write: {e:?}"),
        }
    }
}

/// Reads all B's socket `fd` has, checking every byte.
fn read_all(p: &mut Pair, fd: Fd, got: &mut u64) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match p.b.host.read(fd, &mut buf) {
            Ok(0) | Err(Errno::Again) => break,
            Ok(k) => {
                assert_eq!(&buf[..k], slice(*got, k), "byte {got} differs");
                *got += k as u64;
            }
            Err(e) => panic!("read: {e:?}"),
        }
    }
}

/// Zero window with a lost window update (RFC 9293 §3.8.6.1): B's application stops reading
/// until its receive buffer is full, so A's NIC sees a shut window with nothing in flight;
/// then B reads everything while the B → A link is down, so its window update is lost. A's
/// NIC persist timer sends window probes, B's answer to the next one reopens the window, and
/// the transfer completes. Without probes nothing would ever be sent again.
#[test]
fn a_lost_window_update_is_recovered_by_a_window_probe() {
    const TOTAL: u64 = 1_500_000;
    use std::sync::atomic::Ordering::Relaxed;
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.send_buffer = 1 << 20;
        s.host.tcp.recv_buffer = 256 << 10;
    }
    let d = Impairments {
        delay_ns: 50_000,
        ..Impairments::default()
    };
    let mut p = wire_pair(a, b, d.clone(), d);
    let (l, c) = open_tonic(&mut p, "newreno");
    let (mut s, mut sent, mut got, mut idle) = (None::<Fd>, 0u64, 0u64, 0u32);
    let probes = |p: &Pair| p.a.nic.tonic().stats().window_probes;
    // 1. B does not read: its window shuts and A's NIC probes it.
    for _ in 0..2_000_000u64 {
        if s.is_none() {
            if let Ok((fd, _)) = p.b.host.accept(l) {
                p.b.host.set_nonblocking(fd, true).unwrap();
                s = Some(fd);
            }
        }
        write_some(&mut p, c, &mut sent, TOTAL);
        if probes(&p) >= 2 {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    let fd = s.expect("B accepted");
    assert!(probes(&p) >= 2, "no window probe while B's window was shut");
    let e = *p.a.nic.tonic().engine("newreno").unwrap().stats();
    assert_eq!(e.timeouts, 0, "a shut window is not a loss: {e:?}");
    // 2. B reads everything while B → A is down: its window update is lost.
    p.links[1].down.store(true, Relaxed);
    let lost_before = p.links[1].snapshot().lost;
    read_all(&mut p, fd, &mut got);
    assert!(got > 0 && got < TOTAL, "B read {got}");
    // Down for two more probe intervals: whatever B sends (its update, its delayed ACKs,
    // its answers to those probes) is lost.
    let probes_at_read = probes(&p);
    for _ in 0..2_000_000u64 {
        if probes(&p) >= probes_at_read + 2 {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    assert!(
        probes(&p) >= probes_at_read + 2,
        "no probes while the link was down"
    );
    // ... and until B has answered the last probe (its ACK may wait for a timer).
    let answered = p.links[1].snapshot().offered;
    for _ in 0..2_000_000u64 {
        if p.links[1].snapshot().offered > answered {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    assert!(
        p.links[1].snapshot().lost > lost_before,
        "no window update was lost"
    );
    p.links[1].down.store(false, Relaxed);
    let (probes_before, got_before) = (probes(&p), got);
    // 3. The next probe's answer reopens the window; everything arrives.
    for _ in 0..4_000_000u64 {
        write_some(&mut p, c, &mut sent, TOTAL);
        read_all(&mut p, fd, &mut got);
        if got == TOTAL {
            break;
        }
        step(&mut p, &mut idle, 2_000);
    }
    assert_eq!(
        got, TOTAL,
        "B received {got} of {TOTAL} (stalled after {got_before})"
    );
    assert!(probes(&p) > probes_before, "recovered without a probe");
    let e = *p.a.nic.tonic().engine("newreno").unwrap().stats();
    assert_eq!(e.timeouts, 0, "{e:?}");
    println!("window probes {}, engine {e:?}", probes(&p));
}

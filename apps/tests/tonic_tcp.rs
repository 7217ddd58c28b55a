//! TCP over Tonic on the in-memory wire (Tonic §5): node A opens a connection with `TCP_TONIC` and
//! sends 20 MB to node B's ordinary host stack through 1% loss. A's host keeps the handshake, the
//! close and the send buffer; its NIC's Tonic engine (NewReno, then SACK) sends and retransmits
//! every data segment. B receives every byte intact; the counters show the NIC engine sent and
//! retransmitted the segments and A's host TCB sent none.

mod common;

use apps::node::{pair_specs, wire_pair, Pair};
use common::tonic_wire::{
    accept_one, assert_nic_sent, close_all, open_tonic, pair, run_until, Stream,
};
use dataplane::port::wire::Impairments;
use dataplane::tonic::nic::TracePoint;
use hoststack::tcp::tcb::State;
use hoststack::Fd;

const TOTAL: u64 = 20 * 1000 * 1000;

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
    let mut p = pair(ab, ba, 1 << 20, 1 << 20);
    let (l, c) = open_tonic(&mut p, Some(module), None);

    let (mut s, mut st, mut idle, mut flow) = (None::<Fd>, Stream::new(0, total), 0, None);
    run_until(&mut p, &mut idle, 20_000_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        flow = flow.or_else(|| p.a.host.tonic_flow(c));
        st.write_then_shut(&mut p.a.host, c).expect("A writes");
        if let Some(fd) = s {
            st.read_all(&mut p.b.host, fd).expect("B reads");
        }
        st.eof
    });
    assert_eq!(
        st.got, total,
        "B received {} of {total} bytes (A wrote {})",
        st.got, st.sent
    );
    assert!(st.eof, "B saw no end of stream");
    let flow = flow.expect("the connection was handed to the NIC");
    let s = s.unwrap();

    // A's host TCB sent no data: the NIC did (Tonic §5).
    let wscales = p.a.host.tcb(c).unwrap().window_scales();
    let (_, ns) = assert_nic_sent(&p.a.host, p.a.tonic(), c, module, total);
    let bstats = p.b.host.tcb(s).unwrap().stats();
    assert_eq!(bstats.bytes_in, total);

    // Both close; both connections end.
    close_all(&mut p, &mut idle, &[c], &[s, l]);
    let trace = p.a.tonic().trace(flow).expect("trace").to_vec();
    let csv = std::env::temp_dir().join(format!("nicemu-tonic-tcp-{module}.csv"));
    let mut f = std::fs::File::create(&csv).unwrap();
    p.a.tonic().write_trace_csv(flow, &mut f).unwrap();
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
    let (l, c) = open_tonic(&mut p, Some("nosuchmodule"), None);
    let (mut s, mut st, mut idle) = (None::<Fd>, Stream::new(0, 50_000), 0);
    run_until(&mut p, &mut idle, 200_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        st.write_some(&mut p.a.host, c).expect("A writes");
        if let Some(fd) = s {
            st.read_all(&mut p.b.host, fd).expect("B reads");
        }
        st.got == st.total
    });
    assert_eq!(st.got, st.total, "B received {} bytes", st.got);
    assert_eq!(p.a.host.tonic_stats().flows_refused, 1);
    let tcb = p.a.host.tcb(c).unwrap();
    assert_eq!(tcb.state(), State::Established);
    assert!(!tcb.tonic_owns_sender());
    assert_eq!(tcb.stats().bytes_out, st.total);
}

/// Zero window with a lost window update (RFC 9293 §3.8.6.1): B's application stops reading
/// until its receive buffer is full, so A's NIC sees a shut window with nothing in flight;
/// then B reads everything while the B → A link is down, so its window update is lost. A's
/// NIC persist timer sends window probes, B's answer to the next one reopens the window, and
/// the transfer completes. Without probes nothing would ever be sent again.
#[test]
fn a_lost_window_update_is_recovered_by_a_window_probe() {
    use std::sync::atomic::Ordering::Relaxed;
    let d = Impairments {
        delay_ns: 50_000,
        ..Impairments::default()
    };
    let mut p = pair(d.clone(), d, 1 << 20, 256 << 10);
    let (l, c) = open_tonic(&mut p, Some("newreno"), None);
    let (mut s, mut st, mut idle) = (None::<Fd>, Stream::new(0, 1_500_000), 0u32);
    let probes = |p: &Pair| p.a.tonic().stats().window_probes;
    // 1. B does not read: its window shuts and A's NIC probes it.
    run_until(&mut p, &mut idle, 2_000_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        st.write_some(&mut p.a.host, c).expect("A writes");
        probes(p) >= 2
    });
    let fd = s.expect("B accepted");
    assert!(probes(&p) >= 2, "no window probe while B's window was shut");
    let e = *p.a.tonic().engine("newreno").unwrap().stats();
    assert_eq!(e.timeouts, 0, "a shut window is not a loss: {e:?}");
    // 2. B reads everything while B → A is down: its window update is lost.
    p.links[1].down.store(true, Relaxed);
    let lost_before = p.links[1].snapshot().lost;
    st.read_all(&mut p.b.host, fd).expect("B reads");
    assert!(st.got > 0 && st.got < st.total, "B read {}", st.got);
    // Down for two more probe intervals: whatever B sends (its update, its delayed ACKs,
    // its answers to those probes) is lost.
    let probes_at_read = probes(&p);
    run_until(&mut p, &mut idle, 2_000_000, |p| {
        probes(p) >= probes_at_read + 2
    });
    assert!(
        probes(&p) >= probes_at_read + 2,
        "no probes while the link was down"
    );
    // ... and until B has answered the last probe (its ACK may wait for a timer).
    let answered = p.links[1].snapshot().offered;
    run_until(&mut p, &mut idle, 2_000_000, |p| {
        p.links[1].snapshot().offered > answered
    });
    assert!(
        p.links[1].snapshot().lost > lost_before,
        "no window update was lost"
    );
    p.links[1].down.store(false, Relaxed);
    let (probes_before, got_before) = (probes(&p), st.got);
    // 3. The next probe's answer reopens the window; everything arrives.
    run_until(&mut p, &mut idle, 4_000_000, |p| {
        st.write_some(&mut p.a.host, c).expect("A writes");
        st.read_all(&mut p.b.host, fd).expect("B reads");
        st.got == st.total
    });
    assert_eq!(
        st.got, st.total,
        "B received {} of {} (stalled after {got_before})",
        st.got, st.total
    );
    assert!(probes(&p) > probes_before, "recovered without a probe");
    let e = *p.a.tonic().engine("newreno").unwrap().stats();
    assert_eq!(e.timeouts, 0, "{e:?}");
    println!("window probes {}, engine {e:?}", probes(&p));
}

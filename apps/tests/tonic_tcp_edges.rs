//! `TCP_TONIC` beyond the one-way transfer of `tonic_tcp.rs` (Tonic NSDI '20 §5; see
//! `hoststack/src/stack/tonic.rs` and `dataplane/src/tonic/nic.rs`), on the in-memory wire in
//! virtual time:
//!
//! - the peer sends data while A's NIC owns A's sender (a two-way transfer through loss both
//!   ways): A's host receives and ACKs it, A's NIC takes the ACK numbers and windows those
//!   data segments carry;
//! - `TCP_TONIC` set on a listener: the accepted connection's sender runs on the server's
//!   NIC;
//! - the peer resets the connection while A's NIC is sending: A's socket reports the reset,
//!   A's host removes the flow from its NIC, and the NIC stops sending.

mod common;

use apps::node::Pair;
use common::tonic_wire::{
    accept_one, assert_nic_sent, close_all, open_tonic, pair, run_until, Stream,
};
use dataplane::port::wire::Impairments;
use hoststack::stack::{SockOpt, SockOptName};
use hoststack::tcp::tcb::State;
use hoststack::{Errno, Fd};
use offload_api::msg::ModuleName;

/// Where B's stream starts in the pattern (A's starts at 0), so that the two directions
/// carry different bytes.
const B_ORIGIN: u64 = 31_337;

/// 1% loss (seeded) and 50 µs of delay.
fn lossy(seed: u64) -> Impairments {
    Impairments {
        loss: 0.01,
        delay_ns: 50_000,
        seed,
        ..Impairments::default()
    }
}

/// 50 µs of delay.
fn clean() -> Impairments {
    Impairments {
        delay_ns: 50_000,
        ..Impairments::default()
    }
}

/// Both ends have shut their write side and read the other's FIN: steps until A's
/// connection `c` and B's `s` have finished the FIN exchange (TIME_WAIT or CLOSED) and checks
/// that neither was reset (a RST in a synchronized state leaves an error) nor answered a
/// stray segment with one.
fn assert_clean_close(p: &mut Pair, idle: &mut u32, c: Fd, s: Fd) {
    let finished = |st: State| matches!(st, State::TimeWait | State::Closed);
    let done = run_until(p, idle, 2_000_000, |p| {
        finished(p.a.host.tcb(c).unwrap().state()) && finished(p.b.host.tcb(s).unwrap().state())
    });
    let (ta, tb) = (p.a.host.tcb(c).unwrap(), p.b.host.tcb(s).unwrap());
    assert!(
        done,
        "close unfinished: A {:?}, B {:?}",
        ta.state(),
        tb.state()
    );
    assert_eq!((ta.error(), tb.error()), (None, None), "a side was reset");
    assert_eq!(p.a.host.stats().rst_sent + p.b.host.stats().rst_sent, 0);
}

/// 8 MB each way at once between A (`TCP_TONIC` = `module`) and B, through 1% loss in both
/// directions. B's data reaches A's host while A's NIC owns A's sender (the design's "data
/// the peer sends during the Tonic phase"): every byte arrives both ways, A's host ACKs B's
/// data with the NIC's snd.nxt in the sequence number, A's NIC takes the ACK numbers of B's
/// data segments, A's TCB sends no data, and both ends close with FINs.
fn two_way(module: &str, seed: u64) {
    const TOTAL: u64 = 8_000_000;
    let mut p = pair(lossy(seed), lossy(seed ^ 0x5EED), 1 << 20, 1 << 20);
    let (l, c) = open_tonic(&mut p, Some(module), None);
    let (mut s, mut idle) = (None::<Fd>, 0);
    let (mut ab, mut ba) = (Stream::new(0, TOTAL), Stream::new(B_ORIGIN, TOTAL));
    // B → A bytes A's application read while A's NIC owned A's sender.
    let mut got_in_tonic_phase = 0;
    let done = run_until(&mut p, &mut idle, 20_000_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        ab.write_then_shut(&mut p.a.host, c).expect("A writes");
        let before = ba.got;
        ba.read_all(&mut p.a.host, c).expect("A reads");
        if p.a.host.tcb(c).unwrap().tonic_owns_sender() {
            got_in_tonic_phase += ba.got - before;
        }
        if let Some(fd) = s {
            ba.write_then_shut(&mut p.b.host, fd).expect("B writes");
            ab.read_all(&mut p.b.host, fd).expect("B reads");
        }
        ab.complete() && ba.complete()
    });
    assert!(done, "A → B {ab:?}\nB → A {ba:?}");
    let s = s.unwrap();
    assert!(
        got_in_tonic_phase >= TOTAL / 2,
        "only {got_in_tonic_phase} B → A bytes arrived while A's NIC owned the sender"
    );

    assert_clean_close(&mut p, &mut idle, c, s);
    let (_, ns) = assert_nic_sent(&p.a.host, p.a.tonic(), c, module, TOTAL);
    assert!(ns.retransmits > 0, "1% loss and no retransmission: {ns:?}");
    // B's data segments went on to A's host; A's host ACKed them through the NIC, which
    // wrote its snd.nxt into them.
    let mss = p.b.host.tcb(s).unwrap().send_mss() as u64;
    assert!(ns.to_host >= TOTAL / mss, "{ns:?}");
    assert!(ns.host_frames > ns.to_host / 4, "{ns:?}");
    // The NIC took the ACK fields of B's data segments too, not only of its pure ACKs.
    assert!(
        ns.data_acks > 0,
        "the NIC ignored the ACKs on B's data: {ns:?}"
    );
    assert_eq!(ns.bad_acks, 0, "{ns:?}");
    let (ta, tb) = (p.a.host.tcb(c).unwrap(), p.b.host.tcb(s).unwrap());
    assert_eq!(ta.stats().bytes_in, TOTAL);
    assert_eq!((tb.stats().bytes_in, tb.stats().bytes_out), (TOTAL, TOTAL));
    assert!(tb.stats().retransmits > 0, "B's sender saw no loss");
    println!(
        "{got_in_tonic_phase} B → A bytes read in the Tonic phase; B's TCB {:?}",
        tb.stats()
    );

    close_all(&mut p, &mut idle, &[c], &[s, l]);
}

#[test]
fn two_way_transfer_during_the_tonic_phase_newreno() {
    two_way("newreno", 21);
}

#[test]
fn two_way_transfer_during_the_tonic_phase_sack() {
    two_way("sack", 23);
}

/// A (`TCP_TONIC` newreno, 1 MB to send) and B (64 KiB receive buffer) on a clean wire;
/// B's application does not read, so its window shuts and A's NIC sends its first window
/// probe. Returns (pair, B's listener, A's socket, B's accepted socket, A's stream, idle).
fn shut_window() -> (Pair, Fd, Fd, Fd, Stream, u32) {
    let mut p = pair(clean(), clean(), 1 << 20, 64 << 10);
    let (l, c) = open_tonic(&mut p, Some("newreno"), None);
    let (mut s, mut idle) = (None::<Fd>, 0);
    let mut ab = Stream::new(0, 1_000_000);
    let shut = run_until(&mut p, &mut idle, 2_000_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        ab.write_some(&mut p.a.host, c).expect("A writes");
        p.a.tonic().stats().window_probes >= 1
    });
    assert!(shut, "B's window never shut: {ab:?}");
    (p, l, c, s.expect("B accepted"), ab, idle)
}

/// The peer's window rides on its data segments too (RFC 9293 §3.10.7.4 takes SND.WND from
/// any acceptable segment): B's application stops reading until B's window shuts (A's NIC has
/// nothing in flight and sends window probes), then reads everything and at once writes to
/// A, so B's window update leaves on a data segment, not on a pure ACK. A's NIC takes that
/// window and sends again without waiting for its next window probe.
#[test]
fn a_window_update_on_the_peers_data_reopens_the_nic_sender() {
    // 1. B does not read: its window shuts and A's NIC probes it.
    let (mut p, l, c, fd, mut ab, mut idle) = shut_window();
    let mut ba = Stream::new(B_ORIGIN, 32 << 10);
    let probes = |p: &Pair| p.a.tonic().stats().window_probes;
    let sent = |p: &Pair| p.a.tonic().stats().segments_tx;
    // ... and B's answer to that probe has arrived (no probe or answer on the wire).
    assert!(run_until(&mut p, &mut idle, 100_000, |p| p.wire_idle()));
    // 2. B reads everything and writes to A before its stack runs again: its window update
    // goes out on its data.
    let data_acks = p.a.tonic().stats().data_acks;
    let (probes_before, sent_before) = (probes(&p), sent(&p));
    ab.read_all(&mut p.b.host, fd).expect("B reads");
    ba.write_some(&mut p.b.host, fd).expect("B writes");
    assert_eq!(ba.sent, ba.total);
    // 3. A's NIC sends again before its next probe.
    let resumed = run_until(&mut p, &mut idle, 1_000_000, |p| {
        ba.read_all(&mut p.a.host, c).expect("A reads");
        sent(p) > sent_before || probes(p) > probes_before
    });
    let ns = *p.a.tonic().stats();
    assert!(resumed, "A's NIC is stuck: {ns:?}");
    assert_eq!(
        probes(&p),
        probes_before,
        "A's NIC waited for a window probe: it ignored the window on B's data ({ns:?})"
    );
    assert!(ns.data_acks > data_acks, "{ns:?}");
    // 4. Everything arrives both ways.
    let done = run_until(&mut p, &mut idle, 4_000_000, |p| {
        ab.write_some(&mut p.a.host, c).expect("A writes");
        ab.read_all(&mut p.b.host, fd).expect("B reads");
        ba.read_all(&mut p.a.host, c).expect("A reads");
        ab.got == ab.total && ba.got == ba.total
    });
    assert!(done, "A → B {ab:?}\nB → A {ba:?}");
    close_all(&mut p, &mut idle, &[c], &[fd, l]);
}

/// Window probes back off exponentially (RFC 9293 §3.8.6.1, SHLD-30): B never reads, so its
/// window stays shut; over a minute of virtual time A's NIC probes after 1, 2, 4, 8, ...
/// retransmission timeouts (the persist timer keeps firing every timeout, and the firings in
/// between send nothing), instead of once a timeout. When B reads, its window update reopens
/// the flow and a later shut window would probe afresh.
#[test]
fn window_probes_back_off_exponentially() {
    let (mut p, l, c, fd, mut ab, mut idle) = shut_window();
    let probes = |p: &Pair| p.a.tonic().stats().window_probes;
    // A minute of virtual time; the virtual time of every probe.
    let start = p.clock.now_ns();
    let mut at = vec![start];
    let mut seen = probes(&p);
    run_until(&mut p, &mut idle, 4_000_000, |p| {
        if probes(p) > seen {
            seen = probes(p);
            at.push(p.clock.now_ns());
        }
        p.clock.now_ns() - start >= 60_000_000_000
    });
    let gaps: Vec<u64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let ns = *p.a.tonic().stats();
    // The first gap is one timeout (200 ms by default), then each doubles; the sweep fires a
    // little late at times, so allow a tenth either way.
    assert!(
        gaps.len() >= 6,
        "{} probes in a minute: {gaps:?}",
        gaps.len()
    );
    assert!(
        gaps.len() <= 10,
        "{} probes in a minute: no backoff? {gaps:?}",
        gaps.len()
    );
    for w in gaps.windows(2) {
        let ratio = w[1] as f64 / w[0] as f64;
        assert!((1.8..=2.2).contains(&ratio), "gaps do not double: {gaps:?}");
    }
    assert!(ns.probes_backed_off > 0, "{ns:?}");
    assert_eq!(ab.got, 0);
    // B reads: its window opens and everything arrives.
    let done = run_until(&mut p, &mut idle, 4_000_000, |p| {
        ab.write_some(&mut p.a.host, c).expect("A writes");
        ab.read_all(&mut p.b.host, fd).expect("B reads");
        ab.got == ab.total
    });
    assert!(done, "{ab:?}");
    println!("probe gaps (ns): {gaps:?}; {ns:?}");
    close_all(&mut p, &mut idle, &[c], &[fd, l]);
}

/// `TCP_TONIC` on B's listening socket: the connection it accepts hands its sender to B's
/// NIC (the option is inherited, `stack/input.rs`). B sends 8 MB to an ordinary client A
/// through 1% loss; B's NIC sends and retransmits every segment, B's TCB none; A receives
/// every byte; both close with FINs.
#[test]
fn listener_tonic_option_applies_to_accepted_connections() {
    const TOTAL: u64 = 8_000_000;
    let mut p = pair(clean(), lossy(29), 1 << 20, 1 << 20);
    let (l, c) = open_tonic(&mut p, None, Some("newreno"));
    let (mut s, mut idle, mut flow) = (None::<Fd>, 0, None);
    let mut st = Stream::new(B_ORIGIN, TOTAL);
    let done = run_until(&mut p, &mut idle, 20_000_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        if let Some(fd) = s {
            flow = flow.or_else(|| p.b.host.tonic_flow(fd));
            st.write_then_shut(&mut p.b.host, fd).expect("B writes");
        }
        st.read_all(&mut p.a.host, c).expect("A reads");
        st.complete()
    });
    assert!(done, "{st:?}");
    let s = s.unwrap();
    assert!(
        flow.is_some(),
        "the accepted connection was not handed to B's NIC"
    );
    // The accepted socket reports the option it inherited.
    assert_eq!(
        p.b.host.getsockopt(s, SockOptName::Tonic),
        Ok(SockOpt::Tonic(Some(ModuleName::new("newreno").unwrap())))
    );

    p.a.host.close(c).unwrap();
    let done = run_until(&mut p, &mut idle, 2_000_000, |p| {
        p.b.host.tcb(s).unwrap().state() == State::TimeWait && p.a.host.connections() == 0
    });
    let tb = p.b.host.tcb(s).unwrap();
    assert!(done, "close unfinished: B {:?}", tb.state());
    assert_eq!(tb.error(), None);
    assert_eq!(p.a.host.stats().rst_sent + p.b.host.stats().rst_sent, 0);
    let (_, ns) = assert_nic_sent(&p.b.host, p.b.tonic(), s, "newreno", TOTAL);
    assert!(ns.retransmits > 0, "1% loss and no retransmission: {ns:?}");
    // A is an ordinary TCP client: nothing of Tonic on its side.
    assert_eq!(p.a.host.tonic_stats().flows_added, 0);
    assert_eq!(p.a.tonic().stats().flows_added, 0);

    close_all(&mut p, &mut idle, &[], &[s, l]);
}

/// B aborts the connection (SO_LINGER 0, then close: a RST) while A's NIC is sending A's
/// data. A's socket reports the reset; A's host removes the flow from its NIC
/// (`TonicFlowRemove`), whose engine forgets it and sends nothing more for it; both hosts end
/// with no connection.
#[test]
fn peer_reset_during_the_tonic_phase_removes_the_flow() {
    let mut p = pair(clean(), clean(), 1 << 20, 1 << 20);
    let (l, c) = open_tonic(&mut p, Some("newreno"), None);
    let (mut s, mut idle) = (None::<Fd>, 0);
    let mut st = Stream::new(0, 8_000_000);
    // 1. A's NIC sends; B reads a first megabyte; more is on the wire.
    let sending = run_until(&mut p, &mut idle, 2_000_000, |p| {
        accept_one(&mut p.b.host, l, &mut s);
        st.write_some(&mut p.a.host, c).expect("A writes");
        if let Some(fd) = s {
            st.read_all(&mut p.b.host, fd).expect("B reads");
        }
        st.got >= 1_000_000 && p.links[0].snapshot().in_flight() > 0
    });
    assert!(sending, "{st:?}");
    let fd = s.unwrap();
    assert!(p.a.host.tcb(c).unwrap().tonic_owns_sender());
    assert!(p.a.host.tonic_flow(c).is_some());
    let engine_flows = |p: &Pair| p.a.tonic().engine("newreno").unwrap().dd().live_flows();
    assert_eq!(engine_flows(&p), 1);

    // 2. B aborts.
    p.b.host.setsockopt(fd, SockOpt::Linger(Some(0))).unwrap();
    p.b.host.close(fd).unwrap();
    let reset = run_until(&mut p, &mut idle, 1_000_000, |p| {
        p.a.host.tcb(c).unwrap().error().is_some()
    });
    assert!(reset, "A saw no reset");
    let (t_reset, tx_reset) = (p.clock.now_ns(), p.a.tonic().stats().segments_tx);
    assert_eq!(
        p.a.host.getsockopt(c, SockOptName::Error),
        Ok(SockOpt::Error(Some(Errno::ConnReset)))
    );
    assert_eq!(p.a.host.write(c, b"more"), Err(Errno::ConnReset));
    assert_eq!(p.a.host.read(c, &mut [0u8; 64]), Err(Errno::ConnReset));

    // 3. A's host removed the flow; A's NIC forgot it.
    let removed = run_until(&mut p, &mut idle, 100_000, |p| {
        p.a.tonic().stats().flows_removed == 1
    });
    assert!(removed, "A's NIC still has the flow");
    // At once: one trip over the PCIe link, a few loop iterations, far below a
    // retransmission timeout.
    let (dt, dtx) = (
        p.clock.now_ns() - t_reset,
        p.a.tonic().stats().segments_tx - tx_reset,
    );
    println!("flow removed {dt} ns after A saw the reset; {dtx} segments sent meanwhile");
    assert!(
        dt <= 20_000 && dtx <= 64,
        "removed {dt} ns and {dtx} segments late"
    );
    let ts = *p.a.host.tonic_stats();
    assert_eq!((ts.flows_added, ts.flows_removed), (1, 1), "{ts:?}");
    assert_eq!(p.a.host.tonic_flow(c), None);
    assert!(!p.a.tonic().has_flows());
    assert_eq!(engine_flows(&p), 0);

    // 4. Nothing more from A's NIC for 1 s: five of its retransmission timeouts (200 ms by
    // default), with A's data unacknowledged when B reset.
    let ns = *p.a.tonic().stats();
    let wire = p.links[0].snapshot().offered;
    let until = p.clock.now_ns() + 1_000_000_000;
    run_until(&mut p, &mut idle, 1_000_000, |p| p.clock.now_ns() >= until);
    assert!(p.clock.now_ns() >= until);
    let after = *p.a.tonic().stats();
    assert_eq!(
        (after.segments_tx, after.window_probes, after.timeouts),
        (ns.segments_tx, ns.window_probes, ns.timeouts),
        "A's NIC kept sending"
    );
    assert_eq!(
        p.links[0].snapshot().offered,
        wire,
        "A sent frames after the flow was removed"
    );
    println!(
        "A's NIC sent {} segments, B's host answered {} with RSTs",
        ns.segments_tx,
        p.b.host.stats().rst_sent
    );

    // 5. Both hosts end with no connection.
    assert_eq!(p.b.host.connections(), 0, "B's aborted connection lingers");
    close_all(&mut p, &mut idle, &[c], &[l]);
}

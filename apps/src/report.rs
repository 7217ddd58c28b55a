//! Human-readable run summaries.

use std::fmt::Write;
use std::time::Duration;

use dataplane::cycles::Stage;
use dataplane::lcore::{cycles_per_packet, LcoreReport};
use dataplane::net::parse::DropReason;

/// Totals of one port over all lcores.
#[derive(Default, Clone, Debug)]
pub struct PortTotals {
    pub name: String,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
    pub tx_full_drops: u64,
}

/// Sums the per-lcore port counters by port index.
pub fn port_totals(reports: &[LcoreReport]) -> Vec<PortTotals> {
    let mut out: Vec<PortTotals> = Vec::new();
    for r in reports {
        for p in &r.ports {
            if out.len() <= p.index {
                out.resize(p.index + 1, PortTotals::default());
            }
            let t = &mut out[p.index];
            t.name.clone_from(&p.name);
            t.rx_packets += p.queue.rx_packets;
            t.rx_bytes += p.queue.rx_bytes;
            t.tx_packets += p.queue.tx_packets;
            t.tx_bytes += p.queue.tx_bytes;
            t.tx_dropped += p.queue.tx_dropped;
            t.tx_full_drops += p.tx_full_drops;
        }
    }
    out
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs / 1e6
    } else {
        0.0
    }
}

/// A one-line-per-port statistics block (periodic and final).
pub fn ports_block(reports: &[LcoreReport], elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<10} {:>12} {:>9} {:>12} {:>9} {:>10} {:>10}",
        "port", "rx pkts", "rx Mpps", "tx pkts", "tx Mpps", "tx drops", "rx Gbps"
    );
    for t in port_totals(reports) {
        let _ = writeln!(
            s,
            "{:<10} {:>12} {:>9.3} {:>12} {:>9.3} {:>10} {:>10.3}",
            t.name,
            t.rx_packets,
            rate(t.rx_packets, secs),
            t.tx_packets,
            rate(t.tx_packets, secs),
            t.tx_dropped + t.tx_full_drops,
            rate(t.rx_bytes * 8, secs) / 1e3,
        );
    }
    s
}

/// The final summary: ports, NIC duties, drops by reason, cycles per stage.
pub fn summary(reports: &[LcoreReport], elapsed: Duration, tsc_hz: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "== nicemu summary ({:.3} s) ==", elapsed.as_secs_f64());
    s.push_str(&ports_block(reports, elapsed));
    let mut stack = dataplane::net::stack::StackCounters::default();
    let (mut fwd, mut to_host, mut to_host_drop, mut from_host, mut from_host_drop) =
        (0, 0, 0, 0, 0);
    let (mut steered, mut steer_drop) = (0, 0);
    for r in reports {
        stack.add(&r.stack);
        fwd += r.forwarded;
        to_host += r.to_host;
        to_host_drop += r.to_host_dropped;
        from_host += r.from_host;
        from_host_drop += r.from_host_dropped;
        steered += r.steered_out;
        steer_drop += r.steer_dropped;
    }
    let _ = writeln!(
        s,
        "nic: forwarded {fwd}, to host {to_host} (dropped {to_host_drop}), from host {from_host} \
         (dropped {from_host_drop}), host tx {} (tso segments {})",
        stack.host_tx_packets, stack.tso_segments
    );
    if steered + steer_drop > 0 {
        let _ = writeln!(
            s,
            "steering: {steered} frames handed to the lcore of their connection (dropped \
             {steer_drop})"
        );
    }
    let _ = writeln!(
        s,
        "arp: requests in {} / replies out {}, requests out {} / replies in {}, unresolved {}; \
         icmp: echo in {} / replies {}",
        stack.arp_requests_in,
        stack.arp_replies_out,
        stack.arp_requests_out,
        stack.arp_replies_in,
        stack.arp_resolution_failed,
        stack.icmp_echo_in,
        stack.icmp_echo_replies
    );
    let drops: Vec<String> = DropReason::ALL
        .iter()
        .filter(|r| stack.drops.get(**r) > 0)
        .map(|r| format!("{} {}", r.name(), stack.drops.get(*r)))
        .collect();
    let _ = writeln!(
        s,
        "drops: {} total{}{}",
        stack.drops.total(),
        if drops.is_empty() { "" } else { ": " },
        drops.join(", ")
    );
    s.push_str(&offloads_block(reports));
    for r in reports {
        let busy = r.cycles.busy().max(1) as f64;
        let stages: Vec<String> = Stage::ALL
            .iter()
            .filter(|st| **st != Stage::Idle)
            .map(|st| {
                format!(
                    "{} {:.0}%",
                    st.name(),
                    100.0 * r.cycles.get(*st) as f64 / busy
                )
            })
            .collect();
        let total = (r.busy_cycles + r.idle_cycles).max(1) as f64;
        let _ = writeln!(
            s,
            "lcore {} (core {}): {:.1} cycles/pkt, busy {:.1}% [{}], tsc {:.2} GHz",
            r.name,
            r.core.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            cycles_per_packet(r),
            100.0 * r.busy_cycles as f64 / total,
            stages.join(", "),
            tsc_hz as f64 / 1e9
        );
        if r.idle.sleeps > 0 {
            let _ = writeln!(
                s,
                "lcore {} idle: slept {:.3} s in {} sleeps ({} woken early by the host or the wire), {} yields",
                r.name,
                r.idle.slept_ns as f64 / 1e9,
                r.idle.sleeps,
                r.idle.woken,
                r.idle.yields
            );
        }
    }
    s
}

/// One direction of an in-memory wire, in a line.
pub fn link(l: &dataplane::port::wire::LinkSnapshot) -> String {
    format!(
        "offered {} delivered {} lost {} duplicated {} reordered {} dropped (ring full {}, rate {})",
        l.offered, l.delivered, l.lost, l.duplicated, l.reordered, l.dropped_full, l.dropped_rate
    )
}

/// One line per offload on the lcores' chains, its counters summed over the lcores (only the
/// non-zero ones), and the control messages no offload took.
pub fn offloads_block(reports: &[LcoreReport]) -> String {
    let mut s = String::new();
    let mut names: Vec<&'static str> = Vec::new();
    for r in reports {
        for o in &r.offloads {
            if !names.contains(&o.name) {
                names.push(o.name);
            }
        }
    }
    for name in names {
        let mut sums: Vec<(&'static str, u64)> = Vec::new();
        for o in reports.iter().filter_map(|r| r.offload(name)) {
            let v = &o.verdicts;
            let verdicts = [
                ("consumed", v.wire_consumed),
                ("replied", v.wire_replied),
                ("sent_out", v.wire_out),
                ("handed_to_host", v.wire_to_host),
                ("control_msgs", v.control),
                ("host_frames_taken", v.host_taken),
            ];
            for (n, x) in verdicts.into_iter().chain(o.counters.iter().copied()) {
                match sums.iter_mut().find(|(m, _)| *m == n) {
                    Some((_, t)) => *t += x,
                    None => sums.push((n, x)),
                }
            }
        }
        let shown: Vec<String> = sums
            .iter()
            .filter(|(_, v)| *v > 0)
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        let _ = writeln!(
            s,
            "offload {name}: {}",
            if shown.is_empty() {
                "idle".to_string()
            } else {
                shown.join(", ")
            }
        );
    }
    let unhandled: u64 = reports.iter().map(|r| r.control_unhandled).sum();
    let out_dropped: u64 = reports.iter().map(|r| r.offload_out_dropped).sum();
    if unhandled + out_dropped > 0 {
        let _ = writeln!(
            s,
            "offloads: control messages no offload took {unhandled}, frames sent to a port \
             this lcore does not serve {out_dropped}"
        );
    }
    s
}

//! Seeded random loss on the kernel side's veths (a cBPF `ld rand` filter redirecting to a dead-end veth), and its counters.

use super::*;

/// Frame loss on the kernel's side of the veth: 5% in each direction that has it.
#[derive(Default)]
pub(crate) struct Loss {
    /// Kernel → nicemu (the kernel's transmit side), and how.
    pub(crate) egress: Option<Egress>,
    /// nicemu → kernel (the kernel's receive side): a clsact ingress filter like
    /// [`Egress::Filter`], dropping before the kernel's IP layer sees the frame.
    pub(crate) ingress: bool,
}

#[derive(Clone, Copy)]
pub(crate) enum Egress {
    /// `tc qdisc add dev INNER root netem loss 5%`.
    Netem,
    /// For kernels built without netem (`Specified qdisc kind is unknown`): a classic-BPF
    /// classifier on the veth's clsact egress matches 5% of frames at random (`ld rand`) and
    /// `mirred` redirects them to a veth pair that leads nowhere. As with netem, the kernel's
    /// TCP takes them as sent (the redirect steals the frame: NET_XMIT_SUCCESS), so they are
    /// lost on the wire, not refused locally.
    Filter,
}

/// Matches when a random u32 is below 5% of 2^32: `ld rand; jge #T, nomatch; ret #-1`.
pub(crate) const LOSS_BPF: &str = "4,32 0 0 4294963256,53 0 1 214748365,6 0 0 0,6 0 0 4294967295";

/// Frames (sent, of which lost) in each direction, counted on the kernel's veth.
#[derive(Clone, Copy, Default)]
pub(crate) struct Frames {
    pub(crate) to_nicemu: (u64, u64),
    pub(crate) to_kernel: (u64, u64),
}

impl Frames {
    pub(crate) fn since(self, before: Frames) -> Frames {
        let d = |a: (u64, u64), b: (u64, u64)| (a.0 - b.0, a.1 - b.1);
        Frames {
            to_nicemu: d(self.to_nicemu, before.to_nicemu),
            to_kernel: d(self.to_kernel, before.to_kernel),
        }
    }
}

impl Loss {
    pub(crate) fn drop_filter(node: &mut Node, net: &Netns, dir: &str) {
        let (inner, sink) = (net.inner(), net.sink());
        node.ns_command(
            net,
            &[
                "tc", "filter", "add", "dev", inner, dir, "bpf", "bytecode", LOSS_BPF, "action",
                "mirred", "egress", "redirect", "dev", sink,
            ],
        );
    }

    /// 5% loss of what the kernel sends: netem where the kernel has it, else the filter.
    pub(crate) fn add_egress(&mut self, node: &mut Node, net: &Netns) {
        let inner = net.inner();
        // The kernel's TCP always builds GSO packets, segmented in software (`tx off`) only
        // after the qdisc and clsact hooks, where both netem and the filter would drop whole
        // bursts of segments. One segment per packet makes them drop single frames.
        node.ns_command(
            net,
            &["ip", "link", "set", "dev", inner, "gso_max_segs", "1"],
        );
        let netem = [
            "tc", "qdisc", "add", "dev", inner, "root", "netem", "loss", "5%",
        ];
        self.egress = Some(match node.ns_try(net, &netem) {
            Ok(_) => Egress::Netem,
            Err(e) if e.contains("qdisc kind is unknown") => {
                Loss::drop_filter(node, net, "egress");
                Egress::Filter
            }
            Err(e) => panic!("{netem:?} failed: {e}"),
        });
    }

    /// 5% loss of what the kernel receives.
    pub(crate) fn add_ingress(&mut self, node: &mut Node, net: &Netns) {
        Loss::drop_filter(node, net, "ingress");
        self.ingress = true;
    }

    pub(crate) fn describe(&self) -> String {
        let egress = match self.egress {
            None => "none",
            Some(Egress::Netem) => "tc netem loss 5%",
            Some(Egress::Filter) => {
                "5% by a clsact egress filter (no netem in this kernel): cBPF `ld rand`, mirred redirect to a dead-end veth"
            }
        };
        let ingress = if self.ingress {
            "5% by the same filter on clsact ingress"
        } else {
            "none"
        };
        format!("kernel -> nicemu: {egress}; nicemu -> kernel: {ingress}")
    }

    /// Frames the kernel's veth has sent and received so far, and how many the impairments
    /// dropped.
    pub(crate) fn frames(&self, node: &mut Node, net: &Netns) -> Frames {
        let inner = net.inner();
        let lost_out = match self.egress {
            None => 0,
            Some(Egress::Netem) => {
                let text = node.ns_command(net, &["tc", "-s", "qdisc", "show", "dev", inner]);
                text.split("dropped ")
                    .nth(1)
                    .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("no drop count in {text:?}"))
            }
            Some(Egress::Filter) => filter_hits(node, net, "egress"),
        };
        let lost_in = if self.ingress {
            filter_hits(node, net, "ingress")
        } else {
            0
        };
        Frames {
            // Dropped frames never reach the veth's transmit counter.
            to_nicemu: (
                node.dev_counter(net, inner, "tx_packets") + lost_out,
                lost_out,
            ),
            // The receive counter counts before the ingress hook.
            to_kernel: (node.dev_counter(net, inner, "rx_packets"), lost_in),
        }
    }
}

/// Frames the drop filter on `dir` of the kernel's veth has taken (its action's count; the
/// sink veth's own counters miss frames it drops).
pub(crate) fn filter_hits(node: &mut Node, net: &Netns, dir: &str) -> u64 {
    let inner = net.inner();
    let text = node.ns_command(net, &["tc", "-s", "filter", "show", "dev", inner, dir]);
    text.split(" bytes ")
        .nth(1)
        .and_then(|t| t.split(" pkt").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {text:?}"))
}

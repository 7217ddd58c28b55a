//! The NIC offload seam: an ordered chain of offloads on each NIC lcore (`docs/architecture.md`,
//! "Life of a frame through an NIC lcore", step 3; "Adding an offload").
//!
//! An offload is one piece of smart-NIC work that sits between the wire and the host: Tonic's
//! sender engines (Tonic §5), and AccelTCP's SYN-cookie responder, teardown engine and splice
//! table (AccelTCP §4.1–§4.3). Each implements [`Offload`], one small trait with a hook per
//! place where the lcore meets traffic:
//!
//! | hook | called with | typical use |
//! |---|---|---|
//! | [`Offload::wire_burst`] | a burst from a wire port, before the NIC stack (offloads with a fast path) | translate spliced segments without the general parse |
//! | [`Offload::wire_rx`] | a validated frame from a wire port and its parsed headers | consume ACKs, answer SYNs, translate spliced segments |
//! | [`Offload::host_control`] | a control message from the host (AccelTCP App. A EtherTypes) | flow add / remove, splice install, listen registration |
//! | [`Offload::host_tcp`] | an IPv4/TCP frame from the host, before checksum fill and TSO | rewrite fields the host does not know |
//! | [`Offload::poll`] | once per loop iteration while the offload is [active](Offload::active) | timers, transmission, notifications |
//! | [`Offload::next_deadline`] | — | virtual-time drivers jump to it |
//!
//! Each data hook returns a [`Verdict`]; the [`OffloadChain`] offers a frame to its offloads
//! in order until one returns something other than [`Verdict::Pass`], counts every verdict
//! per offload, and tells the lcore what to do with the frame. The lcore loop
//! ([`crate::lcore`]) knows no offload by name: it offers each burst to the chain's fast
//! paths, parses a frame once, calls the chain, and moves the buffer where the verdict says.
//!
//! The shape follows packet-graph designs (VPP's graph nodes, DPDK's `rte_graph`: a frame
//! travels with its parsed metadata from node to node, and each node names the next) and
//! smoltcp's `Interface` dispatch, kept as small as today's offloads need: a fixed order, no
//! graph, one frame at a time. Everything here is sans-I/O: the
//! caller passes `now`, the NIC stack and an [`OffloadIo`] to send frames through.
//!
//! The chain itself is in `chain.rs`; building it from a configuration ([`build_chain`],
//! the process's [`SharedOffloads`], Tonic plugins) in `build.rs`.
//!
//! Adding an offload: implement [`Offload`] for its state, push it on the chain that
//! [`build_chain`] (or a test) assembles, and read its counters back from
//! [`crate::lcore::LcoreReport::offloads`] or with [`OffloadChain::get`].

mod build;
mod chain;
pub mod setup;
pub mod splice;
pub mod teardown;

use std::any::Any;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use offload_api::msg::MsgType;

use crate::buf::PacketBuf;
use crate::net::parse::{Parsed, IPPROTO_TCP, L3};
use crate::net::stack::NicStack;

pub use crate::net::Verdict;
pub use build::{
    build_chain, default_chain, tonic_from_config, LoadedPlugins, OffloadError, SharedOffloads,
};
pub use chain::OffloadChain;

/// How an offload sends frames it builds itself (retransmissions, window probes, messages to
/// the host). Implemented by the lcore over its port queues and PCIe link.
pub trait OffloadIo {
    /// Copies `frame` (a whole Ethernet frame, checksums filled) into a buffer of port `port`
    /// and queues it for this iteration's tx burst. False: not sent (no such port on this
    /// lcore, or no buffer).
    fn to_port(&mut self, port: u16, frame: &[u8]) -> bool;
    /// Sends `frame` to the host core over the PCIe link, tagged with NIC port `port`. False:
    /// not sent (no host link, or its ring is full; the offload retries or counts it).
    fn to_host(&mut self, port: u16, frame: &[u8]) -> bool;
}

/// What every hook gets besides its frame: the time, the lcore's NIC stack (interfaces, ARP
/// table) and the way out.
pub struct OffloadCtx<'a, B: PacketBuf> {
    /// The lcore's clock, nanoseconds.
    pub now: u64,
    /// The lcore's L2/L3 stack: interface addresses, ARP lookups and resolution.
    pub stack: &'a mut NicStack<B>,
    /// Frames the offload builds itself go out through this.
    pub io: &'a mut dyn OffloadIo,
}

/// A frame from a wire port, as the chain offers it to [`Offload::wire_rx`].
pub struct RxFrame<'a, B: PacketBuf> {
    /// Index of the port it arrived on.
    pub port: usize,
    /// The buffer; an offload that answers [`Verdict::Reply`] or [`Verdict::Out`] rewrites it.
    pub buf: &'a mut B,
    /// Its headers, parsed once by the lcore (Ethernet, IPv4, the L4 offsets) and validated:
    /// lengths, the IPv4 header checksum and, where the NIC stack checks it, the L4 checksum.
    pub hdr: &'a Parsed,
}

impl<B: PacketBuf> RxFrame<'_, B> {
    /// The frame's TCP segment with its IPv4 addresses, when it is an IPv4/TCP frame (the
    /// lcore checked the bounds, RFC 9293 §3.1); `None` for anything else.
    #[inline]
    pub fn tcp(&self) -> Option<RxTcp<'_>> {
        let L3::Ipv4 {
            proto: IPPROTO_TCP,
            src,
            dst,
            l4_off,
            l4_len,
        } = self.hdr.l3
        else {
            return None;
        };
        let seg = self.buf.data().get(l4_off..l4_off + l4_len)?;
        Some(RxTcp {
            src,
            dst,
            l4_off,
            seg,
        })
    }
}

/// The TCP segment of a wire frame, as [`RxFrame::tcp`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct RxTcp<'a> {
    /// IPv4 source address.
    pub src: [u8; 4],
    /// IPv4 destination address.
    pub dst: [u8; 4],
    /// Offset of the TCP header in the frame.
    pub l4_off: usize,
    /// The TCP header and payload (up to the IPv4 total length).
    pub seg: &'a [u8],
}

/// Where the TCP segment sits in a frame from the host (found once by the lcore for all
/// offloads; the host leaves checksums to the NIC, so they are not checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTcp {
    /// IPv4 source address.
    pub src: [u8; 4],
    /// IPv4 destination address.
    pub dst: [u8; 4],
    /// Offset of the TCP header in the frame.
    pub l4_off: usize,
    /// Length of the TCP header and payload (up to the IPv4 total length).
    pub l4_len: usize,
}

impl HostTcp {
    /// The TCP segment of an Ethernet/IPv4 frame whose IPv4 header passes the NIC's transmit
    /// checks (version, lengths, no fragment: RFC 791 §3.1) and whose TCP header is whole
    /// (RFC 9293 §3.1); `None` for anything else.
    pub fn find(frame: &[u8]) -> Option<HostTcp> {
        use crate::net::parse::{check_l4_header, ETH_HDR_LEN, IPPROTO_TCP};
        use offload_api::wire::EthernetFrame;
        let eth = EthernetFrame::new_checked(frame).ok()?;
        if eth.ethertype() != offload_api::ETHERTYPE_IPV4 {
            return None;
        }
        let ip = crate::net::csum::ipv4_for_tx(eth.payload_slice()).ok()?;
        if ip.protocol() != IPPROTO_TCP {
            return None;
        }
        let tcp = ip.payload_slice();
        check_l4_header(IPPROTO_TCP, tcp).ok()?;
        Some(HostTcp {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            l4_off: ETH_HDR_LEN + ip.header_len(),
            l4_len: tcp.len(),
        })
    }
}

/// The counters an offload reports, as `(name, value)` pairs in a stable order.
pub type CounterSink<'a> = &'a mut dyn FnMut(&'static str, u64);

/// One NIC offload on the chain. See the module documentation for the hooks.
///
/// Every hook but [`Offload::host_control`] runs only while [`Offload::active`] is true, so
/// an offload with nothing to do costs the per-frame path nothing but one flag test.
/// Invariant: hooks never panic on any frame or message; what they cannot use they count and
/// pass on or drop.
pub trait Offload<B: PacketBuf>: Any + Send {
    /// Short name in reports (`tonic`, `syn-cookie`, `splice`, ...).
    fn name(&self) -> &'static str;

    /// True while the offload has state that traffic can hit (flows, listeners, spliced
    /// pairs). Asked after every hook call; while false only control messages reach it.
    fn active(&self) -> bool;

    /// Whether the offload has a [`Offload::wire_burst`] hook (asked once, when it joins a
    /// chain).
    fn has_wire_burst(&self) -> bool {
        false
    }

    /// A fast path: a burst of frames just received on wire port `port`, before the NIC
    /// stack's parse and checks, offered while the offload is active. For each frame it
    /// recognises (`frames[k]` with `verdicts.open(k)`) it sets a verdict other than
    /// [`Verdict::Pass`] with [`BurstVerdicts::set`], rewriting the frame as that verdict
    /// needs; the lcore moves those frames and the rest take the general path, in order.
    /// Only for offloads whose [`Offload::has_wire_burst`] is true; an offload must not rely
    /// on the stack's checks here (AccelTCP §4.3: spliced segments are relayed as they are).
    fn wire_burst(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: usize,
        frames: &mut [B],
        verdicts: &mut BurstVerdicts<'_>,
    ) {
        let _ = (cx, port, frames, verdicts);
    }

    /// A validated frame from a wire port.
    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let _ = (cx, rx);
        Verdict::Pass
    }

    /// A control message from the host (a frame with one of the host ↔ NIC EtherTypes of
    /// AccelTCP App. A, `msg` its type). Answers go through [`OffloadIo::to_host`].
    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        let _ = (cx, port, msg, frame);
        Verdict::Pass
    }

    /// An IPv4/TCP frame from the host for port `port`, before the NIC fills checksums and
    /// segments it; the offload may rewrite it in place.
    fn host_tcp(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        let _ = (cx, port, frame, tcp);
        Verdict::Pass
    }

    /// Periodic work: timers, transmission, notifications to the host (data path steps 5
    /// and 6). Runs once per lcore iteration while active.
    fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        let _ = cx;
    }

    /// The earliest time the offload has work to do without new traffic (none: idle).
    fn next_deadline(&self) -> Option<u64> {
        None
    }

    /// For an offload whose state other lcores can change (the shared splice table): a
    /// counter that is non-zero while it may be active. The chain reads it on every frame
    /// while it believes every offload idle, since no hook of this lcore ran to tell it.
    fn shared_activity(&self) -> Option<Arc<AtomicUsize>> {
        None
    }

    /// Reports the offload's own counters, each as `(name, value)`, always the same names in
    /// the same order.
    fn counters(&self, out: CounterSink<'_>) {
        let _ = out;
    }
}

/// The verdicts of one burst's frames in the burst hooks ([`Offload::wire_burst`]): every
/// frame starts [`Verdict::Pass`] (open); a hook decides a frame once, and what it decides
/// is counted for it as [`Offload::wire_rx`]'s verdicts are.
///
/// Invariant: a verdict only goes from `Pass` to something else, and `counts` and `decided`
/// count exactly those changes.
pub struct BurstVerdicts<'a> {
    verdicts: &'a mut [Verdict],
    counts: VerdictCounts,
    decided: usize,
    /// The port of the first decision when it was [`Verdict::Out`].
    first_out: u16,
    /// Decisions that were `Out(first_out)`.
    same_out: usize,
}

impl<'a> BurstVerdicts<'a> {
    /// Over `verdicts`, which must all be [`Verdict::Pass`].
    pub fn new(verdicts: &'a mut [Verdict]) -> Self {
        debug_assert!(verdicts.iter().all(|&v| v == Verdict::Pass));
        BurstVerdicts {
            verdicts,
            counts: VerdictCounts::default(),
            decided: 0,
            first_out: 0,
            same_out: 0,
        }
    }

    /// Frames in the burst.
    pub fn len(&self) -> usize {
        self.verdicts.len()
    }

    /// True for an empty burst.
    pub fn is_empty(&self) -> bool {
        self.verdicts.is_empty()
    }

    /// True while frame `k` is undecided (no hook took it yet).
    #[inline(always)]
    pub fn open(&self, k: usize) -> bool {
        self.verdicts.get(k) == Some(&Verdict::Pass)
    }

    /// Decides frame `k`: `v` (not `Pass`, which leaves it open). A frame already decided,
    /// or out of range, is left as it is.
    #[inline(always)]
    pub fn set(&mut self, k: usize, v: Verdict) {
        let Some(slot) = self.verdicts.get_mut(k) else {
            return;
        };
        if v == Verdict::Pass || *slot != Verdict::Pass {
            return;
        }
        *slot = v;
        count_wire(&mut self.counts, v);
        if let Verdict::Out(p) = v {
            if self.decided == 0 {
                self.first_out = p;
            }
            self.same_out += usize::from(p == self.first_out);
        }
        self.decided += 1;
    }

    /// Offers each frame still undecided to `f`, in order, with its index; a verdict other
    /// than [`Verdict::Pass`] decides it as [`BurstVerdicts::set`] does, `Pass` leaves it
    /// open. For a hook that walks the whole burst: one pass, and no second check of the
    /// verdict it has just read.
    #[inline(always)]
    pub fn decide_open<T>(&mut self, items: &mut [T], mut f: impl FnMut(usize, &mut T) -> Verdict) {
        for (k, (slot, item)) in self.verdicts.iter_mut().zip(items).enumerate() {
            if *slot != Verdict::Pass {
                continue;
            }
            match f(k, item) {
                Verdict::Pass => continue,
                Verdict::Out(p) => {
                    *slot = Verdict::Out(p);
                    self.counts.wire_out += 1;
                    if self.decided == 0 {
                        self.first_out = p;
                    }
                    self.same_out += usize::from(p == self.first_out);
                }
                v => {
                    *slot = v;
                    count_wire(&mut self.counts, v);
                }
            }
            self.decided += 1;
        }
    }

    /// `Some(port)` when every frame of the burst is decided [`Verdict::Out`]`(port)`: the
    /// lcore then moves the whole burst to that port's queue at once (the splice fast path's
    /// common case: a burst from one side of pairs leaves by the other side's port).
    #[inline(always)]
    pub fn all_out(&self) -> Option<u16> {
        (self.same_out > 0 && self.same_out == self.verdicts.len()).then_some(self.first_out)
    }

    /// Frames decided so far.
    pub fn decided(&self) -> usize {
        self.decided
    }

    /// The verdicts so far, one per frame.
    pub fn as_slice(&self) -> &[Verdict] {
        self.verdicts
    }

    /// Takes the counts of what was decided since the last call.
    pub(crate) fn take_counts(&mut self) -> VerdictCounts {
        std::mem::take(&mut self.counts)
    }
}

/// Counts a verdict on a wire frame in `c` (nothing for [`Verdict::Pass`]).
#[inline(always)]
pub(crate) fn count_wire(c: &mut VerdictCounts, v: Verdict) {
    match v {
        Verdict::Consumed | Verdict::Drop(_) => c.wire_consumed += 1,
        Verdict::Reply => c.wire_replied += 1,
        Verdict::Out(_) => c.wire_out += 1,
        Verdict::ToHost => c.wire_to_host += 1,
        Verdict::Pass => {}
    }
}

/// What the chain counted for one offload: the verdicts it returned, by hook (a burst hook's
/// verdicts count as [`Offload::wire_rx`]'s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerdictCounts {
    /// Wire frames it consumed.
    pub wire_consumed: u64,
    /// Wire frames it answered on the same port.
    pub wire_replied: u64,
    /// Wire frames it sent out of another port.
    pub wire_out: u64,
    /// Wire frames it handed straight to the host.
    pub wire_to_host: u64,
    /// Control messages from the host it took.
    pub control: u64,
    /// Host frames it consumed or redirected (anything but pass).
    pub host_taken: u64,
}

/// The report of one offload: its name, the chain's counts of its verdicts, and its own
/// counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OffloadReport {
    /// [`Offload::name`].
    pub name: &'static str,
    /// Verdicts it returned.
    pub verdicts: VerdictCounts,
    /// [`Offload::counters`], in its order.
    pub counters: Vec<(&'static str, u64)>,
}

impl OffloadReport {
    /// The counter called `name` (0 when it has none).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |&(_, v)| v)
    }
}

impl VerdictCounts {
    /// Adds `o`, field by field.
    fn add(&mut self, o: &VerdictCounts) {
        self.wire_consumed += o.wire_consumed;
        self.wire_replied += o.wire_replied;
        self.wire_out += o.wire_out;
        self.wire_to_host += o.wire_to_host;
        self.control += o.control;
        self.host_taken += o.host_taken;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::parse::DropReason;

    #[test]
    fn burst_verdicts_decide_each_frame_once_and_count_what_they_decide() {
        let mut v = [Verdict::Pass; 5];
        let mut b = BurstVerdicts::new(&mut v);
        b.set(0, Verdict::Out(1));
        b.set(0, Verdict::Consumed); // already decided: ignored
        b.set(1, Verdict::Pass); // Pass leaves it open
        b.set(2, Verdict::Drop(DropReason::Unsupported));
        b.set(3, Verdict::Reply);
        b.set(9, Verdict::Reply); // out of range: ignored
        assert!(!b.open(0) && b.open(1) && !b.open(2) && b.open(4));
        assert_eq!(b.decided(), 3);
        let c = b.take_counts();
        assert_eq!((c.wire_out, c.wire_consumed, c.wire_replied), (1, 1, 1));
        assert_eq!(b.take_counts(), VerdictCounts::default());
        b.set(4, Verdict::ToHost);
        assert_eq!(b.take_counts().wire_to_host, 1);
        assert_eq!(
            b.as_slice(),
            &[
                Verdict::Out(1),
                Verdict::Pass,
                Verdict::Drop(DropReason::Unsupported),
                Verdict::Reply,
                Verdict::ToHost
            ]
        );
        assert_eq!(b.all_out(), None, "mixed verdicts");
    }

    #[test]
    fn all_out_only_when_every_frame_leaves_by_one_port() {
        let mut v = [Verdict::Pass; 3];
        let mut b = BurstVerdicts::new(&mut v);
        assert_eq!(b.all_out(), None, "nothing decided");
        b.set(0, Verdict::Out(2));
        b.set(1, Verdict::Out(2));
        assert_eq!(b.all_out(), None, "a frame still open");
        b.set(2, Verdict::Out(2));
        b.set(2, Verdict::Out(3)); // already decided: ignored
        assert_eq!(b.all_out(), Some(2));
        assert_eq!(b.take_counts().wire_out, 3);
        // Two ports, or an Out among other verdicts: no single append.
        let mut v = [Verdict::Pass; 2];
        let mut b = BurstVerdicts::new(&mut v);
        b.set(0, Verdict::Out(1));
        b.set(1, Verdict::Out(0));
        assert_eq!(b.all_out(), None);
        let mut v = [Verdict::Pass; 2];
        let mut b = BurstVerdicts::new(&mut v);
        b.set(0, Verdict::Consumed);
        b.set(1, Verdict::Out(1));
        assert_eq!(b.all_out(), None);
        let mut v: [Verdict; 0] = [];
        assert_eq!(BurstVerdicts::new(&mut v).all_out(), None, "an empty burst");
    }

    #[test]
    fn decide_open_offers_only_open_frames_and_counts_as_set_does() {
        let mut v = [Verdict::Pass; 5];
        let mut b = BurstVerdicts::new(&mut v);
        b.set(1, Verdict::Reply);
        let mut items = [10, 11, 12, 13, 14];
        let mut offered = Vec::new();
        b.decide_open(&mut items, |k, x| {
            offered.push((k, *x));
            *x += 100;
            match k {
                0 | 3 => Verdict::Out(2),
                2 => Verdict::Pass,
                _ => Verdict::Consumed,
            }
        });
        assert_eq!(
            offered,
            [(0, 10), (2, 12), (3, 13), (4, 14)],
            "frame 1 was decided"
        );
        assert_eq!(items, [110, 11, 112, 113, 114]);
        assert_eq!(b.decided(), 4, "frame 2 stays open");
        assert!(b.open(2));
        let c = b.take_counts();
        assert_eq!((c.wire_out, c.wire_consumed, c.wire_replied), (2, 1, 1));
        assert_eq!(b.all_out(), None);
        // Every frame out by one port: the whole-burst append, as with `set`.
        let mut v = [Verdict::Pass; 3];
        let mut b = BurstVerdicts::new(&mut v);
        b.decide_open(&mut [(); 3], |_, _| Verdict::Out(1));
        assert_eq!(b.all_out(), Some(1));
    }
}

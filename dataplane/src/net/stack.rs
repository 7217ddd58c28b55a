//! The per-lcore L2/L3 duties of the NIC: validate received frames, answer ARP (RFC 826) and
//! ICMP echo (RFC 792) for the port's addresses, and prepare host-originated frames for the
//! wire (checksum fill, software TSO, next-hop MAC resolution with a pending queue).
//!
//! Sans-I/O: the caller passes buffers, an explicit `now_ns` and an allocator; frames to send
//! come back in `Vec`s the caller owns and reuses. `rx` never allocates.
//!
//! This file holds [`NicStack`], its tunables and counters, and the receive half; the
//! interface configuration is in `iface.rs`, the host-transmit half (host frames, next-hop
//! resolution, the pending queue, [`NicStack::poll_tx`]) in `host_tx.rs`.

use offload_api::wire::ethernet::is_group;
use offload_api::wire::EthernetFrame;

use super::arp::{self, ArpFields, ArpTable, SharedNeighbours, OP_REQUEST};
use super::icmp;
use super::parse::{
    fast_transit, fast_transit_raw, mac48, parse_headers, verify_l4_checksum, DropCounters,
    DropReason, IPPROTO_ICMP, L3,
};
use super::verdict::Verdict;
use crate::buf::PacketBuf;

mod host_tx;
mod iface;

use host_tx::Pending;
pub use host_tx::HELD_FRAME_CHARGE;
pub use iface::IfaceConfig;
use iface::NO_IFACE;

/// Tunables of the ARP machinery.
///
/// Invariant: timing values are in nanoseconds of the caller's clock (`now_ns`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackConfig {
    /// How long a learnt ARP entry stays fresh (default 60 s).
    pub arp_timeout_ns: u64,
    /// Interval between ARP requests for an unresolved address (default 1 s).
    pub arp_retry_ns: u64,
    /// Requests sent after the first before giving up (default 3).
    pub arp_max_retries: u32,
    /// ARP table entries per port (default 1024); a full table evicts its oldest entry. Also
    /// bounds the number of addresses being resolved at once per port.
    pub arp_table_size: usize,
    /// Bytes of host frames held per unresolved address (default 212,992, Linux's
    /// `unres_qlen_bytes`); frames beyond it are dropped (`ArpUnresolved`). Each frame is
    /// charged at least [`HELD_FRAME_CHARGE`] bytes, the buffer it occupies (as Linux
    /// charges an skb's true size), so the bound also bounds the buffers held.
    pub pending_bytes_per_ip: usize,
    /// Which received frames get their TCP/UDP/ICMP checksum verified (default: all).
    pub l4_checksum: L4Checksum,
    /// Bytes of host frames held per port while their neighbours are resolved (default
    /// 4 MiB); frames beyond it are dropped (`ArpUnresolved`).
    pub pending_bytes_per_port: usize,
}

/// Which received frames [`NicStack::rx`] verifies the L4 checksum of. The IPv4 header
/// checksum is always verified.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum L4Checksum {
    /// Every IPv4 frame: what the host needs when the NIC hands frames to it (the host stack
    /// relies on the NIC's receive checksum offload, as mTCP does).
    #[default]
    All,
    /// Only frames addressed to one of the port's IPv4 addresses (answered by the NIC or
    /// delivered to its host). Transit frames are forwarded like a router does, which
    /// validates the IP header but not the end-to-end L4 checksum (RFC 1812 §5.2.2).
    Terminating,
}

impl Default for StackConfig {
    fn default() -> Self {
        StackConfig {
            arp_timeout_ns: 60_000_000_000,
            arp_retry_ns: 1_000_000_000,
            arp_max_retries: 3,
            arp_table_size: 1024,
            pending_bytes_per_ip: 212_992,
            l4_checksum: L4Checksum::All,
            pending_bytes_per_port: 4 << 20,
        }
    }
}

/// Counters of one [`NicStack`].
///
/// Invariant (rx side): every frame given to `rx` is counted exactly once among `passed`,
/// `drops`, `arp_replies_out + icmp_echo_replies` (Reply) and
/// `arp_requests_in - arp_replies_out + arp_replies_in` (Consumed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackCounters {
    /// ARP requests received (valid, addressed to our MAC or broadcast).
    pub arp_requests_in: u64,
    /// ARP replies sent in answer to requests for our addresses.
    pub arp_replies_out: u64,
    /// ARP requests the stack originated (first tries and retries).
    pub arp_requests_out: u64,
    /// ARP replies received.
    pub arp_replies_in: u64,
    /// ARP entries evicted from a full table.
    pub arp_table_evictions: u64,
    /// Addresses given up on after the last retry.
    pub arp_resolution_failed: u64,
    /// ICMP echo requests for our addresses received.
    pub icmp_echo_in: u64,
    /// ICMP echo replies sent.
    pub icmp_echo_replies: u64,
    /// Frames given to `host_tx`.
    pub host_tx_packets: u64,
    /// Segments produced by software TSO.
    pub tso_segments: u64,
    /// Received frames handed back as [`Verdict::Pass`].
    pub passed: u64,
    /// Drops by reason, rx and tx together.
    pub drops: DropCounters,
}

impl StackCounters {
    /// Adds every counter of `o` to this one (aggregation across lcores).
    pub fn add(&mut self, o: &StackCounters) {
        self.arp_requests_in += o.arp_requests_in;
        self.arp_replies_out += o.arp_replies_out;
        self.arp_requests_out += o.arp_requests_out;
        self.arp_replies_in += o.arp_replies_in;
        self.arp_table_evictions += o.arp_table_evictions;
        self.arp_resolution_failed += o.arp_resolution_failed;
        self.icmp_echo_in += o.icmp_echo_in;
        self.icmp_echo_replies += o.icmp_echo_replies;
        self.host_tx_packets += o.host_tx_packets;
        self.tso_segments += o.tso_segments;
        self.passed += o.passed;
        self.drops.add(&o.drops);
    }
}

struct PortState<B> {
    arp: ArpTable,
    pending: Vec<Pending<B>>,
    /// Earliest `next_ns` among `pending`.
    next_deadline: u64,
    /// An address with pending frames was learnt since the last `poll_tx`.
    learnt: bool,
    /// Bytes of the frames in `pending`.
    held_bytes: usize,
    /// What the port's other lcores learnt (none: this lcore is the port's only one).
    shared: Option<std::sync::Arc<SharedNeighbours>>,
    /// `shared`'s generation at the last look for the pending addresses.
    shared_seen: u64,
}

/// How many frames ahead of the one being handled [`NicStack::rx_burst`] prefetches.
const PREFETCH_AHEAD: usize = 4;

/// The loop of [`NicStack::transit_mask`]: bit k set when `bufs[k]` passes
/// [`fast_transit_raw`] for `mac` and `not_ours` accepts its destination address. At most 64
/// frames (bits beyond are not kept).
///
/// Kept out of line, with the prefetching part and the tail as separate loops and the mask
/// shifted in from the top, so that the per-frame path has no bounds checks, no spills and
/// no variable shifts.
#[inline(never)]
fn transit_scan<B: PacketBuf>(bufs: &[B], mac: u64, not_ours: impl Fn(u32) -> bool) -> u64 {
    let n = bufs.len().min(64);
    let bufs = &bufs[..n];
    #[inline(always)]
    fn one<B: PacketBuf>(buf: &B, mac: u64, not_ours: &impl Fn(u32) -> bool) -> bool {
        match fast_transit_raw(buf.data(), mac) {
            Some(dst) => not_ours(dst),
            None => false,
        }
    }
    let mut acc = 0u64;
    let ahead = n.saturating_sub(PREFETCH_AHEAD);
    for (buf, later) in bufs[..ahead].iter().zip(&bufs[PREFETCH_AHEAD.min(n)..]) {
        // Start a later frame's first cache line on its way (on NICs that DMA into memory
        // rather than cache, this hides the miss).
        crate::sys::prefetch(later.data().as_ptr());
        acc = (acc >> 1) | (u64::from(one(buf, mac, &not_ours)) << 63);
    }
    for buf in &bufs[ahead..] {
        acc = (acc >> 1) | (u64::from(one(buf, mac, &not_ours)) << 63);
    }
    if n == 0 {
        0
    } else {
        acc >> (64 - n)
    }
}

/// The L2/L3 stack of one NIC lcore, for all its ports.
///
/// Invariant: holds at most `arp_table_size` resolving addresses and `pending_bytes_per_ip`
/// charged bytes of frames
/// per address per port; every frame it takes is eventually returned to the caller (Reply,
/// `out`) or dropped and counted.
pub struct NicStack<B: PacketBuf> {
    ifaces: Vec<IfaceConfig>,
    cfg: StackConfig,
    ports: Vec<PortState<B>>,
    counters: StackCounters,
}

impl<B: PacketBuf> NicStack<B> {
    /// A stack for `ifaces`, indexed by port index.
    pub fn new(ifaces: Vec<IfaceConfig>, cfg: StackConfig) -> Self {
        let ports = ifaces
            .iter()
            .map(|_| PortState {
                arp: ArpTable::new(cfg.arp_table_size, cfg.arp_timeout_ns),
                pending: Vec::new(),
                next_deadline: u64::MAX,
                learnt: false,
                held_bytes: 0,
                shared: None,
                shared_seen: 0,
            })
            .collect();
        NicStack {
            ifaces,
            cfg,
            ports,
            counters: StackCounters::default(),
        }
    }

    /// Shares `port`'s neighbours with the port's other NIC lcores through `shared` (see
    /// [`SharedNeighbours`]): what this stack learns goes there, and an address it does not
    /// know is looked up there before it is resolved. Out-of-range ports are ignored.
    pub fn share_neighbours(&mut self, port: usize, shared: std::sync::Arc<SharedNeighbours>) {
        if let Some(st) = self.ports.get_mut(port) {
            st.shared_seen = shared.generation();
            st.shared = Some(shared);
        }
    }

    /// The entry of `ip` another lcore of `port` learnt, copied into this stack's table.
    fn learn_from_shared(&mut self, port: usize, ip: [u8; 4], now_ns: u64) -> Option<[u8; 6]> {
        let st = &mut self.ports[port];
        let (mac, learnt_ns) = st.shared.as_ref()?.lookup(ip, now_ns)?;
        if st.arp.insert(ip, mac, learnt_ns) {
            self.counters.arp_table_evictions += 1;
        }
        Some(mac)
    }

    /// Handle one frame received on `port`.
    ///
    /// - ARP request for one of the port's addresses: learn the sender, rewrite the buffer into
    ///   the ARP reply in place → `Reply` (RFC 826).
    /// - Other ARP requests (gratuitous, for other hosts): update the sender if already known
    ///   (RFC 826 merge) → `Consumed`.
    /// - ARP reply: learn the sender if it is addressed to us, known or being resolved;
    ///   pending host frames for it go out on the next `poll_tx` → `Consumed`.
    /// - ICMP echo request to one of our addresses from a unicast source: rewrite into the echo
    ///   reply in place → `Reply` (RFC 792).
    /// - Anything else valid (other ICMP, TCP, UDP to us or not, other EtherTypes, frames whose
    ///   destination MAC is neither ours nor broadcast/multicast) → `Pass`.
    /// - Malformed (see [`parse`](super::parse::parse)) or `port` out of range
    ///   (`Unsupported`) → `Drop`, counted.
    ///
    /// Invariant: no allocation; the buffer's length is never changed.
    #[inline]
    pub fn rx(&mut self, port: usize, buf: &mut B, now_ns: u64) -> Verdict {
        if port >= self.ifaces.len() {
            return self.rx_drop(DropReason::Unsupported);
        }
        if self.cfg.l4_checksum == L4Checksum::Terminating {
            let iface = &self.ifaces[port];
            if let Some(dst) = fast_transit(buf.data(), &iface.mac) {
                if !iface.has_ip(dst) {
                    return self.pass();
                }
            }
        }
        self.rx_full(port, buf, now_ns)
    }

    /// [`NicStack::rx`] for a whole burst received on `port`: the same decision for every
    /// frame, written to `verdicts[k]` for `bufs[k]`, with the transit fast path's per-port
    /// work done once per burst. Returns true when every verdict is `Pass`.
    ///
    /// Invariant: counters end exactly as after calling `rx` on each frame in order. Give
    /// `verdicts` at least `bufs.len()` slots: frames beyond it are handled but their verdict
    /// is not written, and the function returns false.
    pub fn rx_burst(
        &mut self,
        port: usize,
        bufs: &mut [B],
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) -> bool {
        // Short `verdicts` take the frame-by-frame path before the fast path counts anything.
        if verdicts.len() >= bufs.len() {
            if let Some(transit) = self.transit_mask(port, bufs) {
                return self.rx_burst_rest(port, bufs, now_ns, verdicts, transit);
            }
        }
        self.rx_burst_each(port, bufs, now_ns, verdicts)
    }

    /// The first half of [`NicStack::rx_burst`]: which frames of the burst are transit
    /// frames (bit k for `bufs[k]`: IPv4 TCP/UDP, valid as [`fast_transit`] checks it, for
    /// neither the port's MAC nor its addresses). Their verdict is `Pass` and they are
    /// counted as passed here; hand the mask to [`NicStack::rx_burst_rest`] for the others
    /// unless every bit is set. `None` (nothing counted) when the fast path does not apply:
    /// full L4 checking, an unknown port, or more than 64 frames.
    ///
    /// A tight loop with no per-frame state, so that a forwarding lcore whose bursts are all
    /// transit pays only for reading each frame's headers (and needs no clock read).
    #[inline]
    pub fn transit_mask(&mut self, port: usize, bufs: &[B]) -> Option<u64> {
        let n = bufs.len();
        if self.cfg.l4_checksum != L4Checksum::Terminating || port >= self.ifaces.len() || n > 64 {
            return None;
        }
        let iface = &self.ifaces[port];
        let mac = mac48(&iface.mac);
        let transit = match iface.ipv4.as_slice() {
            [(ip, _)] => transit_scan(bufs, mac, |dst| dst != u32::from_le_bytes(*ip)),
            ips => transit_scan(bufs, mac, |dst| {
                !ips.iter().any(|(a, _)| u32::from_le_bytes(*a) == dst)
            }),
        };
        self.counters.passed += u64::from(transit.count_ones());
        Some(transit)
    }

    /// The second half of [`NicStack::rx_burst`]: the verdicts of the whole burst, given
    /// `transit` from [`NicStack::transit_mask`] for the same `bufs` (those frames are
    /// `Pass`, already counted; the others take the full receive path). Returns true when
    /// every verdict is `Pass`; false too when `verdicts` has fewer than `bufs.len()` slots
    /// (frames beyond it are handled, their verdicts not written).
    pub fn rx_burst_rest(
        &mut self,
        port: usize,
        bufs: &mut [B],
        now_ns: u64,
        verdicts: &mut [Verdict],
        transit: u64,
    ) -> bool {
        let n = bufs.len();
        let all = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        if n <= 64 && n <= verdicts.len() && transit & all == all {
            verdicts[..n].fill(Verdict::Pass);
            return true;
        }
        let mut all_pass = n <= verdicts.len();
        for (k, buf) in bufs.iter_mut().enumerate() {
            let d = if k < 64 && transit & (1 << k) != 0 {
                Verdict::Pass
            } else {
                self.rx_full(port, buf, now_ns)
            };
            all_pass &= d == Verdict::Pass;
            if let Some(v) = verdicts.get_mut(k) {
                *v = d;
            }
        }
        all_pass
    }

    /// [`NicStack::rx_burst`] one frame at a time through [`NicStack::rx`], for the cases its
    /// fast path does not cover (full L4 checking, an unknown port, bursts over 64 frames,
    /// short `verdicts`).
    fn rx_burst_each(
        &mut self,
        port: usize,
        bufs: &mut [B],
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) -> bool {
        let mut all_pass = true;
        for (k, buf) in bufs.iter_mut().enumerate() {
            let d = self.rx(port, buf, now_ns);
            all_pass &= d == Verdict::Pass;
            match verdicts.get_mut(k) {
                Some(v) => *v = d,
                None => all_pass = false,
            }
        }
        all_pass
    }

    /// The full receive path (everything but the transit fast path).
    fn rx_full(&mut self, port: usize, buf: &mut B, now_ns: u64) -> Verdict {
        let p = match parse_headers(buf.data()) {
            Ok(p) => p,
            Err(r) => return self.rx_drop(r),
        };
        if let L3::Ipv4 { dst, .. } = p.l3 {
            if self.cfg.l4_checksum == L4Checksum::All || self.ifaces[port].has_ip(dst) {
                if let Err(r) = verify_l4_checksum(buf.data(), &p) {
                    return self.rx_drop(r);
                }
            }
        }
        let mac = self.ifaces[port].mac;
        if p.dst_mac != mac && !is_group(&p.dst_mac) {
            return self.pass();
        }
        match p.l3 {
            L3::Arp => self.rx_arp(port, buf, now_ns),
            L3::Ipv4 {
                proto: IPPROTO_ICMP,
                src,
                dst,
                l4_off,
                ..
            } if self.ifaces[port].has_ip(dst)
                && icmp::is_echo_request(&buf.data()[l4_off..])
                && is_unicast_ip(src) =>
            {
                self.counters.icmp_echo_in += 1;
                icmp::echo_reply_in_place(buf.data_mut(), l4_off, mac);
                self.counters.icmp_echo_replies += 1;
                Verdict::Reply
            }
            _ => self.pass(),
        }
    }

    #[inline]
    fn pass(&mut self) -> Verdict {
        self.counters.passed += 1;
        Verdict::Pass
    }

    #[inline]
    fn rx_drop(&mut self, r: DropReason) -> Verdict {
        self.counters.drops.inc(r);
        Verdict::Drop(r)
    }

    fn rx_arp(&mut self, port: usize, buf: &mut B, now_ns: u64) -> Verdict {
        let Some(a) = ArpFields::read(EthernetFrame::new_unchecked(buf.data()).payload()) else {
            return self.rx_drop(DropReason::Truncated);
        };
        let iface = &self.ifaces[port];
        let for_us = iface.has_ip(a.tpa);
        let is_request = a.op == OP_REQUEST;
        if is_request {
            self.counters.arp_requests_in += 1;
        } else {
            self.counters.arp_replies_in += 1;
        }
        // Never learn probes (sender 0.0.0.0, RFC 5227), group or zero MACs, or our own
        // addresses claimed by someone else.
        let learnable =
            a.spa != [0; 4] && !is_group(&a.sha) && a.sha != [0; 6] && !iface.has_ip(a.spa);
        if learnable {
            let st = &mut self.ports[port];
            let merged = st.arp.update_if_present(a.spa, a.sha, now_ns);
            let resolving = st.pending.iter().any(|p| p.ip == a.spa);
            let inserted = !merged && (for_us || resolving);
            if inserted && st.arp.insert(a.spa, a.sha, now_ns) {
                self.counters.arp_table_evictions += 1;
            }
            if resolving {
                st.learnt = true;
            }
            if merged || inserted {
                if let Some(sh) = &st.shared {
                    sh.insert(a.spa, a.sha, now_ns);
                    st.shared_seen = sh.generation();
                }
            }
        }
        if is_request && for_us {
            arp::reply_in_place(buf.data_mut(), self.ifaces[port].mac);
            self.counters.arp_replies_out += 1;
            Verdict::Reply
        } else {
            Verdict::Consumed
        }
    }

    /// The MAC address of `ip` on `port` if known and fresh at `now_ns` (learnt less than
    /// `arp_timeout_ns` ago); `None` otherwise or for an out-of-range port.
    #[inline]
    pub fn arp_lookup(&self, port: usize, ip: [u8; 4], now_ns: u64) -> Option<[u8; 6]> {
        self.ports.get(port)?.arp.lookup(ip, now_ns)
    }

    /// The counters since creation.
    pub fn counters(&self) -> &StackCounters {
        &self.counters
    }

    /// The configuration of `port`; for a port out of range, an empty interface (zero MAC, no
    /// address, MTU 1500) rather than a panic.
    pub fn iface(&self, port: usize) -> &IfaceConfig {
        self.ifaces.get(port).unwrap_or(&NO_IFACE)
    }

    /// Number of ports.
    pub fn ports(&self) -> usize {
        self.ifaces.len()
    }

    /// True while some address is being resolved on some port (so [`NicStack::poll_tx`] may
    /// have work: requests, retries, held frames).
    pub fn has_pending(&self) -> bool {
        self.ports.iter().any(|p| !p.pending.is_empty())
    }

    /// Host frames held on `port` while their neighbours are resolved.
    pub fn pending_frames(&self, port: usize) -> usize {
        self.ports
            .get(port)
            .map_or(0, |s| s.pending.iter().map(|p| p.frames.len()).sum())
    }
}

#[inline]
fn is_unicast_ip(ip: [u8; 4]) -> bool {
    ip != [0; 4] && ip != [255; 4] && ip[0] < 224
}

#[cfg(test)]
mod tests;

//! The per-lcore L2/L3 duties of the NIC: validate received frames, answer ARP (RFC 826) and
//! ICMP echo (RFC 792) for the port's addresses, and prepare host-originated frames for the
//! wire (checksum fill, software TSO, next-hop MAC resolution with a pending queue).
//!
//! Sans-I/O: the caller passes buffers, an explicit `now_ns` and an allocator; frames to send
//! come back in `Vec`s the caller owns and reuses. `rx` never allocates.

use super::arp::{self, ArpFields, ArpTable, SharedNeighbours, ARP_FRAME_LEN, OP_REQUEST};
use super::csum::{self, ipv4_for_tx};
use super::icmp;
use super::parse::{
    fast_transit, fast_transit_raw, mac48, parse_headers, verify_l4_checksum, DropCounters,
    DropReason, ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_ICMP, IPPROTO_TCP, IPV4_HDR_LEN, L3,
};
use super::tso;
use super::verdict::Verdict;
use crate::buf::PacketBuf;
use offload_api::wire::ethernet::is_group;
use offload_api::wire::{EthernetFrame, Ipv4Packet};

/// Smallest Ethernet frame (IEEE 802.3, FCS excluded): host frames padded to it keep their
/// padding.
const MIN_FRAME_LEN: usize = 60;

/// Configuration of one port's interface.
///
/// Invariant: `mtu` is the IP MTU (Ethernet payload), not counting the 14-byte Ethernet header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfaceConfig {
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// The port's IPv4 addresses with their prefix lengths (0..=32).
    pub ipv4: Vec<([u8; 4], u8)>,
    /// IP MTU; 1500 by default (RFC 894).
    pub mtu: u16,
    /// More IPv4 prefixes on the port's link besides the subnets of `ipv4` (mTCP's
    /// `route.conf`): their addresses are resolved with ARP, as the subnets' are.
    pub on_link: Vec<([u8; 4], u8)>,
    /// Static neighbours (mTCP's `arp.conf`) as `(address, prefix length, MAC)`, longest
    /// prefix first: the first whose prefix holds the destination gives its MAC, before the
    /// ARP table and whatever the address's subnet; never expire, never asked for.
    pub neighbours: Vec<([u8; 4], u8, [u8; 6])>,
}

impl IfaceConfig {
    /// An interface with `mac`, `ipv4` and the default MTU of 1500.
    pub fn new(mac: [u8; 6], ipv4: Vec<([u8; 4], u8)>) -> Self {
        IfaceConfig {
            mac,
            ipv4,
            mtu: 1500,
            on_link: Vec::new(),
            neighbours: Vec::new(),
        }
    }

    /// True when `ip` is on the port's link: on one of its subnets or in one of its
    /// `on_link` prefixes.
    #[inline]
    pub fn is_on_link(&self, ip: [u8; 4]) -> bool {
        self.subnet_addr(ip).is_some() || self.on_link.iter().any(|(a, p)| same_subnet(*a, ip, *p))
    }

    /// True when `ip` is one of this interface's addresses.
    #[inline]
    pub fn has_ip(&self, ip: [u8; 4]) -> bool {
        self.ipv4.iter().any(|(a, _)| *a == ip)
    }

    /// The interface address whose subnet contains `ip`, if any.
    #[inline]
    pub fn subnet_addr(&self, ip: [u8; 4]) -> Option<[u8; 4]> {
        self.ipv4
            .iter()
            .find(|(a, p)| same_subnet(*a, ip, *p))
            .map(|(a, _)| *a)
    }

    /// True when `ip` is the directed broadcast address of one of the interface's subnets
    /// (prefixes shorter than /31 only, RFC 3021).
    #[inline]
    fn is_subnet_broadcast(&self, ip: [u8; 4]) -> bool {
        self.ipv4.iter().any(|(a, p)| {
            *p < 31 && same_subnet(*a, ip, *p) && (u32::from_be_bytes(ip) | mask(*p)) == u32::MAX
        })
    }
}

impl Default for IfaceConfig {
    fn default() -> Self {
        IfaceConfig::new([0; 6], Vec::new())
    }
}

#[inline]
fn mask(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p if p >= 32 => u32::MAX,
        p => u32::MAX << (32 - p as u32),
    }
}

#[inline]
fn same_subnet(a: [u8; 4], b: [u8; 4], prefix: u8) -> bool {
    let m = mask(prefix);
    u32::from_be_bytes(a) & m == u32::from_be_bytes(b) & m
}

/// What [`NicStack::iface`] answers for a port out of range.
static NO_IFACE: IfaceConfig = IfaceConfig {
    mac: [0; 6],
    ipv4: Vec::new(),
    mtu: 1500,
    on_link: Vec::new(),
    neighbours: Vec::new(),
};

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

/// Where a host frame goes next.
enum NextHop {
    /// Send to this MAC now.
    Mac([u8; 6]),
    /// Off the port's link (its subnets and `on_link` prefixes) and not a static
    /// neighbour (no gateway configuration yet).
    Unreachable,
    /// On a subnet but not in the ARP table: hold and ask.
    Unknown,
}

/// A host frame held while its neighbour is resolved: in a buffer, or as bytes when it is
/// larger than one buffer (a TCP segment the host built for TSO).
enum Held<B> {
    /// A frame in a packet buffer.
    Buf(B),
    /// A frame larger than a buffer, segmented into buffers when it is released.
    Bytes(Vec<u8>),
}

impl<B: PacketBuf> Held<B> {
    fn len(&self) -> usize {
        match self {
            Held::Buf(b) => b.len(),
            Held::Bytes(v) => v.len(),
        }
    }
}

/// An address being resolved, with the host frames waiting for it.
/// The least a held frame is charged against [`StackConfig::pending_bytes_per_ip`]: one
/// packet buffer's data room, whatever the frame's length.
pub const HELD_FRAME_CHARGE: usize = 2048;

struct Pending<B> {
    ip: [u8; 4],
    /// What `frames` are charged against the per-address bound.
    charged: usize,
    /// Host frames, checksums filled unless they need TSO (done on release).
    frames: Vec<Held<B>>,
    /// ARP requests sent so far.
    sent: u32,
    /// When the next request (or the give-up) is due.
    next_ns: u64,
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
    /// - Malformed (see [`parse`]) or `port` out of range (`Unsupported`) → `Drop`, counted.
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

    /// A host-originated Ethernet/IPv4 frame to send on `port`.
    ///
    /// Fills checksums ([`csum::fill_checksums`]); if the IP packet is longer than the port MTU
    /// and it is TCP, splits it into MSS-sized segments ([`tso::segment`], buffers from
    /// `alloc`); a non-TCP packet over the MTU is dropped (`TsoTooLarge`). A zero source MAC is
    /// replaced by the port's; bytes after the IP packet are cut (Ethernet padding up to 60
    /// bytes is kept). If the destination MAC is all zero it is resolved from the
    /// destination IP: limited and subnet-directed broadcast → ff:ff:ff:ff:ff:ff, multicast →
    /// 01:00:5e + low 23 bits (RFC 1112 §6.4), a static neighbour ([`IfaceConfig::neighbours`])
    /// → its MAC, an address on one of the port's subnets or `on_link` prefixes → the ARP
    /// table; anything else → `ArpUnresolved` (no gateway configuration yet). An unknown neighbour
    /// holds the frame (at most `pending_bytes_per_ip`, beyond → `ArpUnresolved`) and an ARP request
    /// goes out on the next [`NicStack::poll_tx`], which also releases the frame once resolved.
    /// A stale entry is still used while it is refreshed in the background. Non-IPv4 frames
    /// with a destination MAC go out unchanged; without one → `Unsupported`.
    ///
    /// Returns the number of frames pushed to `out` (0 when held), or the drop reason, counted
    /// once per host frame. Invariant: on `Err`, `out` is unchanged and `buf` is freed.
    pub fn host_tx(
        &mut self,
        port: usize,
        buf: B,
        now_ns: u64,
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) -> Result<usize, DropReason> {
        let r = self.host_tx_inner(port, buf, now_ns, alloc, out);
        if let Err(reason) = r {
            self.counters.drops.inc(reason);
        }
        r
    }

    fn host_tx_inner(
        &mut self,
        port: usize,
        mut buf: B,
        now_ns: u64,
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) -> Result<usize, DropReason> {
        self.begin_host_tx(port)?;
        let iface = &self.ifaces[port];
        let mut eth =
            EthernetFrame::new_checked(buf.data_mut()).map_err(|_| DropReason::Truncated)?;
        let dst_zero = eth.dst_addr() == [0; 6];
        if eth.src_addr() == [0; 6] {
            eth.set_src_addr(iface.mac);
        }
        if eth.ethertype() != ETHERTYPE_IPV4 {
            if dst_zero {
                return Err(DropReason::Unsupported);
            }
            out.push(buf);
            return Ok(1);
        }
        let total = ipv4_for_tx(eth.payload())?.total_len();
        // Bytes after the IP packet are not sent, except up to the Ethernet minimum.
        let keep = (ETH_HDR_LEN + total).max(MIN_FRAME_LEN);
        if buf.len() > keep {
            let extra = buf.len() - keep;
            buf.trim(extra);
        }
        let iface = &self.ifaces[port];
        let d = buf.data_mut();
        let needs_tso = total > iface.mtu as usize;
        if needs_tso {
            if Ipv4Packet::new_unchecked(&d[ETH_HDR_LEN..]).protocol() != IPPROTO_TCP {
                return Err(DropReason::TsoTooLarge);
            }
            tso::mss_for(d, iface.mtu)?;
        } else {
            csum::fill_checksums(d)?;
        }
        if dst_zero {
            if let Some(ip) = self.resolve_dst(port, buf.data_mut(), now_ns)? {
                return self.hold(port, ip, Held::Buf(buf), now_ns);
            }
        }
        self.emit(port, buf, needs_tso, alloc, out)
    }

    /// A host frame given as bytes, of any length, to send on `port` (how frames from the host
    /// side arrive). A frame that fits in one buffer from `alloc` is copied into it and takes
    /// [`NicStack::host_tx`]. A larger one must be an IPv4 TCP segment longer than the port
    /// MTU, the host's TSO request (up to 64 KB): it gets the same MAC and ARP treatment and
    /// is segmented straight from the bytes; anything else that large is `TsoTooLarge`.
    ///
    /// Returns and counts as [`NicStack::host_tx`] does.
    pub fn host_tx_frame(
        &mut self,
        port: usize,
        frame: &[u8],
        now_ns: u64,
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) -> Result<usize, DropReason> {
        let r = match alloc() {
            Some(mut buf) => {
                if buf.set_frame(frame) {
                    return self.host_tx(port, buf, now_ns, alloc, out);
                }
                drop(buf);
                self.host_tx_big(port, frame, now_ns, alloc, out)
            }
            None => {
                self.counters.host_tx_packets += 1;
                Err(DropReason::NoBuffer)
            }
        };
        if let Err(reason) = r {
            self.counters.drops.inc(reason);
        }
        r
    }

    fn host_tx_big(
        &mut self,
        port: usize,
        frame: &[u8],
        now_ns: u64,
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) -> Result<usize, DropReason> {
        self.begin_host_tx(port)?;
        let eth = EthernetFrame::new_unchecked(frame);
        if frame.len() < ETH_HDR_LEN + IPV4_HDR_LEN || eth.ethertype() != ETHERTYPE_IPV4 {
            return Err(DropReason::TsoTooLarge);
        }
        let ip = ipv4_for_tx(eth.payload_slice())?;
        let (total, proto) = (ip.total_len(), ip.protocol());
        let iface = &self.ifaces[port];
        if total <= iface.mtu as usize || proto != IPPROTO_TCP {
            return Err(DropReason::TsoTooLarge);
        }
        tso::mss_for(frame, iface.mtu)?;
        let mut f = frame[..ETH_HDR_LEN + total].to_vec();
        let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
        if eth.src_addr() == [0; 6] {
            eth.set_src_addr(iface.mac);
        }
        if eth.dst_addr() == [0; 6] {
            if let Some(ip) = self.resolve_dst(port, &mut f, now_ns)? {
                return self.hold(port, ip, Held::Bytes(f), now_ns);
            }
        }
        self.segment_bytes(port, &f, alloc, out)
    }

    /// Sets the zero destination MAC of the Ethernet/IPv4 host frame `f` from its destination
    /// address ([`NicStack::next_hop_mac`]); `Ok(Some(ip))` when `ip` must be resolved first
    /// (hold the frame), `Err(ArpUnresolved)` when it is off every subnet of the port.
    fn resolve_dst(
        &mut self,
        port: usize,
        f: &mut [u8],
        now_ns: u64,
    ) -> Result<Option<[u8; 4]>, DropReason> {
        let mut eth = EthernetFrame::new_unchecked(f);
        let dst_ip = Ipv4Packet::new_unchecked(eth.payload()).dst_addr();
        match self.next_hop_mac(port, dst_ip, now_ns) {
            NextHop::Mac(mac) => {
                eth.set_dst_addr(mac);
                Ok(None)
            }
            NextHop::Unreachable => Err(DropReason::ArpUnresolved),
            NextHop::Unknown => Ok(Some(dst_ip)),
        }
    }

    /// Counts a host frame for `port`; `Unsupported` (not counted as a host frame) when the
    /// port does not exist.
    fn begin_host_tx(&mut self, port: usize) -> Result<(), DropReason> {
        if port >= self.ifaces.len() {
            return Err(DropReason::Unsupported);
        }
        self.counters.host_tx_packets += 1;
        Ok(())
    }

    /// Segments a TSO frame given as bytes (MACs set) into buffers from `alloc`.
    fn segment_bytes(
        &mut self,
        port: usize,
        frame: &[u8],
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) -> Result<usize, DropReason> {
        let n = tso::segment(frame, self.ifaces[port].mtu, alloc, out)?;
        self.counters.tso_segments += n as u64;
        Ok(n)
    }

    /// Sends a frame whose MACs are set: TSO if needed, else push as is.
    fn emit(
        &mut self,
        port: usize,
        buf: B,
        needs_tso: bool,
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) -> Result<usize, DropReason> {
        if needs_tso {
            let n = tso::segment(buf.data(), self.ifaces[port].mtu, alloc, out)?;
            self.counters.tso_segments += n as u64;
            Ok(n)
        } else {
            out.push(buf);
            Ok(1)
        }
    }

    /// The destination MAC for `ip` on `port`.
    fn next_hop_mac(&mut self, port: usize, ip: [u8; 4], now_ns: u64) -> NextHop {
        let iface = &self.ifaces[port];
        if ip == [255; 4] || iface.is_subnet_broadcast(ip) {
            return NextHop::Mac([0xff; 6]);
        }
        if ip[0] & 0xf0 == 0xe0 {
            return NextHop::Mac([0x01, 0x00, 0x5e, ip[1] & 0x7f, ip[2], ip[3]]);
        }
        if let Some((_, _, mac)) = iface
            .neighbours
            .iter()
            .find(|(a, p, _)| same_subnet(*a, ip, *p))
        {
            return NextHop::Mac(*mac);
        }
        if !iface.is_on_link(ip) {
            return NextHop::Unreachable;
        }
        match self.ports[port].arp.lookup_any(ip, now_ns) {
            Some((mac, true)) => NextHop::Mac(mac),
            Some((mac, false)) => {
                if let Some(mac) = self.learn_from_shared(port, ip, now_ns) {
                    return NextHop::Mac(mac);
                }
                self.resolve_inner(port, ip, now_ns);
                NextHop::Mac(mac)
            }
            None => match self.learn_from_shared(port, ip, now_ns) {
                Some(mac) => NextHop::Mac(mac),
                None => NextHop::Unknown,
            },
        }
    }

    /// Holds `buf` until `ip` is resolved.
    fn hold(
        &mut self,
        port: usize,
        ip: [u8; 4],
        buf: Held<B>,
        now_ns: u64,
    ) -> Result<usize, DropReason> {
        let cap = self.cfg.pending_bytes_per_ip;
        let charge = buf.len().max(HELD_FRAME_CHARGE);
        let max_ips = self.cfg.arp_table_size.max(1);
        let max_bytes = self.cfg.pending_bytes_per_port;
        let st = &mut self.ports[port];
        if st.held_bytes + buf.len() > max_bytes {
            return Err(DropReason::ArpUnresolved);
        }
        if let Some(p) = st.pending.iter_mut().find(|p| p.ip == ip) {
            if p.charged + charge > cap {
                return Err(DropReason::ArpUnresolved);
            }
            st.held_bytes += buf.len();
            p.charged += charge;
            p.frames.push(buf);
            return Ok(0);
        }
        if st.pending.len() >= max_ips || charge > cap {
            return Err(DropReason::ArpUnresolved);
        }
        st.held_bytes += buf.len();
        let mut frames = Vec::with_capacity(4);
        frames.push(buf);
        st.pending.push(Pending {
            ip,
            charged: charge,
            frames,
            sent: 0,
            next_ns: now_ns,
        });
        st.next_deadline = st.next_deadline.min(now_ns);
        Ok(0)
    }

    /// Frames the stack itself wants to send on `port` now: ARP requests (new, and retries
    /// every `arp_retry_ns` up to `arp_max_retries`; after the last one times out the held
    /// frames are dropped as `ArpUnresolved`, counted, and `arp_resolution_failed` counts the
    /// address) and held frames whose MAC got resolved (segmented by TSO when needed). Uses
    /// `alloc` for new frames; `NoBuffer` is counted when it returns `None` (the request is
    /// tried again on the next call).
    ///
    /// Invariant: cheap when nothing is due (no pending address, or none learnt and the
    /// earliest deadline not reached); `port` out of range is ignored.
    pub fn poll_tx(
        &mut self,
        port: usize,
        now_ns: u64,
        alloc: &mut dyn FnMut() -> Option<B>,
        out: &mut Vec<B>,
    ) {
        let Some(st) = self.ports.get_mut(port) else {
            return;
        };
        if st.pending.is_empty() {
            return;
        }
        // Another lcore of the port learnt something: a pending address may be among it.
        let shared_new = st.shared.as_ref().map(|sh| sh.generation());
        let from_others = shared_new.is_some_and(|g| g != st.shared_seen);
        if !st.learnt && !from_others && now_ns < st.next_deadline {
            return;
        }
        if let Some(g) = shared_new {
            st.shared_seen = g;
        }
        st.learnt = false;
        let mut i = 0;
        while i < self.ports[port].pending.len() {
            let ip = self.ports[port].pending[i].ip;
            let known = self.ports[port].arp.lookup(ip, now_ns);
            if let Some(mac) = known.or_else(|| self.learn_from_shared(port, ip, now_ns)) {
                let p = self.ports[port].pending.swap_remove(i);
                let bytes: usize = p.frames.iter().map(Held::len).sum();
                self.ports[port].held_bytes -= bytes;
                for held in p.frames {
                    let r = match held {
                        Held::Buf(mut b) => {
                            EthernetFrame::new_unchecked(b.data_mut()).set_dst_addr(mac);
                            let needs_tso = ipv4_for_tx(&b.data()[ETH_HDR_LEN..])
                                .is_ok_and(|ip| ip.total_len() > self.ifaces[port].mtu as usize);
                            self.emit(port, b, needs_tso, alloc, out)
                        }
                        Held::Bytes(mut f) => {
                            EthernetFrame::new_unchecked(&mut f[..]).set_dst_addr(mac);
                            self.segment_bytes(port, &f, alloc, out)
                        }
                    };
                    if let Err(r) = r {
                        self.counters.drops.inc(r);
                    }
                }
                continue;
            }
            let p = &mut self.ports[port].pending[i];
            if now_ns < p.next_ns {
                i += 1;
                continue;
            }
            if p.sent > self.cfg.arp_max_retries {
                let p = self.ports[port].pending.swap_remove(i);
                let bytes: usize = p.frames.iter().map(Held::len).sum();
                self.ports[port].held_bytes -= bytes;
                self.counters
                    .drops
                    .add_n(DropReason::ArpUnresolved, p.frames.len() as u64);
                self.counters.arp_resolution_failed += 1;
                // A stale entry that no longer answers is forgotten.
                self.ports[port].arp.remove(ip);
                continue;
            }
            let Some(mut b) = alloc() else {
                self.counters.drops.inc(DropReason::NoBuffer);
                i += 1;
                continue;
            };
            if !tso::set_len(&mut b, ARP_FRAME_LEN) {
                self.counters.drops.inc(DropReason::NoBuffer);
                i += 1;
                continue;
            }
            let iface = &self.ifaces[port];
            let our_ip = iface
                .subnet_addr(ip)
                .or_else(|| iface.ipv4.first().map(|(a, _)| *a))
                .unwrap_or([0; 4]);
            arp::write_request(b.data_mut(), iface.mac, our_ip, ip);
            out.push(b);
            self.counters.arp_requests_out += 1;
            let p = &mut self.ports[port].pending[i];
            p.sent += 1;
            p.next_ns = now_ns.saturating_add(self.cfg.arp_retry_ns);
            i += 1;
        }
        let st = &mut self.ports[port];
        st.next_deadline = st
            .pending
            .iter()
            .map(|p| p.next_ns)
            .min()
            .unwrap_or(u64::MAX);
    }

    /// Ask to resolve `ip` on `port`: an ARP request goes out on the next `poll_tx` unless the
    /// address is known and fresh or already being resolved. Out-of-range ports are ignored.
    pub fn resolve(&mut self, port: usize, ip: [u8; 4], now_ns: u64) {
        if port >= self.ports.len() || self.ports[port].arp.lookup(ip, now_ns).is_some() {
            return;
        }
        self.resolve_inner(port, ip, now_ns);
    }

    fn resolve_inner(&mut self, port: usize, ip: [u8; 4], now_ns: u64) {
        let max_ips = self.cfg.arp_table_size.max(1);
        let st = &mut self.ports[port];
        if st.pending.len() >= max_ips || st.pending.iter().any(|p| p.ip == ip) {
            return;
        }
        st.pending.push(Pending {
            ip,
            charged: 0,
            frames: Vec::new(),
            sent: 0,
            next_ns: now_ns,
        });
        st.next_deadline = st.next_deadline.min(now_ns);
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

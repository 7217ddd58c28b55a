//! The host-transmit half of [`NicStack`]: host frames to the wire (checksum fill, software
//! TSO, zero MACs filled), next-hop MAC resolution (broadcast, multicast per RFC 1112 §6.4,
//! static neighbours, the ARP table of RFC 826), and the per-address queue of frames held
//! while their neighbour is resolved, released or given up by [`NicStack::poll_tx`].

use offload_api::wire::{EthernetFrame, Ipv4Packet};

use super::iface::same_subnet;
use super::NicStack;
use crate::buf::PacketBuf;
use crate::net::arp::{self, ARP_FRAME_LEN};
use crate::net::csum::{self, ipv4_for_tx};
use crate::net::parse::{DropReason, ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP, IPV4_HDR_LEN};
use crate::net::tso;

/// Smallest Ethernet frame (IEEE 802.3, FCS excluded): host frames padded to it keep their
/// padding.
const MIN_FRAME_LEN: usize = 60;

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
pub(super) enum Held<B> {
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

/// The least a held frame is charged against [`super::StackConfig::pending_bytes_per_ip`]: one
/// packet buffer's data room, whatever the frame's length.
pub const HELD_FRAME_CHARGE: usize = 2048;

/// An address being resolved, with the host frames waiting for it.
pub(super) struct Pending<B> {
    /// The address.
    pub(super) ip: [u8; 4],
    /// What `frames` are charged against the per-address bound.
    charged: usize,
    /// Host frames, checksums filled unless they need TSO (done on release).
    pub(super) frames: Vec<Held<B>>,
    /// ARP requests sent so far.
    sent: u32,
    /// When the next request (or the give-up) is due.
    next_ns: u64,
}

impl<B: PacketBuf> NicStack<B> {
    /// A host-originated Ethernet/IPv4 frame to send on `port`.
    ///
    /// Fills checksums ([`csum::fill_checksums`]); if the IP packet is longer than the port MTU
    /// and it is TCP, splits it into MSS-sized segments ([`tso::segment`], buffers from
    /// `alloc`); a non-TCP packet over the MTU is dropped (`TsoTooLarge`). A zero source MAC is
    /// replaced by the port's; bytes after the IP packet are cut (Ethernet padding up to 60
    /// bytes is kept). If the destination MAC is all zero it is resolved from the
    /// destination IP: limited and subnet-directed broadcast → ff:ff:ff:ff:ff:ff, multicast →
    /// 01:00:5e + low 23 bits (RFC 1112 §6.4), a static neighbour
    /// ([`super::IfaceConfig::neighbours`]) → its MAC, an address on one of the port's subnets or `on_link` prefixes → the ARP
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
}

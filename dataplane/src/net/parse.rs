//! Validation of frames received from a wire port: Ethernet, ARP, IPv4, TCP, UDP, ICMP.
//!
//! [`parse`] reads the bytes directly (no allocation, no copies) and either describes the frame
//! ([`Parsed`]) or names why it must be dropped ([`DropReason`]). It never panics: every index
//! is guarded by a length check first.

use offload_api::wire::checksum::{ipv4_header20_words, is_multiple_of_ffff};
use offload_api::wire::ethernet::{self, EthernetFrame};
use offload_api::wire::ipv4::{self, Ipv4Error, Ipv4Packet};
use offload_api::wire::tcp::{self, TcpError, TcpPacket};

use super::csum;

/// Where the TCP or UDP header of an Ethernet/IPv4 frame without IP options starts.
const L4_AT: usize = ETH_HDR_LEN + IPV4_HDR_LEN;
/// The UDP length field (RFC 768), from the start of the UDP header.
const UDP_LENGTH_AT: usize = 4;
/// The UDP checksum field (RFC 768), from the start of the UDP header.
pub(crate) const UDP_CHECKSUM_AT: usize = 6;
/// Length of the UDP header (RFC 768).
const UDP_HDR_LEN: usize = 8;
/// Bytes [`fast_transit_raw`] reads: Ethernet, IPv4 without options, the TCP header up to
/// its data offset, or the UDP header.
const FAST_LEN: usize = L4_AT + tcp::FIXED_HEADER_LEN;

pub use offload_api::{
    ETHERTYPE_ARP, ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP,
    IPV4_HDR_LEN,
};
/// Length of an Ethernet/IPv4 ARP body (RFC 826 with hln = 6, pln = 4).
pub const ARP_LEN: usize = 28;

/// Why a frame was dropped. Each reason has its own counter in [`DropCounters`].
///
/// Invariant: the discriminants are `0..12` in declaration order, so `r as usize` indexes
/// [`DropReason::ALL`] and the counter array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The frame ends before a header it announces (Ethernet, ARP, IPv4 header or payload
    /// per `total_length`, TCP/UDP/ICMP header).
    Truncated,
    /// A length field is inconsistent: IPv4 IHL < 5 or `total_length` < IHL*4 (RFC 791 §3.1),
    /// TCP data offset < 5 or beyond the segment (RFC 9293 §3.1), UDP length ≠ IP payload
    /// length (RFC 768).
    BadLength,
    /// The IP version field is not 4 (RFC 791 §3.1).
    BadIpVersion,
    /// The IPv4 header checksum does not verify (RFC 791 §3.1, RFC 1071).
    BadIpChecksum,
    /// The TCP, UDP or ICMP checksum does not verify (RFC 9293 §3.1, RFC 768, RFC 792).
    BadL4Checksum,
    /// The IPv4 header carries options (IHL > 5); the fast path does not process them.
    IpOptions,
    /// The IPv4 packet is a fragment (MF set or fragment offset ≠ 0, RFC 791 §3.2); the NIC
    /// does no reassembly.
    Fragment,
    /// A host ↔ NIC control EtherType (AccelTCP App. A) arrived from a wire port.
    ControlFromWire,
    /// No packet buffer could be allocated.
    NoBuffer,
    /// The next hop's MAC address could not be resolved by ARP (RFC 826), or the destination
    /// is off every subnet of the port, or the per-destination pending queue was full.
    ArpUnresolved,
    /// A non-TCP packet longer than the port MTU, or a TCP packet that cannot be segmented.
    TsoTooLarge,
    /// Something this NIC does not handle (non Ethernet/IPv4 ARP, unknown ARP opcode, a port
    /// index out of range, a host frame without a resolvable destination).
    Unsupported,
}

impl DropReason {
    /// Every reason, in discriminant order.
    pub const ALL: [DropReason; 12] = [
        DropReason::Truncated,
        DropReason::BadLength,
        DropReason::BadIpVersion,
        DropReason::BadIpChecksum,
        DropReason::BadL4Checksum,
        DropReason::IpOptions,
        DropReason::Fragment,
        DropReason::ControlFromWire,
        DropReason::NoBuffer,
        DropReason::ArpUnresolved,
        DropReason::TsoTooLarge,
        DropReason::Unsupported,
    ];

    /// The reason's stable snake_case name, used in statistics output (e.g. "bad_ip_checksum").
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::BadLength => "bad_length",
            DropReason::BadIpVersion => "bad_ip_version",
            DropReason::BadIpChecksum => "bad_ip_checksum",
            DropReason::BadL4Checksum => "bad_l4_checksum",
            DropReason::IpOptions => "ip_options",
            DropReason::Fragment => "fragment",
            DropReason::ControlFromWire => "control_from_wire",
            DropReason::NoBuffer => "no_buffer",
            DropReason::ArpUnresolved => "arp_unresolved",
            DropReason::TsoTooLarge => "tso_too_large",
            DropReason::Unsupported => "unsupported",
        }
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One drop counter per [`DropReason`].
///
/// Invariant: `total()` is the sum of `get(r)` over [`DropReason::ALL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounters {
    counts: [u64; 12],
}

impl DropCounters {
    /// Counts one drop for `r`.
    #[inline]
    pub fn inc(&mut self, r: DropReason) {
        self.counts[r as usize] += 1;
    }

    /// Counts `n` drops for `r`.
    #[inline]
    pub fn add_n(&mut self, r: DropReason, n: u64) {
        self.counts[r as usize] += n;
    }

    /// The drops counted for `r`.
    #[inline]
    pub fn get(&self, r: DropReason) -> u64 {
        self.counts[r as usize]
    }

    /// All drops, every reason together.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds every counter of `o` to this one (aggregation across lcores).
    pub fn add(&mut self, o: &DropCounters) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += *b;
        }
    }

    /// `(reason, count)` for every reason, in [`DropReason::ALL`] order (zeros included).
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(move |&r| (r, self.get(r)))
    }
}

/// What a frame is, after validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L3 {
    /// An Ethernet/IPv4 ARP request or reply; the 28-byte body starts at [`ETH_HDR_LEN`].
    Arp,
    /// A validated, unfragmented IPv4 packet without options. `l4_off` is the offset of the L4
    /// header in the frame and `l4_len` its length up to `total_length` (Ethernet padding
    /// excluded), so `frame[l4_off..l4_off + l4_len]` is always in bounds.
    Ipv4 {
        /// IP protocol number (RFC 791 §3.1).
        proto: u8,
        /// Source address.
        src: [u8; 4],
        /// Destination address.
        dst: [u8; 4],
        /// Offset of the L4 header from the start of the frame.
        l4_off: usize,
        /// Length of the L4 header and payload.
        l4_len: usize,
    },
    /// Any other EtherType (IPv6, VLAN-tagged, LLDP, ...): not inspected.
    Other(u16),
}

/// A validated frame: its Ethernet addressing and what it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// Destination MAC address.
    pub dst_mac: [u8; 6],
    /// Source MAC address.
    pub src_mac: [u8; 6],
    /// EtherType (RFC 894).
    pub ethertype: u16,
    /// The network-layer view.
    pub l3: L3,
}

#[inline(always)]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// Validate a frame received from a wire port.
///
/// Checks, in order: Ethernet header present (`Truncated`); control EtherTypes
/// (`offload_api::is_control_ethertype`) refused (`ControlFromWire`); ARP (RFC 826): fixed
/// part present (`Truncated`), Ethernet/IPv4 with opcode request or reply (`Unsupported`),
/// full 28-byte body (`Truncated`); IPv4 (RFC 791 §3.1): 20 bytes present (`Truncated`),
/// version 4 (`BadIpVersion`), IHL ≥ 5 (`BadLength`), header present (`Truncated`), IHL > 5
/// (`IpOptions`), `total_length` < IHL*4 (`BadLength`) or beyond the frame (`Truncated`:
/// the frame was cut; Ethernet padding beyond `total_length` is allowed), header checksum
/// (`BadIpChecksum`), MF or fragment offset ≠ 0 (`Fragment`); TCP (RFC 9293 §3.1): 20-byte
/// header (`Truncated`), data offset ≥ 5 and within the segment (`BadLength`), checksum
/// (`BadL4Checksum`); UDP (RFC 768): 8-byte header (`Truncated`), length field equal to the
/// IP payload length (`BadLength`), checksum unless 0 (`BadL4Checksum`); ICMP (RFC 792):
/// 8-byte header (`Truncated`), checksum (`BadL4Checksum`). Other IP protocols and other
/// EtherTypes pass with no further check.
///
/// Invariant: never panics and never allocates, for any input.
#[inline]
pub fn parse(frame: &[u8]) -> Result<Parsed, DropReason> {
    let p = parse_headers(frame)?;
    verify_l4_checksum(frame, &p)?;
    Ok(p)
}

/// Verifies the TCP, UDP (unless its checksum field is 0) or ICMP checksum of a frame that
/// [`parse_headers`] accepted (RFC 9293 §3.1, RFC 768, RFC 792); `BadL4Checksum` otherwise.
/// Frames that are not IPv4, or carry another protocol, have nothing to verify.
///
/// Invariant: never panics for a `(frame, parsed)` pair produced by [`parse_headers`].
#[inline]
pub fn verify_l4_checksum(frame: &[u8], parsed: &Parsed) -> Result<(), DropReason> {
    let L3::Ipv4 {
        proto,
        src,
        dst,
        l4_off,
        l4_len,
    } = parsed.l3
    else {
        return Ok(());
    };
    let Some(l4) = frame.get(l4_off..l4_off + l4_len) else {
        return Err(DropReason::Truncated);
    };
    let ok = match proto {
        IPPROTO_TCP => csum::verify_l4(src, dst, proto, l4),
        IPPROTO_UDP => be16(l4, UDP_CHECKSUM_AT) == 0 || csum::verify_l4(src, dst, proto, l4),
        IPPROTO_ICMP => csum::verify(l4),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(DropReason::BadL4Checksum)
    }
}

/// The forwarding fast path: `Some(destination address)` when `frame` is an IPv4 TCP or UDP
/// packet without options, not a fragment, with a valid IP header checksum and consistent
/// lengths, whose destination MAC is neither `our_mac` nor a group address; `None` for
/// anything else, which then takes [`parse_headers`].
///
/// Straight-line code over fixed offsets, so that the per-packet cost of forwarding stays
/// near the cost of moving the packet.
///
/// Invariant: `fast_transit(f, m) == Some(d)` implies `parse_headers(f)` is
/// `Ok(Parsed { l3: L3::Ipv4 { dst: d, proto: 6 | 17, .. }, .. })` with a destination MAC
/// that is neither `m` nor a group address (checked by a property test).
#[inline(always)]
pub fn fast_transit(frame: &[u8], our_mac: &[u8; 6]) -> Option<[u8; 4]> {
    fast_transit_raw(frame, mac48(our_mac)).map(u32::to_le_bytes)
}

/// [`fast_transit`] with the MAC pre-packed (`our_mac` as [`mac48`] packs it: little-endian
/// in the low 48 bits, the high 16 bits zero) and the destination address returned as the
/// little-endian `u32` of its four bytes, for loops that hoist the packing out
/// ([`crate::net::NicStack::rx_burst`]).
///
/// One length check, then the Ethernet, IPv4 and TCP views over the checked bytes: every
/// accessor is a load at a constant offset with no bounds check left. Frames for our MAC,
/// group frames and cut frames leave first; the fixed-value checks are or-ed into one
/// integer that is zero only for a valid frame, and the IPv4 header checksum is a
/// divisibility test (one multiplication): a valid frame costs a few dozen instructions and a
/// few well-predicted branches (BENCHMARKS.md, forwarding).
#[inline(always)]
pub fn fast_transit_raw(frame: &[u8], our_mac: u64) -> Option<u32> {
    let len = frame.len();
    // One length check; every read below is at a constant offset inside these bytes.
    let f: &[u8; FAST_LEN] = frame.first_chunk()?;
    let eth = EthernetFrame::new_unchecked(&f[..]);
    let ip = Ipv4Packet::new_unchecked(&f[ETH_HDR_LEN..]);
    let ip_header: &[u8; IPV4_HDR_LEN] = ip.into_inner().first_chunk()?;
    let dst_mac = eth.dst_addr();
    let total = ip.total_len();
    // Frames for this NIC (its MAC), group frames (IEEE 802.3 §3.2.3) and cut frames are
    // refused first; they are the common non-transit frames.
    if (mac48(&dst_mac) == our_mac) | ethernet::is_group(&dst_mac) | (ETH_HDR_LEN + total > len) {
        return None;
    }
    // Zero exactly when: EtherType IPv4, version 4 and IHL 5 (RFC 894, RFC 791 §3.1); not a
    // fragment (MF clear, offset 0, RFC 791 §3.2). Or-ed as integers so that they cost one
    // branch.
    let fixed = u32::from(eth.ethertype() != ETHERTYPE_IPV4)
        | u32::from(ip.version() != ipv4::VERSION || ip.header_len() != IPV4_HDR_LEN)
        | u32::from(ip.is_fragment());
    // IPv4 header checksum (RFC 791 §3.1, RFC 1071), as `verify_ipv4_header20` tests it less
    // its non-zero test: a header whose version/IHL byte is 0x45 never sums to 0.
    if (fixed != 0) | !is_multiple_of_ffff(ipv4_header20_words(ip_header)) {
        return None;
    }
    let ok = match ip.protocol() {
        IPPROTO_UDP => {
            be16(f, L4_AT + UDP_LENGTH_AT) as usize == total.wrapping_sub(IPV4_HDR_LEN)
                && total >= IPV4_HDR_LEN + UDP_HDR_LEN
        }
        IPPROTO_TCP => {
            let doff = TcpPacket::new_unchecked(&f[L4_AT..]).header_len();
            doff >= tcp::FIXED_HEADER_LEN && doff + IPV4_HDR_LEN <= total
        }
        _ => false,
    };
    ok.then_some(u32::from_le_bytes(ip.dst_addr()))
}

/// A MAC address as the little-endian integer of its six bytes (the packing of
/// [`fast_transit_raw`]'s `our_mac`).
#[inline(always)]
pub fn mac48(mac: &[u8; 6]) -> u64 {
    u64::from_le_bytes([mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], 0, 0])
}

/// [`parse`] without the L4 checksum: every structural check and the IPv4 header checksum,
/// which is what a forwarding device validates (RFC 1812 §5.2.2); the TCP/UDP/ICMP checksum is
/// end to end and is checked with [`verify_l4_checksum`] where the frame terminates.
///
/// Invariant: never panics and never allocates, for any input; `parse(f)` is
/// `parse_headers(f)` followed by `verify_l4_checksum(f, ..)`.
#[inline(always)]
pub fn parse_headers(frame: &[u8]) -> Result<Parsed, DropReason> {
    let eth = EthernetFrame::new_checked(frame).map_err(|_| DropReason::Truncated)?;
    let ethertype = eth.ethertype();
    let l3 = match ethertype {
        ETHERTYPE_IPV4 => parse_ipv4(eth.payload_slice())?,
        ETHERTYPE_ARP => {
            parse_arp(eth.payload_slice())?;
            L3::Arp
        }
        t if offload_api::is_control_ethertype(t) => return Err(DropReason::ControlFromWire),
        t => L3::Other(t),
    };
    Ok(Parsed {
        dst_mac: eth.dst_addr(),
        src_mac: eth.src_addr(),
        ethertype,
        l3,
    })
}

#[inline]
fn parse_arp(a: &[u8]) -> Result<(), DropReason> {
    if a.len() < 8 {
        return Err(DropReason::Truncated);
    }
    // htype 1 (Ethernet), ptype 0x0800, hlen 6, plen 4, op 1 or 2 (RFC 826 "Packet format").
    let op = be16(a, 6);
    if be16(a, 0) != 1 || be16(a, 2) != ETHERTYPE_IPV4 || a[4] != 6 || a[5] != 4 {
        return Err(DropReason::Unsupported);
    }
    if op != 1 && op != 2 {
        return Err(DropReason::Unsupported);
    }
    if a.len() < ARP_LEN {
        return Err(DropReason::Truncated);
    }
    Ok(())
}

/// The IPv4 checks of [`parse_headers`] on the Ethernet payload `ip`, in the order its
/// documentation gives.
#[inline(always)]
fn parse_ipv4(ip: &[u8]) -> Result<L3, DropReason> {
    let p = Ipv4Packet::new_unchecked(ip);
    p.check_header_len().map_err(ipv4_drop_reason)?;
    if p.header_len() > IPV4_HDR_LEN {
        return Err(DropReason::IpOptions);
    }
    p.check_total_len().map_err(ipv4_drop_reason)?;
    if !p.verify_checksum() {
        return Err(DropReason::BadIpChecksum);
    }
    if p.is_fragment() {
        return Err(DropReason::Fragment);
    }
    let proto = p.protocol();
    let l4 = p.payload_slice();
    check_l4_header(proto, l4)?;
    Ok(L3::Ipv4 {
        proto,
        src: p.src_addr(),
        dst: p.dst_addr(),
        l4_off: ETH_HDR_LEN + p.header_len(),
        l4_len: l4.len(),
    })
}

/// The drop reason of an IPv4 header [`Ipv4Packet::check_len`] refuses (RFC 791 §3.1):
/// `Truncated` when the frame ends before the header or the total length, `BadIpVersion`,
/// `BadLength` for an IHL below 5 or a total length below the header length.
#[inline(always)]
pub(crate) fn ipv4_drop_reason(e: Ipv4Error) -> DropReason {
    match e {
        Ipv4Error::Truncated => DropReason::Truncated,
        Ipv4Error::BadVersion => DropReason::BadIpVersion,
        Ipv4Error::BadHeaderLen | Ipv4Error::BadTotalLen => DropReason::BadLength,
        Ipv4Error::Fragment => DropReason::Fragment,
    }
}

/// The L4 header checks shared by receive validation and transmit checksum fill: TCP header
/// of at least 20 bytes (`Truncated`) with a data offset of at least 5 words and within the
/// segment (`BadLength`, RFC 9293 §3.1); UDP header of 8 bytes (`Truncated`) whose length
/// field equals the IP payload length (`BadLength`, RFC 768); ICMP header of 8 bytes
/// (`Truncated`, RFC 792). `l4` is the IP payload, exactly.
#[inline(always)]
pub(crate) fn check_l4_header(proto: u8, l4: &[u8]) -> Result<(), DropReason> {
    match proto {
        IPPROTO_TCP => {
            TcpPacket::new_checked(l4).map_err(tcp_drop_reason)?;
        }
        IPPROTO_UDP => {
            if l4.len() < UDP_HDR_LEN {
                return Err(DropReason::Truncated);
            }
            if be16(l4, UDP_LENGTH_AT) as usize != l4.len() {
                return Err(DropReason::BadLength);
            }
        }
        IPPROTO_ICMP if l4.len() < 8 => return Err(DropReason::Truncated),
        _ => {}
    }
    Ok(())
}

/// The drop reason of a TCP header [`TcpPacket::check_len`] refuses: `Truncated` under 20
/// bytes, `BadLength` for a data offset below 5 words or beyond the segment (RFC 9293 §3.1).
#[inline]
pub(crate) fn tcp_drop_reason(e: TcpError) -> DropReason {
    match e {
        TcpError::Truncated => DropReason::Truncated,
        TcpError::BadDataOffset | TcpError::BadOption => DropReason::BadLength,
    }
}

#[cfg(test)]
pub(crate) mod testframes {
    //! Reference frames built with smoltcp's `wire` emitters (an implementation independent
    //! of ours), shared by the unit tests of `net`.
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{
        ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
        Icmpv4Packet, Icmpv4Repr, IpAddress, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr,
        TcpControl, TcpPacket, TcpRepr, TcpSeqNumber, UdpPacket, UdpRepr,
    };

    pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
    pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
    pub const IP_A: [u8; 4] = [10, 0, 0, 1];
    pub const IP_B: [u8; 4] = [10, 0, 0, 2];

    fn ip(a: [u8; 4]) -> Ipv4Address {
        Ipv4Address::from(a)
    }

    fn eth(dst: [u8; 6], src: [u8; 6], proto: EthernetProtocol, payload: usize) -> Vec<u8> {
        let mut v = vec![0u8; 14 + payload];
        let mut f = EthernetFrame::new_unchecked(&mut v[..]);
        f.set_dst_addr(EthernetAddress(dst));
        f.set_src_addr(EthernetAddress(src));
        f.set_ethertype(proto);
        v
    }

    pub fn arp(
        op: ArpOperation,
        smac: [u8; 6],
        sip: [u8; 4],
        tmac: [u8; 6],
        tip: [u8; 4],
    ) -> Vec<u8> {
        let dst = if op == ArpOperation::Request {
            [0xff; 6]
        } else {
            tmac
        };
        let mut v = eth(dst, smac, EthernetProtocol::Arp, 28);
        ArpRepr::EthernetIpv4 {
            operation: op,
            source_hardware_addr: EthernetAddress(smac),
            source_protocol_addr: ip(sip),
            target_hardware_addr: EthernetAddress(tmac),
            target_protocol_addr: ip(tip),
        }
        .emit(&mut ArpPacket::new_unchecked(&mut v[14..]));
        v
    }

    fn ipv4(
        dmac: [u8; 6],
        smac: [u8; 6],
        src: [u8; 4],
        dst: [u8; 4],
        proto: IpProtocol,
        l4: usize,
    ) -> Vec<u8> {
        let mut v = eth(dmac, smac, EthernetProtocol::Ipv4, 20 + l4);
        Ipv4Repr {
            src_addr: ip(src),
            dst_addr: ip(dst),
            next_header: proto,
            payload_len: l4,
            hop_limit: 64,
        }
        .emit(
            &mut Ipv4Packet::new_unchecked(&mut v[14..]),
            &ChecksumCapabilities::default(),
        );
        v
    }

    pub fn tcp(
        src: [u8; 4],
        dst: [u8; 4],
        seq: u32,
        control: TcpControl,
        payload: &[u8],
    ) -> Vec<u8> {
        let repr = TcpRepr {
            src_port: 40000,
            dst_port: 80,
            control,
            seq_number: TcpSeqNumber(seq as i32),
            ack_number: Some(TcpSeqNumber(7)),
            window_len: 1024,
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None; 3],
            timestamp: None,
            payload,
        };
        let mut v = ipv4(MAC_B, MAC_A, src, dst, IpProtocol::Tcp, repr.buffer_len());
        repr.emit(
            &mut TcpPacket::new_unchecked(&mut v[34..]),
            &IpAddress::Ipv4(ip(src)),
            &IpAddress::Ipv4(ip(dst)),
            &ChecksumCapabilities::default(),
        );
        v
    }

    pub fn udp(src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut v = ipv4(MAC_B, MAC_A, src, dst, IpProtocol::Udp, 8 + payload.len());
        UdpRepr {
            src_port: 5000,
            dst_port: 53,
        }
        .emit(
            &mut UdpPacket::new_unchecked(&mut v[34..]),
            &IpAddress::Ipv4(ip(src)),
            &IpAddress::Ipv4(ip(dst)),
            payload.len(),
            |p| p.copy_from_slice(payload),
            &ChecksumCapabilities::default(),
        );
        v
    }

    pub fn icmp_echo(
        dmac: [u8; 6],
        src: [u8; 4],
        dst: [u8; 4],
        ident: u16,
        seq: u16,
        data: &[u8],
    ) -> Vec<u8> {
        let repr = Icmpv4Repr::EchoRequest {
            ident,
            seq_no: seq,
            data,
        };
        let mut v = ipv4(dmac, MAC_A, src, dst, IpProtocol::Icmp, repr.buffer_len());
        repr.emit(
            &mut Icmpv4Packet::new_unchecked(&mut v[34..]),
            &ChecksumCapabilities::default(),
        );
        v
    }
}

#[cfg(test)]
mod tests {
    use super::testframes::*;
    use super::*;
    use smoltcp::wire::{ArpOperation, TcpControl};

    #[test]
    fn drop_reason_names_and_order() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        assert_eq!(DropReason::BadIpChecksum.name(), "bad_ip_checksum");
        assert_eq!(DropReason::ControlFromWire.name(), "control_from_wire");
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 12);
    }

    #[test]
    fn drop_counters_arithmetic() {
        let mut a = DropCounters::default();
        a.inc(DropReason::Fragment);
        a.inc(DropReason::Fragment);
        a.inc(DropReason::NoBuffer);
        let mut b = DropCounters::default();
        b.add(&a);
        b.add(&a);
        assert_eq!(b.get(DropReason::Fragment), 4);
        assert_eq!(b.total(), 6);
        assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 6);
        assert_eq!(b.iter().count(), 12);
    }

    #[test]
    fn parses_arp() {
        let f = arp(ArpOperation::Request, MAC_A, IP_A, [0; 6], IP_B);
        let p = parse(&f).unwrap();
        assert_eq!(p.l3, L3::Arp);
        assert_eq!(p.ethertype, ETHERTYPE_ARP);
        assert_eq!(p.dst_mac, [0xff; 6]);
        assert_eq!(p.src_mac, MAC_A);
        // Padded to the Ethernet minimum: still fine.
        let mut padded = f.clone();
        padded.resize(60, 0);
        assert_eq!(parse(&padded).unwrap().l3, L3::Arp);
        // Unknown opcode and non-Ethernet hardware are unsupported.
        let mut bad = f.clone();
        bad[21] = 3;
        assert_eq!(parse(&bad), Err(DropReason::Unsupported));
        let mut bad = f.clone();
        bad[15] = 6;
        assert_eq!(parse(&bad), Err(DropReason::Unsupported));
        assert_eq!(parse(&f[..41]), Err(DropReason::Truncated));
    }

    #[test]
    fn parses_tcp() {
        let f = tcp(IP_A, IP_B, 1000, TcpControl::Psh, b"hello world");
        let p = parse(&f).unwrap();
        assert_eq!(
            p.l3,
            L3::Ipv4 {
                proto: IPPROTO_TCP,
                src: IP_A,
                dst: IP_B,
                l4_off: 34,
                l4_len: 20 + 11
            }
        );
        assert_eq!(p.dst_mac, MAC_B);
    }

    #[test]
    fn parses_udp_with_and_without_checksum_and_padding() {
        let mut f = udp(IP_A, IP_B, b"abc");
        let want = L3::Ipv4 {
            proto: IPPROTO_UDP,
            src: IP_A,
            dst: IP_B,
            l4_off: 34,
            l4_len: 11,
        };
        assert_eq!(parse(&f).unwrap().l3, want);
        f.resize(60, 0); // Ethernet padding is not part of the IP packet.
        assert_eq!(parse(&f).unwrap().l3, want);
        f[40] = 0;
        f[41] = 0; // RFC 768: no checksum.
        assert_eq!(parse(&f).unwrap().l3, want);
        f[44] ^= 1;
        assert!(
            parse(&f).is_ok(),
            "payload change with checksum 0 is not detected"
        );
    }

    #[test]
    fn parses_icmp() {
        let f = icmp_echo(MAC_B, IP_A, IP_B, 7, 1, b"ping");
        let p = parse(&f).unwrap();
        assert_eq!(
            p.l3,
            L3::Ipv4 {
                proto: IPPROTO_ICMP,
                src: IP_A,
                dst: IP_B,
                l4_off: 34,
                l4_len: 12
            }
        );
    }

    #[test]
    fn other_ethertypes_pass() {
        let mut f = vec![0u8; 60];
        f[12] = 0x86;
        f[13] = 0xdd;
        assert_eq!(parse(&f).unwrap().l3, L3::Other(0x86dd));
        f[12] = 0x09;
        f[13] = 0x0c;
        assert_eq!(parse(&f), Err(DropReason::ControlFromWire));
    }

    #[test]
    fn other_ip_protocols_pass_unchecked() {
        let mut f = udp(IP_A, IP_B, b"abc");
        f[23] = 47; // GRE
        crate::net::csum::fill_ipv4_header(&mut f[14..34]);
        f[40] ^= 0xff; // L4 junk is not inspected.
        assert!(matches!(parse(&f).unwrap().l3, L3::Ipv4 { proto: 47, .. }));
    }
}

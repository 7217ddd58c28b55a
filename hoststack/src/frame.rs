//! Frames between the host stack and the NIC (the plain-packet path of the PCIe link):
//! Ethernet + IPv4 + TCP, built and parsed with no allocation.
//!
//! Outgoing frames leave both MAC addresses zero and both checksums zero: the NIC fills the
//! source MAC, resolves the destination by ARP and fills the IPv4 and TCP checksums (checksum
//! offload), and splits a TCP payload larger than the MTU into MSS-sized segments (TSO).
//! Incoming frames were validated by the NIC (lengths, IPv4 header checksum, TCP checksum:
//! rx checksum offload, as mTCP relies on); the host still bounds-checks everything.

use crate::tcp::segment::{self, TcpHeader};
use offload_api::wire::{EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr};

pub use offload_api::{ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP, IPV4_HDR_LEN};

/// Writes an Ethernet/IPv4/TCP frame for `header` + `payload` into `buf` (cleared first) and
/// returns its length. `ip_id` is the IPv4 identification; DF is set, TTL 64.
pub fn build_tcp(
    buf: &mut Vec<u8>,
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    ip_id: u16,
    header: &TcpHeader,
    payload: [&[u8]; 2],
) -> usize {
    let hlen = segment::header_len(header);
    let plen = payload[0].len() + payload[1].len();
    let total = ETH_HDR_LEN + IPV4_HDR_LEN + hlen + plen;
    buf.clear();
    buf.resize(ETH_HDR_LEN + IPV4_HDR_LEN + hlen, 0);
    let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
    // Both MACs zero: the NIC fills them.
    EthernetRepr {
        dst: [0; 6],
        src: [0; 6],
        ethertype: ETHERTYPE_IPV4,
    }
    .emit(&mut eth);
    let mut ip = Ipv4Packet::new_unchecked(eth.payload_mut());
    // Checksum left zero: the NIC fills it.
    Ipv4Repr {
        src: src_ip,
        dst: dst_ip,
        protocol: IPPROTO_TCP,
        payload_len: hlen + plen,
        ttl: 64,
        ident: ip_id,
        dont_frag: true,
        dscp_ecn: 0,
    }
    .emit(&mut ip);
    segment::emit(header, &mut buf[ETH_HDR_LEN + IPV4_HDR_LEN..]);
    buf.extend_from_slice(payload[0]);
    buf.extend_from_slice(payload[1]);
    total
}

/// The IPv4/TCP parts of a received frame.
#[derive(Clone, Copy, Debug)]
pub struct TcpFrame<'a> {
    /// IPv4 source.
    pub src_ip: [u8; 4],
    /// IPv4 destination.
    pub dst_ip: [u8; 4],
    /// The TCP segment (header and payload, up to the IPv4 total length).
    pub tcp: &'a [u8],
}

/// Why a frame from the NIC was not a TCP segment for the stack.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FrameError {
    /// Not IPv4 (e.g. an offload control message the host does not handle yet).
    NotIpv4,
    /// IPv4 but not TCP.
    NotTcp,
    /// Lengths inconsistent or too short.
    Malformed,
    /// A fragment (the NIC drops these; checked again here).
    Fragment,
}

/// Splits an Ethernet frame into its IPv4 addresses and TCP bytes.
pub fn parse_tcp(frame: &[u8]) -> Result<TcpFrame<'_>, FrameError> {
    if frame.len() < ETH_HDR_LEN + IPV4_HDR_LEN {
        return Err(FrameError::Malformed);
    }
    let eth = EthernetFrame::new_unchecked(frame);
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return Err(FrameError::NotIpv4);
    }
    parse_ipv4_tcp(eth.payload_slice())
}

/// Splits an IPv4 packet (no Ethernet header: the payload of a 0x090A setup notification)
/// into its addresses and TCP bytes (RFC 791 §3.1 header checks, no fragments).
pub fn parse_ipv4_tcp(ip: &[u8]) -> Result<TcpFrame<'_>, FrameError> {
    let p = Ipv4Packet::new_checked(ip).map_err(|_| FrameError::Malformed)?;
    if p.is_fragment() {
        return Err(FrameError::Fragment);
    }
    if p.protocol() != IPPROTO_TCP {
        return Err(FrameError::NotTcp);
    }
    Ok(TcpFrame {
        src_ip: p.src_addr(),
        dst_ip: p.dst_addr(),
        tcp: p.payload_slice(),
    })
}

/// The host's side of the emulated PCIe link, as the stack uses it (implemented by
/// `offload_api::link::HostEnd` and by test links).
pub trait HostLink {
    /// A received frame; dropping it returns its buffer to the link.
    type Buf: AsRef<[u8]>;
    /// Takes the next frame the NIC delivered, with the NIC port it came from.
    fn recv(&mut self) -> Option<(u16, Self::Buf)>;
    /// Hands one frame to the NIC for `port`. False when the ring is full: the frame is
    /// dropped (and counted by the link); TCP recovers as from any loss. The stack avoids
    /// this by deferring transmissions while [`HostLink::tx_space`] is low.
    fn send(&mut self, port: u16, frame: &[u8]) -> bool;

    /// Builds one frame with `build` straight into a link buffer and hands it to the NIC, so
    /// the frame is written once (AccelTCP §5.2: data goes directly to the packet buffer that
    /// is DMA'd to the NIC). `scratch` serves links without their own buffers. Returns as
    /// [`HostLink::send`].
    fn send_built(
        &mut self,
        port: u16,
        scratch: &mut Vec<u8>,
        build: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        build(scratch);
        self.send(port, scratch)
    }

    /// Frames [`HostLink::send`] would take now without refusing one for a full ring
    /// (`usize::MAX`: the link does not say). The stack defers its transmissions while this
    /// is low (a few descriptors), as a driver keeps segments queued while the NIC's ring is
    /// full, instead of losing them.
    fn tx_space(&self) -> usize {
        usize::MAX
    }

    /// Frames sent that the NIC has not taken yet (0: the link does not say).
    fn tx_pending(&self) -> usize {
        0
    }
}

impl HostLink for offload_api::link::HostEnd {
    type Buf = offload_api::link::LinkBuf;

    fn recv(&mut self) -> Option<(u16, Self::Buf)> {
        offload_api::link::HostEnd::recv(self)
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> bool {
        offload_api::link::HostEnd::send(self, port, frame).is_ok()
    }

    fn send_built(
        &mut self,
        port: u16,
        scratch: &mut Vec<u8>,
        build: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        match self.alloc() {
            Some(mut buf) => {
                build(buf.as_vec_mut());
                self.send_buf(port, buf).is_ok()
            }
            None => {
                build(scratch);
                offload_api::link::HostEnd::send(self, port, scratch).is_ok()
            }
        }
    }

    fn tx_space(&self) -> usize {
        offload_api::link::HostEnd::tx_space(self)
    }

    fn tx_pending(&self) -> usize {
        offload_api::link::HostEnd::tx_pending(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::segment::TcpFlags;
    use crate::tcp::Seq;

    #[test]
    fn built_frame_parses_back() {
        let h = TcpHeader {
            src_port: 1000,
            dst_port: 80,
            seq: Seq(5),
            ack: Seq(9),
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: 512,
            ..Default::default()
        };
        let mut buf = Vec::new();
        let n = build_tcp(
            &mut buf,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            7,
            &h,
            [b"ab", b"cd"],
        );
        assert_eq!(n, buf.len());
        let f = parse_tcp(&buf).unwrap();
        assert_eq!(f.src_ip, [10, 0, 0, 1]);
        assert_eq!(f.dst_ip, [10, 0, 0, 2]);
        let seg = segment::parse(f.tcp).unwrap();
        assert_eq!(seg.payload, b"abcd");
        assert_eq!(seg.src_port, 1000);
        assert_eq!(seg.ack, Seq(9));
    }

    #[test]
    fn short_and_odd_frames_are_refused() {
        assert_eq!(parse_tcp(&[0; 10]).unwrap_err(), FrameError::Malformed);
        let mut f = vec![0u8; 60];
        f[12] = 0x08;
        f[13] = 0x06;
        assert_eq!(parse_tcp(&f).unwrap_err(), FrameError::NotIpv4);
        f[13] = 0x00;
        f[14] = 0x45;
        f[16] = 0;
        f[17] = 200; // total length beyond the frame
        assert_eq!(parse_tcp(&f).unwrap_err(), FrameError::Malformed);
        f[17] = 40;
        f[23] = 17;
        assert_eq!(parse_tcp(&f).unwrap_err(), FrameError::NotTcp);
        f[20] = 0x20; // MF
        assert_eq!(parse_tcp(&f).unwrap_err(), FrameError::Fragment);
    }
}

//! RoCEv2 packets on the wire (InfiniBand Architecture Specification Vol. 1, Release 1.4,
//! §9.2 BTH, §9.3.5 AETH, §7.8.1 ICRC; Annex A17 "RoCEv2": UDP destination port 4791,
//! §A17.4.1 the ICRC over IPv4, §A17.9.3 the CNP), what the `dcqcn` and `irn` Tonic
//! modules' traffic looks like: data packets, ACK/NAK with an AETH, and DCQCN's congestion
//! notification packet (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015, §3.1).
//!
//! ```text
//! BTH (12 bytes):
//!  0        1                  2       4                        5        8               9       12
//! +--------+--+--+----+-------+-------+--+--+------------------+--------+--+------------+--------+
//! | opcode |SE|M |pad |tver   | P_Key |FE|BE|  reserved (6)    | DestQP |AR| reserved(7)|  PSN   |
//! +--------+--+--+----+-------+-------+--+--+------------------+--------+--+------------+--------+
//! AETH (4 bytes): syndrome (8) | MSN (24)
//! CNP: BTH (opcode 0x81, BECN set) | 16 reserved bytes | ICRC
//! ```
//!
//! The ICRC (A17.4.1) is the CRC-32 of IEEE 802.3 over, in order: 8 bytes of ones standing in
//! for the InfiniBand LRH, the IPv4 header with its TOS, TTL and header checksum set to ones,
//! the UDP header with its checksum set to ones, the BTH with its FECN, BECN and reserved bits
//! (byte 4) set to ones, and the rest of the packet up to the ICRC; it is appended least
//! significant byte first. Fields are big-endian. Parsing never panics: short input is a
//! [`RoceError`].

use super::ipv4::{Ipv4Packet, Ipv4Repr, HEADER_LEN as IPV4_HDR_LEN, IPPROTO_UDP, VERSION};

/// The RoCEv2 UDP destination port (A17.2).
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Length of the BTH.
pub const BTH_LEN: usize = 12;
/// Length of the AETH.
pub const AETH_LEN: usize = 4;
/// Length of the ICRC.
pub const ICRC_LEN: usize = 4;
/// Reserved bytes after a CNP's BTH (A17.9.3).
pub const CNP_PAD_LEN: usize = 16;
/// UDP header length.
pub const UDP_LEN: usize = 8;

/// BTH opcodes (IBA Table 38; the high three bits are the transport: RC 0, UC 1, RD 2, UD 3).
pub mod opcode {
    /// RC SEND Only.
    pub const RC_SEND_ONLY: u8 = 0x04;
    /// RC RDMA WRITE First.
    pub const RC_RDMA_WRITE_FIRST: u8 = 0x06;
    /// RC RDMA WRITE Middle.
    pub const RC_RDMA_WRITE_MIDDLE: u8 = 0x07;
    /// RC RDMA WRITE Last.
    pub const RC_RDMA_WRITE_LAST: u8 = 0x08;
    /// RC RDMA WRITE Only.
    pub const RC_RDMA_WRITE_ONLY: u8 = 0x0a;
    /// RC Acknowledge (ACK or NAK: an AETH follows).
    pub const RC_ACKNOWLEDGE: u8 = 0x11;
    /// RD Acknowledge (an AETH follows).
    pub const RD_ACKNOWLEDGE: u8 = 0x51;
    /// Congestion notification packet (A17.9.3).
    pub const CNP: u8 = 0x81;
}

/// Why a RoCE packet does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoceError {
    /// Too short for what it must hold.
    #[error("RoCE packet truncated: {have} bytes, need {need}")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Not IPv4 / UDP to port 4791, or inconsistent lengths.
    #[error("not a RoCEv2 IPv4 packet: {0}")]
    NotRoce(&'static str),
}

fn need(have: usize, need: usize) -> Result<(), RoceError> {
    if have < need {
        Err(RoceError::Truncated { need, have })
    } else {
        Ok(())
    }
}

/// The Base Transport Header (IBA §9.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bth {
    /// Opcode ([`opcode`]).
    pub opcode: u8,
    /// Solicited event.
    pub solicited: bool,
    /// Migration state.
    pub mig_req: bool,
    /// Pad bytes at the end of the payload (0–3).
    pub pad_count: u8,
    /// Transport header version (0).
    pub version: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification (A17.9.1).
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Destination queue pair (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// Parses the first [`BTH_LEN`] bytes of `b` (reserved bits are ignored).
    pub fn parse(b: &[u8]) -> Result<Bth, RoceError> {
        need(b.len(), BTH_LEN)?;
        let be24 = |i: usize| u32::from_be_bytes([0, b[i], b[i + 1], b[i + 2]]);
        Ok(Bth {
            opcode: b[0],
            solicited: b[1] & 0x80 != 0,
            mig_req: b[1] & 0x40 != 0,
            pad_count: b[1] >> 4 & 3,
            version: b[1] & 0x0f,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: b[4] & 0x80 != 0,
            becn: b[4] & 0x40 != 0,
            dest_qp: be24(5),
            ack_req: b[8] & 0x80 != 0,
            psn: be24(9),
        })
    }

    /// Writes the BTH into `b[..BTH_LEN]` (reserved bits zero; `pad_count`, `version`,
    /// `dest_qp` and `psn` are truncated to their widths). `None` if `b` is too short.
    pub fn emit(&self, b: &mut [u8]) -> Option<usize> {
        let b = b.get_mut(..BTH_LEN)?;
        b[0] = self.opcode;
        b[1] = (self.solicited as u8) << 7
            | (self.mig_req as u8) << 6
            | (self.pad_count & 3) << 4
            | (self.version & 0x0f);
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        b[4] = (self.fecn as u8) << 7 | (self.becn as u8) << 6;
        b[5..8].copy_from_slice(&self.dest_qp.to_be_bytes()[1..]);
        b[8] = (self.ack_req as u8) << 7;
        b[9..12].copy_from_slice(&self.psn.to_be_bytes()[1..]);
        Some(BTH_LEN)
    }

    /// Whether an AETH follows (the Acknowledge opcodes).
    pub fn has_aeth(&self) -> bool {
        matches!(self.opcode, opcode::RC_ACKNOWLEDGE | opcode::RD_ACKNOWLEDGE)
    }

    /// The BTH of a CNP to queue pair `dest_qp` (A17.9.3: opcode 0x81, BECN set, P_Key
    /// 0xffff as the default partition).
    pub fn cnp(dest_qp: u32) -> Bth {
        Bth {
            opcode: opcode::CNP,
            becn: true,
            pkey: 0xffff,
            dest_qp,
            ..Bth::default()
        }
    }
}

/// What an AETH syndrome says (IBA §9.7.5.1, Table 42).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// ACK with an end-to-end credit count (5 bits).
    Ack {
        /// Credit count.
        credits: u8,
    },
    /// Receiver-not-ready NAK with a timer value (5 bits).
    RnrNak {
        /// RNR timer code.
        timer: u8,
    },
    /// NAK with a code (0: PSN sequence error, 1: invalid request, 2: remote access error,
    /// 3: remote operational error, 4: invalid RD request).
    Nak {
        /// NAK code.
        code: u8,
    },
    /// The reserved encoding (top bits 10).
    Reserved(u8),
}

impl Syndrome {
    /// Decodes a syndrome byte.
    pub const fn from_u8(s: u8) -> Syndrome {
        match s >> 5 {
            0 => Syndrome::Ack { credits: s & 0x1f },
            1 => Syndrome::RnrNak { timer: s & 0x1f },
            3 => Syndrome::Nak { code: s & 0x1f },
            _ => Syndrome::Reserved(s),
        }
    }

    /// Encodes it (5-bit values are truncated).
    pub const fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak { code } => 0x60 | (code & 0x1f),
            Syndrome::Reserved(s) => s,
        }
    }
}

/// The ACK Extended Transport Header (IBA §9.3.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Aeth {
    /// Syndrome ([`Syndrome::from_u8`]).
    pub syndrome: u8,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Parses the first [`AETH_LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Aeth, RoceError> {
        need(b.len(), AETH_LEN)?;
        Ok(Aeth {
            syndrome: b[0],
            msn: u32::from_be_bytes([0, b[1], b[2], b[3]]),
        })
    }

    /// Writes the AETH into `b[..AETH_LEN]` (`msn` truncated to 24 bits).
    pub fn emit(&self, b: &mut [u8]) -> Option<usize> {
        let b = b.get_mut(..AETH_LEN)?;
        b[0] = self.syndrome;
        b[1..4].copy_from_slice(&self.msn.to_be_bytes()[1..]);
        Some(AETH_LEN)
    }
}

const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// A running CRC-32 (IEEE 802.3: reflected, polynomial 0x04C11DB7, initial and final XOR
/// all ones).
#[derive(Clone, Copy, Debug)]
pub struct Crc32(u32);

impl Default for Crc32 {
    fn default() -> Self {
        Crc32(0xffff_ffff)
    }
}

impl Crc32 {
    /// Feeds `data`.
    pub fn update(&mut self, data: &[u8]) {
        let mut c = self.0;
        for &b in data {
            c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    /// The CRC of everything fed.
    pub fn finish(self) -> u32 {
        !self.0
    }
}

/// The ICRC of a RoCEv2 IPv4 packet (A17.4.1): `pkt` starts at the IPv4 header and ends
/// where the ICRC goes (the IPv4 total length and UDP length already count the ICRC). The
/// wire carries it as `icrc.to_le_bytes()`.
pub fn icrc_ipv4(pkt: &[u8]) -> Result<u32, RoceError> {
    need(pkt.len(), 1)?;
    // Version and IHL share the first byte, all that is read before the length check.
    let p = Ipv4Packet::new_unchecked(pkt);
    let ihl = p.header_len();
    if p.version() != VERSION || ihl < IPV4_HDR_LEN {
        return Err(RoceError::NotRoce("not an IPv4 header"));
    }
    need(pkt.len(), ihl + UDP_LEN + BTH_LEN)?;
    let mut crc = Crc32::default();
    crc.update(&[0xff; 8]);
    let mut ip = [0u8; 60];
    ip[..ihl].copy_from_slice(&pkt[..ihl]);
    let mut masked = Ipv4Packet::new_unchecked(&mut ip[..ihl]);
    masked.set_dscp_ecn(0xff);
    masked.set_ttl(0xff);
    masked.set_checksum(0xffff);
    crc.update(&ip[..ihl]);
    let mut udp = [0u8; UDP_LEN];
    udp.copy_from_slice(&pkt[ihl..ihl + UDP_LEN]);
    udp[6] = 0xff; // checksum
    udp[7] = 0xff;
    crc.update(&udp);
    let bth = ihl + UDP_LEN;
    crc.update(&pkt[bth..bth + 4]);
    crc.update(&[0xff]); // FECN, BECN, reserved
    crc.update(&pkt[bth + 5..]);
    Ok(crc.finish())
}

/// The IPv4 and UDP fields of a RoCEv2 packet that [`emit_ipv4`] writes (no IP options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RoceIpv4 {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// TOS byte: DSCP and ECN (A17.9.1: ECN-capable transport, CE marked by switches).
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// Don't fragment.
    pub dont_frag: bool,
    /// TTL.
    pub ttl: u8,
    /// UDP source port (flow entropy, A17.2.4); the destination port is 4791.
    pub udp_src: u16,
}

/// Writes a whole RoCEv2 packet into `buf`: IPv4 header (with its checksum), UDP header
/// (checksum 0, as RoCEv2 allows), `bth`, `ext` (an AETH, a CNP's padding, or nothing),
/// `payload`, and the ICRC. Returns its length, or `None` if `buf` is too short or the
/// packet exceeds 65535 bytes.
pub fn emit_ipv4(
    ip: &RoceIpv4,
    bth: &Bth,
    ext: &[u8],
    payload: &[u8],
    buf: &mut [u8],
) -> Option<usize> {
    let l4 = UDP_LEN + BTH_LEN + ext.len() + payload.len() + ICRC_LEN;
    let total = IPV4_HDR_LEN + l4;
    if total > u16::MAX as usize {
        return None;
    }
    let b = buf.get_mut(..total)?;
    let mut p = Ipv4Packet::new_unchecked(&mut *b);
    Ipv4Repr {
        src: ip.src,
        dst: ip.dst,
        protocol: IPPROTO_UDP,
        payload_len: l4,
        ttl: ip.ttl,
        ident: ip.ident,
        dont_frag: ip.dont_frag,
        dscp_ecn: ip.tos,
    }
    .emit(&mut p);
    p.fill_checksum();
    let u = IPV4_HDR_LEN;
    b[u..u + 2].copy_from_slice(&ip.udp_src.to_be_bytes());
    b[u + 2..u + 4].copy_from_slice(&ROCEV2_UDP_PORT.to_be_bytes());
    b[u + 4..u + 6].copy_from_slice(&(l4 as u16).to_be_bytes());
    b[u + 6..u + 8].fill(0);
    let mut o = u + UDP_LEN;
    bth.emit(&mut b[o..])?;
    o += BTH_LEN;
    b[o..o + ext.len()].copy_from_slice(ext);
    o += ext.len();
    b[o..o + payload.len()].copy_from_slice(payload);
    o += payload.len();
    let icrc = icrc_ipv4(&b[..o]).ok()?;
    b[o..o + ICRC_LEN].copy_from_slice(&icrc.to_le_bytes());
    Some(total)
}

/// A parsed RoCEv2 IPv4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocePacket<'a> {
    /// The IPv4 header's length.
    pub ip_header_len: usize,
    /// The BTH.
    pub bth: Bth,
    /// The AETH, for Acknowledge opcodes.
    pub aeth: Option<Aeth>,
    /// What follows the BTH (and AETH) up to the ICRC: payload, or a CNP's padding.
    pub payload: &'a [u8],
    /// The ICRC carried.
    pub icrc: u32,
    /// Whether it matches [`icrc_ipv4`] of the packet.
    pub icrc_ok: bool,
}

/// Parses an IPv4 packet carrying RoCEv2 (UDP to port 4791), up to the IPv4 total length.
pub fn parse_ipv4(pkt: &[u8]) -> Result<RocePacket<'_>, RoceError> {
    need(pkt.len(), IPV4_HDR_LEN)?;
    let p = Ipv4Packet::new_unchecked(pkt);
    let ihl = p.header_len();
    if p.version() != VERSION || ihl < IPV4_HDR_LEN {
        return Err(RoceError::NotRoce("not an IPv4 header"));
    }
    if p.protocol() != IPPROTO_UDP {
        return Err(RoceError::NotRoce("not UDP"));
    }
    let total = p.total_len();
    need(pkt.len(), total)?;
    let min = ihl + UDP_LEN + BTH_LEN + ICRC_LEN;
    if total < min {
        return Err(RoceError::Truncated {
            need: min,
            have: total,
        });
    }
    let pkt = &pkt[..total];
    let u = ihl;
    if u16::from_be_bytes([pkt[u + 2], pkt[u + 3]]) != ROCEV2_UDP_PORT {
        return Err(RoceError::NotRoce("UDP destination port is not 4791"));
    }
    if u16::from_be_bytes([pkt[u + 4], pkt[u + 5]]) as usize != total - ihl {
        return Err(RoceError::NotRoce(
            "UDP length disagrees with the IPv4 length",
        ));
    }
    let bth = Bth::parse(&pkt[u + UDP_LEN..])?;
    let mut o = u + UDP_LEN + BTH_LEN;
    let end = total - ICRC_LEN;
    let aeth = if bth.has_aeth() {
        need(end, o + AETH_LEN)?;
        let a = Aeth::parse(&pkt[o..end])?;
        o += AETH_LEN;
        Some(a)
    } else {
        None
    };
    let icrc = u32::from_le_bytes([pkt[end], pkt[end + 1], pkt[end + 2], pkt[end + 3]]);
    let icrc_ok = icrc_ipv4(&pkt[..end]) == Ok(icrc);
    Ok(RocePacket {
        ip_header_len: ihl,
        bth,
        aeth,
        payload: &pkt[o..end],
        icrc,
        icrc_ok,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum;

    #[test]
    fn crc32_check_value() {
        let mut c = Crc32::default();
        c.update(b"123456789");
        assert_eq!(c.finish(), 0xcbf4_3926);
    }

    #[test]
    fn bth_aeth_layout_and_round_trip() {
        let b = Bth {
            opcode: opcode::RC_ACKNOWLEDGE,
            solicited: true,
            mig_req: false,
            pad_count: 2,
            version: 0,
            pkey: 0xffff,
            fecn: false,
            becn: true,
            dest_qp: 0x12_3456,
            ack_req: true,
            psn: 0xab_cdef,
        };
        let mut buf = [0u8; 12];
        b.emit(&mut buf).unwrap();
        assert_eq!(
            buf,
            [0x11, 0xa0, 0xff, 0xff, 0x40, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef]
        );
        assert_eq!(Bth::parse(&buf), Ok(b));
        assert!(Bth::parse(&buf[..11]).is_err());
        let a = Aeth {
            syndrome: Syndrome::Nak { code: 0 }.to_u8(),
            msn: 7,
        };
        assert_eq!(a.syndrome, 0x60);
        let mut ab = [0u8; 4];
        a.emit(&mut ab).unwrap();
        assert_eq!(Aeth::parse(&ab), Ok(a));
        assert_eq!(Syndrome::from_u8(0x1f), Syndrome::Ack { credits: 31 });
        assert_eq!(Syndrome::from_u8(0x2a), Syndrome::RnrNak { timer: 10 });
        assert_eq!(Syndrome::from_u8(0x81), Syndrome::Reserved(0x81));
    }

    #[test]
    fn full_packet_round_trip_and_icrc_detects_corruption() {
        let ip = RoceIpv4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            tos: 0x02,
            ident: 1,
            dont_frag: true,
            ttl: 64,
            udp_src: 49152,
        };
        let mut buf = [0u8; 128];
        let n = emit_ipv4(&ip, &Bth::cnp(0x42), &[0; CNP_PAD_LEN], &[], &mut buf).unwrap();
        assert_eq!(n, 20 + 8 + 12 + 16 + 4);
        let p = parse_ipv4(&buf[..n]).unwrap();
        assert!(p.icrc_ok);
        assert_eq!(p.bth, Bth::cnp(0x42));
        assert_eq!(p.payload.len(), CNP_PAD_LEN);
        assert!(checksum::verify(&buf[..20]));
        // The masked fields do not change the ICRC (switches rewrite them); others do.
        let mut m = buf;
        m[1] = 0x03; // CE
        m[8] = 1; // TTL
        m[20 + 8 + 4] |= 0x80; // FECN
        assert!(parse_ipv4(&m[..n]).unwrap().icrc_ok);
        let mut m = buf;
        m[20 + 8 + 11] ^= 1; // PSN
        assert!(!parse_ipv4(&m[..n]).unwrap().icrc_ok);
        for k in 0..n {
            assert!(parse_ipv4(&buf[..k]).is_err());
        }
    }
}

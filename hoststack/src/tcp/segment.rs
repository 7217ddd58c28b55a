//! TCP segments on the wire: header and option parsing and emission (RFC 9293 §3.1,
//! RFC 7323 for window scale and timestamps, RFC 2018 for SACK).
//!
//! Parsing never panics: a short header, a data offset outside the segment, or an option whose
//! length byte is invalid is a [`SegmentError`]. Checksums are not checked here: on the host
//! the NIC verified them (rx checksum offload) and fills them on transmit.

use super::seq::Seq;

/// TCP flag bits (the low byte of the flags field).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct Flags(pub u8);

impl Flags {
    /// FIN.
    pub const FIN: Flags = Flags(0x01);
    /// SYN.
    pub const SYN: Flags = Flags(0x02);
    /// RST.
    pub const RST: Flags = Flags(0x04);
    /// PSH.
    pub const PSH: Flags = Flags(0x08);
    /// ACK.
    pub const ACK: Flags = Flags(0x10);
    /// URG.
    pub const URG: Flags = Flags(0x20);
    /// ECE (RFC 3168).
    pub const ECE: Flags = Flags(0x40);
    /// CWR (RFC 3168).
    pub const CWR: Flags = Flags(0x80);

    /// True when every bit of `other` is set.
    #[inline]
    pub fn has(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

/// One SACK block: bytes `[left, right)` received (RFC 2018 §3).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct SackBlock {
    /// First sequence number of the block.
    pub left: Seq,
    /// Sequence number just after the block.
    pub right: Seq,
}

/// Most SACK blocks an options field can hold (4 without timestamps, 3 with).
pub const MAX_SACK_BLOCKS: usize = 4;

/// The TCP options nicemu understands. Unknown options are skipped on parse.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Options {
    /// Maximum segment size (kind 2; SYN only).
    pub mss: Option<u16>,
    /// Window scale shift (kind 3; SYN only). Values above 14 are kept as sent; the TCB
    /// clamps them to 14 (RFC 7323 §2.3).
    pub window_scale: Option<u8>,
    /// SACK permitted (kind 4; SYN only).
    pub sack_permitted: bool,
    /// SACK blocks (kind 5): the first `sack_len` entries of `sack` are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// Number of valid entries in `sack`.
    pub sack_len: u8,
    /// Timestamps (kind 8): (TSval, TSecr).
    pub timestamp: Option<(u32, u32)>,
}

impl Options {
    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

/// Why a segment could not be parsed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum SegmentError {
    /// Shorter than the fixed 20-byte header.
    #[error("segment shorter than the TCP header")]
    Truncated,
    /// Data offset below 5 words or beyond the segment.
    #[error("bad data offset")]
    BadDataOffset,
    /// An option's length byte is 0, 1, runs past the header, or does not match its kind.
    #[error("bad option length")]
    BadOption,
}

/// A parsed TCP segment borrowing its payload.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: Seq,
    /// Acknowledgement number (meaningful with ACK).
    pub ack: Seq,
    /// Flags.
    pub flags: Flags,
    /// Window field as sent (not scaled).
    pub window: u16,
    /// Options.
    pub options: Options,
    /// Payload.
    pub payload: &'a [u8],
}

impl Segment<'_> {
    /// SEG.LEN: payload plus one for SYN and one for FIN (RFC 9293 §3.4).
    pub fn seg_len(&self) -> u32 {
        self.payload.len() as u32
            + self.flags.has(Flags::SYN) as u32
            + self.flags.has(Flags::FIN) as u32
    }
}

/// Parses a TCP segment (header, options and payload), `tcp` starting at the TCP header and
/// ending at the end of the IP payload.
pub fn parse(tcp: &[u8]) -> Result<Segment<'_>, SegmentError> {
    let _ = tcp;
    todo!("helper: tcp-wire")
}

/// A segment header to emit (everything except the payload).
#[derive(Clone, Copy, Default, Debug)]
pub struct Header {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: Seq,
    /// Acknowledgement number.
    pub ack: Seq,
    /// Flags.
    pub flags: Flags,
    /// Window field (already scaled down).
    pub window: u16,
    /// Options to emit. SACK blocks beyond what fits in 40 bytes are left out.
    pub options: Options,
}

/// Length of the header `h` would be emitted with: 20 bytes plus its options, padded to a
/// multiple of 4, at most 60.
pub fn header_len(h: &Header) -> usize {
    let _ = h;
    todo!("helper: tcp-wire")
}

/// Writes `h` at the start of `out` (which must hold [`header_len`] bytes) with a zero
/// checksum and returns the header length.
pub fn emit(h: &Header, out: &mut [u8]) -> usize {
    let _ = (h, out);
    todo!("helper: tcp-wire")
}

/// The TCP checksum (RFC 9293 §3.1, IPv4 pseudo-header) of `tcp` (header + payload, checksum
/// field included as it is): 0 when a received segment's checksum is right; when the field
/// was zeroed, the value to store.
pub fn checksum(src_ip: [u8; 4], dst_ip: [u8; 4], tcp: &[u8]) -> u16 {
    let _ = (src_ip, dst_ip, tcp);
    todo!("helper: tcp-wire")
}

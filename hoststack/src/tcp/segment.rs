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
///
/// Checks, in order: at least 20 bytes ([`SegmentError::Truncated`]); data offset of at least
/// 5 words and within `tcp` ([`SegmentError::BadDataOffset`]); options well formed
/// ([`parse_options`]). Reserved bits, the checksum and the urgent pointer are ignored. Never
/// panics and never allocates.
pub fn parse(tcp: &[u8]) -> Result<Segment<'_>, SegmentError> {
    let Some((h, _)) = tcp.split_first_chunk::<FIXED_HEADER_LEN>() else {
        return Err(SegmentError::Truncated);
    };
    let hlen = ((h[12] >> 4) as usize) * 4;
    if hlen < FIXED_HEADER_LEN || hlen > tcp.len() {
        return Err(SegmentError::BadDataOffset);
    }
    let options = parse_options(&tcp[FIXED_HEADER_LEN..hlen])?;
    Ok(Segment {
        src_port: u16::from_be_bytes([h[0], h[1]]),
        dst_port: u16::from_be_bytes([h[2], h[3]]),
        seq: Seq(u32::from_be_bytes([h[4], h[5], h[6], h[7]])),
        ack: Seq(u32::from_be_bytes([h[8], h[9], h[10], h[11]])),
        flags: Flags(h[13]),
        window: u16::from_be_bytes([h[14], h[15]]),
        options,
        payload: &tcp[hlen..],
    })
}

/// Length of the fixed TCP header (RFC 9293 §3.1), without options.
pub const FIXED_HEADER_LEN: usize = 20;

/// Longest TCP header: data offset 15 words (RFC 9293 §3.1), i.e. at most 40 bytes of options.
pub const MAX_HEADER_LEN: usize = 60;

/// Option kinds (IANA "TCP Option Kind Numbers").
const KIND_EOL: u8 = 0;
const KIND_NOP: u8 = 1;
const KIND_MSS: u8 = 2;
const KIND_WS: u8 = 3;
const KIND_SACK_PERM: u8 = 4;
const KIND_SACK: u8 = 5;
const KIND_TS: u8 = 8;

/// Parses the options area of a TCP header (the bytes between the fixed header and the data
/// offset; RFC 9293 §3.1 and §3.2).
///
/// EOL (kind 0) ends the list; NOP (kind 1) is skipped; every other option must carry a length
/// byte of at least 2 that stays inside `opts`, and the known kinds must have their exact
/// length (MSS 4, window scale 3, SACK-permitted 2, timestamps 10, SACK 2 + 8·n with
/// 1 ≤ n ≤ 4); anything else is [`SegmentError::BadOption`]. Unknown kinds with a valid length
/// are skipped. A repeated option overwrites the earlier one. Never panics.
pub fn parse_options(opts: &[u8]) -> Result<Options, SegmentError> {
    let mut o = Options::default();
    let mut rest = opts;
    while let Some((&kind, after_kind)) = rest.split_first() {
        if kind == KIND_EOL {
            break;
        }
        if kind == KIND_NOP {
            rest = after_kind;
            continue;
        }
        let Some(&len) = after_kind.first() else {
            return Err(SegmentError::BadOption);
        };
        let len = len as usize;
        if len < 2 || len > rest.len() {
            return Err(SegmentError::BadOption);
        }
        let body = &rest[2..len];
        match kind {
            KIND_MSS => {
                let &[a, b] = body else {
                    return Err(SegmentError::BadOption);
                };
                o.mss = Some(u16::from_be_bytes([a, b]));
            }
            KIND_WS => {
                let &[shift] = body else {
                    return Err(SegmentError::BadOption);
                };
                o.window_scale = Some(shift);
            }
            KIND_SACK_PERM => {
                if !body.is_empty() {
                    return Err(SegmentError::BadOption);
                }
                o.sack_permitted = true;
            }
            KIND_TS => {
                let &[a0, a1, a2, a3, b0, b1, b2, b3] = body else {
                    return Err(SegmentError::BadOption);
                };
                o.timestamp = Some((
                    u32::from_be_bytes([a0, a1, a2, a3]),
                    u32::from_be_bytes([b0, b1, b2, b3]),
                ));
            }
            KIND_SACK => {
                // 1 to MAX_SACK_BLOCKS (4) blocks of 8 bytes.
                if !matches!(body.len(), 8 | 16 | 24 | 32) {
                    return Err(SegmentError::BadOption);
                }
                let n = body.len() / 8;
                o.sack = [SackBlock::default(); MAX_SACK_BLOCKS];
                for (slot, b) in o.sack.iter_mut().zip(body.chunks_exact(8)) {
                    *slot = SackBlock {
                        left: Seq(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                        right: Seq(u32::from_be_bytes([b[4], b[5], b[6], b[7]])),
                    };
                }
                o.sack_len = n as u8;
            }
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok(o)
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

/// Which options [`emit`] writes for a header, and how long they are.
#[derive(Clone, Copy)]
struct Layout {
    /// MSS (SYN only).
    mss: Option<u16>,
    /// Window scale (SYN only).
    ws: Option<u8>,
    /// SACK-permitted (SYN only).
    sack_perm: bool,
    /// Number of SACK blocks that fit.
    sack_n: usize,
    /// Bytes of options, a multiple of 4, at most 40.
    len: usize,
}

/// Bytes available for options (RFC 9293 §3.1: data offset at most 15 words).
const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - FIXED_HEADER_LEN;

/// Decides the option layout of `h`: SYN-only options (MSS, window scale, SACK-permitted)
/// only when SYN is set, then as many SACK blocks as fit in what is left of 40 bytes.
#[inline]
fn layout(h: &Header) -> Layout {
    let o = &h.options;
    let syn = h.flags.has(Flags::SYN);
    let mss = if syn { o.mss } else { None };
    let ws = if syn { o.window_scale } else { None };
    let sack_perm = syn && o.sack_permitted;
    let mut len = 0;
    if mss.is_some() {
        len += 4; // MSS(4)
    }
    if o.timestamp.is_some() {
        len += 12; // SACK_PERM(2) TS(10), or NOP NOP TS(10)
    } else if sack_perm {
        len += 4; // NOP NOP SACK_PERM(2)
    }
    if ws.is_some() {
        len += 4; // NOP WS(3)
    }
    // NOP NOP SACK(2 + 8n); `len` is at most 20 here.
    let room = (MAX_OPTIONS_LEN - len).saturating_sub(4) / 8;
    let sack_n = (o.sack_len as usize).min(MAX_SACK_BLOCKS).min(room);
    if sack_n > 0 {
        len += 4 + 8 * sack_n;
    }
    Layout {
        mss,
        ws,
        sack_perm,
        sack_n,
        len,
    }
}

/// Length of the header `h` would be emitted with: 20 bytes plus its options, padded to a
/// multiple of 4, at most 60.
///
/// Always equals what [`emit`] returns for `h`; see [`emit`] for the layout.
#[inline]
pub fn header_len(h: &Header) -> usize {
    FIXED_HEADER_LEN + layout(h).len
}

/// Writes `h` at the start of `out` (which must hold [`header_len`] bytes) with a zero
/// checksum and returns the header length.
///
/// Reserved bits and the urgent pointer are zero. Options use Linux's compact, 4-byte aligned
/// layout (RFC 9293 §3.2, RFC 7323 Appendix A), in this order, each present only when set:
///
/// | option | bytes | when |
/// |---|---|---|
/// | `MSS` | 4 | SYN |
/// | `SACK_PERM TS` | 12 | SYN with SACK-permitted and a timestamp |
/// | `NOP NOP TS` | 12 | a timestamp (and no SACK-permitted emitted) |
/// | `NOP NOP SACK_PERM` | 4 | SYN with SACK-permitted and no timestamp |
/// | `NOP WS` | 4 | SYN |
/// | `NOP NOP SACK(n)` | 4 + 8·n | SACK blocks, as many as fit in 40 bytes |
///
/// MSS, window scale and SACK-permitted are left out on segments without SYN (RFC 9293
/// §3.7.1, RFC 7323 §2.2, RFC 2018 §2). SACK blocks that do not fit are dropped from the end:
/// at most 4 without timestamps, 3 with, 2 on a SYN carrying MSS, timestamps and window scale.
///
/// # Panics
/// When `out` is shorter than [`header_len`]`(h)`.
pub fn emit(h: &Header, out: &mut [u8]) -> usize {
    let l = layout(h);
    let hlen = FIXED_HEADER_LEN + l.len;
    let out = &mut out[..hlen];
    let (fixed, opts) = out.split_at_mut(FIXED_HEADER_LEN);
    fixed[0..2].copy_from_slice(&h.src_port.to_be_bytes());
    fixed[2..4].copy_from_slice(&h.dst_port.to_be_bytes());
    fixed[4..8].copy_from_slice(&h.seq.0.to_be_bytes());
    fixed[8..12].copy_from_slice(&h.ack.0.to_be_bytes());
    fixed[12] = ((hlen / 4) as u8) << 4;
    fixed[13] = h.flags.0;
    fixed[14..16].copy_from_slice(&h.window.to_be_bytes());
    fixed[16..20].fill(0); // checksum, urgent pointer

    let mut i = 0;
    if let Some(mss) = l.mss {
        let [a, b] = mss.to_be_bytes();
        opts[i..i + 4].copy_from_slice(&[KIND_MSS, 4, a, b]);
        i += 4;
    }
    if let Some((tsval, tsecr)) = h.options.timestamp {
        if l.sack_perm {
            opts[i..i + 2].copy_from_slice(&[KIND_SACK_PERM, 2]);
        } else {
            opts[i..i + 2].copy_from_slice(&[KIND_NOP, KIND_NOP]);
        }
        opts[i + 2..i + 4].copy_from_slice(&[KIND_TS, 10]);
        opts[i + 4..i + 8].copy_from_slice(&tsval.to_be_bytes());
        opts[i + 8..i + 12].copy_from_slice(&tsecr.to_be_bytes());
        i += 12;
    } else if l.sack_perm {
        opts[i..i + 4].copy_from_slice(&[KIND_NOP, KIND_NOP, KIND_SACK_PERM, 2]);
        i += 4;
    }
    if let Some(ws) = l.ws {
        opts[i..i + 4].copy_from_slice(&[KIND_NOP, KIND_WS, 3, ws]);
        i += 4;
    }
    if l.sack_n > 0 {
        let olen = 2 + 8 * l.sack_n as u8;
        opts[i..i + 4].copy_from_slice(&[KIND_NOP, KIND_NOP, KIND_SACK, olen]);
        i += 4;
        for b in &h.options.sack[..l.sack_n] {
            opts[i..i + 4].copy_from_slice(&b.left.0.to_be_bytes());
            opts[i + 4..i + 8].copy_from_slice(&b.right.0.to_be_bytes());
            i += 8;
        }
    }
    debug_assert_eq!(i, l.len);
    hlen
}

/// The TCP checksum (RFC 9293 §3.1, IPv4 pseudo-header) of `tcp` (header + payload, checksum
/// field included as it is): 0 when a received segment's checksum is right; when the field
/// was zeroed, the value to store.
///
/// The Internet checksum of RFC 1071: the one's complement of the one's complement sum of
/// the pseudo-header (source, destination, zero, protocol 6, TCP length) and `tcp`, an odd
/// last byte padded with zero. `tcp` is at most 65,535 bytes (an IPv4 payload); the length
/// in the pseudo-header is taken modulo 2^16.
pub fn checksum(src_ip: [u8; 4], dst_ip: [u8; 4], tcp: &[u8]) -> u16 {
    // Sums of 16-bit words modulo 2^16 - 1 can be taken over wider words with end-around
    // carry (RFC 1071 §2 (B), (C)); 2^32 and 2^64 are both 1 modulo 2^16 - 1.
    let mut acc: u64 = u32::from_be_bytes(src_ip) as u64
        + u32::from_be_bytes(dst_ip) as u64
        + 6
        + (tcp.len() & 0xffff) as u64;
    let mut words = tcp.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        let (s, carry) = acc.overflowing_add(w);
        acc = s + carry as u64;
    }
    let mut tail = [0u8; 8];
    let rem = words.remainder();
    tail[..rem.len()].copy_from_slice(rem);
    let (s, carry) = acc.overflowing_add(u64::from_be_bytes(tail));
    acc = s + carry as u64;
    // Fold 64 -> 16 bits with end-around carry.
    let mut s = (acc >> 32) + (acc & 0xffff_ffff);
    s = (s >> 16) + (s & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use smoltcp::wire::{IpAddress, Ipv4Address, TcpOption, TcpPacket};

    const SRC: [u8; 4] = [10, 0, 0, 1];
    const DST: [u8; 4] = [192, 168, 1, 20];

    fn ip(a: [u8; 4]) -> IpAddress {
        IpAddress::Ipv4(Ipv4Address::from(a))
    }

    fn blocks(v: &[(u32, u32)]) -> ([SackBlock; MAX_SACK_BLOCKS], u8) {
        let mut s = [SackBlock::default(); MAX_SACK_BLOCKS];
        for (slot, &(l, r)) in s.iter_mut().zip(v) {
            *slot = SackBlock {
                left: Seq(l),
                right: Seq(r),
            };
        }
        (s, v.len().min(MAX_SACK_BLOCKS) as u8)
    }

    fn syn_header() -> Header {
        Header {
            src_port: 40000,
            dst_port: 80,
            seq: Seq(0x0102_0304),
            ack: Seq(0),
            flags: Flags::SYN,
            window: 64240,
            options: Options {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamp: Some((0xdead_beef, 0)),
                ..Options::default()
            },
        }
    }

    /// A minimal 20-byte header followed by `opts` (padded to 4 bytes with EOL) and `payload`.
    fn with_options(opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let olen = opts.len().div_ceil(4) * 4;
        let mut v = vec![0u8; 20 + olen];
        v[12] = (((20 + olen) / 4) as u8) << 4;
        v[13] = Flags::ACK.0;
        v[20..20 + opts.len()].copy_from_slice(opts);
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn syn_layout_matches_linux() {
        let h = syn_header();
        assert_eq!(header_len(&h), 40);
        let mut buf = [0xaau8; 60];
        assert_eq!(emit(&h, &mut buf), 40);
        assert_eq!(buf[12], 10 << 4);
        assert_eq!(&buf[16..20], &[0, 0, 0, 0]);
        assert_eq!(
            &buf[20..40],
            &[
                2, 4, 0x05, 0xb4, // MSS 1460
                4, 2, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, // SACK_PERM, TS
                1, 3, 3, 7, // NOP, WS 7
            ]
        );
        let seg = parse(&buf[..40]).unwrap();
        assert_eq!(seg.options, h.options);
        assert_eq!(seg.flags, Flags::SYN);
        assert_eq!(seg.seq, Seq(0x0102_0304));
        assert!(seg.payload.is_empty());
        assert_eq!(seg.seg_len(), 1);
    }

    #[test]
    fn syn_without_sack_perm_pads_ts_with_nops() {
        let mut h = syn_header();
        h.options.sack_permitted = false;
        let mut buf = [0u8; 60];
        assert_eq!(emit(&h, &mut buf), 40);
        assert_eq!(&buf[24..28], &[1, 1, 8, 10]);
        h.options.timestamp = None;
        h.options.sack_permitted = true;
        assert_eq!(emit(&h, &mut buf), 32);
        assert_eq!(&buf[20..32], &[2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7]);
    }

    #[test]
    fn syn_only_options_dropped_without_syn() {
        let mut h = syn_header();
        h.flags = Flags::ACK;
        let (sack, sack_len) = blocks(&[(1, 2)]);
        h.options.sack = sack;
        h.options.sack_len = sack_len;
        let mut buf = [0u8; 60];
        assert_eq!(emit(&h, &mut buf), 20 + 12 + 12);
        assert_eq!(&buf[20..24], &[1, 1, 8, 10]);
        assert_eq!(&buf[32..36], &[1, 1, 5, 10]);
        let o = parse(&buf[..44]).unwrap().options;
        assert_eq!(o.mss, None);
        assert_eq!(o.window_scale, None);
        assert!(!o.sack_permitted);
        assert_eq!(o.timestamp, Some((0xdead_beef, 0)));
        assert_eq!(o.sack_blocks(), &sack[..1]);
    }

    #[test]
    fn sack_blocks_limited_to_what_fits() {
        let (sack, sack_len) = blocks(&[(1, 2), (3, 4), (5, 6), (7, 8)]);
        let mut h = Header {
            flags: Flags::ACK,
            options: Options {
                sack,
                sack_len,
                ..Options::default()
            },
            ..Header::default()
        };
        // No timestamps: 4 blocks, NOP NOP SACK(34) = 36 bytes.
        assert_eq!(header_len(&h), 56);
        // Timestamps: 3 blocks, 12 + 28 = 40 bytes.
        h.options.timestamp = Some((1, 2));
        assert_eq!(header_len(&h), 60);
        let mut buf = [0u8; 60];
        emit(&h, &mut buf);
        assert_eq!(parse(&buf).unwrap().options.sack_blocks(), &sack[..3]);
        // SYN with everything: 20 bytes of SYN options leave room for 2 blocks.
        let mut s = syn_header();
        s.options.sack = sack;
        s.options.sack_len = 4;
        assert_eq!(header_len(&s), 60);
        emit(&s, &mut buf);
        assert_eq!(parse(&buf).unwrap().options.sack_blocks(), &sack[..2]);
        // An out-of-range sack_len is clamped, not a panic.
        h.options.sack_len = 200;
        h.options.timestamp = None;
        assert_eq!(header_len(&h), 56);
    }

    #[test]
    fn bare_ack_is_twenty_bytes() {
        let h = Header {
            src_port: 1,
            dst_port: 2,
            seq: Seq(3),
            ack: Seq(4),
            flags: Flags::ACK | Flags::PSH,
            window: 5,
            options: Options::default(),
        };
        let mut buf = [0xffu8; 20];
        assert_eq!(emit(&h, &mut buf), 20);
        assert_eq!(
            buf,
            [0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0x50, 0x18, 0, 5, 0, 0, 0, 0]
        );
    }

    #[test]
    #[should_panic]
    fn emit_into_short_buffer_panics() {
        let mut buf = [0u8; 39];
        emit(&syn_header(), &mut buf);
    }

    #[test]
    fn parse_fixed_errors() {
        assert_eq!(parse(&[]).unwrap_err(), SegmentError::Truncated);
        assert_eq!(parse(&[0u8; 19]).unwrap_err(), SegmentError::Truncated);
        let mut v = [0u8; 24];
        for doff in 0..5u8 {
            v[12] = doff << 4;
            assert_eq!(parse(&v).unwrap_err(), SegmentError::BadDataOffset);
        }
        v[12] = 7 << 4; // 28 bytes > 24
        assert_eq!(parse(&v).unwrap_err(), SegmentError::BadDataOffset);
        v[12] = 6 << 4;
        v[20..24].copy_from_slice(&[1, 1, 1, 0]);
        let seg = parse(&v).unwrap();
        assert_eq!(seg.options, Options::default());
        assert!(seg.payload.is_empty());
    }

    #[test]
    fn parse_payload_and_flags() {
        let v = with_options(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8], b"hello");
        let seg = parse(&v).unwrap();
        assert_eq!(seg.payload, b"hello");
        assert_eq!(seg.options.timestamp, Some((9, 8)));
        assert_eq!(seg.flags, Flags::ACK);
        assert_eq!(seg.seg_len(), 5);
    }

    #[test]
    fn malformed_options() {
        use SegmentError::BadOption;
        let cases: &[(&[u8], &str)] = &[
            (&[2, 0, 0, 0], "length 0"),
            (&[2, 1, 0, 0], "length 1"),
            (&[99, 0], "unknown kind, length 0"),
            (&[99, 1], "unknown kind, length 1"),
            (&[1, 1, 1, 2], "length byte missing"),
            (&[1, 1, 99, 3], "runs past the header"),
            (&[2, 8, 5, 0xb4], "MSS runs past the header"),
            (&[2, 3, 5, 0], "MSS length 3"),
            (&[2, 5, 5, 0xb4, 0, 0, 0, 0], "MSS length 5"),
            (&[3, 2, 1, 1], "WS length 2"),
            (&[3, 4, 7, 0], "WS length 4"),
            (&[4, 3, 0, 0], "SACK_PERM length 3"),
            (&[8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "TS length 9"),
            (&[8, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "TS length 11"),
            (&[5, 2, 0, 0], "SACK with no blocks"),
            (&[5, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "SACK length 9"),
            (&[5, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "SACK length 11"),
        ];
        for (opts, what) in cases {
            assert_eq!(
                parse(&with_options(opts, b"")).unwrap_err(),
                BadOption,
                "{what}"
            );
        }
        // Five SACK blocks: 42 bytes, needs an options area larger than 40 bytes; test the
        // options parser directly.
        let mut five = vec![5u8, 42];
        five.extend_from_slice(&[0; 40]);
        assert_eq!(parse_options(&five).unwrap_err(), BadOption);
        let mut four = vec![5u8, 34];
        four.extend_from_slice(&[0; 32]);
        assert_eq!(parse_options(&four).unwrap().sack_len, 4);
    }

    #[test]
    fn option_list_rules() {
        // EOL ends the list: garbage after it is ignored.
        let o = parse(&with_options(&[2, 4, 1, 0, 0, 2, 0, 0], b""))
            .unwrap()
            .options;
        assert_eq!(o.mss, Some(256));
        // Unknown kinds with valid lengths are skipped (kind 30 MPTCP, kind 34 TFO cookie).
        let o = parse(&with_options(
            &[30, 4, 0xab, 0xcd, 34, 2, 1, 3, 3, 14, 4, 2],
            b"",
        ))
        .unwrap()
        .options;
        assert_eq!(o.window_scale, Some(14));
        assert!(o.sack_permitted);
        // Values above 14 kept as sent.
        let o = parse(&with_options(&[3, 3, 200, 0], b"")).unwrap().options;
        assert_eq!(o.window_scale, Some(200));
        // SACK with one block, big-endian.
        let o = parse(&with_options(&[1, 1, 5, 10, 0, 0, 1, 0, 0, 0, 2, 0], b""))
            .unwrap()
            .options;
        assert_eq!(
            o.sack_blocks(),
            &[SackBlock {
                left: Seq(256),
                right: Seq(512)
            }]
        );
        // SYN-only options on a non-SYN segment are parsed.
        let o = parse(&with_options(&[2, 4, 5, 0xb4], b"")).unwrap().options;
        assert_eq!(o.mss, Some(1460));
    }

    #[test]
    fn checksum_known_value() {
        // By hand: pseudo-header 0a00+0001+c0a8+0114+0006+0014 = cbd7; header words
        // 0001+0002+0000+0003+0000+0004+5010+0005 = 501f; cbd7+501f = 1_bf6 -> 1bf7.
        let h = Header {
            src_port: 1,
            dst_port: 2,
            seq: Seq(3),
            ack: Seq(4),
            flags: Flags::ACK,
            window: 5,
            options: Options::default(),
        };
        let mut buf = [0u8; 20];
        emit(&h, &mut buf);
        let c = checksum(SRC, DST, &buf);
        assert_eq!(c, !0x1bf7);
        buf[16..18].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(SRC, DST, &buf), 0);
        assert!(TcpPacket::new_checked(&buf[..])
            .unwrap()
            .verify_checksum(&ip(SRC), &ip(DST)));
    }

    /// What `parse(emit(h))` should give back for `h`'s options.
    fn expected_options(h: &Header) -> Options {
        let mut o = h.options;
        let syn = h.flags.has(Flags::SYN);
        if !syn {
            o.mss = None;
            o.window_scale = None;
            o.sack_permitted = false;
        }
        let used = if syn {
            4 * o.mss.is_some() as usize
                + 4 * o.window_scale.is_some() as usize
                + if o.timestamp.is_some() {
                    12
                } else {
                    4 * o.sack_permitted as usize
                }
        } else {
            12 * o.timestamp.is_some() as usize
        };
        let fit = match used {
            0..=4 => 4,
            5..=12 => 3,
            13..=20 => 2,
            _ => unreachable!(),
        };
        let n = (o.sack_len as usize).min(fit);
        for b in &mut o.sack[n..] {
            *b = SackBlock::default();
        }
        o.sack_len = n as u8;
        o
    }

    fn arb_header() -> impl Strategy<Value = Header> {
        (
            (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()),
            (any::<u8>(), any::<u16>()),
            (
                any::<Option<u16>>(),
                any::<Option<u8>>(),
                any::<bool>(),
                proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
                any::<Option<(u32, u32)>>(),
            ),
        )
            .prop_map(
                |((sp, dp, seq, ack), (flags, window), (mss, ws, sp_ok, sack, ts))| {
                    let (blocks, len) = blocks(&sack);
                    Header {
                        src_port: sp,
                        dst_port: dp,
                        seq: Seq(seq),
                        ack: Seq(ack),
                        flags: Flags(flags),
                        window,
                        options: Options {
                            mss,
                            window_scale: ws,
                            sack_permitted: sp_ok,
                            sack: blocks,
                            sack_len: len,
                            timestamp: ts,
                        },
                    }
                },
            )
    }

    /// Options as smoltcp's parser reads them (its SACK option keeps at most 3 blocks).
    fn smoltcp_options(opts: &[u8]) -> Options {
        let mut o = Options::default();
        let mut rest = opts;
        while !rest.is_empty() {
            let (next, opt) = TcpOption::parse(rest).expect("smoltcp rejects our options");
            match opt {
                TcpOption::EndOfList => break,
                TcpOption::NoOperation | TcpOption::Unknown { .. } => {}
                TcpOption::MaxSegmentSize(m) => o.mss = Some(m),
                TcpOption::WindowScale(s) => o.window_scale = Some(s),
                TcpOption::SackPermitted => o.sack_permitted = true,
                TcpOption::TimeStamp { tsval, tsecr } => o.timestamp = Some((tsval, tsecr)),
                TcpOption::SackRange(r) => {
                    let v: Vec<(u32, u32)> = r.iter().flatten().copied().collect();
                    (o.sack, o.sack_len) = blocks(&v);
                }
            }
            rest = next;
        }
        o
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn emit_parse_roundtrip(
            h in arb_header(),
            payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let hl = header_len(&h);
            prop_assert!(matches!(hl, 20 | 24 | 28 | 32 | 36 | 40 | 44 | 48 | 52 | 56 | 60));
            let mut buf = vec![0x5au8; hl + payload.len()];
            prop_assert_eq!(emit(&h, &mut buf), hl);
            buf[hl..].copy_from_slice(&payload);
            prop_assert_eq!((buf[12] >> 4) as usize * 4, hl);
            prop_assert_eq!(buf[12] & 0x0f, 0);
            prop_assert_eq!(&buf[16..20], &[0u8, 0, 0, 0][..]);
            let seg = parse(&buf).unwrap();
            prop_assert_eq!(seg.src_port, h.src_port);
            prop_assert_eq!(seg.dst_port, h.dst_port);
            prop_assert_eq!(seg.seq, h.seq);
            prop_assert_eq!(seg.ack, h.ack);
            prop_assert_eq!(seg.flags, h.flags);
            prop_assert_eq!(seg.window, h.window);
            prop_assert_eq!(seg.payload, &payload[..]);
            prop_assert_eq!(seg.options, expected_options(&h));
        }

        #[test]
        fn emitted_segments_agree_with_smoltcp(
            h in arb_header(),
            payload in proptest::collection::vec(any::<u8>(), 0..1500),
            src: [u8; 4],
            dst: [u8; 4],
        ) {
            let hl = header_len(&h);
            let mut buf = vec![0u8; hl + payload.len()];
            emit(&h, &mut buf);
            buf[hl..].copy_from_slice(&payload);

            // Checksum: ours equals smoltcp's fill_checksum, and verifies to 0.
            let ours = checksum(src, dst, &buf);
            let mut theirs = buf.clone();
            let mut p = TcpPacket::new_checked(&mut theirs[..]).unwrap();
            p.fill_checksum(&ip(src), &ip(dst));
            prop_assert_eq!(ours, p.checksum());
            buf[16..18].copy_from_slice(&ours.to_be_bytes());
            prop_assert_eq!(checksum(src, dst, &buf), 0);
            let p = TcpPacket::new_checked(&buf[..]).unwrap();
            prop_assert!(p.verify_checksum(&ip(src), &ip(dst)));

            // Header fields and options as smoltcp reads them.
            prop_assert_eq!(p.header_len() as usize, hl);
            prop_assert_eq!(p.src_port(), h.src_port);
            prop_assert_eq!(p.dst_port(), h.dst_port);
            prop_assert_eq!(p.window_len(), h.window);
            prop_assert_eq!(p.payload(), &payload[..]);
            let mut want = expected_options(&h);
            if want.sack_len > 3 {
                want.sack[3] = SackBlock::default();
                want.sack_len = 3;
            }
            prop_assert_eq!(smoltcp_options(p.options()), want);
        }

        #[test]
        fn checksum_detects_single_bit_errors(
            data in proptest::collection::vec(any::<u8>(), 20..200),
            bit in any::<proptest::sample::Index>(),
        ) {
            let mut buf = data;
            buf[16] = 0;
            buf[17] = 0;
            let c = checksum(SRC, DST, &buf);
            buf[16..18].copy_from_slice(&c.to_be_bytes());
            prop_assert_eq!(checksum(SRC, DST, &buf), 0);
            let i = bit.index(buf.len() * 8);
            buf[i / 8] ^= 1 << (i % 8);
            prop_assert_ne!(checksum(SRC, DST, &buf), 0);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(seg) = parse(&data) {
                prop_assert!(seg.options.sack_len as usize <= MAX_SACK_BLOCKS);
                prop_assert!(seg.payload.len() + 20 <= data.len());
            }
        }

        #[test]
        fn parse_never_panics_on_mutated_segments(
            h in arb_header(),
            edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<proptest::sample::Index>(),
        ) {
            let hl = header_len(&h);
            let mut buf = vec![0u8; hl + 8];
            emit(&h, &mut buf);
            for (i, v) in edits {
                let i = i.index(buf.len());
                buf[i] = v;
            }
            let n = cut.index(buf.len() + 1);
            let _ = parse(&buf[..n]);
            if let Ok(seg) = parse(&buf) {
                // Whatever parses must re-emit and parse to itself (modulo the emit rules).
                let h2 = Header {
                    src_port: seg.src_port,
                    dst_port: seg.dst_port,
                    seq: seg.seq,
                    ack: seg.ack,
                    flags: seg.flags,
                    window: seg.window,
                    options: seg.options,
                };
                let mut out = [0u8; 60];
                let l2 = emit(&h2, &mut out);
                prop_assert_eq!(parse(&out[..l2]).unwrap().options, expected_options(&h2));
            }
        }
    }
}

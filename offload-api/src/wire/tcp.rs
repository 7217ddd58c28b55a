//! TCP segments on the wire (RFC 9293 §3.1; RFC 7323 for window scale and timestamps,
//! RFC 2018 for SACK): the one TCP header parser and emitter of nicemu, used by the host's
//! TCB, the NIC's parser and TSO, and the Tonic NIC path.
//!
//! Two levels, as in smoltcp's `wire` module:
//! - [`TcpPacket`], a zero-copy view over a segment's bytes, with the byte ranges of the fixed
//!   header in [`field`], getters, setters and the checksum under the IPv4 pseudo-header;
//! - [`TcpRepr`], the parsed segment (fields, [`TcpOptions`], payload) from [`parse`], and
//!   [`TcpHeader`], a header to write with [`emit`].
//!
//! Parsing never panics: a short header, a data offset outside the segment, or an option whose
//! length byte is invalid is a [`TcpError`]. [`parse`] does not verify the checksum: on the
//! host the NIC verified it (rx checksum offload, as mTCP relies on) and fills it on transmit.

use super::seq::Seq;

mod packet;
pub use packet::{data_offset_bytes, field, TcpPacket};

/// TCP flag bits (the low byte of the flags field).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// FIN.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// SYN.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// RST.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// PSH.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// ACK.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// URG.
    pub const URG: TcpFlags = TcpFlags(0x20);
    /// ECE (RFC 3168).
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// CWR (RFC 3168).
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// True when every bit of `other` is set.
    #[inline]
    pub fn has(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, o: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | o.0)
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
pub struct TcpOptions {
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

impl TcpOptions {
    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

/// Why a segment could not be parsed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum TcpError {
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
pub struct TcpRepr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: Seq,
    /// Acknowledgement number (meaningful with ACK).
    pub ack: Seq,
    /// Flags.
    pub flags: TcpFlags,
    /// Window field as sent (not scaled).
    pub window: u16,
    /// Options.
    pub options: TcpOptions,
    /// Payload.
    pub payload: &'a [u8],
}

impl TcpRepr<'_> {
    /// SEG.LEN: payload plus one for SYN and one for FIN (RFC 9293 §3.4).
    pub fn seg_len(&self) -> u32 {
        self.payload.len() as u32
            + self.flags.has(TcpFlags::SYN) as u32
            + self.flags.has(TcpFlags::FIN) as u32
    }
}

/// Parses a TCP segment (header, options and payload), `tcp` starting at the TCP header and
/// ending at the end of the IP payload.
///
/// Checks, in order: at least 20 bytes ([`TcpError::Truncated`]); data offset of at least
/// 5 words and within `tcp` ([`TcpError::BadDataOffset`]); options well formed
/// ([`parse_options`]). Reserved bits, the checksum and the urgent pointer are ignored. Never
/// panics and never allocates.
#[inline]
pub fn parse(tcp: &[u8]) -> Result<TcpRepr<'_>, TcpError> {
    TcpRepr::parse(&TcpPacket::new_checked(tcp)?)
}

impl<'a> TcpRepr<'a> {
    /// The segment a checked view holds: its fields, its options ([`parse_options`]) and its
    /// payload. Fails only on malformed options. Never panics.
    #[inline]
    pub fn parse(p: &TcpPacket<&'a [u8]>) -> Result<TcpRepr<'a>, TcpError> {
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq_number(),
            ack: p.ack_number(),
            flags: p.flags(),
            window: p.window_len(),
            options: parse_options(p.options())?,
            payload: p.payload_slice(),
        })
    }
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
/// 1 ≤ n ≤ 4); anything else is [`TcpError::BadOption`]. Unknown kinds with a valid length
/// are skipped. A repeated option overwrites the earlier one. Never panics.
#[inline]
pub fn parse_options(opts: &[u8]) -> Result<TcpOptions, TcpError> {
    let mut o = TcpOptions::default();
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
            return Err(TcpError::BadOption);
        };
        let len = len as usize;
        if len < 2 || len > rest.len() {
            return Err(TcpError::BadOption);
        }
        let body = &rest[2..len];
        match kind {
            KIND_MSS => {
                let &[a, b] = body else {
                    return Err(TcpError::BadOption);
                };
                o.mss = Some(u16::from_be_bytes([a, b]));
            }
            KIND_WS => {
                let &[shift] = body else {
                    return Err(TcpError::BadOption);
                };
                o.window_scale = Some(shift);
            }
            KIND_SACK_PERM => {
                if !body.is_empty() {
                    return Err(TcpError::BadOption);
                }
                o.sack_permitted = true;
            }
            KIND_TS => {
                let &[a0, a1, a2, a3, b0, b1, b2, b3] = body else {
                    return Err(TcpError::BadOption);
                };
                o.timestamp = Some((
                    u32::from_be_bytes([a0, a1, a2, a3]),
                    u32::from_be_bytes([b0, b1, b2, b3]),
                ));
            }
            KIND_SACK => {
                // 1 to MAX_SACK_BLOCKS (4) blocks of 8 bytes.
                if !matches!(body.len(), 8 | 16 | 24 | 32) {
                    return Err(TcpError::BadOption);
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
pub struct TcpHeader {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: Seq,
    /// Acknowledgement number.
    pub ack: Seq,
    /// Flags.
    pub flags: TcpFlags,
    /// Window field (already scaled down).
    pub window: u16,
    /// Options to emit. SACK blocks beyond what fits in 40 bytes are left out.
    pub options: TcpOptions,
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
fn layout(h: &TcpHeader) -> Layout {
    let o = &h.options;
    let syn = h.flags.has(TcpFlags::SYN);
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
pub fn header_len(h: &TcpHeader) -> usize {
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
#[inline]
pub fn emit(h: &TcpHeader, out: &mut [u8]) -> usize {
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

#[cfg(test)]
mod tests;

//! IPv4 headers (RFC 791 §3.1): the one IPv4 header parser and emitter of nicemu, used by the
//! NIC's receive validation, checksum fill and TSO, RSS, the offloads, and the host's framing.
//!
//! Two levels, as in smoltcp's `wire` module and [`super::tcp`]:
//! - [`Ipv4Packet`], a zero-copy view over a packet's bytes, with the header's byte ranges in
//!   [`field`], getters, setters and the header checksum (RFC 1071, computed by
//!   [`super::checksum`]);
//! - [`Ipv4Repr`], the header's fields as nicemu emits them (no options), read with
//!   [`Ipv4Repr::parse`] and written with [`Ipv4Repr::emit`].
//!
//! The length checks ([`Ipv4Packet::check_len`]) never panic and come in two halves, the
//! header ([`Ipv4Packet::check_header_len`]) and the total length
//! ([`Ipv4Packet::check_total_len`]), so that a caller can refuse IP options in between, as
//! the NIC's receive path does.

use super::bytes;
use super::checksum;

/// Byte positions of the IPv4 header (RFC 791 §3.1, "Internet Header Format"), from the start
/// of the IPv4 header.
pub mod field {
    /// A byte range of the header.
    pub type Field = core::ops::Range<usize>;

    /// The byte whose high nibble is the version and low nibble the IHL (header length in
    /// 32-bit words).
    pub const VER_IHL: usize = 0;
    /// Type of service: DSCP (high six bits, RFC 2474) and ECN (low two bits, RFC 3168).
    pub const DSCP_ECN: usize = 1;
    /// Total length: header and data, in bytes.
    pub const LENGTH: Field = 2..4;
    /// Identification.
    pub const IDENT: Field = 4..6;
    /// Flags (reserved, DF, MF) in the top three bits, fragment offset (in 8-byte units) in
    /// the low 13.
    pub const FLG_OFF: Field = 6..8;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol of the payload.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: Field = 10..12;
    /// Source address.
    pub const SRC_ADDR: Field = 12..16;
    /// Destination address.
    pub const DST_ADDR: Field = 16..20;
    /// Where the options start (and a header without options ends).
    pub const OPTIONS: usize = 20;
}

/// Length of an IPv4 header without options (RFC 791 §3.1; the only form nicemu emits).
pub const HEADER_LEN: usize = field::OPTIONS;
/// Longest IPv4 header: IHL 15 words (RFC 791 §3.1), i.e. at most 40 bytes of options.
pub const MAX_HEADER_LEN: usize = 60;
/// The version field of IPv4.
pub const VERSION: u8 = 4;

/// IP protocol number of ICMP (RFC 792).
pub const IPPROTO_ICMP: u8 = 1;
/// IP protocol number of TCP (RFC 9293 §3.1; also the pseudo-header's protocol).
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of UDP (RFC 768).
pub const IPPROTO_UDP: u8 = 17;

/// The DF (don't fragment) bit of the flags and fragment offset field (RFC 791 §3.1).
pub const FLAG_DF: u16 = 0x4000;
/// The MF (more fragments) bit of the flags and fragment offset field (RFC 791 §3.1).
pub const FLAG_MF: u16 = 0x2000;
/// The fragment offset bits of the flags and fragment offset field (RFC 791 §3.1).
pub const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// Why bytes are not an IPv4 packet nicemu can use.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum Ipv4Error {
    /// The buffer ends before what the packet announces: the 20-byte fixed header, the header
    /// length of the IHL, or the total length (the packet was cut; bytes beyond the total
    /// length, such as Ethernet padding, are allowed).
    #[error("IPv4 packet truncated")]
    Truncated,
    /// The version field is not 4.
    #[error("not IPv4")]
    BadVersion,
    /// The IHL is below 5 words.
    #[error("IPv4 header length below 20 bytes")]
    BadHeaderLen,
    /// The total length is below the header length.
    #[error("IPv4 total length below the header length")]
    BadTotalLen,
    /// A fragment (MF set or a fragment offset, RFC 791 §3.2): [`Ipv4Repr::parse`] only takes
    /// whole datagrams. The view's length checks never return it.
    #[error("IPv4 fragment")]
    Fragment,
}

/// An IPv4 packet's bytes (header, options and payload, possibly followed by link padding),
/// read and written in place.
///
/// Invariant: a view made by [`Ipv4Packet::new_checked`] holds at least the header its IHL
/// announces (20 to 60 bytes) and the total length, which is at least the header length, so
/// no accessor panics. On a view made by [`Ipv4Packet::new_unchecked`] the accessors panic
/// when the buffer is shorter than what they read: the fixed-header fields need 20 bytes,
/// [`Ipv4Packet::options`] the header length and [`Ipv4Packet::payload`] the total length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

#[inline(always)]
fn be16(b: &[u8], f: field::Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

/// Header length in bytes from the version/IHL byte (its low nibble, in 32-bit words).
#[inline(always)]
const fn ihl_bytes(b: u8) -> usize {
    ((b & 0x0f) as usize) * 4
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// A view with no length checks (see the type's invariant).
    #[inline(always)]
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    /// A view after [`Ipv4Packet::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>, Ipv4Error> {
        let p = Ipv4Packet::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// [`Ipv4Packet::check_header_len`] then [`Ipv4Packet::check_total_len`].
    #[inline(always)]
    pub fn check_len(&self) -> Result<(), Ipv4Error> {
        self.check_header_len()?;
        self.check_total_len()
    }

    /// Checks, in order (RFC 791 §3.1): at least 20 bytes ([`Ipv4Error::Truncated`]); version 4
    /// ([`Ipv4Error::BadVersion`]); IHL of at least 5 words ([`Ipv4Error::BadHeaderLen`]); the
    /// whole header, options included, within the buffer ([`Ipv4Error::Truncated`]).
    ///
    /// Afterwards the fixed-header fields and [`Ipv4Packet::options`] can be read.
    #[inline(always)]
    pub fn check_header_len(&self) -> Result<(), Ipv4Error> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Ipv4Error::Truncated);
        }
        if self.version() != VERSION {
            return Err(Ipv4Error::BadVersion);
        }
        let hl = self.header_len();
        if hl < HEADER_LEN {
            return Err(Ipv4Error::BadHeaderLen);
        }
        if hl > b.len() {
            return Err(Ipv4Error::Truncated);
        }
        Ok(())
    }

    /// Checks, on a view that passed [`Ipv4Packet::check_header_len`], in order: the total
    /// length at least the header length ([`Ipv4Error::BadTotalLen`]) and within the buffer
    /// ([`Ipv4Error::Truncated`]) (RFC 791 §3.1).
    ///
    /// # Panics
    /// When the buffer is shorter than 20 bytes.
    #[inline(always)]
    pub fn check_total_len(&self) -> Result<(), Ipv4Error> {
        let total = self.total_len();
        if total < self.header_len() {
            return Err(Ipv4Error::BadTotalLen);
        }
        if total > self.buffer.as_ref().len() {
            return Err(Ipv4Error::Truncated);
        }
        Ok(())
    }

    /// The underlying buffer.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version field (4 for IPv4).
    #[inline(always)]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes, options included (the IHL times 4).
    #[inline(always)]
    pub fn header_len(&self) -> usize {
        ihl_bytes(self.buffer.as_ref()[field::VER_IHL])
    }

    /// The type-of-service byte: DSCP and ECN.
    #[inline(always)]
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// The total length field: header and data, in bytes.
    #[inline(always)]
    pub fn total_len(&self) -> usize {
        be16(self.buffer.as_ref(), field::LENGTH) as usize
    }

    /// The identification field.
    #[inline(always)]
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT)
    }

    /// The DF (don't fragment) flag.
    #[inline(always)]
    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_DF != 0
    }

    /// The MF (more fragments) flag.
    #[inline(always)]
    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_MF != 0
    }

    /// The fragment offset, in bytes (the field counts 8-byte units).
    #[inline(always)]
    pub fn frag_offset(&self) -> u16 {
        (be16(self.buffer.as_ref(), field::FLG_OFF) & FRAG_OFFSET_MASK) << 3
    }

    /// True for a fragment: MF set or a non-zero fragment offset (RFC 791 §3.2). A whole
    /// datagram has neither.
    #[inline(always)]
    pub fn is_fragment(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & (FLAG_MF | FRAG_OFFSET_MASK) != 0
    }

    /// Time to live.
    #[inline(always)]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// The protocol of the payload (`IPPROTO_*`).
    #[inline(always)]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// The header checksum field.
    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The source address.
    #[inline(always)]
    pub fn src_addr(&self) -> [u8; 4] {
        bytes(self.buffer.as_ref(), field::SRC_ADDR.start)
    }

    /// The destination address.
    #[inline(always)]
    pub fn dst_addr(&self) -> [u8; 4] {
        bytes(self.buffer.as_ref(), field::DST_ADDR.start)
    }

    /// The options area: the bytes between the fixed header and the header length.
    #[inline(always)]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// The payload: from the header length to the total length (link padding excluded).
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..self.total_len()]
    }

    /// True when the header (options included) carries a valid checksum (RFC 791 §3.1,
    /// RFC 1071). A 20-byte header takes [`checksum::verify_ipv4_header20`].
    #[inline(always)]
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        let hl = self.header_len();
        if hl == HEADER_LEN {
            if let Some(h) = b.first_chunk::<HEADER_LEN>() {
                return checksum::verify_ipv4_header20(h);
            }
        }
        checksum::verify(&b[..hl])
    }
}

impl<'a> Ipv4Packet<&'a [u8]> {
    /// The payload, borrowed for as long as the buffer.
    #[inline(always)]
    pub fn payload_slice(&self) -> &'a [u8] {
        &self.buffer[self.header_len()..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    #[inline(always)]
    fn put16(&mut self, f: field::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the version and the header length in bytes (a multiple of 4, 20 to 60).
    #[inline]
    pub fn set_version_and_header_len(&mut self, version: u8, len: usize) {
        self.buffer.as_mut()[field::VER_IHL] = (version << 4) | ((len / 4) as u8 & 0x0f);
    }

    /// Sets the type-of-service byte (DSCP and ECN).
    #[inline]
    pub fn set_dscp_ecn(&mut self, v: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = v;
    }

    /// Sets the total length field.
    #[inline(always)]
    pub fn set_total_len(&mut self, v: u16) {
        self.put16(field::LENGTH, v);
    }

    /// Sets the identification field.
    #[inline(always)]
    pub fn set_ident(&mut self, v: u16) {
        self.put16(field::IDENT, v);
    }

    /// Sets the flags and fragment offset field: DF as given, MF clear, offset 0 (a whole
    /// datagram).
    #[inline]
    pub fn set_whole_datagram(&mut self, dont_frag: bool) {
        self.put16(field::FLG_OFF, if dont_frag { FLAG_DF } else { 0 });
    }

    /// Sets the time to live.
    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    /// Sets the header checksum field.
    #[inline(always)]
    pub fn set_checksum(&mut self, v: u16) {
        self.put16(field::CHECKSUM, v);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a);
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a);
    }

    /// The payload (from the header length to the total length), writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), self.total_len());
        &mut self.buffer.as_mut()[start..end]
    }

    /// Computes and stores the header checksum over the header length (RFC 791 §3.1,
    /// RFC 1071); afterwards [`Ipv4Packet::verify_checksum`] holds.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = self.header_len();
        let c = checksum::checksum(&self.buffer.as_ref()[..hl]);
        self.set_checksum(c);
    }
}

/// An IPv4 header as nicemu emits it: no options, a whole datagram (MF clear, offset 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Protocol of the payload (`IPPROTO_*`).
    pub protocol: u8,
    /// Length of the payload in bytes (the total length less the header); at most
    /// 65535 − 20 for [`Ipv4Repr::emit`].
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// Don't fragment.
    pub dont_frag: bool,
    /// Type-of-service byte: DSCP and ECN.
    pub dscp_ecn: u8,
}

impl Ipv4Repr {
    /// The header of a checked view ([`Ipv4Packet::new_checked`]): its fields, with the
    /// payload length up to the total length. Options are skipped, and the checksum is not
    /// verified ([`Ipv4Packet::verify_checksum`] does). [`Ipv4Error::Fragment`] for a
    /// fragment. Never panics on a checked view.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Ipv4Repr, Ipv4Error> {
        if p.is_fragment() {
            return Err(Ipv4Error::Fragment);
        }
        Ok(Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: p.total_len() - p.header_len(),
            ttl: p.ttl(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            dscp_ecn: p.dscp_ecn(),
        })
    }

    /// Bytes of the header [`Ipv4Repr::emit`] writes.
    #[inline(always)]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes of the whole packet: header and payload.
    #[inline(always)]
    pub const fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the 20-byte header into the start of `p`'s buffer: version 4, IHL 5, the fields
    /// of `self`, total length `20 + payload_len`, MF clear, offset 0, and a zero checksum
    /// (fill it with [`Ipv4Packet::fill_checksum`], or leave it to the NIC's checksum
    /// offload as the host does). The payload is left as it is.
    ///
    /// # Panics
    /// When the buffer is shorter than 20 bytes.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) {
        p.set_version_and_header_len(VERSION, HEADER_LEN);
        p.set_dscp_ecn(self.dscp_ecn);
        p.set_total_len(self.total_len() as u16);
        p.set_ident(self.ident);
        p.set_whole_datagram(self.dont_frag);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_checksum(0);
        p.set_src_addr(self.src);
        p.set_dst_addr(self.dst);
    }
}

#[cfg(test)]
mod tests;

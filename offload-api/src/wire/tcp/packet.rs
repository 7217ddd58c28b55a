//! [`TcpPacket`]: a zero-copy view over the bytes of a TCP segment (RFC 9293 §3.1).

use super::{TcpError, TcpFlags, FIXED_HEADER_LEN};
use crate::wire::checksum;
use crate::wire::seq::Seq;

/// Byte positions of the fixed TCP header (RFC 9293 §3.1, Figure 1), from the start of the
/// TCP header.
pub mod field {
    /// A byte range of the header.
    pub type Field = core::ops::Range<usize>;

    /// Source port.
    pub const SRC_PORT: Field = 0..2;
    /// Destination port.
    pub const DST_PORT: Field = 2..4;
    /// Sequence number.
    pub const SEQ_NUM: Field = 4..8;
    /// Acknowledgment number.
    pub const ACK_NUM: Field = 8..12;
    /// The byte whose high nibble is the data offset (header length in 32-bit words).
    pub const DATA_OFF: usize = 12;
    /// The flags byte (CWR ECE URG ACK PSH RST SYN FIN).
    pub const FLAGS: usize = 13;
    /// Window.
    pub const WIN_SIZE: Field = 14..16;
    /// Checksum.
    pub const CHECKSUM: Field = 16..18;
    /// Urgent pointer.
    pub const URGENT: Field = 18..20;
    /// Where the options start (and the fixed header ends).
    pub const OPTIONS: usize = 20;
}

/// A TCP segment's bytes (header, options and payload, up to the end of the IP payload),
/// read and written in place.
///
/// Invariant: a view made by [`TcpPacket::new_checked`] holds at least the fixed 20-byte
/// header and a data offset between 5 words and the buffer's length, so no accessor panics.
/// On a view made by [`TcpPacket::new_unchecked`] the accessors panic when the buffer is
/// shorter than what they read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

#[inline(always)]
fn be16(b: &[u8], f: field::Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

#[inline(always)]
fn be32(b: &[u8], f: field::Field) -> u32 {
    let i = f.start;
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// A view with no length checks (see the type's invariant).
    #[inline(always)]
    pub const fn new_unchecked(buffer: T) -> TcpPacket<T> {
        TcpPacket { buffer }
    }

    /// A view after [`TcpPacket::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<TcpPacket<T>, TcpError> {
        let p = TcpPacket::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks, in order: at least 20 bytes ([`TcpError::Truncated`]); a data offset of at
    /// least 5 words and within the buffer ([`TcpError::BadDataOffset`]) (RFC 9293 §3.1).
    #[inline]
    pub fn check_len(&self) -> Result<(), TcpError> {
        let b = self.buffer.as_ref();
        if b.len() < FIXED_HEADER_LEN {
            return Err(TcpError::Truncated);
        }
        let hlen = data_offset_bytes(b[field::DATA_OFF]);
        if hlen < FIXED_HEADER_LEN || hlen > b.len() {
            return Err(TcpError::BadDataOffset);
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    #[inline(always)]
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    #[inline(always)]
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Sequence number.
    #[inline(always)]
    pub fn seq_number(&self) -> Seq {
        Seq(be32(self.buffer.as_ref(), field::SEQ_NUM))
    }

    /// Acknowledgment number (meaningful with ACK).
    #[inline(always)]
    pub fn ack_number(&self) -> Seq {
        Seq(be32(self.buffer.as_ref(), field::ACK_NUM))
    }

    /// Header length in bytes, options included (the data offset times 4).
    #[inline(always)]
    pub fn header_len(&self) -> usize {
        data_offset_bytes(self.buffer.as_ref()[field::DATA_OFF])
    }

    /// The flags byte.
    #[inline(always)]
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }

    /// The window field as sent (not scaled: RFC 7323 §2.3 applies the shift).
    #[inline(always)]
    pub fn window_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::WIN_SIZE)
    }

    /// The checksum field.
    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The urgent pointer.
    #[inline(always)]
    pub fn urgent_at(&self) -> u16 {
        be16(self.buffer.as_ref(), field::URGENT)
    }

    /// The options area: the bytes between the fixed header and the data offset.
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// The payload: everything after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Length of the segment (header and payload).
    #[inline(always)]
    pub fn total_len(&self) -> usize {
        self.buffer.as_ref().len()
    }

    /// True when the checksum verifies under the IPv4 pseudo-header of `src` → `dst`
    /// (RFC 9293 §3.1, RFC 1071).
    #[inline]
    pub fn verify_checksum(&self, src: [u8; 4], dst: [u8; 4]) -> bool {
        checksum::verify_l4(src, dst, IPPROTO_TCP, self.buffer.as_ref())
    }
}

impl<'a> TcpPacket<&'a [u8]> {
    /// The options area, borrowed for as long as the buffer.
    #[inline]
    pub fn options_slice(&self) -> &'a [u8] {
        &self.buffer[field::OPTIONS..self.header_len()]
    }

    /// The payload, borrowed for as long as the buffer.
    #[inline]
    pub fn payload_slice(&self) -> &'a [u8] {
        &self.buffer[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    #[inline(always)]
    fn put16(&mut self, f: field::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    #[inline(always)]
    fn put32(&mut self, f: field::Field, v: u32) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.put16(field::SRC_PORT, v);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.put16(field::DST_PORT, v);
    }

    /// Sets the sequence number.
    #[inline(always)]
    pub fn set_seq_number(&mut self, v: Seq) {
        self.put32(field::SEQ_NUM, v.0);
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, v: Seq) {
        self.put32(field::ACK_NUM, v.0);
    }

    /// Sets the header length in bytes (a multiple of 4, 20 to 60), keeping the reserved bits.
    pub fn set_header_len(&mut self, len: usize) {
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & 0x0f) | (((len / 4) as u8) << 4);
    }

    /// Sets the flags byte.
    pub fn set_flags(&mut self, f: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }

    /// Sets the window field.
    pub fn set_window_len(&mut self, v: u16) {
        self.put16(field::WIN_SIZE, v);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.put16(field::CHECKSUM, v);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, v: u16) {
        self.put16(field::URGENT, v);
    }

    /// The options area, writable.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS..end]
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }

    /// Computes and stores the checksum under the IPv4 pseudo-header of `src` → `dst`
    /// (RFC 9293 §3.1); afterwards [`TcpPacket::verify_checksum`] holds.
    #[inline]
    pub fn fill_checksum(&mut self, src: [u8; 4], dst: [u8; 4]) {
        self.set_checksum(0);
        let c = checksum::l4_checksum(src, dst, IPPROTO_TCP, self.buffer.as_ref());
        self.set_checksum(c);
    }
}

pub use crate::wire::ipv4::IPPROTO_TCP;

/// Header length in bytes from the data-offset byte (its high nibble, in 32-bit words).
#[inline(always)]
pub const fn data_offset_bytes(b: u8) -> usize {
    ((b >> 4) as usize) * 4
}

#[cfg(test)]
mod tests {
    use super::super::{emit, header_len, parse, SackBlock, TcpHeader, TcpOptions, TcpRepr};
    use super::*;
    use proptest::prelude::*;

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    /// A Linux-style SYN, 10.0.0.1:40000 → 10.0.0.2:80: MSS 1460, SACK-permitted with
    /// timestamps (TSval 0x0badcafe), NOP, window scale 7; checksum computed independently
    /// (RFC 1071 over the pseudo-header and segment, 16 bits at a time).
    const LINUX_SYN: [u8; 40] = [
        0x9c, 0x40, 0x00, 0x50, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa,
        0xf0, 0x6f, 0x58, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x0b, 0xad,
        0xca, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
    ];

    /// The answering side's ACK, 10.0.0.2:80 → 10.0.0.1:40000: window 501, NOP NOP TS, NOP NOP
    /// one SACK block [0x1a2b4000, 0x1a2b5000).
    const SACK_ACK: [u8; 44] = [
        0x00, 0x50, 0x9c, 0x40, 0x11, 0x11, 0x11, 0x11, 0x1a, 0x2b, 0x3c, 0x4e, 0xb0, 0x10, 0x01,
        0xf5, 0x76, 0x98, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x00, 0x00, 0x03, 0xe8, 0x0b, 0xad,
        0xca, 0xfe, 0x01, 0x01, 0x05, 0x0a, 0x1a, 0x2b, 0x40, 0x00, 0x1a, 0x2b, 0x50, 0x00,
    ];

    #[test]
    fn linux_syn_fixture() {
        let p = TcpPacket::new_checked(&LINUX_SYN[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (40000, 80));
        assert_eq!(p.seq_number(), Seq(0x1a2b_3c4d));
        assert_eq!(p.header_len(), 40);
        assert_eq!(p.flags(), TcpFlags::SYN);
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.checksum(), 0x6f58);
        assert!(p.verify_checksum(A, B));
        assert!(!p.verify_checksum(A, [10, 0, 0, 3]));
        assert!(p.payload().is_empty());
        let r = TcpRepr::parse(&p).unwrap();
        assert_eq!(r.options.mss, Some(1460));
        assert!(r.options.sack_permitted);
        assert_eq!(r.options.timestamp, Some((0x0bad_cafe, 0)));
        assert_eq!(r.options.window_scale, Some(7));
        // Our emitter writes the same option bytes for the same SYN (Linux's layout).
        let h = TcpHeader {
            src_port: 40000,
            dst_port: 80,
            seq: Seq(0x1a2b_3c4d),
            ack: Seq(0),
            flags: TcpFlags::SYN,
            window: 64240,
            options: r.options,
        };
        let mut out = [0u8; 60];
        let n = emit(&h, &mut out);
        assert_eq!(n, 40);
        let mut q = TcpPacket::new_unchecked(&mut out[..n]);
        q.fill_checksum(A, B);
        assert_eq!(&out[..n], &LINUX_SYN[..]);
    }

    #[test]
    fn sack_ack_fixture() {
        let p = TcpPacket::new_checked(&SACK_ACK[..]).unwrap();
        assert!(p.verify_checksum(B, A));
        assert_eq!(p.ack_number(), Seq(0x1a2b_3c4e));
        assert_eq!(p.flags(), TcpFlags::ACK);
        assert_eq!(p.options().len(), 24);
        let r = parse(&SACK_ACK).unwrap();
        assert_eq!(r.options.timestamp, Some((1000, 0x0bad_cafe)));
        assert_eq!(
            r.options.sack_blocks(),
            &[SackBlock {
                left: Seq(0x1a2b_4000),
                right: Seq(0x1a2b_5000)
            }]
        );
    }

    #[test]
    fn checked_view_refuses_short_and_bad_offsets() {
        assert_eq!(
            TcpPacket::new_checked(&LINUX_SYN[..19]).err(),
            Some(TcpError::Truncated)
        );
        // Data offset 40 bytes, but only 30 present.
        assert_eq!(
            TcpPacket::new_checked(&LINUX_SYN[..30]).err(),
            Some(TcpError::BadDataOffset)
        );
        let mut b = LINUX_SYN;
        b[field::DATA_OFF] = 4 << 4;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).err(),
            Some(TcpError::BadDataOffset)
        );
    }

    #[test]
    fn setters_write_the_fields_the_getters_read() {
        let mut b = SACK_ACK;
        let mut p = TcpPacket::new_checked(&mut b[..]).unwrap();
        p.set_src_port(1);
        p.set_dst_port(2);
        p.set_seq_number(Seq(3));
        p.set_ack_number(Seq(4));
        p.set_flags(TcpFlags::ACK | TcpFlags::FIN);
        p.set_window_len(5);
        p.set_urgent_at(6);
        assert_eq!((p.src_port(), p.dst_port()), (1, 2));
        assert_eq!((p.seq_number(), p.ack_number()), (Seq(3), Seq(4)));
        assert_eq!(p.flags(), TcpFlags::ACK | TcpFlags::FIN);
        assert_eq!((p.window_len(), p.urgent_at()), (5, 6));
        assert_eq!(p.header_len(), 44, "setters keep the data offset");
        assert!(!p.verify_checksum(B, A));
        p.fill_checksum(B, A);
        assert!(p.verify_checksum(B, A));
        assert_eq!(&b[field::OPTIONS..44], &SACK_ACK[field::OPTIONS..44]);
    }

    fn arb_options() -> impl Strategy<Value = TcpOptions> {
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(0u8..=14),
            any::<bool>(),
            proptest::option::of((any::<u32>(), any::<u32>())),
            proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
        )
            .prop_map(|(mss, ws, sp, ts, sack)| {
                let mut o = TcpOptions {
                    mss,
                    window_scale: ws,
                    sack_permitted: sp,
                    timestamp: ts,
                    ..TcpOptions::default()
                };
                for (slot, (l, r)) in o.sack.iter_mut().zip(&sack) {
                    *slot = SackBlock {
                        left: Seq(*l),
                        right: Seq(*r),
                    };
                }
                o.sack_len = sack.len() as u8;
                o
            })
    }

    proptest! {
        /// Emit then view then parse gives back every field, the options the layout keeps
        /// (SYN-only options on SYNs, the SACK blocks that fit) and the payload, and the
        /// filled checksum verifies.
        #[test]
        fn emit_view_parse_is_the_identity(
            sp: u16, dp: u16, seq: u32, ack: u32, flags: u8, window: u16,
            opts in arb_options(),
            payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let h = TcpHeader {
                src_port: sp, dst_port: dp, seq: Seq(seq), ack: Seq(ack),
                flags: TcpFlags(flags), window, options: opts,
            };
            let hl = header_len(&h);
            let mut buf = vec![0u8; hl + payload.len()];
            prop_assert_eq!(emit(&h, &mut buf), hl);
            buf[hl..].copy_from_slice(&payload);
            let mut p = TcpPacket::new_checked(&mut buf[..]).unwrap();
            p.fill_checksum(A, B);
            prop_assert!(p.verify_checksum(A, B));
            let p = TcpPacket::new_checked(&buf[..]).unwrap();
            let r = TcpRepr::parse(&p).unwrap();
            prop_assert_eq!((r.src_port, r.dst_port, r.seq, r.ack), (sp, dp, Seq(seq), Seq(ack)));
            prop_assert_eq!((r.flags, r.window), (TcpFlags(flags), window));
            prop_assert_eq!(r.payload, &payload[..]);
            let syn = TcpFlags(flags).has(TcpFlags::SYN);
            prop_assert_eq!(r.options.mss, if syn { opts.mss } else { None });
            prop_assert_eq!(r.options.window_scale, if syn { opts.window_scale } else { None });
            prop_assert_eq!(r.options.sack_permitted, syn && opts.sack_permitted);
            prop_assert_eq!(r.options.timestamp, opts.timestamp);
            let kept = r.options.sack_blocks();
            prop_assert_eq!(kept, &opts.sack_blocks()[..kept.len()]);
        }
    }
}

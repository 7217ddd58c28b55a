//! NDP packets on the wire (Handley et al., "Re-architecting datacenter networks and stacks
//! for low latency and high performance", SIGCOMM 2017, §3): data, header-only (trimmed),
//! ACK, NACK and PULL, the packets the `ndp` Tonic module's traffic consists of.
//!
//! The NDP paper gives no byte layout; this is the header of the hardware NDP of
//! nanoTransport (Arslan et al., SOSR 2021, §4.4, whose open-source P4 defines it): one flags
//! byte, then 16-bit fields, padded to 30 bytes so that Ethernet + IPv4 + NDP make a 64-byte
//! header "for easy parsing". Field widths of the message and context ids (16 bits) follow
//! that artifact; all fields are big-endian.
//!
//! ```text
//!  0     1       3       5         7     8          10        12        14   15        30
//! +-----+-------+-------+---------+-----+----------+---------+---------+----+---------+
//! |flags|  src  |  dst  | msg_len |pkt_o|pull_off  |tx_msg_id| buf_ptr |bsc | padding |
//! +-----+-------+-------+---------+-----+----------+---------+---------+----+---------+
//! ```
//!
//! | packet | flags | meaning |
//! |---|---|---|
//! | data | DATA | payload follows |
//! | header-only | DATA \| CHOP | a switch trimmed the payload (NDP §3.2), forwarded at high priority |
//! | ACK | ACK (\| PULL) | `pkt_offset` arrived |
//! | NACK | NACK (\| PULL) | `pkt_offset` arrived trimmed: resend it |
//! | PULL | PULL | send up to `pull_offset` (the receiver's pacer, NDP §3.3) |
//!
//! Parsing never panics: a short header, no flags, unknown flag bits or a meaningless
//! combination (data with ACK, CHOP without DATA, ACK with NACK) is an [`NdpError`].

/// Length of the NDP header.
pub const HEADER_LEN: usize = 30;

/// NDP flag bits (nanoTransport's masks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NdpFlags(pub u8);

impl NdpFlags {
    /// Carries message data.
    pub const DATA: NdpFlags = NdpFlags(0x01);
    /// Acknowledges `pkt_offset`.
    pub const ACK: NdpFlags = NdpFlags(0x02);
    /// Reports `pkt_offset` trimmed.
    pub const NACK: NdpFlags = NdpFlags(0x04);
    /// Pulls up to `pull_offset`.
    pub const PULL: NdpFlags = NdpFlags(0x08);
    /// Trimmed ("chopped") to its header.
    pub const CHOP: NdpFlags = NdpFlags(0x10);
    /// Every defined bit.
    pub const ALL: u8 = 0x1f;

    /// Whether every bit of `o` is set.
    pub const fn has(self, o: NdpFlags) -> bool {
        self.0 & o.0 == o.0
    }
}

impl std::ops::BitOr for NdpFlags {
    type Output = NdpFlags;
    fn bitor(self, o: NdpFlags) -> NdpFlags {
        NdpFlags(self.0 | o.0)
    }
}

/// What an NDP packet is, from its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NdpKind {
    /// Data with payload.
    Data,
    /// A data packet trimmed to its header.
    Trimmed,
    /// An ACK, perhaps with a pull.
    Ack,
    /// A NACK, perhaps with a pull.
    Nack,
    /// A pull alone.
    Pull,
}

/// Why an NDP packet does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NdpError {
    /// Shorter than the header.
    #[error("NDP packet truncated: {0} bytes, need 30")]
    Truncated(usize),
    /// No flag, an undefined bit or a contradictory combination.
    #[error("bad NDP flags {0:#04x}")]
    BadFlags(u8),
}

/// The kind of a packet with flags `f`, or why the flags are invalid.
pub fn kind_of(f: NdpFlags) -> Result<NdpKind, NdpError> {
    let bad = Err(NdpError::BadFlags(f.0));
    if f.0 & !NdpFlags::ALL != 0 || f.0 == 0 {
        return bad;
    }
    let ctrl = NdpFlags::ACK.0 | NdpFlags::NACK.0 | NdpFlags::PULL.0;
    if f.has(NdpFlags::DATA) {
        if f.0 & ctrl != 0 {
            return bad;
        }
        return Ok(if f.has(NdpFlags::CHOP) {
            NdpKind::Trimmed
        } else {
            NdpKind::Data
        });
    }
    if f.has(NdpFlags::CHOP) || f.has(NdpFlags::ACK | NdpFlags::NACK) {
        return bad;
    }
    Ok(if f.has(NdpFlags::ACK) {
        NdpKind::Ack
    } else if f.has(NdpFlags::NACK) {
        NdpKind::Nack
    } else {
        NdpKind::Pull
    })
}

/// Byte ranges of the header fields.
pub mod field {
    use std::ops::Range;
    /// Flags.
    pub const FLAGS: usize = 0;
    /// Source context (port).
    pub const SRC: Range<usize> = 1..3;
    /// Destination context (port).
    pub const DST: Range<usize> = 3..5;
    /// Message length in bytes.
    pub const MSG_LEN: Range<usize> = 5..7;
    /// Packet index in the message.
    pub const PKT_OFFSET: usize = 7;
    /// Pull: packets up to this index may be sent.
    pub const PULL_OFFSET: Range<usize> = 8..10;
    /// The sender's message id.
    pub const TX_MSG_ID: Range<usize> = 10..12;
    /// The sender's buffer pointer (echoed in control packets).
    pub const BUF_PTR: Range<usize> = 12..14;
    /// The sender's buffer size class.
    pub const BUF_SIZE_CLASS: usize = 14;
}

/// A parsed NDP header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NdpRepr {
    /// Flags (valid per [`kind_of`]).
    pub flags: NdpFlags,
    /// Source context.
    pub src_context: u16,
    /// Destination context.
    pub dst_context: u16,
    /// Message length in bytes.
    pub msg_len: u16,
    /// Packet index in the message.
    pub pkt_offset: u8,
    /// Pull offset.
    pub pull_offset: u16,
    /// Sender's message id.
    pub tx_msg_id: u16,
    /// Sender's buffer pointer.
    pub buf_ptr: u16,
    /// Sender's buffer size class.
    pub buf_size_class: u8,
}

impl NdpRepr {
    /// What the packet is.
    pub fn kind(&self) -> Result<NdpKind, NdpError> {
        kind_of(self.flags)
    }

    /// Parses an NDP header; returns it and the payload (empty unless data).
    pub fn parse(buf: &[u8]) -> Result<(NdpRepr, &[u8]), NdpError> {
        if buf.len() < HEADER_LEN {
            return Err(NdpError::Truncated(buf.len()));
        }
        let be16 = |r: std::ops::Range<usize>| u16::from_be_bytes([buf[r.start], buf[r.start + 1]]);
        let r = NdpRepr {
            flags: NdpFlags(buf[field::FLAGS]),
            src_context: be16(field::SRC),
            dst_context: be16(field::DST),
            msg_len: be16(field::MSG_LEN),
            pkt_offset: buf[field::PKT_OFFSET],
            pull_offset: be16(field::PULL_OFFSET),
            tx_msg_id: be16(field::TX_MSG_ID),
            buf_ptr: be16(field::BUF_PTR),
            buf_size_class: buf[field::BUF_SIZE_CLASS],
        };
        let payload = match r.kind()? {
            NdpKind::Data => &buf[HEADER_LEN..],
            _ => &[],
        };
        Ok((r, payload))
    }

    /// Writes the header into `buf[..HEADER_LEN]` (padding zeroed); `None` if too short.
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let b = buf.get_mut(..HEADER_LEN)?;
        b.fill(0);
        b[field::FLAGS] = self.flags.0;
        b[field::SRC].copy_from_slice(&self.src_context.to_be_bytes());
        b[field::DST].copy_from_slice(&self.dst_context.to_be_bytes());
        b[field::MSG_LEN].copy_from_slice(&self.msg_len.to_be_bytes());
        b[field::PKT_OFFSET] = self.pkt_offset;
        b[field::PULL_OFFSET].copy_from_slice(&self.pull_offset.to_be_bytes());
        b[field::TX_MSG_ID].copy_from_slice(&self.tx_msg_id.to_be_bytes());
        b[field::BUF_PTR].copy_from_slice(&self.buf_ptr.to_be_bytes());
        b[field::BUF_SIZE_CLASS] = self.buf_size_class;
        Some(HEADER_LEN)
    }

    /// The header-only packet a switch makes of this data packet by trimming (NDP §3.2):
    /// the same header with CHOP set.
    pub fn trimmed(&self) -> NdpRepr {
        NdpRepr {
            flags: self.flags | NdpFlags::CHOP,
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_layout() {
        use NdpFlags as F;
        assert_eq!(kind_of(F::DATA), Ok(NdpKind::Data));
        assert_eq!(kind_of(F::DATA | F::CHOP), Ok(NdpKind::Trimmed));
        assert_eq!(kind_of(F::ACK | F::PULL), Ok(NdpKind::Ack));
        assert_eq!(kind_of(F::NACK | F::PULL), Ok(NdpKind::Nack));
        assert_eq!(kind_of(F::PULL), Ok(NdpKind::Pull));
        for bad in [0, 0x20, 0x03, 0x10, 0x06, 0x09] {
            assert_eq!(kind_of(NdpFlags(bad)), Err(NdpError::BadFlags(bad)));
        }
        let d = NdpRepr {
            flags: F::DATA,
            src_context: 0x0102,
            dst_context: 0x0304,
            msg_len: 0x0506,
            pkt_offset: 7,
            pull_offset: 0x0809,
            tx_msg_id: 0x0a0b,
            buf_ptr: 0x0c0d,
            buf_size_class: 0x0e,
        };
        let mut b = [0xff; 34];
        assert_eq!(d.emit(&mut b), Some(30));
        assert_eq!(b[..15], [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
        assert!(b[15..30].iter().all(|&x| x == 0));
        let (r, pl) = NdpRepr::parse(&b).unwrap();
        assert_eq!((r, pl.len()), (d, 4));
        let t = d.trimmed();
        t.emit(&mut b);
        let (r, pl) = NdpRepr::parse(&b).unwrap();
        assert_eq!((r.kind(), pl.len()), (Ok(NdpKind::Trimmed), 0));
        assert_eq!(NdpRepr::parse(&b[..29]), Err(NdpError::Truncated(29)));
        assert_eq!(d.emit(&mut [0; 29]), None);
    }
}

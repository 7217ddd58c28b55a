//! Homa packets on the wire (Montazeri et al., "Homa: A Receiver-Driven Low-Latency Transport
//! Protocol Using Network Priorities", SIGCOMM 2018, §3; byte layout of the Linux Homa
//! module's `homa_wire.h`): the headers the `homa` Tonic module's packets would carry, IP
//! protocol [`IPPROTO_HOMA`].
//!
//! Every packet starts with the 28-byte common header, laid out like a TCP header so that
//! NICs' TSO can segment Homa packets (source and destination port, a sequence field that
//! holds a DATA packet's offset, the type in the low byte of TCP's ack field, TCP's data
//! offset, flags, window, checksum and urgent fields, then the 64-bit RPC id):
//!
//! ```text
//!  0       2       4               8          11  12  13  14      16      18      20
//! +-------+-------+---------------+-----------+---+---+---+-------+-------+-------+
//! | sport | dport |   sequence    |  ack[3]   |typ|dof|flg|window | csum  |urgent |
//! +-------+-------+---------------+-----------+---+---+---+-------+-------+-------+
//! 20                             28
//! |          sender_id            |  then the type's fields (below)
//! ```
//!
//! | type | value | after the common header | total |
//! |---|---|---|---|
//! | DATA | 0x10 | message_length u32, incoming u32, ack {client_id u64, server_port u16}, cutoff_version u16, retransmit u8, pad[3], offset u32 | 56 + payload |
//! | GRANT | 0x11 | offset u32, priority u8 | 33 |
//! | RESEND | 0x12 | offset u32, length u32 (−1: everything), priority u8 | 37 |
//! | RPC_UNKNOWN | 0x13 | — | 28 |
//! | BUSY | 0x14 | — | 28 |
//! | NEED_ACK | 0x17 | — | 28 |
//! | ACK | 0x18 | num_acks u16, 5 × {client_id u64, server_port u16} | 80 |
//!
//! All fields are big-endian. Parsing never panics: a short packet, an unknown type or a
//! `num_acks` above 5 is a [`HomaError`]. (CUTOFFS and FREEZE are not modelled.)

/// IP protocol number of Homa (Linux Homa's `IPPROTO_HOMA`).
pub const IPPROTO_HOMA: u8 = 146;

/// Length of the common header.
pub const COMMON_LEN: usize = 28;
/// Length of a DATA header (before the payload).
pub const DATA_HEADER_LEN: usize = 56;
/// Length of a GRANT packet.
pub const GRANT_LEN: usize = 33;
/// Length of a RESEND packet.
pub const RESEND_LEN: usize = 37;
/// Length of an ACK packet.
pub const ACK_LEN: usize = 80;
/// RPCs one ACK packet can acknowledge (`HOMA_MAX_ACKS_PER_PKT`).
pub const MAX_ACKS: usize = 5;
/// Priority levels Homa uses (`HOMA_MAX_PRIORITIES`); larger is more urgent.
pub const MAX_PRIORITIES: u8 = 8;
/// The data-offset byte of a DATA packet: its header is 56 bytes = 14 words, in the high
/// nibble as in TCP.
pub const DATA_DOFF: u8 = ((DATA_HEADER_LEN / 4) as u8) << 4;

/// Homa packet types (`enum homa_packet_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HomaType {
    /// Message data.
    Data = 0x10,
    /// Permission to send more of a message, and at which priority.
    Grant = 0x11,
    /// Please retransmit a range.
    Resend = 0x12,
    /// The RPC is not known here.
    RpcUnknown = 0x13,
    /// The sender is alive but busy with other messages.
    Busy = 0x14,
    /// Please acknowledge whether the RPC is still active.
    NeedAck = 0x17,
    /// These RPCs are finished.
    Ack = 0x18,
}

impl HomaType {
    /// The type with wire value `v`, if modelled.
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0x10 => HomaType::Data,
            0x11 => HomaType::Grant,
            0x12 => HomaType::Resend,
            0x13 => HomaType::RpcUnknown,
            0x14 => HomaType::Busy,
            0x17 => HomaType::NeedAck,
            0x18 => HomaType::Ack,
            _ => return None,
        })
    }

    /// Bytes of header this type needs (DATA: before its payload).
    pub const fn header_len(self) -> usize {
        match self {
            HomaType::Data => DATA_HEADER_LEN,
            HomaType::Grant => GRANT_LEN,
            HomaType::Resend => RESEND_LEN,
            HomaType::Ack => ACK_LEN,
            HomaType::RpcUnknown | HomaType::Busy | HomaType::NeedAck => COMMON_LEN,
        }
    }
}

/// Why a Homa packet does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HomaError {
    /// Shorter than its type's header.
    #[error("Homa packet truncated: {have} bytes, need {need}")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// A type byte this module does not model.
    #[error("unknown Homa packet type {0:#04x}")]
    UnknownType(u8),
    /// An ACK claims more than [`MAX_ACKS`] entries.
    #[error("Homa ACK with {0} entries (at most 5)")]
    TooManyAcks(u16),
}

/// Byte ranges of the header fields.
pub mod field {
    use std::ops::Range;
    /// Source port.
    pub const SPORT: Range<usize> = 0..2;
    /// Destination port.
    pub const DPORT: Range<usize> = 2..4;
    /// TCP's sequence field: a DATA packet's offset.
    pub const SEQUENCE: Range<usize> = 4..8;
    /// Packet type (the low byte of TCP's ack field).
    pub const TYPE: usize = 11;
    /// TCP's data offset.
    pub const DOFF: usize = 12;
    /// TCP's flags.
    pub const FLAGS: usize = 13;
    /// TCP's urgent pointer.
    pub const URGENT: Range<usize> = 18..20;
    /// The RPC id.
    pub const SENDER_ID: Range<usize> = 20..28;
    /// DATA: message length.
    pub const MESSAGE_LENGTH: Range<usize> = 28..32;
    /// DATA: bytes the receiver can expect without more grants.
    pub const INCOMING: Range<usize> = 32..36;
    /// DATA: piggybacked ack's client id.
    pub const ACK_CLIENT_ID: Range<usize> = 36..44;
    /// DATA: piggybacked ack's server port.
    pub const ACK_SERVER_PORT: Range<usize> = 44..46;
    /// DATA: cutoff version.
    pub const CUTOFF_VERSION: Range<usize> = 46..48;
    /// DATA: a retransmission.
    pub const RETRANSMIT: usize = 48;
    /// DATA: the segment's offset in the message.
    pub const SEG_OFFSET: Range<usize> = 52..56;
    /// GRANT / RESEND: offset.
    pub const OFFSET: Range<usize> = 28..32;
    /// GRANT: priority.
    pub const GRANT_PRIORITY: usize = 32;
    /// RESEND: length.
    pub const RESEND_LENGTH: Range<usize> = 32..36;
    /// RESEND: priority.
    pub const RESEND_PRIORITY: usize = 36;
    /// ACK: number of valid entries.
    pub const NUM_ACKS: Range<usize> = 28..30;
    /// ACK: the first entry (each is 10 bytes).
    pub const ACKS: usize = 30;
}

fn be16(b: &[u8], r: std::ops::Range<usize>) -> u16 {
    let mut a = [0; 2];
    a.copy_from_slice(&b[r]);
    u16::from_be_bytes(a)
}

fn be32(b: &[u8], r: std::ops::Range<usize>) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[r]);
    u32::from_be_bytes(a)
}

fn be64(b: &[u8], r: std::ops::Range<usize>) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[r]);
    u64::from_be_bytes(a)
}

/// A zero-copy view of a Homa packet (header and, for DATA, payload).
#[derive(Clone, Copy, Debug)]
pub struct HomaPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> HomaPacket<T> {
    /// Wraps `buf` after checking that it holds its type's whole header.
    pub fn new_checked(buf: T) -> Result<Self, HomaError> {
        let b = buf.as_ref();
        if b.len() < COMMON_LEN {
            return Err(HomaError::Truncated {
                need: COMMON_LEN,
                have: b.len(),
            });
        }
        let t = HomaType::from_u8(b[field::TYPE]).ok_or(HomaError::UnknownType(b[field::TYPE]))?;
        if b.len() < t.header_len() {
            return Err(HomaError::Truncated {
                need: t.header_len(),
                have: b.len(),
            });
        }
        Ok(HomaPacket { buf })
    }

    /// The packet type (checked by [`new_checked`](Self::new_checked)).
    pub fn packet_type(&self) -> HomaType {
        HomaType::from_u8(self.buf.as_ref()[field::TYPE]).unwrap_or(HomaType::Busy)
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buf.as_ref(), field::SPORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buf.as_ref(), field::DPORT)
    }

    /// The RPC id as the sender numbers it.
    pub fn sender_id(&self) -> u64 {
        be64(self.buf.as_ref(), field::SENDER_ID)
    }

    /// The DATA payload (empty for other types).
    pub fn payload(&self) -> &[u8] {
        match self.packet_type() {
            HomaType::Data => &self.buf.as_ref()[DATA_HEADER_LEN..],
            _ => &[],
        }
    }
}

/// An RPC that its server may forget (`struct homa_ack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HomaAck {
    /// The client's RPC id; 0: no ack.
    pub client_id: u64,
    /// The server's port.
    pub server_port: u16,
}

/// A DATA packet's fields (`struct homa_data_hdr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HomaData {
    /// Total bytes in the message.
    pub message_length: u32,
    /// The receiver can expect every byte below this without more grants (unscheduled plus
    /// granted).
    pub incoming: u32,
    /// A piggybacked ack.
    pub ack: HomaAck,
    /// The CUTOFFS version the sender uses.
    pub cutoff_version: u16,
    /// Sent again in answer to a RESEND.
    pub retransmit: bool,
    /// Offset in the message of the payload's first byte (also in the common `sequence`).
    pub offset: u32,
}

/// The type-specific part of a Homa packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HomaBody {
    /// DATA (the payload follows the header).
    Data(HomaData),
    /// GRANT: send every byte below `offset`, at `priority` (higher is more urgent).
    Grant {
        /// Grant offset.
        offset: u32,
        /// Priority for the scheduled packets.
        priority: u8,
    },
    /// RESEND `length` bytes from `offset` (`u32::MAX`: everything) at `priority`.
    Resend {
        /// First byte.
        offset: u32,
        /// Bytes; `u32::MAX` (−1 on the wire) for all sent so far.
        length: u32,
        /// Priority to resend at.
        priority: u8,
    },
    /// RPC_UNKNOWN.
    RpcUnknown,
    /// BUSY.
    Busy,
    /// NEED_ACK.
    NeedAck,
    /// ACK of up to [`MAX_ACKS`] RPCs (`count` valid entries).
    Ack {
        /// Valid entries.
        count: u8,
        /// The entries (unused ones zero).
        acks: [HomaAck; MAX_ACKS],
    },
}

/// A parsed Homa header (the payload of a DATA packet stays in the buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomaRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// The RPC id (low bit set: sent by the server).
    pub sender_id: u64,
    /// Type and fields.
    pub body: HomaBody,
}

impl HomaRepr {
    /// The packet's type.
    pub fn packet_type(&self) -> HomaType {
        match self.body {
            HomaBody::Data(_) => HomaType::Data,
            HomaBody::Grant { .. } => HomaType::Grant,
            HomaBody::Resend { .. } => HomaType::Resend,
            HomaBody::RpcUnknown => HomaType::RpcUnknown,
            HomaBody::Busy => HomaType::Busy,
            HomaBody::NeedAck => HomaType::NeedAck,
            HomaBody::Ack { .. } => HomaType::Ack,
        }
    }

    /// Header bytes [`emit`](Self::emit) writes (DATA: before the payload).
    pub fn header_len(&self) -> usize {
        self.packet_type().header_len()
    }

    /// Parses a Homa packet's header.
    pub fn parse(buf: &[u8]) -> Result<HomaRepr, HomaError> {
        let p = HomaPacket::new_checked(buf)?;
        let b = buf;
        let body = match p.packet_type() {
            HomaType::Data => HomaBody::Data(HomaData {
                message_length: be32(b, field::MESSAGE_LENGTH),
                incoming: be32(b, field::INCOMING),
                ack: HomaAck {
                    client_id: be64(b, field::ACK_CLIENT_ID),
                    server_port: be16(b, field::ACK_SERVER_PORT),
                },
                cutoff_version: be16(b, field::CUTOFF_VERSION),
                retransmit: b[field::RETRANSMIT] != 0,
                offset: be32(b, field::SEG_OFFSET),
            }),
            HomaType::Grant => HomaBody::Grant {
                offset: be32(b, field::OFFSET),
                priority: b[field::GRANT_PRIORITY],
            },
            HomaType::Resend => HomaBody::Resend {
                offset: be32(b, field::OFFSET),
                length: be32(b, field::RESEND_LENGTH),
                priority: b[field::RESEND_PRIORITY],
            },
            HomaType::RpcUnknown => HomaBody::RpcUnknown,
            HomaType::Busy => HomaBody::Busy,
            HomaType::NeedAck => HomaBody::NeedAck,
            HomaType::Ack => {
                let n = be16(b, field::NUM_ACKS);
                if n as usize > MAX_ACKS {
                    return Err(HomaError::TooManyAcks(n));
                }
                let mut acks = [HomaAck::default(); MAX_ACKS];
                for (i, a) in acks.iter_mut().enumerate().take(n as usize) {
                    let o = field::ACKS + 10 * i;
                    a.client_id = be64(b, o..o + 8);
                    a.server_port = be16(b, o + 8..o + 10);
                }
                HomaBody::Ack {
                    count: n as u8,
                    acks,
                }
            }
        };
        Ok(HomaRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            sender_id: p.sender_id(),
            body,
        })
    }

    /// Writes the header into `buf[..header_len()]` (zeroing unused fields; a DATA packet's
    /// payload goes after it). Returns the bytes written, or `None` if `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let n = self.header_len();
        let b = buf.get_mut(..n)?;
        b.fill(0);
        b[field::SPORT].copy_from_slice(&self.src_port.to_be_bytes());
        b[field::DPORT].copy_from_slice(&self.dst_port.to_be_bytes());
        b[field::TYPE] = self.packet_type() as u8;
        b[field::SENDER_ID].copy_from_slice(&self.sender_id.to_be_bytes());
        match self.body {
            HomaBody::Data(d) => {
                b[field::SEQUENCE].copy_from_slice(&d.offset.to_be_bytes());
                b[field::DOFF] = DATA_DOFF;
                b[field::MESSAGE_LENGTH].copy_from_slice(&d.message_length.to_be_bytes());
                b[field::INCOMING].copy_from_slice(&d.incoming.to_be_bytes());
                b[field::ACK_CLIENT_ID].copy_from_slice(&d.ack.client_id.to_be_bytes());
                b[field::ACK_SERVER_PORT].copy_from_slice(&d.ack.server_port.to_be_bytes());
                b[field::CUTOFF_VERSION].copy_from_slice(&d.cutoff_version.to_be_bytes());
                b[field::RETRANSMIT] = d.retransmit as u8;
                b[field::SEG_OFFSET].copy_from_slice(&d.offset.to_be_bytes());
            }
            HomaBody::Grant { offset, priority } => {
                b[field::OFFSET].copy_from_slice(&offset.to_be_bytes());
                b[field::GRANT_PRIORITY] = priority;
            }
            HomaBody::Resend {
                offset,
                length,
                priority,
            } => {
                b[field::OFFSET].copy_from_slice(&offset.to_be_bytes());
                b[field::RESEND_LENGTH].copy_from_slice(&length.to_be_bytes());
                b[field::RESEND_PRIORITY] = priority;
            }
            HomaBody::RpcUnknown | HomaBody::Busy | HomaBody::NeedAck => {}
            HomaBody::Ack { count, acks } => {
                let count = (count as usize).min(MAX_ACKS);
                b[field::NUM_ACKS].copy_from_slice(&(count as u16).to_be_bytes());
                for (i, a) in acks.iter().enumerate().take(count) {
                    let o = field::ACKS + 10 * i;
                    b[o..o + 8].copy_from_slice(&a.client_id.to_be_bytes());
                    b[o + 8..o + 10].copy_from_slice(&a.server_port.to_be_bytes());
                }
            }
        }
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_homa_wire_h() {
        let g = HomaRepr {
            src_port: 0x0102,
            dst_port: 0x0304,
            sender_id: 0x1122_3344_5566_7788,
            body: HomaBody::Grant {
                offset: 0x0a0b_0c0d,
                priority: 6,
            },
        };
        let mut b = [0xee; 40];
        assert_eq!(g.emit(&mut b), Some(33));
        assert_eq!(
            b[..33],
            [
                1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33,
                0x44, 0x55, 0x66, 0x77, 0x88, 0x0a, 0x0b, 0x0c, 0x0d, 6
            ]
        );
        assert_eq!(HomaRepr::parse(&b[..33]), Ok(g));
        let d = HomaRepr {
            src_port: 1,
            dst_port: 2,
            sender_id: 4,
            body: HomaBody::Data(HomaData {
                message_length: 64_000,
                incoming: 12_000,
                offset: 1000,
                retransmit: true,
                ..Default::default()
            }),
        };
        let mut b = [0; 60];
        assert_eq!(d.emit(&mut b), Some(56));
        assert_eq!(b[field::DOFF], 14 << 4);
        assert_eq!(b[4..8], 1000u32.to_be_bytes(), "offset also in `sequence`");
        assert_eq!(b[48], 1);
        let p = HomaPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload().len(), 4);
        assert_eq!(HomaRepr::parse(&b).unwrap(), d);
    }

    #[test]
    fn short_and_unknown_packets_are_errors() {
        let mut b = [0u8; 80];
        b[field::TYPE] = 0x11;
        assert_eq!(
            HomaRepr::parse(&b[..32]),
            Err(HomaError::Truncated { need: 33, have: 32 })
        );
        assert!(matches!(
            HomaRepr::parse(&b[..10]),
            Err(HomaError::Truncated { .. })
        ));
        b[field::TYPE] = 0x15;
        assert_eq!(HomaRepr::parse(&b), Err(HomaError::UnknownType(0x15)));
        b[field::TYPE] = 0x18;
        b[field::NUM_ACKS].copy_from_slice(&6u16.to_be_bytes());
        assert_eq!(HomaRepr::parse(&b), Err(HomaError::TooManyAcks(6)));
        assert_eq!(
            HomaRepr {
                src_port: 0,
                dst_port: 0,
                sender_id: 0,
                body: HomaBody::Busy
            }
            .emit(&mut [0; 27]),
            None
        );
    }
}

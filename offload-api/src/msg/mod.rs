//! The host ↔ NIC messages (AccelTCP NSDI '20, Appendix A).
//!
//! # Framing
//!
//! Every message is one Ethernet frame on the emulated PCIe link ([`crate::link`]):
//!
//! ```text
//! +----------------------+---------------+------------------------+-------------------+
//! | Ethernet header (14) | common hdr (4)| message fields         | payload (optional)|
//! | dst MAC, src MAC,    | version, type,| (fixed per type, then  | IPv4 packet, data,|
//! | EtherType 0x090A..E  | header length | unknown extensions)    | or nothing        |
//! +----------------------+---------------+------------------------+-------------------+
//!                        ^ offset 0 of every view in this module (frame offset 14)
//! ```
//!
//! All multi-byte fields are big-endian (network order). The views in this module
//! ([`SetupFrame`], [`TeardownFrame`], ...) start at the common header, i.e. after the
//! Ethernet header, the way smoltcp's IP view starts after its Ethernet view; [`parse_frame`]
//! and [`Message::emit_frame`] handle whole Ethernet frames. Frames on the link carry no VLAN
//! tag.
//!
//! ## Common header (every message)
//!
//! | offset | size | field         | meaning                                                   |
//! |-------:|-----:|---------------|-----------------------------------------------------------|
//! | 0      | 1    | version       | [`VERSION`] (= 1); other versions are refused             |
//! | 1      | 1    | message type  | [`MsgType`]; must be carried by the frame's EtherType     |
//! | 2      | 2    | header length | bytes from offset 0 to the payload, ≥ the type's fixed length |
//!
//! A receiver reads the fields it knows and skips the rest of the header: a later minor
//! revision may append fields after the fixed part without a version bump (the header length
//! grows, old receivers skip them). Adding a code to an enumerated field (TCP state, close
//! reason, status) needs a new version. Reserved bytes are sent as zero and ignored; unknown
//! flag bits are ignored.
//!
//! ## Message types
//!
//! | EtherType | type | name                        | direction | fixed len | payload            |
//! |-----------|-----:|-----------------------------|-----------|----------:|--------------------|
//! | 0x090A    | 0x0A | [setup notification][SetupFrame]        | NIC → host | 20 | the completing ACK's IPv4 packet (required) |
//! | 0x090B    | 0x0B | [teardown offload][TeardownFrame]       | host → NIC | 44 | TSO IPv4 packet with the remaining data (optional) |
//! | 0x090C    | 0x0C | [splice install][SpliceInstallFrame]    | host → NIC | 96 | IPv4 packet to send after installing (optional) |
//! | 0x090D    | 0x0D | [splice closure report][SpliceCloseFrame] | NIC → host | 68 | none |
//! | 0x090E    | 0x10 | [listen add][ListenAddFrame]            | host → NIC | 20 | none |
//! | 0x090E    | 0x11 | [listen remove][ListenRemoveFrame]      | host → NIC | 16 | none |
//! | 0x090E    | 0x12 | [install ack][InstallAckFrame]          | NIC → host | 12 | none |
//! | 0x090E    | 0x13 | [teardown count][TeardownCountFrame]    | NIC → host | 8  | none |
//! | 0x090E    | 0x20 | [Tonic flow add][TonicFlowAddFrame]     | host → NIC | 76 | none |
//! | 0x090E    | 0x21 | [Tonic flow remove][TonicFlowRemoveFrame] | host → NIC | 12 | none |
//! | 0x090E    | 0x22 | [Tonic tail update][TonicTailFrame]     | host → NIC | 16 | `data_len` bytes of send-buffer data |
//! | 0x090E    | 0x23 | [Tonic delivery][TonicDeliveredFrame]   | NIC → host | 12 | none |
//!
//! On the four AccelTCP EtherTypes the type byte repeats the EtherType's low byte. Fixed
//! lengths are multiples of 4, so an IPv4 packet after the header keeps the alignment it has
//! in a plain frame. For types with no payload, bytes after the header are padding (a frame
//! may be padded to the Ethernet minimum) and are ignored.
//!
//! ## Ethernet addresses
//!
//! When a message carries an IPv4 packet (setup, teardown, splice install), the Ethernet
//! addresses are those of that packet on the wire: the NIC turns the completing ACK into a
//! setup notification by changing its EtherType and inserting the header (App. A), and the
//! NIC sends a teardown's TSO segments with the frame's addresses and EtherType 0x0800. Pure
//! control messages may carry any addresses; senders use zeros.
//!
//! # The plain-packet path
//!
//! Ordinary IPv4 frames (EtherType 0x0800) and ARP cross the link unchanged in both
//! directions, with no header added: every packet of a connection the host owns travels this
//! way. [`classify`] tells the two paths apart cheaply per packet.
//!
//! # Use
//!
//! Receiving: `match classify(&frame)` → for [`FrameKind::Control`], either
//! [`parse_frame`] (one call, gives a [`Message`] and the payload) or the type's view
//! (`TeardownFrame::new_checked(&frame[ETH_HEADER_LEN..])`) and `TeardownRepr::parse`.
//! Sending: build the `XxxRepr`, wrap it in [`Message`] and call [`Message::write_frame`] or
//! [`Message::emit_frame`].

#[macro_use]
mod view;
mod control;
mod message;
mod setup;
mod splice;
mod teardown;
mod tonic;
mod wire;

pub use control::{
    AckStatus, InstallAckFrame, InstallAckRepr, ListenAddFrame, ListenAddRepr, ListenOptions,
    ListenRemoveFrame, ListenRemoveRepr, TeardownCountFrame, TeardownCountRepr,
};
pub use message::{classify, parse_frame, FrameKind, Message, ParsedFrame};
pub use setup::{NegotiatedOptions, SetupFrame, SetupRepr, WindowScales};
pub use splice::{
    CloseReason, SpliceCloseFrame, SpliceCloseRepr, SpliceInstallFrame, SpliceInstallRepr,
    SpliceSide,
};
pub use teardown::{TcpState, TeardownFrame, TeardownRepr, Timestamps};
pub use tonic::{
    ModuleName, TonicDeliveredFrame, TonicDeliveredRepr, TonicFlowAddFrame, TonicFlowAddRepr,
    TonicFlowRemoveFrame, TonicFlowRemoveRepr, TonicTailFrame, TonicTailRepr,
};
pub use wire::{FourTuple, MacAddr};

use crate::Direction;

/// The contract version every message carries in its first byte.
pub const VERSION: u8 = 1;
/// Length of the Ethernet header in front of every message (no VLAN tag on the link): the
/// Ethernet II header of [`crate::wire::ethernet`].
pub use crate::wire::ethernet::HEADER_LEN as ETH_HEADER_LEN;
/// Length of the common header (version, type, header length).
pub const COMMON_HEADER_LEN: usize = 4;
/// Room reserved for a message header (fixed part plus extensions) when sizing buffers:
/// every fixed length is below it. Parsers accept any header length the frame holds.
pub const MAX_HEADER_LEN: usize = 256;

/// Flag bit: window scaling offered or negotiated (RFC 7323 §2).
pub const FLAG_WSCALE: u8 = 0x01;
/// Flag bit: SACK permitted (RFC 2018).
pub const FLAG_SACK: u8 = 0x02;
/// Flag bit: timestamps offered or negotiated (RFC 7323 §3).
pub const FLAG_TIMESTAMPS: u8 = 0x04;

/// Largest window-scale shift RFC 7323 §2.3 allows; larger values are refused on parse.
pub const MAX_WSCALE: u8 = 14;

/// The message type byte of the common header. Each type travels under exactly one
/// EtherType ([`MsgType::ethertype`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MsgType {
    /// 0x0A under 0x090A: NIC → host, a connection completed a SYN-cookie handshake (App. A
    /// "Connection setup").
    Setup = 0x0A,
    /// 0x0B under 0x090B: host → NIC, teardown offload (App. A "Connection teardown").
    Teardown = 0x0B,
    /// 0x0C under 0x090C: host → NIC, splice install (App. A "Connection splicing").
    SpliceInstall = 0x0C,
    /// 0x0D under 0x090D: NIC → host, splice closure report (App. A).
    SpliceClose = 0x0D,
    /// 0x10 under 0x090E: host → NIC, register a setup-offloaded listener (App. A: "the host
    /// stack sends a special control packet to NIC, carrying the listening address/port and
    /// TCP options").
    ListenAdd = 0x10,
    /// 0x11 under 0x090E: host → NIC, remove a listener.
    ListenRemove = 0x11,
    /// 0x12 under 0x090E: NIC → host, result of a request that carries a request id (App. A:
    /// the host keeps splice entries "until it is notified that the splicing rules are
    /// installed").
    InstallAck = 0x12,
    /// 0x13 under 0x090E: NIC → host, the number of connections being closed on the NIC (App.
    /// A "Connection teardown").
    TeardownCount = 0x13,
    /// 0x20 under 0x090E: host → NIC, hand a flow to the Tonic engines.
    TonicFlowAdd = 0x20,
    /// 0x21 under 0x090E: host → NIC, remove a Tonic flow.
    TonicFlowRemove = 0x21,
    /// 0x22 under 0x090E: host → NIC, new send-buffer tail of a Tonic flow (`tonic-tail`).
    TonicTail = 0x22,
    /// 0x23 under 0x090E: NIC → host, cumulative delivery of a Tonic flow (snd.una), so the
    /// host frees send-buffer space.
    TonicDelivered = 0x23,
}

impl MsgType {
    /// Every type, in code order.
    pub const ALL: [MsgType; 12] = [
        MsgType::Setup,
        MsgType::Teardown,
        MsgType::SpliceInstall,
        MsgType::SpliceClose,
        MsgType::ListenAdd,
        MsgType::ListenRemove,
        MsgType::InstallAck,
        MsgType::TeardownCount,
        MsgType::TonicFlowAdd,
        MsgType::TonicFlowRemove,
        MsgType::TonicTail,
        MsgType::TonicDelivered,
    ];

    /// The type with code `code`, if any.
    pub const fn from_u8(code: u8) -> Option<MsgType> {
        Some(match code {
            0x0A => MsgType::Setup,
            0x0B => MsgType::Teardown,
            0x0C => MsgType::SpliceInstall,
            0x0D => MsgType::SpliceClose,
            0x10 => MsgType::ListenAdd,
            0x11 => MsgType::ListenRemove,
            0x12 => MsgType::InstallAck,
            0x13 => MsgType::TeardownCount,
            0x20 => MsgType::TonicFlowAdd,
            0x21 => MsgType::TonicFlowRemove,
            0x22 => MsgType::TonicTail,
            0x23 => MsgType::TonicDelivered,
            _ => return None,
        })
    }

    /// The code on the wire.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The EtherType this type travels under.
    pub const fn ethertype(self) -> u16 {
        match self {
            MsgType::Setup => crate::ETHERTYPE_SETUP,
            MsgType::Teardown => crate::ETHERTYPE_TEARDOWN,
            MsgType::SpliceInstall => crate::ETHERTYPE_SPLICE,
            MsgType::SpliceClose => crate::ETHERTYPE_SPLICE_CLOSE,
            _ => crate::ETHERTYPE_CONTROL,
        }
    }

    /// Who sends this type. A receiver refuses a message coming the wrong way.
    pub const fn direction(self) -> Direction {
        match self {
            MsgType::Setup
            | MsgType::SpliceClose
            | MsgType::InstallAck
            | MsgType::TeardownCount
            | MsgType::TonicDelivered => Direction::NicToHost,
            _ => Direction::HostToNic,
        }
    }

    /// Length of the header this version defines for the type (common header included): the
    /// smallest header length a receiver accepts.
    pub const fn fixed_len(self) -> usize {
        match self {
            MsgType::Setup => 20,
            MsgType::Teardown => 44,
            MsgType::SpliceInstall => 96,
            MsgType::SpliceClose => 68,
            MsgType::ListenAdd => 20,
            MsgType::ListenRemove => 16,
            MsgType::InstallAck => 12,
            MsgType::TeardownCount => 8,
            MsgType::TonicFlowAdd => 80,
            MsgType::TonicFlowRemove => 12,
            MsgType::TonicTail => 16,
            MsgType::TonicDelivered => 12,
        }
    }

    /// What follows the header.
    pub const fn payload(self) -> PayloadKind {
        match self {
            MsgType::Setup => PayloadKind::IpPacket,
            MsgType::Teardown | MsgType::SpliceInstall => PayloadKind::OptionalIpPacket,
            MsgType::TonicTail => PayloadKind::Data,
            _ => PayloadKind::None,
        }
    }
}

/// What follows a message's header ([`MsgType::payload`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadKind {
    /// An IPv4 packet, required (setup notification).
    IpPacket,
    /// An IPv4 packet or nothing (teardown offload, splice install).
    OptionalIpPacket,
    /// Exactly the number of bytes a header field says (Tonic tail update's `data_len`).
    Data,
    /// Nothing; trailing bytes are Ethernet padding and ignored.
    None,
}

/// Why bytes are not a valid message, or why a message cannot be emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MsgError {
    /// The buffer ends before the Ethernet header, the common header, the header length the
    /// common header states, or the data a field says follows.
    #[error("message truncated")]
    Truncated,
    /// The frame's EtherType is not one of the host ↔ NIC EtherTypes.
    #[error("EtherType {0:#06x} is not a host-NIC message")]
    NotMessage(u16),
    /// The version byte is not [`VERSION`].
    #[error("unsupported message version {0}")]
    BadVersion(u8),
    /// The type byte is no known [`MsgType`].
    #[error("unknown message type {0:#04x}")]
    UnknownType(u8),
    /// The type is known but does not travel under the frame's EtherType.
    #[error("message type {msg_type:#04x} is not carried by EtherType {ethertype:#06x}")]
    TypeMismatch {
        /// The frame's EtherType.
        ethertype: u16,
        /// The common header's type byte.
        msg_type: u8,
    },
    /// A view for one type was put over a message of another type.
    #[error("expected message type {expected:?}, found {found:#04x}")]
    WrongType {
        /// The view's type.
        expected: MsgType,
        /// The type byte found.
        found: u8,
    },
    /// The header length is below the type's fixed length.
    #[error("header length {0} is shorter than the message type's fixed fields")]
    BadHeaderLen(u16),
    /// A field holds a value outside its range (named).
    #[error("field `{0}` out of range")]
    BadField(&'static str),
    /// A message that needs a payload (setup notification) has none.
    #[error("message needs a payload")]
    MissingPayload,
    /// A payload was given for a message type that carries none, or its length does not
    /// match the header.
    #[error("payload not allowed or of the wrong length for this message type")]
    BadPayload,
    /// The output buffer is too small for the frame.
    #[error("output buffer holds {have} bytes, the frame needs {need}")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
}

/// Checks the common header of `msg` (bytes from the common header on) against `ty`: length,
/// version, type byte, header length ≥ the fixed length and ≤ the buffer, plus the type's own
/// constraints (a Tonic tail update's data must be present). Never panics.
pub(crate) fn check_message(msg: &[u8], ty: MsgType) -> Result<(), MsgError> {
    let (version, code, hdr_len) = read_common(msg)?;
    if version != VERSION {
        return Err(MsgError::BadVersion(version));
    }
    if code != ty.code() {
        return Err(MsgError::WrongType {
            expected: ty,
            found: code,
        });
    }
    check_lengths(msg, ty, hdr_len)
}

/// Version, type code and header length of `msg`, or `Truncated`.
fn read_common(msg: &[u8]) -> Result<(u8, u8, u16), MsgError> {
    match msg {
        [v, t, h0, h1, ..] => Ok((*v, *t, u16::from_be_bytes([*h0, *h1]))),
        _ => Err(MsgError::Truncated),
    }
}

fn check_lengths(msg: &[u8], ty: MsgType, hdr_len: u16) -> Result<(), MsgError> {
    let hl = usize::from(hdr_len);
    if hl < ty.fixed_len() {
        return Err(MsgError::BadHeaderLen(hdr_len));
    }
    if hl > msg.len() {
        return Err(MsgError::Truncated);
    }
    if ty == MsgType::TonicTail {
        tonic::check_tail_data(msg, hl)?;
    }
    Ok(())
}

/// Checks the common header of the message bytes `msg` found under `ethertype` and returns
/// its type: the EtherType is a host ↔ NIC one, the version is [`VERSION`], the type is known
/// and travels under that EtherType, and the lengths hold (as each view's `new_checked`).
/// Never panics.
pub fn check_header(ethertype: u16, msg: &[u8]) -> Result<MsgType, MsgError> {
    if !crate::is_control_ethertype(ethertype) {
        return Err(MsgError::NotMessage(ethertype));
    }
    let (version, code, hdr_len) = read_common(msg)?;
    if version != VERSION {
        return Err(MsgError::BadVersion(version));
    }
    let ty = MsgType::from_u8(code).ok_or(MsgError::UnknownType(code))?;
    if ty.ethertype() != ethertype {
        return Err(MsgError::TypeMismatch {
            ethertype,
            msg_type: code,
        });
    }
    check_lengths(msg, ty, hdr_len)?;
    Ok(ty)
}

/// A read-only view of the common header of any message (the first
/// [`COMMON_HEADER_LEN`] bytes after the Ethernet header), for code that must look at the
/// type before choosing a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MsgHeader<T> {
    /// Wraps `buffer` after checking it holds the common header. Never panics.
    pub fn new_checked(buffer: T) -> Result<Self, MsgError> {
        if buffer.as_ref().len() < COMMON_HEADER_LEN {
            return Err(MsgError::Truncated);
        }
        Ok(MsgHeader { buffer })
    }
    /// The version byte.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// The message-type byte (use [`MsgType::from_u8`]).
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// The header-length field: bytes from the common header to the payload.
    pub fn header_len(&self) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[2], b[3]])
    }
    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

/// Checks that a window-scale shift is at most [`MAX_WSCALE`].
pub(crate) fn check_wscale(shift: u8, name: &'static str) -> Result<u8, MsgError> {
    if shift > MAX_WSCALE {
        Err(MsgError::BadField(name))
    } else {
        Ok(shift)
    }
}

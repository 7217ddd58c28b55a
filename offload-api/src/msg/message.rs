//! Whole frames: the per-packet classifier and the [`Message`] sum type over every message's
//! representation, parsed from and emitted to complete Ethernet frames.

use super::*;
use crate::wire::{EthernetFrame, EthernetRepr};

/// What a frame on the link is ([`classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// An ordinary IPv4 frame (EtherType 0x0800): the plain-packet path.
    Ipv4,
    /// An ARP frame (EtherType 0x0806).
    Arp,
    /// A host ↔ NIC message of this type whose common header is valid (version, type under
    /// its EtherType, lengths): the type's `new_checked` accepts the bytes after the Ethernet
    /// header. Field values are checked only by the `Repr` parsers.
    Control(MsgType),
    /// A host ↔ NIC EtherType whose common header is unusable (the reason is given).
    BadControl(MsgError),
    /// Any other EtherType (IPv6, VLAN-tagged, ...).
    Unknown(u16),
    /// Shorter than an Ethernet header.
    Runt,
}

/// Classifies a frame on the link: reads the EtherType and, for a host ↔ NIC message, checks
/// its 4-byte common header. A handful of loads and compares, for the per-packet path.
/// Never panics.
pub fn classify(frame: &[u8]) -> FrameKind {
    let Some(ethertype) = ethertype_of(frame) else {
        return FrameKind::Runt;
    };
    match ethertype {
        crate::ETHERTYPE_IPV4 => FrameKind::Ipv4,
        crate::ETHERTYPE_ARP => FrameKind::Arp,
        t if crate::is_control_ethertype(t) => match check_header(t, &frame[ETH_HEADER_LEN..]) {
            Ok(ty) => FrameKind::Control(ty),
            Err(e) => FrameKind::BadControl(e),
        },
        t => FrameKind::Unknown(t),
    }
}

/// The EtherType of `frame`, if it holds an Ethernet header.
#[inline]
fn ethertype_of(frame: &[u8]) -> Option<u16> {
    EthernetFrame::new_checked(frame)
        .ok()
        .map(|f| f.ethertype())
}

/// Any host ↔ NIC message, as its high-level representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// 0x090A setup notification.
    Setup(SetupRepr),
    /// 0x090B teardown offload.
    Teardown(TeardownRepr),
    /// 0x090C splice install.
    SpliceInstall(SpliceInstallRepr),
    /// 0x090D splice closure report.
    SpliceClose(SpliceCloseRepr),
    /// 0x090E / 0x10 listen registration.
    ListenAdd(ListenAddRepr),
    /// 0x090E / 0x11 listen removal.
    ListenRemove(ListenRemoveRepr),
    /// 0x090E / 0x12 install acknowledgement.
    InstallAck(InstallAckRepr),
    /// 0x090E / 0x13 teardown count.
    TeardownCount(TeardownCountRepr),
    /// 0x090E / 0x20 Tonic flow add.
    TonicFlowAdd(TonicFlowAddRepr),
    /// 0x090E / 0x21 Tonic flow remove.
    TonicFlowRemove(TonicFlowRemoveRepr),
    /// 0x090E / 0x22 Tonic tail update.
    TonicTail(TonicTailRepr),
    /// 0x090E / 0x23 Tonic delivery notification.
    TonicDelivered(TonicDeliveredRepr),
}

/// A message parsed from a whole Ethernet frame ([`parse_frame`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedFrame<'a> {
    /// Destination MAC of the frame.
    pub dst: MacAddr,
    /// Source MAC of the frame.
    pub src: MacAddr,
    /// The message.
    pub message: Message,
    /// What follows the header: the IPv4 packet (setup, teardown, splice install; empty when
    /// an optional one is absent), exactly `data_len` bytes for a Tonic tail update, empty for
    /// the other types (padding dropped).
    pub payload: &'a [u8],
}

/// Parses a whole Ethernet frame holding a host ↔ NIC message: common header, fields, and
/// the payload rule of the type (a setup notification must carry its packet). Never panics.
pub fn parse_frame(frame: &[u8]) -> Result<ParsedFrame<'_>, MsgError> {
    let eth = EthernetFrame::new_checked(frame).map_err(|_| MsgError::Truncated)?;
    let (message, payload) = Message::parse(eth.ethertype(), eth.payload_slice())?;
    Ok(ParsedFrame {
        dst: eth.dst_addr(),
        src: eth.src_addr(),
        message,
        payload,
    })
}

impl Message {
    /// The message's type.
    pub const fn msg_type(&self) -> MsgType {
        match self {
            Message::Setup(_) => MsgType::Setup,
            Message::Teardown(_) => MsgType::Teardown,
            Message::SpliceInstall(_) => MsgType::SpliceInstall,
            Message::SpliceClose(_) => MsgType::SpliceClose,
            Message::ListenAdd(_) => MsgType::ListenAdd,
            Message::ListenRemove(_) => MsgType::ListenRemove,
            Message::InstallAck(_) => MsgType::InstallAck,
            Message::TeardownCount(_) => MsgType::TeardownCount,
            Message::TonicFlowAdd(_) => MsgType::TonicFlowAdd,
            Message::TonicFlowRemove(_) => MsgType::TonicFlowRemove,
            Message::TonicTail(_) => MsgType::TonicTail,
            Message::TonicDelivered(_) => MsgType::TonicDelivered,
        }
    }

    /// Parses the message bytes `msg` (everything after the Ethernet header) of a frame with
    /// EtherType `ethertype`. Returns the message and its payload as [`ParsedFrame::payload`]
    /// describes. Never panics.
    pub fn parse(ethertype: u16, msg: &[u8]) -> Result<(Message, &[u8]), MsgError> {
        let ty = check_header(ethertype, msg)?;
        let message = match ty {
            MsgType::Setup => Message::Setup(SetupRepr::parse(&SetupFrame::new_unchecked(msg))?),
            MsgType::Teardown => {
                Message::Teardown(TeardownRepr::parse(&TeardownFrame::new_unchecked(msg))?)
            }
            MsgType::SpliceInstall => Message::SpliceInstall(SpliceInstallRepr::parse(
                &SpliceInstallFrame::new_unchecked(msg),
            )?),
            MsgType::SpliceClose => Message::SpliceClose(SpliceCloseRepr::parse(
                &SpliceCloseFrame::new_unchecked(msg),
            )?),
            MsgType::ListenAdd => {
                Message::ListenAdd(ListenAddRepr::parse(&ListenAddFrame::new_unchecked(msg))?)
            }
            MsgType::ListenRemove => Message::ListenRemove(ListenRemoveRepr::parse(
                &ListenRemoveFrame::new_unchecked(msg),
            )?),
            MsgType::InstallAck => {
                Message::InstallAck(InstallAckRepr::parse(&InstallAckFrame::new_unchecked(msg))?)
            }
            MsgType::TeardownCount => Message::TeardownCount(TeardownCountRepr::parse(
                &TeardownCountFrame::new_unchecked(msg),
            )?),
            MsgType::TonicFlowAdd => Message::TonicFlowAdd(TonicFlowAddRepr::parse(
                &TonicFlowAddFrame::new_unchecked(msg),
            )?),
            MsgType::TonicFlowRemove => Message::TonicFlowRemove(TonicFlowRemoveRepr::parse(
                &TonicFlowRemoveFrame::new_unchecked(msg),
            )?),
            MsgType::TonicTail => {
                Message::TonicTail(TonicTailRepr::parse(&TonicTailFrame::new_unchecked(msg))?)
            }
            MsgType::TonicDelivered => Message::TonicDelivered(TonicDeliveredRepr::parse(
                &TonicDeliveredFrame::new_unchecked(msg),
            )?),
        };
        // check_header guaranteed the header length is within `msg`.
        let after = msg.get(usize::from(u16::from_be_bytes([msg[2], msg[3]]))..);
        let after = after.unwrap_or(&[]);
        let payload = match (ty.payload(), message) {
            (PayloadKind::IpPacket, _) if after.is_empty() => return Err(MsgError::MissingPayload),
            (PayloadKind::IpPacket | PayloadKind::OptionalIpPacket, _) => after,
            (PayloadKind::Data, Message::TonicTail(t)) => {
                let n = usize::try_from(t.data_len).map_err(|_| MsgError::Truncated)?;
                after.get(..n).ok_or(MsgError::Truncated)?
            }
            _ => &[],
        };
        Ok((message, payload))
    }

    /// Header bytes this message emits (the type's fixed length).
    pub const fn header_len(&self) -> usize {
        self.msg_type().fixed_len()
    }

    /// Bytes of the whole Ethernet frame with a payload of `payload_len` bytes.
    pub const fn frame_len(&self, payload_len: usize) -> usize {
        ETH_HEADER_LEN + self.header_len() + payload_len
    }

    /// Checks that `payload` is what this message's type carries (see
    /// [`ParsedFrame::payload`]): `MissingPayload` or `BadPayload` otherwise.
    pub fn check_payload(&self, payload: &[u8]) -> Result<(), MsgError> {
        match (self.msg_type().payload(), self) {
            (PayloadKind::IpPacket, _) if payload.is_empty() => Err(MsgError::MissingPayload),
            (PayloadKind::IpPacket | PayloadKind::OptionalIpPacket, _) => Ok(()),
            (PayloadKind::Data, Message::TonicTail(t))
                if usize::try_from(t.data_len).ok() == Some(payload.len()) =>
            {
                Ok(())
            }
            (PayloadKind::None, _) if payload.is_empty() => Ok(()),
            _ => Err(MsgError::BadPayload),
        }
    }

    /// Writes the message header (not the Ethernet header) at the start of `msg` and returns
    /// its length. `BufferTooSmall` when `msg` is shorter than [`Self::header_len`].
    pub fn emit(&self, msg: &mut [u8]) -> Result<usize, MsgError> {
        let need = self.header_len();
        let have = msg.len();
        let msg = msg
            .get_mut(..need)
            .ok_or(MsgError::BufferTooSmall { need, have })?;
        match self {
            Message::Setup(r) => r.emit(&mut SetupFrame::new_unchecked(msg)),
            Message::Teardown(r) => r.emit(&mut TeardownFrame::new_unchecked(msg)),
            Message::SpliceInstall(r) => r.emit(&mut SpliceInstallFrame::new_unchecked(msg)),
            Message::SpliceClose(r) => r.emit(&mut SpliceCloseFrame::new_unchecked(msg)),
            Message::ListenAdd(r) => r.emit(&mut ListenAddFrame::new_unchecked(msg)),
            Message::ListenRemove(r) => r.emit(&mut ListenRemoveFrame::new_unchecked(msg)),
            Message::InstallAck(r) => r.emit(&mut InstallAckFrame::new_unchecked(msg)),
            Message::TeardownCount(r) => r.emit(&mut TeardownCountFrame::new_unchecked(msg)),
            Message::TonicFlowAdd(r) => r.emit(&mut TonicFlowAddFrame::new_unchecked(msg)),
            Message::TonicFlowRemove(r) => r.emit(&mut TonicFlowRemoveFrame::new_unchecked(msg)),
            Message::TonicTail(r) => r.emit(&mut TonicTailFrame::new_unchecked(msg)),
            Message::TonicDelivered(r) => r.emit(&mut TonicDeliveredFrame::new_unchecked(msg)),
        }
        Ok(need)
    }

    /// Writes a whole Ethernet frame (`dst`, `src`, the type's EtherType, the header, then
    /// `payload`) at the start of `out` and returns its length. Fails, writing nothing, when
    /// the payload breaks the type's rule ([`Self::check_payload`]) or `out` is too small.
    pub fn emit_frame(
        &self,
        dst: MacAddr,
        src: MacAddr,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<usize, MsgError> {
        self.check_payload(payload)?;
        let need = self.frame_len(payload.len());
        let have = out.len();
        let out = out
            .get_mut(..need)
            .ok_or(MsgError::BufferTooSmall { need, have })?;
        let mut eth = EthernetFrame::new_unchecked(out);
        EthernetRepr {
            dst,
            src,
            ethertype: self.msg_type().ethertype(),
        }
        .emit(&mut eth);
        let out = eth.into_inner();
        let hl = self.emit(&mut out[ETH_HEADER_LEN..])?;
        out[ETH_HEADER_LEN + hl..].copy_from_slice(payload);
        Ok(need)
    }

    /// Replaces the contents of `out` with the whole Ethernet frame (as
    /// [`Self::emit_frame`]); `out` keeps its capacity, so a recycled buffer (a
    /// [`LinkBuf`](crate::link::LinkBuf)'s vector) does not allocate in the steady state.
    pub fn write_frame(
        &self,
        dst: MacAddr,
        src: MacAddr,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), MsgError> {
        self.check_payload(payload)?;
        out.clear();
        out.resize(self.frame_len(payload.len()), 0);
        self.emit_frame(dst, src, payload, out)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_frame() -> Vec<u8> {
        let mut f = vec![0u8; 34];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f
    }

    #[test]
    fn classify_plain_and_unknown() {
        assert_eq!(classify(&ipv4_frame()), FrameKind::Ipv4);
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(classify(&arp), FrameKind::Arp);
        let mut v6 = vec![0u8; 54];
        v6[12..14].copy_from_slice(&[0x86, 0xDD]);
        assert_eq!(classify(&v6), FrameKind::Unknown(0x86DD));
        assert_eq!(classify(&[0u8; 13]), FrameKind::Runt);
        assert_eq!(classify(&[]), FrameKind::Runt);
    }

    #[test]
    fn classify_control_and_bad_control() {
        let m = Message::TeardownCount(TeardownCountRepr { count: 3 });
        let mut f = Vec::new();
        m.write_frame([0; 6], [0; 6], &[], &mut f).unwrap();
        assert_eq!(&f[12..14], &[0x09, 0x0E]);
        assert_eq!(classify(&f), FrameKind::Control(MsgType::TeardownCount));
        // Ethernet padding after a payload-less message is fine.
        f.resize(60, 0);
        assert_eq!(classify(&f), FrameKind::Control(MsgType::TeardownCount));
        assert_eq!(parse_frame(&f).unwrap().payload, &[] as &[u8]);

        let mut bad = f.clone();
        bad[14] = 2;
        assert_eq!(
            classify(&bad),
            FrameKind::BadControl(MsgError::BadVersion(2))
        );
        let mut bad = f.clone();
        bad[15] = 0x7F;
        assert_eq!(
            classify(&bad),
            FrameKind::BadControl(MsgError::UnknownType(0x7F))
        );
        let mut bad = f.clone();
        bad[13] = 0x0A; // teardown count under the setup EtherType
        assert_eq!(
            classify(&bad),
            FrameKind::BadControl(MsgError::TypeMismatch {
                ethertype: 0x090A,
                msg_type: 0x13
            })
        );
        let mut bad = f.clone();
        bad[17] = 4;
        assert_eq!(
            classify(&bad),
            FrameKind::BadControl(MsgError::BadHeaderLen(4))
        );
        assert_eq!(
            classify(&f[..ETH_HEADER_LEN + 3]),
            FrameKind::BadControl(MsgError::Truncated)
        );
        assert_eq!(
            classify(&f[..ETH_HEADER_LEN + 7]),
            FrameKind::BadControl(MsgError::Truncated)
        );
    }

    #[test]
    fn setup_frame_round_trip_and_payload_rules() {
        let m = Message::Setup(SetupRepr::default());
        let ip = ipv4_frame()[14..].to_vec();
        let mut f = Vec::new();
        m.write_frame([1; 6], [2; 6], &ip, &mut f).unwrap();
        assert_eq!(f.len(), m.frame_len(ip.len()));
        assert_eq!(&f[12..16], &[0x09, 0x0A, 1, 0x0A]);
        let p = parse_frame(&f).unwrap();
        assert_eq!((p.dst, p.src), ([1; 6], [2; 6]));
        assert_eq!(p.message, m);
        assert_eq!(p.payload, &ip[..]);
        // A setup notification needs its packet.
        assert_eq!(
            m.write_frame([0; 6], [0; 6], &[], &mut f),
            Err(MsgError::MissingPayload)
        );
        let bare = &f[..ETH_HEADER_LEN + 20];
        let mut bare = bare.to_vec();
        bare[ETH_HEADER_LEN + 2..ETH_HEADER_LEN + 4].copy_from_slice(&20u16.to_be_bytes());
        assert_eq!(parse_frame(&bare), Err(MsgError::MissingPayload));
        // A payload-less type refuses a payload.
        let c = Message::TeardownCount(TeardownCountRepr::default());
        assert_eq!(
            c.write_frame([0; 6], [0; 6], &[1], &mut f),
            Err(MsgError::BadPayload)
        );
        let mut small = [0u8; 20];
        assert_eq!(
            c.emit_frame([0; 6], [0; 6], &[], &mut small),
            Err(MsgError::BufferTooSmall { need: 22, have: 20 })
        );
    }

    #[test]
    fn unknown_extension_fields_are_skipped() {
        let m = Message::TonicDelivered(TonicDeliveredRepr {
            flow_id: 1,
            delivered: 2,
        });
        let mut f = Vec::new();
        m.write_frame([0; 6], [0; 6], &[], &mut f).unwrap();
        // A later revision appends 8 bytes of fields.
        f.extend_from_slice(&[9; 8]);
        f[ETH_HEADER_LEN + 3] = 20;
        let p = parse_frame(&f).unwrap();
        assert_eq!(p.message, m);
        let tail = Message::TonicTail(TonicTailRepr {
            flow_id: 1,
            tail: 10,
            data_len: 2,
        });
        tail.write_frame([0; 6], [0; 6], b"xy", &mut f).unwrap();
        f.splice(ETH_HEADER_LEN + 16..ETH_HEADER_LEN + 16, [7u8; 4]);
        f[ETH_HEADER_LEN + 3] = 20;
        f.push(0); // padding
        let p = parse_frame(&f).unwrap();
        assert_eq!(p.message, tail);
        assert_eq!(p.payload, b"xy");
    }

    #[test]
    fn non_control_frames_are_refused_by_parse() {
        assert_eq!(
            parse_frame(&ipv4_frame()),
            Err(MsgError::NotMessage(0x0800))
        );
        assert_eq!(parse_frame(&[0; 5]), Err(MsgError::Truncated));
    }
}

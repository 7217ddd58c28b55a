//! nicemu control messages under EtherType 0x090E for Tonic flows (Tonic NSDI '20 §3, and §5
//! "Integrating Tonic into the Transport Layer"): flow add and remove, send-buffer tail updates
//! (`tonic-tail`) and delivery notifications.

use super::wire::{FourTuple, MacAddr};
use super::{MsgError, MsgType, MAX_WSCALE};

/// Name of a Tonic protocol module in the NIC's registry (e.g. `newreno`, `dcqcn`): 1 to 16
/// printable ASCII characters without spaces. On the wire: 16 bytes, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModuleName {
    bytes: [u8; 16],
    len: u8,
}

impl ModuleName {
    /// Bytes on the wire.
    pub const WIRE_LEN: usize = 16;

    /// A module name from `name`; `BadField("module")` unless it has 1 to 16 printable ASCII
    /// characters (`!`..=`~`).
    pub fn new(name: &str) -> Result<ModuleName, MsgError> {
        let b = name.as_bytes();
        if b.is_empty() || b.len() > Self::WIRE_LEN || !b.iter().all(u8::is_ascii_graphic) {
            return Err(MsgError::BadField("module"));
        }
        let mut bytes = [0u8; 16];
        bytes[..b.len()].copy_from_slice(b);
        Ok(ModuleName {
            bytes,
            len: b.len() as u8,
        })
    }

    /// Decodes the 16 wire bytes: a name followed only by NULs.
    pub fn from_wire(bytes: [u8; 16]) -> Result<ModuleName, MsgError> {
        let len = bytes.iter().position(|&c| c == 0).unwrap_or(Self::WIRE_LEN);
        let (name, pad) = bytes.split_at(len);
        if len == 0 || !name.iter().all(u8::is_ascii_graphic) || pad.iter().any(|&c| c != 0) {
            return Err(MsgError::BadField("module"));
        }
        Ok(ModuleName {
            bytes,
            len: len as u8,
        })
    }

    /// The 16 wire bytes.
    pub fn to_wire(&self) -> [u8; 16] {
        self.bytes
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl core::fmt::Debug for ModuleName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ModuleName({:?})", self.as_str())
    }
}

impl core::fmt::Display for ModuleName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

msg_view! {
    /// View of a Tonic flow add, EtherType 0x090E, type 0x20, host → NIC: the NIC's Tonic
    /// engines take over transmission of the flow (segment generation, credit, loss
    /// recovery) with the named protocol module. Answered by an
    /// [install ack](super::InstallAckFrame).
    ///
    /// | offset | size | field          | meaning |
    /// |-------:|-----:|----------------|---------|
    /// | 0      | 4    | common header  | version 1, type 0x20, header length ≥ 80 |
    /// | 4      | 4    | `request_id`   | echoed in the install ack |
    /// | 8      | 4    | `flow_id`      | the host's id for the flow, used by the other Tonic messages |
    /// | 12     | 12   | `tuple`        | the flow's [`FourTuple`] |
    /// | 24     | 6    | `local_mac`    | source MAC of the flow's segments |
    /// | 30     | 6    | `remote_mac`   | destination MAC |
    /// | 36     | 2    | `port`         | NIC port index |
    /// | 38     | 2    | `mss`          | segment size |
    /// | 40     | 4    | `init_seq`     | first sequence number the NIC sends (the send buffer starts here) |
    /// | 44     | 4    | `init_cwnd`    | initial congestion window, bytes (window scheme; 0: module default) |
    /// | 48     | 8    | `init_rate_bps`| initial rate, bits per second (rate scheme; 0: module default) |
    /// | 56     | 4    | `init_credit`  | initial credit, bytes (token scheme; 0: module default) |
    /// | 60     | 16   | `module`       | [`ModuleName`], NUL-padded |
    /// | 76     | 1    | `snd_wscale`   | the shift the peer's window field takes (RFC 7323 §2.3), 0..=14 |
    /// | 77     | 3    | reserved       | zero |
    pub struct TonicFlowAddFrame: MsgType::TonicFlowAdd;
    fields {
        /// Request id.
        request_id / set_request_id: u32 = 4;
        /// Flow id.
        flow_id / set_flow_id: u32 = 8;
        /// The flow's 4-tuple.
        tuple / set_tuple: FourTuple = 12;
        /// Our MAC.
        local_mac / set_local_mac: MacAddr = 24;
        /// The peer's (or next hop's) MAC.
        remote_mac / set_remote_mac: MacAddr = 30;
        /// NIC port index.
        port / set_port: u16 = 36;
        /// Segment size.
        mss / set_mss: u16 = 38;
        /// First sequence number.
        init_seq / set_init_seq: u32 = 40;
        /// Initial congestion window (bytes).
        init_cwnd / set_init_cwnd: u32 = 44;
        /// Initial rate (bits per second).
        init_rate_bps / set_init_rate_bps: u64 = 48;
        /// Initial credit (bytes).
        init_credit / set_init_credit: u32 = 56;
        /// Module name bytes (see [`ModuleName::from_wire`]).
        module / set_module: [u8; 16] = 60;
        /// Shift of the peer's window field.
        snd_wscale / set_snd_wscale: u8 = 76;
    }
}

/// A Tonic flow add.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TonicFlowAddRepr {
    /// Request id, echoed in the install ack.
    pub request_id: u32,
    /// The host's flow id.
    pub flow_id: u32,
    /// The flow's 4-tuple.
    pub tuple: FourTuple,
    /// Our MAC.
    pub local_mac: MacAddr,
    /// The peer's (or next hop's) MAC.
    pub remote_mac: MacAddr,
    /// NIC port index.
    pub port: u16,
    /// Segment size.
    pub mss: u16,
    /// First sequence number the NIC sends.
    pub init_seq: u32,
    /// Initial congestion window in bytes (0: module default).
    pub init_cwnd: u32,
    /// Initial rate in bits per second (0: module default).
    pub init_rate_bps: u64,
    /// Initial credit in bytes (0: module default).
    pub init_credit: u32,
    /// The protocol module.
    pub module: ModuleName,
    /// Window scale the peer's segments use (RFC 7323 §2.3): the NIC reads the peer's window
    /// as the 16-bit field shifted left by this, at most [`MAX_WSCALE`]. 0 when window scaling
    /// was not negotiated.
    pub snd_wscale: u8,
}

impl TonicFlowAddRepr {
    /// Reads a flow add. Fails on a bad common header, a malformed module name or a window
    /// shift above [`MAX_WSCALE`]. Never panics.
    pub fn parse<T: AsRef<[u8]>>(
        frame: &TonicFlowAddFrame<T>,
    ) -> Result<TonicFlowAddRepr, MsgError> {
        frame.check_len()?;
        Ok(TonicFlowAddRepr {
            request_id: frame.request_id(),
            flow_id: frame.flow_id(),
            tuple: frame.tuple(),
            local_mac: frame.local_mac(),
            remote_mac: frame.remote_mac(),
            port: frame.port(),
            mss: frame.mss(),
            init_seq: frame.init_seq(),
            init_cwnd: frame.init_cwnd(),
            init_rate_bps: frame.init_rate_bps(),
            init_credit: frame.init_credit(),
            module: ModuleName::from_wire(frame.module())?,
            snd_wscale: match frame.snd_wscale() {
                w @ 0..=MAX_WSCALE => w,
                _ => return Err(MsgError::BadField("snd_wscale")),
            },
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::TonicFlowAdd.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut TonicFlowAddFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_request_id(self.request_id);
        frame.set_flow_id(self.flow_id);
        frame.set_tuple(self.tuple);
        frame.set_local_mac(self.local_mac);
        frame.set_remote_mac(self.remote_mac);
        frame.set_port(self.port);
        frame.set_mss(self.mss);
        frame.set_init_seq(self.init_seq);
        frame.set_init_cwnd(self.init_cwnd);
        frame.set_init_rate_bps(self.init_rate_bps);
        frame.set_init_credit(self.init_credit);
        frame.set_module(self.module.to_wire());
        frame.set_snd_wscale(self.snd_wscale);
    }
}

msg_view! {
    /// View of a Tonic flow remove, EtherType 0x090E, type 0x21, host → NIC: the NIC forgets
    /// the flow (data not yet delivered is abandoned). Answered by an
    /// [install ack](super::InstallAckFrame).
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x21, header length ≥ 12 |
    /// | 4      | 4    | `request_id` | echoed in the install ack |
    /// | 8      | 4    | `flow_id`    | the flow |
    pub struct TonicFlowRemoveFrame: MsgType::TonicFlowRemove;
    fields {
        /// Request id.
        request_id / set_request_id: u32 = 4;
        /// Flow id.
        flow_id / set_flow_id: u32 = 8;
    }
}

/// A Tonic flow remove.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TonicFlowRemoveRepr {
    /// Request id, echoed in the install ack.
    pub request_id: u32,
    /// The flow.
    pub flow_id: u32,
}

impl TonicFlowRemoveRepr {
    /// Reads a flow remove. Fails only on a bad common header. Never panics.
    pub fn parse<T: AsRef<[u8]>>(
        frame: &TonicFlowRemoveFrame<T>,
    ) -> Result<TonicFlowRemoveRepr, MsgError> {
        frame.check_len()?;
        Ok(TonicFlowRemoveRepr {
            request_id: frame.request_id(),
            flow_id: frame.flow_id(),
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::TonicFlowRemove.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut TonicFlowRemoveFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_request_id(self.request_id);
        frame.set_flow_id(self.flow_id);
    }
}

msg_view! {
    /// View of a Tonic tail update (`tonic-tail`), EtherType 0x090E, type 0x22, host → NIC:
    /// the application appended data to the flow's send buffer, which now ends just before
    /// sequence number `tail`; the data delivery engine may generate segments up to it.
    ///
    /// The appended bytes may travel in the same frame (the contract stays packets, so a NIC
    /// in another process can serve the flow): `data_len` bytes after the header are the
    /// send-buffer bytes with sequence numbers `[tail − data_len, tail)`. `data_len` = 0 when
    /// the NIC reads the host's send buffer by other means.
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x22, header length ≥ 16 |
    /// | 4      | 4    | `flow_id`    | the flow |
    /// | 8      | 4    | `tail`       | sequence number one past the last byte in the send buffer |
    /// | 12     | 4    | `data_len`   | bytes of data after the header (≤ the frame) |
    /// | 16     | …    | data         | `data_len` bytes; anything after them is padding |
    pub struct TonicTailFrame: MsgType::TonicTail;
    fields {
        /// Flow id.
        flow_id / set_flow_id: u32 = 4;
        /// New tail sequence number.
        tail / set_tail: u32 = 8;
        /// Bytes of data after the header.
        data_len / set_data_len: u32 = 12;
    }
}

impl<T: AsRef<[u8]>> TonicTailFrame<T> {
    /// The `data_len` bytes after the header (empty if the frame is shorter, which
    /// [`Self::check_len`] refuses).
    pub fn data(&self) -> &[u8] {
        let n = usize::try_from(self.data_len()).unwrap_or(usize::MAX);
        self.payload().get(..n).unwrap_or(&[])
    }
}

/// The type-specific check of a tail update: `data_len` bytes follow the `hdr_len`-byte
/// header. `msg` holds at least the fixed header (the caller checked).
pub(crate) fn check_tail_data(msg: &[u8], hdr_len: usize) -> Result<(), MsgError> {
    let view = TonicTailFrame::new_unchecked(msg);
    let n = usize::try_from(view.data_len()).map_err(|_| MsgError::Truncated)?;
    if msg.len() - hdr_len < n {
        return Err(MsgError::Truncated);
    }
    Ok(())
}

/// A Tonic tail update (the data, if any, is the payload, not part of this representation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TonicTailRepr {
    /// The flow.
    pub flow_id: u32,
    /// Sequence number one past the last byte in the send buffer.
    pub tail: u32,
    /// Bytes of data carried after the header.
    pub data_len: u32,
}

impl TonicTailRepr {
    /// Reads a tail update. Fails on a bad common header or data shorter than `data_len`.
    /// Never panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &TonicTailFrame<T>) -> Result<TonicTailRepr, MsgError> {
        frame.check_len()?;
        Ok(TonicTailRepr {
            flow_id: frame.flow_id(),
            tail: frame.tail(),
            data_len: frame.data_len(),
        })
    }

    /// Header bytes [`Self::emit`] writes (the data comes after).
    pub const fn buffer_len(&self) -> usize {
        MsgType::TonicTail.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut TonicTailFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_flow_id(self.flow_id);
        frame.set_tail(self.tail);
        frame.set_data_len(self.data_len);
    }
}

msg_view! {
    /// View of a Tonic delivery notification, EtherType 0x090E, type 0x23, NIC → host: every
    /// byte of the flow before `delivered` is cumulatively acknowledged (snd.una), so the host
    /// frees that send-buffer space.
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x23, header length ≥ 12 |
    /// | 4      | 4    | `flow_id`    | the flow |
    /// | 8      | 4    | `delivered`  | cumulative delivered sequence number (snd.una) |
    pub struct TonicDeliveredFrame: MsgType::TonicDelivered;
    fields {
        /// Flow id.
        flow_id / set_flow_id: u32 = 4;
        /// Cumulative delivered sequence number.
        delivered / set_delivered: u32 = 8;
    }
}

/// A Tonic delivery notification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TonicDeliveredRepr {
    /// The flow.
    pub flow_id: u32,
    /// Cumulative delivered sequence number (snd.una).
    pub delivered: u32,
}

impl TonicDeliveredRepr {
    /// Reads a delivery notification. Fails only on a bad common header. Never panics.
    pub fn parse<T: AsRef<[u8]>>(
        frame: &TonicDeliveredFrame<T>,
    ) -> Result<TonicDeliveredRepr, MsgError> {
        frame.check_len()?;
        Ok(TonicDeliveredRepr {
            flow_id: frame.flow_id(),
            delivered: frame.delivered(),
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::TonicDelivered.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut TonicDeliveredFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_flow_id(self.flow_id);
        frame.set_delivered(self.delivered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names() {
        let m = ModuleName::new("newreno").unwrap();
        assert_eq!(m.as_str(), "newreno");
        assert_eq!(&m.to_wire()[..8], b"newreno\0");
        assert_eq!(ModuleName::from_wire(m.to_wire()).unwrap(), m);
        assert_eq!(
            ModuleName::new("0123456789abcdef").unwrap().as_str().len(),
            16
        );
        for bad in ["", "new reno", "0123456789abcdefg", "é"] {
            assert_eq!(ModuleName::new(bad), Err(MsgError::BadField("module")));
        }
        let mut w = m.to_wire();
        w[10] = b'x';
        assert!(ModuleName::from_wire(w).is_err());
        assert!(ModuleName::from_wire([0; 16]).is_err());
    }

    #[test]
    fn flow_add_layout_and_round_trip() {
        let r = TonicFlowAddRepr {
            request_id: 1,
            flow_id: 2,
            tuple: FourTuple {
                local_ip: [192, 168, 0, 1],
                local_port: 4791,
                remote_ip: [192, 168, 0, 2],
                remote_port: 4791,
            },
            local_mac: [2, 0, 0, 0, 0, 1],
            remote_mac: [2, 0, 0, 0, 0, 2],
            port: 3,
            mss: 1024,
            init_seq: 0xFFFF_FFF0,
            init_cwnd: 10 * 1024,
            init_rate_bps: 100_000_000_000,
            init_credit: 0,
            module: ModuleName::new("dcqcn").unwrap(),
            snd_wscale: 7,
        };
        let mut buf = [0xEEu8; 80];
        r.emit(&mut TonicFlowAddFrame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..12], &[1, 0x20, 0, 80, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(&buf[76..80], &[7, 0, 0, 0]);
        assert_eq!(&buf[36..44], &[0, 3, 4, 0, 0xFF, 0xFF, 0xFF, 0xF0]);
        assert_eq!(&buf[48..56], &100_000_000_000u64.to_be_bytes());
        assert_eq!(&buf[60..66], b"dcqcn\0");
        let f = TonicFlowAddFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(TonicFlowAddRepr::parse(&f).unwrap(), r);
        let mut f = TonicFlowAddFrame::new_unchecked(&mut buf[..]);
        f.set_snd_wscale(MAX_WSCALE + 1);
        assert_eq!(
            TonicFlowAddRepr::parse(&f),
            Err(MsgError::BadField("snd_wscale"))
        );
        f.set_snd_wscale(MAX_WSCALE);
        assert!(TonicFlowAddRepr::parse(&f).is_ok());
        f.set_module([0; 16]);
        assert_eq!(
            TonicFlowAddRepr::parse(&f),
            Err(MsgError::BadField("module"))
        );
    }

    #[test]
    fn small_messages_layout_and_round_trip() {
        let mut buf = vec![0xEEu8; 12];
        let r = TonicFlowRemoveRepr {
            request_id: 5,
            flow_id: 6,
        };
        r.emit(&mut TonicFlowRemoveFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [1, 0x21, 0, 12, 0, 0, 0, 5, 0, 0, 0, 6]);
        let f = TonicFlowRemoveFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(TonicFlowRemoveRepr::parse(&f).unwrap(), r);

        let r = TonicDeliveredRepr {
            flow_id: 7,
            delivered: 0x8000_0000,
        };
        r.emit(&mut TonicDeliveredFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [1, 0x23, 0, 12, 0, 0, 0, 7, 0x80, 0, 0, 0]);
        let f = TonicDeliveredFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(TonicDeliveredRepr::parse(&f).unwrap(), r);
    }

    #[test]
    fn tail_data_length_is_checked() {
        let r = TonicTailRepr {
            flow_id: 1,
            tail: 1000,
            data_len: 3,
        };
        let mut buf = [0u8; 16 + 3 + 2];
        let mut f = TonicTailFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut f);
        f.payload_mut()[..3].copy_from_slice(b"abc");
        assert_eq!(
            &buf[..16],
            &[1, 0x22, 0, 16, 0, 0, 0, 1, 0, 0, 0x03, 0xE8, 0, 0, 0, 3]
        );
        let f = TonicTailFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(TonicTailRepr::parse(&f).unwrap(), r);
        assert_eq!(f.data(), b"abc");
        assert_eq!(f.payload().len(), 5);
        assert_eq!(
            TonicTailFrame::new_checked(&buf[..18]).err(),
            Some(MsgError::Truncated)
        );
        let mut f = TonicTailFrame::new_unchecked(&mut buf[..]);
        f.set_data_len(u32::MAX);
        assert_eq!(f.check_len(), Err(MsgError::Truncated));
        assert!(f.data().is_empty());
    }
}

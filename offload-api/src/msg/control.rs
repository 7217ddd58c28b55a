//! nicemu control messages under EtherType 0x090E that AccelTCP App. A implies but does not
//! number: listen registration and removal, install acknowledgements, teardown counts.

use super::wire::flags;
use super::{check_wscale, MsgError, MsgType, FLAG_SACK, FLAG_TIMESTAMPS, FLAG_WSCALE};

msg_view! {
    /// View of a listen registration, EtherType 0x090E, type 0x10, host → NIC.
    ///
    /// AccelTCP App. A: "When an application listens on a socket whose setup offload option is
    /// enabled, the host stack sends a special control packet to NIC, carrying the listening
    /// address/port and TCP options that must be delivered to the remote host during
    /// connection setup (e.g., MSS, Window scale factor, Selective ACK, etc.)." Answered by an
    /// [install ack](InstallAckFrame) with the same request id.
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x10, header length ≥ 20 |
    /// | 4      | 4    | `request_id` | echoed in the install ack |
    /// | 8      | 4    | `addr`       | listening IPv4 address (0.0.0.0: any of the NIC's) |
    /// | 12     | 2    | `port`       | listening TCP port |
    /// | 14     | 2    | `mss`        | MSS to announce in SYN-ACKs |
    /// | 16     | 1    | `wscale`     | window-scale shift to offer (valid when flag WSCALE) |
    /// | 17     | 1    | `flags`      | 0x01 offer window scaling, 0x02 offer SACK, 0x04 offer timestamps |
    /// | 18     | 2    | reserved     | 0 |
    pub struct ListenAddFrame: MsgType::ListenAdd;
    fields {
        /// Request id.
        request_id / set_request_id: u32 = 4;
        /// Listening address.
        addr / set_addr: [u8; 4] = 8;
        /// Listening port.
        port / set_port: u16 = 12;
        /// MSS to announce.
        mss / set_mss: u16 = 14;
        /// Window-scale shift to offer.
        wscale / set_wscale: u8 = 16;
        /// Flag byte (`FLAG_WSCALE | FLAG_SACK | FLAG_TIMESTAMPS`).
        flags / set_flags: u8 = 17;
    }
}

/// TCP options a setup-offloaded listener offers in its SYN-ACKs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenOptions {
    /// MSS to announce.
    pub mss: u16,
    /// Window-scale shift to offer (at most 14), or none.
    pub window_scale: Option<u8>,
    /// Offer SACK.
    pub sack_permitted: bool,
    /// Offer timestamps (needed by the NIC's SYN cookies to carry the options).
    pub timestamps: bool,
}

/// A listen registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenAddRepr {
    /// Request id, echoed in the install ack.
    pub request_id: u32,
    /// Listening IPv4 address (`[0; 4]`: any).
    pub addr: [u8; 4],
    /// Listening TCP port.
    pub port: u16,
    /// The options to offer.
    pub options: ListenOptions,
}

impl ListenAddRepr {
    /// Reads a listen registration. Fails on a bad common header or a window-scale shift above
    /// 14. Never panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &ListenAddFrame<T>) -> Result<ListenAddRepr, MsgError> {
        frame.check_len()?;
        let f = frame.flags();
        let window_scale = if f & FLAG_WSCALE != 0 {
            Some(check_wscale(frame.wscale(), "wscale")?)
        } else {
            None
        };
        Ok(ListenAddRepr {
            request_id: frame.request_id(),
            addr: frame.addr(),
            port: frame.port(),
            options: ListenOptions {
                mss: frame.mss(),
                window_scale,
                sack_permitted: f & FLAG_SACK != 0,
                timestamps: f & FLAG_TIMESTAMPS != 0,
            },
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::ListenAdd.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut ListenAddFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        let o = &self.options;
        frame.set_request_id(self.request_id);
        frame.set_addr(self.addr);
        frame.set_port(self.port);
        frame.set_mss(o.mss);
        frame.set_wscale(o.window_scale.unwrap_or(0));
        frame.set_flags(flags(
            o.window_scale.is_some(),
            o.sack_permitted,
            o.timestamps,
        ));
    }
}

msg_view! {
    /// View of a listen removal, EtherType 0x090E, type 0x11, host → NIC: SYNs to the address
    /// and port go to the host again. Answered by an [install ack](InstallAckFrame).
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x11, header length ≥ 16 |
    /// | 4      | 4    | `request_id` | echoed in the install ack |
    /// | 8      | 4    | `addr`       | listening IPv4 address, as registered |
    /// | 12     | 2    | `port`       | listening TCP port |
    /// | 14     | 2    | reserved     | 0 |
    pub struct ListenRemoveFrame: MsgType::ListenRemove;
    fields {
        /// Request id.
        request_id / set_request_id: u32 = 4;
        /// Listening address.
        addr / set_addr: [u8; 4] = 8;
        /// Listening port.
        port / set_port: u16 = 12;
    }
}

/// A listen removal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenRemoveRepr {
    /// Request id, echoed in the install ack.
    pub request_id: u32,
    /// Listening IPv4 address, as registered.
    pub addr: [u8; 4],
    /// Listening TCP port.
    pub port: u16,
}

impl ListenRemoveRepr {
    /// Reads a listen removal. Fails only on a bad common header. Never panics.
    pub fn parse<T: AsRef<[u8]>>(
        frame: &ListenRemoveFrame<T>,
    ) -> Result<ListenRemoveRepr, MsgError> {
        frame.check_len()?;
        Ok(ListenRemoveRepr {
            request_id: frame.request_id(),
            addr: frame.addr(),
            port: frame.port(),
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::ListenRemove.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut ListenRemoveFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_request_id(self.request_id);
        frame.set_addr(self.addr);
        frame.set_port(self.port);
    }
}

/// Result of a request, in an [install ack](InstallAckFrame).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AckStatus {
    /// 0: done.
    Ok = 0,
    /// 1: the NIC's table for this kind of entry is full.
    TableFull = 1,
    /// 2: an entry for the same key exists already.
    Exists = 2,
    /// 3: no entry to remove.
    NotFound = 3,
    /// 4: the request is inconsistent (e.g. a port the NIC does not have).
    Invalid = 4,
    /// 5: the NIC does not offer this (e.g. an unknown Tonic module, or the offload is off).
    Unsupported = 5,
}

impl AckStatus {
    /// The status with wire code `code`, if any.
    pub const fn from_u8(code: u8) -> Option<AckStatus> {
        Some(match code {
            0 => AckStatus::Ok,
            1 => AckStatus::TableFull,
            2 => AckStatus::Exists,
            3 => AckStatus::NotFound,
            4 => AckStatus::Invalid,
            5 => AckStatus::Unsupported,
            _ => return None,
        })
    }

    /// The wire code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

msg_view! {
    /// View of an install acknowledgement, EtherType 0x090E, type 0x12, NIC → host: the
    /// result of a request carrying a request id (listen add/remove, splice install, Tonic
    /// flow add/remove). AccelTCP App. A: the host "keeps the connection entries until it is
    /// notified that the splicing rules are installed at NIC".
    ///
    /// | offset | size | field          | meaning |
    /// |-------:|-----:|----------------|---------|
    /// | 0      | 4    | common header  | version 1, type 0x12, header length ≥ 12 |
    /// | 4      | 4    | `request_id`   | the request's id |
    /// | 8      | 1    | `request_type` | the request's [`MsgType`] code |
    /// | 9      | 1    | `status`       | [`AckStatus`] code |
    /// | 10     | 2    | reserved       | 0 |
    pub struct InstallAckFrame: MsgType::InstallAck;
    fields {
        /// The request's id.
        request_id / set_request_id: u32 = 4;
        /// The request's type code.
        request_type / set_request_type: u8 = 8;
        /// Status code.
        status / set_status: u8 = 9;
    }
}

/// An install acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InstallAckRepr {
    /// The request's id.
    pub request_id: u32,
    /// The request's type.
    pub request_type: MsgType,
    /// The result.
    pub status: AckStatus,
}

impl InstallAckRepr {
    /// Reads an install ack. Fails on a bad common header, an unknown request type or an
    /// unknown status. Never panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &InstallAckFrame<T>) -> Result<InstallAckRepr, MsgError> {
        frame.check_len()?;
        Ok(InstallAckRepr {
            request_id: frame.request_id(),
            request_type: MsgType::from_u8(frame.request_type())
                .ok_or(MsgError::BadField("request_type"))?,
            status: AckStatus::from_u8(frame.status()).ok_or(MsgError::BadField("status"))?,
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::InstallAck.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut InstallAckFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_request_id(self.request_id);
        frame.set_request_type(self.request_type.code());
        frame.set_status(self.status.code());
    }
}

msg_view! {
    /// View of a teardown count, EtherType 0x090E, type 0x13, NIC → host.
    ///
    /// AccelTCP App. A: "The NIC stack notifies the host stack of the number of connections
    /// being closed on NIC by either sending a control packet or tagging at any packet
    /// delivered to host." nicemu sends this control packet; the host compares the count with
    /// its threshold before offloading another teardown (§4.2). Each NIC lcore reports its
    /// own count on its own link.
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x13, header length ≥ 8 |
    /// | 4      | 4    | `count`      | connections the NIC lcore is closing now |
    pub struct TeardownCountFrame: MsgType::TeardownCount;
    fields {
        /// Connections being closed on the NIC lcore.
        count / set_count: u32 = 4;
    }
}

/// A teardown count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TeardownCountRepr {
    /// Connections being closed on the NIC lcore that sent it.
    pub count: u32,
}

impl TeardownCountRepr {
    /// Reads a teardown count. Fails only on a bad common header. Never panics.
    pub fn parse<T: AsRef<[u8]>>(
        frame: &TeardownCountFrame<T>,
    ) -> Result<TeardownCountRepr, MsgError> {
        frame.check_len()?;
        Ok(TeardownCountRepr {
            count: frame.count(),
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::TeardownCount.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut TeardownCountFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_count(self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_add_layout_and_round_trip() {
        let r = ListenAddRepr {
            request_id: 0x0102_0304,
            addr: [10, 0, 0, 1],
            port: 80,
            options: ListenOptions {
                mss: 1460,
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: true,
            },
        };
        let mut buf = vec![0xEEu8; 20];
        r.emit(&mut ListenAddFrame::new_unchecked(&mut buf[..]));
        assert_eq!(
            buf,
            [1, 0x10, 0, 20, 1, 2, 3, 4, 10, 0, 0, 1, 0, 80, 0x05, 0xB4, 7, 0x07, 0, 0]
        );
        let f = ListenAddFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(ListenAddRepr::parse(&f).unwrap(), r);
        let r2 = ListenAddRepr {
            options: ListenOptions {
                window_scale: None,
                ..r.options
            },
            ..r
        };
        r2.emit(&mut ListenAddFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf[16..18], [0, 0x06]);
        let f = ListenAddFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(ListenAddRepr::parse(&f).unwrap(), r2);
    }

    #[test]
    fn listen_remove_layout_and_round_trip() {
        let r = ListenRemoveRepr {
            request_id: 9,
            addr: [0; 4],
            port: 0xFFFF,
        };
        let mut buf = vec![0xEEu8; 16];
        r.emit(&mut ListenRemoveFrame::new_unchecked(&mut buf[..]));
        assert_eq!(
            buf,
            [1, 0x11, 0, 16, 0, 0, 0, 9, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0]
        );
        let f = ListenRemoveFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(ListenRemoveRepr::parse(&f).unwrap(), r);
    }

    #[test]
    fn install_ack_layout_and_round_trip() {
        let r = InstallAckRepr {
            request_id: 0xDEAD_BEEF,
            request_type: MsgType::SpliceInstall,
            status: AckStatus::TableFull,
        };
        let mut buf = vec![0xEEu8; 12];
        r.emit(&mut InstallAckFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [1, 0x12, 0, 12, 0xDE, 0xAD, 0xBE, 0xEF, 0x0C, 1, 0, 0]);
        let f = InstallAckFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(InstallAckRepr::parse(&f).unwrap(), r);
        let mut f = InstallAckFrame::new_unchecked(&mut buf[..]);
        f.set_status(6);
        assert_eq!(InstallAckRepr::parse(&f), Err(MsgError::BadField("status")));
        f.set_status(0);
        f.set_request_type(0x0E);
        assert_eq!(
            InstallAckRepr::parse(&f),
            Err(MsgError::BadField("request_type"))
        );
    }

    #[test]
    fn teardown_count_layout_and_round_trip() {
        let r = TeardownCountRepr { count: 70_000 };
        let mut buf = vec![0xEEu8; 8];
        r.emit(&mut TeardownCountFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [1, 0x13, 0, 8, 0, 1, 0x11, 0x70]);
        let f = TeardownCountFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(TeardownCountRepr::parse(&f).unwrap(), r);
    }
}

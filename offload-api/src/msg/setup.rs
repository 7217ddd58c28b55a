//! 0x090A setup notification (NIC → host): a connection completed a SYN-cookie handshake on
//! the NIC (AccelTCP §4.1 and App. A "Connection setup").

use super::wire::flags;
use super::{check_wscale, MsgError, MsgType, FLAG_SACK, FLAG_TIMESTAMPS, FLAG_WSCALE};

msg_view! {
    /// View of a setup notification, EtherType 0x090A, type 0x0A, NIC → host.
    ///
    /// AccelTCP App. A: "To notify a new connection, the NIC stack sets the EtherType of the
    /// ACK packet to 0x090A, and delivers the negotiated options in the TCP Timestamps
    /// option." nicemu carries the negotiated options explicitly in this header instead and
    /// keeps the completing ACK's IPv4 packet, unchanged, as the payload (its TSecr still
    /// holds the NIC's encoding; the host ignores it).
    ///
    /// | offset | size | field          | meaning |
    /// |-------:|-----:|----------------|---------|
    /// | 0      | 4    | common header  | version 1, type 0x0A, header length ≥ 20 |
    /// | 4      | 4    | `iss`          | our ISN: the SYN-cookie sequence number of the SYN-ACK |
    /// | 8      | 4    | `syn_ack_tsval`| TSval the NIC put in the SYN-ACK; the host's TSvals must not go below it (PAWS, RFC 7323 §5) |
    /// | 12     | 2    | `peer_mss`     | MSS the peer announced in its SYN (as decoded from the cookie's MSS class) |
    /// | 14     | 2    | `local_mss`    | MSS we announced in the SYN-ACK |
    /// | 16     | 1    | `peer_wscale`  | the peer's window-scale shift (valid when flag WSCALE) |
    /// | 17     | 1    | `local_wscale` | our window-scale shift (valid when flag WSCALE) |
    /// | 18     | 1    | `flags`        | 0x01 window scaling negotiated, 0x02 SACK permitted, 0x04 timestamps negotiated |
    /// | 19     | 1    | reserved       | 0 |
    /// | 20     | …    | payload        | the completing ACK: IPv4 header, TCP header, any data |
    pub struct SetupFrame: MsgType::Setup;
    fields {
        /// Our initial sequence number (the SYN cookie).
        iss / set_iss: u32 = 4;
        /// TSval the NIC sent in the SYN-ACK.
        syn_ack_tsval / set_syn_ack_tsval: u32 = 8;
        /// The peer's MSS.
        peer_mss / set_peer_mss: u16 = 12;
        /// Our MSS.
        local_mss / set_local_mss: u16 = 14;
        /// The peer's window-scale shift.
        peer_wscale / set_peer_wscale: u8 = 16;
        /// Our window-scale shift.
        local_wscale / set_local_wscale: u8 = 17;
        /// Flag byte (`FLAG_WSCALE | FLAG_SACK | FLAG_TIMESTAMPS`).
        flags / set_flags: u8 = 18;
    }
}

/// Window-scale shifts negotiated on a connection (RFC 7323 §2), each at most 14.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WindowScales {
    /// The peer's shift: scales the windows the peer advertises.
    pub peer: u8,
    /// Our shift: scales the windows we advertise.
    pub local: u8,
}

/// TCP options negotiated in a NIC-made handshake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NegotiatedOptions {
    /// The peer's MSS.
    pub peer_mss: u16,
    /// Our MSS.
    pub local_mss: u16,
    /// Window scaling, when both sides offered it.
    pub window_scale: Option<WindowScales>,
    /// SACK permitted (both sides offered it).
    pub sack_permitted: bool,
    /// Timestamps negotiated (always true for a NIC-made handshake today: a SYN without
    /// timestamps goes to the host).
    pub timestamps: bool,
}

/// A setup notification: the host creates an ESTABLISHED connection from it and the carried
/// ACK (AccelTCP App. A). The ACK packet is the payload, not part of this representation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetupRepr {
    /// Our ISN (the SYN cookie); the ACK acknowledges `iss + 1`.
    pub iss: u32,
    /// TSval the NIC sent in the SYN-ACK.
    pub syn_ack_tsval: u32,
    /// The negotiated options.
    pub options: NegotiatedOptions,
}

impl SetupRepr {
    /// Reads a setup notification. Fails on a bad common header or a window-scale shift above
    /// 14. Never panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &SetupFrame<T>) -> Result<SetupRepr, MsgError> {
        frame.check_len()?;
        let f = frame.flags();
        let window_scale = if f & FLAG_WSCALE != 0 {
            Some(WindowScales {
                peer: check_wscale(frame.peer_wscale(), "peer_wscale")?,
                local: check_wscale(frame.local_wscale(), "local_wscale")?,
            })
        } else {
            None
        };
        Ok(SetupRepr {
            iss: frame.iss(),
            syn_ack_tsval: frame.syn_ack_tsval(),
            options: NegotiatedOptions {
                peer_mss: frame.peer_mss(),
                local_mss: frame.local_mss(),
                window_scale,
                sack_permitted: f & FLAG_SACK != 0,
                timestamps: f & FLAG_TIMESTAMPS != 0,
            },
        })
    }

    /// Header bytes [`Self::emit`] writes (the payload comes after).
    pub const fn buffer_len(&self) -> usize {
        MsgType::Setup.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut SetupFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        let o = &self.options;
        frame.set_iss(self.iss);
        frame.set_syn_ack_tsval(self.syn_ack_tsval);
        frame.set_peer_mss(o.peer_mss);
        frame.set_local_mss(o.local_mss);
        let ws = o.window_scale.unwrap_or_default();
        frame.set_peer_wscale(ws.peer);
        frame.set_local_wscale(ws.local);
        frame.set_flags(flags(
            o.window_scale.is_some(),
            o.sack_permitted,
            o.timestamps,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SetupRepr {
        SetupRepr {
            iss: 0x0102_0304,
            syn_ack_tsval: 0x0506_0708,
            options: NegotiatedOptions {
                peer_mss: 1460,
                local_mss: 1448,
                window_scale: Some(WindowScales { peer: 7, local: 9 }),
                sack_permitted: true,
                timestamps: true,
            },
        }
    }

    #[test]
    fn layout_and_round_trip() {
        let r = sample();
        let mut buf = vec![0xEEu8; r.buffer_len() + 3];
        let mut f = SetupFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut f);
        f.payload_mut().copy_from_slice(&[1, 2, 3]);
        assert_eq!(
            buf,
            [
                1, 0x0A, 0, 20, 1, 2, 3, 4, 5, 6, 7, 8, 0x05, 0xB4, 0x05, 0xA8, 7, 9, 0x07, 0, 1,
                2, 3
            ]
        );
        let f = SetupFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(SetupRepr::parse(&f).unwrap(), r);
        assert_eq!(f.payload(), &[1, 2, 3]);
    }

    #[test]
    fn no_wscale_flag_ignores_shifts() {
        let mut r = sample();
        r.options.window_scale = None;
        let mut buf = [0u8; 20];
        let mut f = SetupFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut f);
        f.set_peer_wscale(200);
        assert_eq!(SetupRepr::parse(&f).unwrap(), r);
    }

    #[test]
    fn refuses_bad_wscale_and_truncation() {
        let r = sample();
        let mut buf = [0u8; 20];
        let mut f = SetupFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut f);
        f.set_local_wscale(15);
        assert_eq!(
            SetupRepr::parse(&f),
            Err(MsgError::BadField("local_wscale"))
        );
        for n in 0..20 {
            assert!(SetupFrame::new_checked(&buf[..n]).is_err());
        }
    }
}

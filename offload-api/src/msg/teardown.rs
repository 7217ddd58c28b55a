//! 0x090B teardown offload (host → NIC): the host hands a closing connection, with all data
//! still to send, to the NIC (AccelTCP §4.2 and App. A "Connection teardown").

use super::wire::flags;
use super::{check_wscale, MsgError, MsgType, FLAG_SACK, FLAG_TIMESTAMPS};

msg_view! {
    /// View of a teardown offload, EtherType 0x090B, type 0x0B, host → NIC.
    ///
    /// AccelTCP App. A: "the host stack creates a TSO packet that holds all remaining data in
    /// the send buffer, and sets the EtherType to 0x090B. It also encodes other information
    /// such as MSS (2 bytes), current RTO (4 bytes), and current TCP state (2 bytes) in the
    /// special header area." nicemu adds what the NIC needs to own the connection from then
    /// on (single ownership, §3): sequence space, windows, timestamps.
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x0B, header length ≥ 44 |
    /// | 4      | 2    | `mss`        | MSS for segmenting the payload (App. A) |
    /// | 6      | 2    | `state`      | current TCP state, [`TcpState`] code (App. A) |
    /// | 8      | 4    | `rto_us`     | current retransmission timeout, microseconds (App. A) |
    /// | 12     | 4    | `snd_una`    | oldest unacknowledged sequence number |
    /// | 16     | 4    | `snd_nxt`    | next sequence number the host would have sent (bytes in `[snd_una, snd_nxt)` were sent once) |
    /// | 20     | 4    | `rcv_nxt`    | next sequence number expected from the peer |
    /// | 24     | 4    | `snd_wnd`    | peer's receive window, bytes (already scaled) |
    /// | 28     | 4    | `rcv_wnd`    | window to advertise, bytes (unscaled value) |
    /// | 32     | 1    | `snd_wscale` | peer's window-scale shift (0 when not negotiated) |
    /// | 33     | 1    | `rcv_wscale` | our window-scale shift (0 when not negotiated) |
    /// | 34     | 1    | `flags`      | 0x02 SACK permitted, 0x04 timestamps on |
    /// | 35     | 1    | reserved     | 0 |
    /// | 36     | 4    | `ts_recent`  | last TSval received from the peer (echoed as TSecr), when timestamps are on |
    /// | 40     | 4    | `ts_val`     | TSval the host would send now; the NIC continues from it at 1 tick per millisecond |
    /// | 44     | …    | payload      | optional TSO IPv4/TCP packet: sequence number `snd_una`, every byte from `snd_una` to the end of the send buffer, FIN set when the close queued one; Ethernet addresses of the frame are the connection's |
    pub struct TeardownFrame: MsgType::Teardown;
    fields {
        /// MSS for segmentation.
        mss / set_mss: u16 = 4;
        /// TCP state code (see [`TcpState`]).
        state / set_state: u16 = 6;
        /// Current RTO in microseconds.
        rto_us / set_rto_us: u32 = 8;
        /// snd.una.
        snd_una / set_snd_una: u32 = 12;
        /// snd.nxt.
        snd_nxt / set_snd_nxt: u32 = 16;
        /// rcv.nxt.
        rcv_nxt / set_rcv_nxt: u32 = 20;
        /// Peer's window in bytes.
        snd_wnd / set_snd_wnd: u32 = 24;
        /// Our window in bytes.
        rcv_wnd / set_rcv_wnd: u32 = 28;
        /// Peer's window-scale shift.
        snd_wscale / set_snd_wscale: u8 = 32;
        /// Our window-scale shift.
        rcv_wscale / set_rcv_wscale: u8 = 33;
        /// Flag byte (`FLAG_SACK | FLAG_TIMESTAMPS`).
        flags / set_flags: u8 = 34;
        /// TS.Recent.
        ts_recent / set_ts_recent: u32 = 36;
        /// Our current TSval.
        ts_val / set_ts_val: u32 = 40;
    }
}

/// TCP connection states (RFC 9293 §3.3.2), coded on the wire as 16-bit values in mTCP's
/// `tcp_state` order (AccelTCP's host stack is mTCP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum TcpState {
    /// 0.
    Closed = 0,
    /// 1.
    Listen = 1,
    /// 2.
    SynSent = 2,
    /// 3.
    SynReceived = 3,
    /// 4.
    Established = 4,
    /// 5: we closed, our FIN not yet acknowledged (active close).
    FinWait1 = 5,
    /// 6.
    FinWait2 = 6,
    /// 7: the peer closed, we may still send.
    CloseWait = 7,
    /// 8.
    Closing = 8,
    /// 9: the peer closed, then we did (passive close).
    LastAck = 9,
    /// 10.
    TimeWait = 10,
}

impl TcpState {
    /// The state with wire code `code`, if any.
    pub const fn from_u16(code: u16) -> Option<TcpState> {
        Some(match code {
            0 => TcpState::Closed,
            1 => TcpState::Listen,
            2 => TcpState::SynSent,
            3 => TcpState::SynReceived,
            4 => TcpState::Established,
            5 => TcpState::FinWait1,
            6 => TcpState::FinWait2,
            7 => TcpState::CloseWait,
            8 => TcpState::Closing,
            9 => TcpState::LastAck,
            10 => TcpState::TimeWait,
            _ => return None,
        })
    }

    /// The wire code.
    pub const fn code(self) -> u16 {
        self as u16
    }
}

/// RFC 7323 timestamp state handed to the NIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamps {
    /// TS.Recent: the TSval to echo.
    pub ts_recent: u32,
    /// The TSval the host would send now; the NIC's clock continues from it (1 kHz).
    pub ts_val: u32,
}

/// A teardown offload: everything the NIC needs to finish the connection alone. The TSO
/// packet with the remaining data is the payload, not part of this representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TeardownRepr {
    /// MSS for segmenting the remaining data.
    pub mss: u16,
    /// The host's TCP state at handover (FIN_WAIT_1 for an active close, LAST_ACK for a
    /// passive one, typically).
    pub state: TcpState,
    /// Current RTO, microseconds.
    pub rto_us: u32,
    /// snd.una.
    pub snd_una: u32,
    /// snd.nxt.
    pub snd_nxt: u32,
    /// rcv.nxt.
    pub rcv_nxt: u32,
    /// The peer's receive window in bytes (scaled).
    pub snd_wnd: u32,
    /// The receive window to advertise, in bytes.
    pub rcv_wnd: u32,
    /// The peer's window-scale shift (0 when not negotiated), at most 14.
    pub snd_wscale: u8,
    /// Our window-scale shift (0 when not negotiated), at most 14.
    pub rcv_wscale: u8,
    /// SACK permitted on the connection.
    pub sack_permitted: bool,
    /// Timestamp state, when timestamps are on.
    pub timestamps: Option<Timestamps>,
}

impl TeardownRepr {
    /// Reads a teardown offload. Fails on a bad common header, an unknown state code or a
    /// window-scale shift above 14. Never panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &TeardownFrame<T>) -> Result<TeardownRepr, MsgError> {
        frame.check_len()?;
        let f = frame.flags();
        Ok(TeardownRepr {
            mss: frame.mss(),
            state: TcpState::from_u16(frame.state()).ok_or(MsgError::BadField("state"))?,
            rto_us: frame.rto_us(),
            snd_una: frame.snd_una(),
            snd_nxt: frame.snd_nxt(),
            rcv_nxt: frame.rcv_nxt(),
            snd_wnd: frame.snd_wnd(),
            rcv_wnd: frame.rcv_wnd(),
            snd_wscale: check_wscale(frame.snd_wscale(), "snd_wscale")?,
            rcv_wscale: check_wscale(frame.rcv_wscale(), "rcv_wscale")?,
            sack_permitted: f & FLAG_SACK != 0,
            timestamps: (f & FLAG_TIMESTAMPS != 0).then(|| Timestamps {
                ts_recent: frame.ts_recent(),
                ts_val: frame.ts_val(),
            }),
        })
    }

    /// Header bytes [`Self::emit`] writes (the payload comes after).
    pub const fn buffer_len(&self) -> usize {
        MsgType::Teardown.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut TeardownFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_mss(self.mss);
        frame.set_state(self.state.code());
        frame.set_rto_us(self.rto_us);
        frame.set_snd_una(self.snd_una);
        frame.set_snd_nxt(self.snd_nxt);
        frame.set_rcv_nxt(self.rcv_nxt);
        frame.set_snd_wnd(self.snd_wnd);
        frame.set_rcv_wnd(self.rcv_wnd);
        frame.set_snd_wscale(self.snd_wscale);
        frame.set_rcv_wscale(self.rcv_wscale);
        frame.set_flags(flags(false, self.sack_permitted, self.timestamps.is_some()));
        let ts = self.timestamps.unwrap_or_default();
        frame.set_ts_recent(ts.ts_recent);
        frame.set_ts_val(ts.ts_val);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TeardownRepr {
        TeardownRepr {
            mss: 1448,
            state: TcpState::FinWait1,
            rto_us: 200_000,
            snd_una: 0x1111_1111,
            snd_nxt: 0x2222_2222,
            rcv_nxt: 0x3333_3333,
            snd_wnd: 0x4444_4444,
            rcv_wnd: 0x5555_5555,
            snd_wscale: 7,
            rcv_wscale: 14,
            sack_permitted: true,
            timestamps: Some(Timestamps {
                ts_recent: 0x6666_6666,
                ts_val: 0x7777_7777,
            }),
        }
    }

    #[test]
    fn layout_and_round_trip() {
        let r = sample();
        let mut buf = vec![0xEEu8; r.buffer_len()];
        r.emit(&mut TeardownFrame::new_unchecked(&mut buf[..]));
        assert_eq!(
            &buf[..12],
            &[1, 0x0B, 0, 44, 0x05, 0xA8, 0, 5, 0, 3, 0x0D, 0x40]
        );
        assert_eq!(&buf[12..16], &[0x11; 4]);
        assert_eq!(&buf[28..32], &[0x55; 4]);
        assert_eq!(&buf[32..36], &[7, 14, 0x06, 0]);
        assert_eq!(&buf[40..44], &[0x77; 4]);
        let f = TeardownFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(TeardownRepr::parse(&f).unwrap(), r);
        assert!(f.payload().is_empty());
    }

    #[test]
    fn without_timestamps_ignores_ts_fields() {
        let mut r = sample();
        r.timestamps = None;
        let mut buf = [0u8; 44];
        let mut f = TeardownFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut f);
        f.set_ts_recent(9);
        assert_eq!(TeardownRepr::parse(&f).unwrap(), r);
    }

    #[test]
    fn refuses_unknown_state() {
        let mut buf = [0u8; 44];
        let mut f = TeardownFrame::new_unchecked(&mut buf[..]);
        sample().emit(&mut f);
        f.set_state(11);
        assert_eq!(TeardownRepr::parse(&f), Err(MsgError::BadField("state")));
        for code in 0..=10 {
            assert_eq!(TcpState::from_u16(code).map(TcpState::code), Some(code));
        }
    }
}

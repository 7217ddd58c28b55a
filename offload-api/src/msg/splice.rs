//! 0x090C splice install (host → NIC) and 0x090D splice closure report (NIC → host):
//! connection splicing for L7 proxies (AccelTCP §4.3 and App. A "Connection splicing").

use super::wire::{flags, Field, FourTuple, MacAddr};
use super::{check_wscale, MsgError, MsgType, FLAG_SACK, FLAG_TIMESTAMPS};

/// One of the two spliced connections, as the host sees it.
///
/// On the wire (32 bytes, at offset 24 for side A and 56 for side B of a
/// [`SpliceInstallFrame`]):
///
/// | offset | size | field          | meaning |
/// |-------:|-----:|----------------|---------|
/// | 0      | 12   | `tuple`        | the connection's [`FourTuple`] (local = the proxy) |
/// | 12     | 6    | `local_mac`    | source MAC for packets sent on this connection |
/// | 18     | 6    | `remote_mac`   | destination MAC (the peer or the next hop) |
/// | 24     | 2    | `port`         | NIC port index the connection uses |
/// | 26     | 1    | `peer_wscale`  | the peer's window-scale shift (0 when not negotiated) |
/// | 27     | 1    | `local_wscale` | our window-scale shift on this connection |
/// | 28     | 1    | flags          | 0x02 SACK permitted, 0x04 timestamps on |
/// | 29     | 3    | reserved       | 0 |
///
/// A window arriving on this side is `window << peer_wscale` bytes; it leaves on the other
/// side as `bytes >> other.local_wscale` (AccelTCP §4.3 keeps one
/// scale; real peers pick their own, so the splice reconciles them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpliceSide {
    /// The connection's 4-tuple.
    pub tuple: FourTuple,
    /// Our MAC on this connection.
    pub local_mac: MacAddr,
    /// The peer's (or next hop's) MAC.
    pub remote_mac: MacAddr,
    /// NIC port index.
    pub port: u16,
    /// The peer's window-scale shift, at most 14.
    pub peer_wscale: u8,
    /// Our window-scale shift, at most 14.
    pub local_wscale: u8,
    /// SACK permitted on this connection.
    pub sack_permitted: bool,
    /// Timestamps on this connection.
    pub timestamps: bool,
}

impl SpliceSide {
    /// Bytes on the wire.
    pub const WIRE_LEN: usize = 32;

    fn validate(self, peer: &'static str, local: &'static str) -> Result<Self, MsgError> {
        check_wscale(self.peer_wscale, peer)?;
        check_wscale(self.local_wscale, local)?;
        Ok(self)
    }
}

impl Field for SpliceSide {
    const SIZE: usize = SpliceSide::WIRE_LEN;
    fn read(b: &[u8]) -> Self {
        let f = b[28];
        SpliceSide {
            tuple: FourTuple::read(b),
            local_mac: MacAddr::read(&b[12..]),
            remote_mac: MacAddr::read(&b[18..]),
            port: u16::read(&b[24..]),
            peer_wscale: b[26],
            local_wscale: b[27],
            sack_permitted: f & FLAG_SACK != 0,
            timestamps: f & FLAG_TIMESTAMPS != 0,
        }
    }
    fn write(&self, b: &mut [u8]) {
        self.tuple.write(b);
        self.local_mac.write(&mut b[12..]);
        self.remote_mac.write(&mut b[18..]);
        self.port.write(&mut b[24..]);
        b[26] = self.peer_wscale;
        b[27] = self.local_wscale;
        b[28] = flags(false, self.sack_permitted, self.timestamps);
        b[29..32].fill(0);
    }
}

msg_view! {
    /// View of a splice install, EtherType 0x090C, type 0x0C, host → NIC.
    ///
    /// AccelTCP App. A: "the host stack uses 0x090C as EtherType, and writes the sequence and
    /// ACK number offsets (4 bytes each), and a 4-tuple of a connection in the special
    /// header." nicemu carries both connections (A: the client side, B: the server side of
    /// `nsplice(sock_c, sock_s)`), their MACs and ports, timestamp offsets and window scales
    /// (which AccelTCP did not translate), and a request id the NIC answers with an
    /// [install ack](super::InstallAckFrame) — the host keeps its connection entries until
    /// then (App. A).
    ///
    /// | offset | size | field          | meaning |
    /// |-------:|-----:|----------------|---------|
    /// | 0      | 4    | common header  | version 1, type 0x0C, header length ≥ 96 |
    /// | 4      | 4    | `request_id`   | echoed in the install ack and the closure report |
    /// | 8      | 4    | `seq_offset`   | `B.snd_nxt − A.rcv_nxt` (App. A, 4 bytes) |
    /// | 12     | 4    | `ack_offset`   | `B.rcv_nxt − A.snd_nxt` (App. A, 4 bytes) |
    /// | 16     | 4    | `ts_offset_ab` | added to TSvals going A → B |
    /// | 20     | 4    | `ts_offset_ba` | added to TSvals going B → A |
    /// | 24     | 32   | side A         | [`SpliceSide`] of the client-side connection |
    /// | 56     | 32   | side B         | [`SpliceSide`] of the server-side connection |
    /// | 88     | 4    | `a_start`      | `A.rcv_nxt`: the first byte from A's peer that the splice relays |
    /// | 92     | 4    | `b_start`      | `B.rcv_nxt`: the same for B's peer |
    /// | 96     | …    | payload        | optional IPv4 packet the NIC sends after installing (the host's last segment on either connection) |
    ///
    /// Translation, all modulo 2³²: a packet arriving on A leaves on B with
    /// `seq + seq_offset`, `ack + ack_offset`, `TSval + ts_offset_ab`,
    /// `TSecr − ts_offset_ba`; a packet arriving on B leaves on A with `seq − ack_offset`,
    /// `ack − seq_offset`, `TSval + ts_offset_ba`, `TSecr − ts_offset_ab`. SACK blocks move
    /// like `ack`.
    pub struct SpliceInstallFrame: MsgType::SpliceInstall;
    fields {
        /// Request id.
        request_id / set_request_id: u32 = 4;
        /// Sequence offset A → B.
        seq_offset / set_seq_offset: u32 = 8;
        /// Acknowledgement offset A → B.
        ack_offset / set_ack_offset: u32 = 12;
        /// TSval offset A → B.
        ts_offset_ab / set_ts_offset_ab: u32 = 16;
        /// TSval offset B → A.
        ts_offset_ba / set_ts_offset_ba: u32 = 20;
        /// Side A (client side).
        side_a / set_side_a: SpliceSide = 24;
        /// Side B (server side).
        side_b / set_side_b: SpliceSide = 56;
        /// First relayed sequence number from A's peer.
        a_start / set_a_start: u32 = 88;
        /// First relayed sequence number from B's peer.
        b_start / set_b_start: u32 = 92;
    }
}

/// A splice install request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpliceInstallRepr {
    /// Request id (echoed in the install ack and the closure report).
    pub request_id: u32,
    /// `B.snd_nxt − A.rcv_nxt`.
    pub seq_offset: u32,
    /// `B.rcv_nxt − A.snd_nxt`.
    pub ack_offset: u32,
    /// Added to TSvals going A → B.
    pub ts_offset_ab: u32,
    /// Added to TSvals going B → A.
    pub ts_offset_ba: u32,
    /// The client-side connection.
    pub a: SpliceSide,
    /// The server-side connection.
    pub b: SpliceSide,
    /// `A.rcv_nxt`: bytes from A's peer at or after it are what the splice relays (the
    /// closure report counts them, each once).
    pub a_start: u32,
    /// `B.rcv_nxt`, the same for B's peer.
    pub b_start: u32,
}

impl SpliceInstallRepr {
    /// Reads a splice install. Fails on a bad common header or a window-scale shift above 14.
    /// Never panics.
    pub fn parse<T: AsRef<[u8]>>(
        frame: &SpliceInstallFrame<T>,
    ) -> Result<SpliceInstallRepr, MsgError> {
        frame.check_len()?;
        Ok(SpliceInstallRepr {
            request_id: frame.request_id(),
            seq_offset: frame.seq_offset(),
            ack_offset: frame.ack_offset(),
            ts_offset_ab: frame.ts_offset_ab(),
            ts_offset_ba: frame.ts_offset_ba(),
            a: frame.side_a().validate("a.peer_wscale", "a.local_wscale")?,
            b: frame.side_b().validate("b.peer_wscale", "b.local_wscale")?,
            a_start: frame.a_start(),
            b_start: frame.b_start(),
        })
    }

    /// Header bytes [`Self::emit`] writes (the optional packet comes after).
    pub const fn buffer_len(&self) -> usize {
        MsgType::SpliceInstall.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut SpliceInstallFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_request_id(self.request_id);
        frame.set_seq_offset(self.seq_offset);
        frame.set_ack_offset(self.ack_offset);
        frame.set_ts_offset_ab(self.ts_offset_ab);
        frame.set_ts_offset_ba(self.ts_offset_ba);
        frame.set_side_a(self.a);
        frame.set_side_b(self.b);
        frame.set_a_start(self.a_start);
        frame.set_b_start(self.b_start);
    }
}

/// Why a spliced pair was removed from the NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CloseReason {
    /// 0: both sides sent FIN and both FINs were acknowledged (AccelTCP's public code uses 0
    /// for a normal close too).
    Fin = 0,
    /// 1: a RST from either side.
    Rst = 1,
    /// 2: no packet for the NIC's idle timeout.
    Timeout = 2,
}

impl CloseReason {
    /// The reason with wire code `code`, if any.
    pub const fn from_u8(code: u8) -> Option<CloseReason> {
        match code {
            0 => Some(CloseReason::Fin),
            1 => Some(CloseReason::Rst),
            2 => Some(CloseReason::Timeout),
            _ => None,
        }
    }

    /// The wire code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

msg_view! {
    /// View of a splice closure report, EtherType 0x090D, type 0x0D, NIC → host.
    ///
    /// AccelTCP App. A: "For reporting a closure of spliced connections, NIC creates a special
    /// control packet holding the connection information and traffic statistics with the
    /// EtherType, 0x090D". It feeds the `nsplice` callback (both remote addresses, bytes
    /// relayed, close reason) and the host's count of active spliced pairs.
    ///
    /// | offset | size | field        | meaning |
    /// |-------:|-----:|--------------|---------|
    /// | 0      | 4    | common header| version 1, type 0x0D, header length ≥ 68 |
    /// | 4      | 4    | `request_id` | the install's request id |
    /// | 8      | 1    | `reason`     | [`CloseReason`] code |
    /// | 9      | 1    | `rst_side`   | who reset the pair: 0 none, 1 side A's peer, 2 side B's peer |
    /// | 10     | 2    | reserved     | 0 |
    /// | 12     | 12   | `tuple_a`    | side A's [`FourTuple`] |
    /// | 24     | 12   | `tuple_b`    | side B's [`FourTuple`] |
    /// | 36     | 8    | `bytes_ab`   | TCP payload bytes relayed A → B |
    /// | 44     | 8    | `bytes_ba`   | TCP payload bytes relayed B → A |
    /// | 52     | 8    | `packets_ab` | packets relayed A → B |
    /// | 60     | 8    | `packets_ba` | packets relayed B → A |
    pub struct SpliceCloseFrame: MsgType::SpliceClose;
    fields {
        /// The install's request id.
        request_id / set_request_id: u32 = 4;
        /// Close reason code.
        reason / set_reason: u8 = 8;
        /// RST side code (0 none, 1 A, 2 B).
        rst_side / set_rst_side: u8 = 9;
        /// Side A.
        tuple_a / set_tuple_a: FourTuple = 12;
        /// Side B.
        tuple_b / set_tuple_b: FourTuple = 24;
        /// Payload bytes A → B.
        bytes_ab / set_bytes_ab: u64 = 36;
        /// Payload bytes B → A.
        bytes_ba / set_bytes_ba: u64 = 44;
        /// Packets A → B.
        packets_ab / set_packets_ab: u64 = 52;
        /// Packets B → A.
        packets_ba / set_packets_ba: u64 = 60;
    }
}

/// A splice closure report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpliceCloseRepr {
    /// The install's request id.
    pub request_id: u32,
    /// Why the pair was removed.
    pub reason: CloseReason,
    /// Whose peer sent the RST: 0 none, 1 side A's (the client), 2 side B's (the server).
    /// Values above 2 are refused on parse.
    pub rst_side: u8,
    /// Side A's 4-tuple.
    pub a: FourTuple,
    /// Side B's 4-tuple.
    pub b: FourTuple,
    /// TCP payload bytes relayed A → B.
    pub bytes_ab: u64,
    /// TCP payload bytes relayed B → A.
    pub bytes_ba: u64,
    /// Packets relayed A → B.
    pub packets_ab: u64,
    /// Packets relayed B → A.
    pub packets_ba: u64,
}

impl SpliceCloseRepr {
    /// Reads a closure report. Fails on a bad common header, an unknown reason or an
    /// `rst_side` above 2. Never panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &SpliceCloseFrame<T>) -> Result<SpliceCloseRepr, MsgError> {
        frame.check_len()?;
        Ok(SpliceCloseRepr {
            request_id: frame.request_id(),
            reason: CloseReason::from_u8(frame.reason()).ok_or(MsgError::BadField("reason"))?,
            rst_side: match frame.rst_side() {
                s @ 0..=2 => s,
                _ => return Err(MsgError::BadField("rst_side")),
            },
            a: frame.tuple_a(),
            b: frame.tuple_b(),
            bytes_ab: frame.bytes_ab(),
            bytes_ba: frame.bytes_ba(),
            packets_ab: frame.packets_ab(),
            packets_ba: frame.packets_ba(),
        })
    }

    /// Header bytes [`Self::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MsgType::SpliceClose.fixed_len()
    }

    /// Writes the header into `frame`, whose buffer must hold at least
    /// [`Self::buffer_len`] bytes (panics otherwise, as smoltcp's `emit`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut SpliceCloseFrame<T>) {
        frame.set_common();
        frame.clear_fields();
        frame.set_request_id(self.request_id);
        frame.set_reason(self.reason.code());
        frame.set_rst_side(self.rst_side);
        frame.set_tuple_a(self.a);
        frame.set_tuple_b(self.b);
        frame.set_bytes_ab(self.bytes_ab);
        frame.set_bytes_ba(self.bytes_ba);
        frame.set_packets_ab(self.packets_ab);
        frame.set_packets_ba(self.packets_ba);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(n: u8) -> SpliceSide {
        SpliceSide {
            tuple: FourTuple {
                local_ip: [10, 0, 0, n],
                local_port: 1000 + u16::from(n),
                remote_ip: [10, 0, 1, n],
                remote_port: 2000 + u16::from(n),
            },
            local_mac: [2, 0, 0, 0, 0, n],
            remote_mac: [2, 0, 0, 0, 1, n],
            port: u16::from(n),
            peer_wscale: 7,
            local_wscale: 9,
            sack_permitted: true,
            timestamps: n.is_multiple_of(2),
        }
    }

    #[test]
    fn install_layout_and_round_trip() {
        let r = SpliceInstallRepr {
            request_id: 0xA1A2_A3A4,
            seq_offset: 0xB1B2_B3B4,
            ack_offset: 0xC1C2_C3C4,
            ts_offset_ab: 0xD1D2_D3D4,
            ts_offset_ba: 0xE1E2_E3E4,
            a: side(1),
            b: side(2),
            a_start: 0xF1F2_F3F4,
            b_start: 0x0102_0304,
        };
        let mut buf = [0xEEu8; 96];
        r.emit(&mut SpliceInstallFrame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..8], &[1, 0x0C, 0, 96, 0xA1, 0xA2, 0xA3, 0xA4]);
        assert_eq!(&buf[20..24], &[0xE1, 0xE2, 0xE3, 0xE4]);
        // Side A: tuple, MACs, port, shifts, flags (SACK only), reserved.
        assert_eq!(
            &buf[24..36],
            &[10, 0, 0, 1, 10, 0, 1, 1, 0x03, 0xE9, 0x07, 0xD1]
        );
        assert_eq!(&buf[36..48], &[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1, 1]);
        assert_eq!(&buf[48..56], &[0, 1, 7, 9, 0x02, 0, 0, 0]);
        assert_eq!(&buf[80..88], &[0, 2, 7, 9, 0x06, 0, 0, 0]);
        assert_eq!(&buf[88..96], &[0xF1, 0xF2, 0xF3, 0xF4, 1, 2, 3, 4]);
        let f = SpliceInstallFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(SpliceInstallRepr::parse(&f).unwrap(), r);
    }

    #[test]
    fn install_refuses_bad_shift() {
        let mut r = SpliceInstallRepr::default();
        r.b.local_wscale = 15;
        let mut buf = [0u8; 96];
        r.emit(&mut SpliceInstallFrame::new_unchecked(&mut buf[..]));
        let f = SpliceInstallFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(
            SpliceInstallRepr::parse(&f),
            Err(MsgError::BadField("b.local_wscale"))
        );
    }

    #[test]
    fn close_layout_and_round_trip() {
        let r = SpliceCloseRepr {
            request_id: 7,
            reason: CloseReason::Rst,
            rst_side: 2,
            a: side(1).tuple,
            b: side(2).tuple,
            bytes_ab: 1 << 40,
            bytes_ba: 3,
            packets_ab: 4,
            packets_ba: u64::MAX,
        };
        let mut buf = [0xEEu8; 68];
        r.emit(&mut SpliceCloseFrame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..12], &[1, 0x0D, 0, 68, 0, 0, 0, 7, 1, 2, 0, 0]);
        assert_eq!(&buf[36..44], &[0, 0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(&buf[60..68], &[0xFF; 8]);
        let f = SpliceCloseFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(SpliceCloseRepr::parse(&f).unwrap(), r);
        let mut f = SpliceCloseFrame::new_unchecked(&mut buf[..]);
        f.set_rst_side(3);
        assert_eq!(
            SpliceCloseRepr::parse(&f),
            Err(MsgError::BadField("rst_side"))
        );
        f.set_rst_side(1);
        f.set_reason(3);
        assert_eq!(
            SpliceCloseRepr::parse(&f),
            Err(MsgError::BadField("reason"))
        );
    }
}

//! The teardown handover of a connection (AccelTCP §4.2, App. A "Connection teardown"): when
//! the application closes a `TCP_TEARDOWN_OFFLOAD` socket, the host may hand the whole close
//! to the NIC, with every byte still to send, and forget the connection (single ownership,
//! AccelTCP §3).
//!
//! [`Tcb::teardown_handover`] checks the conditions that belong to the connection itself
//! (§4.2: the state, and "the amount of remaining data should be smaller than the send window
//! size") and exports what the NIC needs: the 0x090B fields ([`TeardownRepr`]) and the header
//! of the TSO packet whose payload is [`Tcb::teardown_payload`]. The socket layer checks the
//! others (no blocking close, the NIC's count under the threshold) and sends the message.

use offload_api::msg::{TcpState, TeardownRepr, Timestamps};

use super::super::segment::{TcpFlags, TcpHeader, TcpOptions};
use super::{State, Tcb};

/// Why a connection cannot hand its close to the NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeardownRefusal {
    /// Not ESTABLISHED or CLOSE_WAIT (or already closing, failed, or run by Tonic).
    State,
    /// Unread received data: close() resets the connection instead (RFC 2525 §2.17).
    UnreadData,
    /// The data still to send (unacknowledged and unsent) does not fit the peer's window
    /// (AccelTCP §4.2, first condition: the NIC does no congestion control).
    Window,
    /// The data still to send does not fit one TSO packet (an IPv4 total length of 65,535
    /// bytes, RFC 791 §3.1, less the IPv4 and TCP headers).
    TooLarge,
}

/// Most data one teardown's TSO packet carries: 65,535 − 20 (IPv4) − 20 (TCP).
pub const TEARDOWN_MAX_DATA: usize = 65_535 - 40;

/// What the NIC needs to finish a connection's close (AccelTCP App. A).
#[derive(Clone, Copy, Debug)]
pub struct TeardownHandover {
    /// The 0x090B message fields.
    pub repr: TeardownRepr,
    /// The header of the TSO packet: sequence number snd.una, ACK of rcv.nxt, FIN (the close
    /// queues one), no options; its payload is [`Tcb::teardown_payload`].
    pub header: TcpHeader,
}

impl Tcb {
    /// The handover of this connection's close to the NIC, as it would be at `now`, or why
    /// it is not possible. The TCB is not changed: after sending the message the caller
    /// forgets the connection.
    ///
    /// State: ESTABLISHED gives FIN_WAIT_1 (active close), CLOSE_WAIT gives LAST_ACK (the peer
    /// closed first), as [`Tcb::close`] would. The TSval is the one the TCB would send now
    /// (RFC 7323 §5.4: the NIC's clock continues from it at 1 kHz).
    pub fn teardown_handover(&self, now: u64) -> Result<TeardownHandover, TeardownRefusal> {
        let state = match self.state {
            State::Established if !self.flags.fin_queued => TcpState::FinWait1,
            State::CloseWait if !self.flags.fin_queued => TcpState::LastAck,
            _ => return Err(TeardownRefusal::State),
        };
        if self.tonic.is_some() || self.error.is_some() {
            return Err(TeardownRefusal::State);
        }
        if !self.rbuf.is_empty() {
            return Err(TeardownRefusal::UnreadData);
        }
        let remaining = self.sbuf.len() as u64;
        if remaining > self.snd.wnd as u64 {
            return Err(TeardownRefusal::Window);
        }
        if remaining > TEARDOWN_MAX_DATA as u64 {
            return Err(TeardownRefusal::TooLarge);
        }
        let ws = self.opt.ws_ok;
        let repr = TeardownRepr {
            mss: self.opt.smss.clamp(1, u16::MAX as u32) as u16,
            state,
            rto_us: (self.timers.rtt.rto() / 1_000).min(u32::MAX as u64) as u32,
            snd_una: self.snd.una.0,
            snd_nxt: self.snd.max.0,
            rcv_nxt: self.rcv.nxt.0,
            snd_wnd: self.snd.wnd,
            rcv_wnd: self.rcv_wnd(),
            snd_wscale: if ws { self.opt.snd_wscale } else { 0 },
            rcv_wscale: if ws { self.opt.rcv_wscale } else { 0 },
            sack_permitted: self.opt.sack_ok,
            timestamps: self.opt.ts_ok.then(|| Timestamps {
                ts_recent: self.opt.ts_recent,
                ts_val: self.ts_now(now),
            }),
        };
        let mut flags = TcpFlags::ACK | TcpFlags::FIN;
        if remaining > 0 {
            flags = flags | TcpFlags::PSH;
        }
        let header = TcpHeader {
            src_port: self.ep.local_port,
            dst_port: self.ep.remote_port,
            seq: self.snd.una,
            ack: self.rcv.nxt,
            flags,
            window: (self.rcv_wnd() >> repr.rcv_wscale).min(u16::MAX as u32) as u16,
            options: TcpOptions::default(),
        };
        Ok(TeardownHandover { repr, header })
    }

    /// Every byte from snd.una to the end of the send buffer (the payload of the TSO
    /// packet), as two slices of the ring.
    pub fn teardown_payload(&self) -> [&[u8]; 2] {
        let (a, b) = self.sbuf.slices(0, self.sbuf.len());
        [a, b]
    }
}

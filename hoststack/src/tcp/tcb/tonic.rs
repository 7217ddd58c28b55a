//! The Tonic handover of a connection's sender (Tonic NSDI '20 §5, "Integrating Tonic into the
//! Transport Layer"): once a `TCP_TONIC` connection is established, its *sender* fields (snd.una,
//! snd.nxt, snd.wnd), retransmissions and congestion control live in the NIC's Tonic engines. The
//! TCB keeps connection management (the handshake, the close), the receive side and the send
//! buffer.
//! While the NIC owns the sender:
//! - [`Tcb::poll_transmit`] sends no data, no retransmission, no FIN and arms no
//!   retransmission or persist timer; it still sends ACKs of received data (the NIC gives
//!   their sequence number its own snd.nxt);
//! - the ACK field of incoming segments is not processed (the NIC consumed the pure ACKs
//!   already and runs loss detection on them);
//! - the application's bytes are offered to the NIC in MSS multiples (`tonic-tail`, §5);
//!   a remainder shorter than the MSS is held for [`SMALL_HOLD_NS`] in case more data comes,
//!   then offered as one final *small* segment, after which nothing more is offered until the
//!   NIC reports it delivered (§5: "all segments, except for the last one in a burst, [are] of
//!   equal size");
//! - delivery notifications ([`Tcb::tonic_delivered`]) advance snd.una and free the send
//!   buffer, which makes the socket writable again.
//!
//! When the application has shut the write side and the NIC reports every byte delivered,
//! the socket layer removes the flow from the NIC and calls [`Tcb::resume_sender`]: the TCB
//! sends its FIN and finishes the close itself.
//!
//! Limits: timestamps are not offered on such connections ([`Tcb::prepare_tonic_sender`]):
//! the NIC's segments carry no options. Window scaling is negotiated as usual and the flow add
//! tells the NIC the peer's shift.

use super::super::seq::Seq;
use super::{Events, State, Tcb, Timer};

/// How long a remainder shorter than one MSS waits for more data before it is offered to the
/// NIC as a final small segment (Tonic §5's configurable time T).
pub const SMALL_HOLD_NS: u64 = 200_000;

/// The state a TCB keeps while Tonic on the NIC owns its sender (Tonic §5). Invariant:
/// snd.una ≤ `tail` ≤ snd.end, and snd.nxt = snd.una (the NIC's snd.nxt is its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TonicSend {
    /// `tonic-tail`: one past the last byte the NIC was told about.
    pub tail: Seq,
    /// A final small segment was offered and is not yet delivered.
    pub small_pending: bool,
    /// When the current sub-MSS remainder may be offered as a small segment (0: none
    /// waiting).
    pub hold_until: u64,
}

/// What Tonic on the NIC needs to take a connection's sender over (the `TonicFlowAdd`
/// fields that come from the TCB; Tonic §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TonicHandover {
    /// First sequence number the NIC sends (SND.UNA at handover): byte 0 of its stream.
    pub init_seq: Seq,
    /// Segment payload size (SMSS; the NIC's segments carry no options).
    pub mss: u16,
    /// The peer's current window in bytes (informational; the NIC reads it from the ACKs).
    pub snd_wnd: u32,
    /// The shift the peer's window field takes (RFC 7323 §2.3; 0 without window scaling).
    pub snd_wscale: u8,
}

impl Tcb {
    /// Marks a connection that will hand its sender to the NIC: it does not offer timestamps
    /// (the NIC's segments carry no options, so it could not send the TSval and TSecr that
    /// RFC 7323 §3.2 requires on every segment once they are negotiated). Window scaling
    /// stays: it appears only in the SYNs, and the NIC applies the peer's shift
    /// ([`TonicHandover::snd_wscale`]). Call before the first [`Tcb::poll_transmit`] (for an
    /// active open) or right after [`Tcb::accept`].
    pub fn prepare_tonic_sender(&mut self) {
        self.cfg.want_ts = false;
        if self.state == State::SynReceived && !self.flags.syn_sent {
            self.opt.ts_ok = false;
            if self.opt.base_opt_len != 0 {
                self.opt.base_opt_len = 0;
                self.opt.smss = self.opt.eff_mss;
                self.rcv.mss = self.opt.smss;
            }
        }
    }

    /// Hands the sender side to the NIC (Tonic §5). Possible once the connection is
    /// established (or in CLOSE_WAIT), with nothing in flight, when timestamps were not
    /// negotiated; returns what the flow add needs, or `None` (the TCB keeps sending
    /// itself).
    ///
    /// Also queues an ACK, so that the NIC learns the ACK number and window its segments
    /// carry from a frame of this connection right after the flow add.
    pub fn hand_sender_to_tonic(&mut self) -> Option<TonicHandover> {
        if self.tonic.is_some()
            || !matches!(self.state, State::Established | State::CloseWait)
            || self.flags.fin_queued
            || self.snd.una != self.snd.max
            || self.opt.ts_ok
            || self.error.is_some()
        {
            return None;
        }
        self.tonic = Some(TonicSend {
            tail: self.snd.una,
            small_pending: false,
            hold_until: 0,
        });
        self.snd.nxt = self.snd.una;
        self.rec.in_recovery = false;
        self.flags.rexmit_pending = false;
        self.rec.dupacks = 0;
        self.rec.sb.clear();
        if matches!(self.timers.running, Timer::Rto | Timer::Persist) {
            self.timers.running = Timer::Off;
        }
        self.timers.rtt_timed = None;
        self.flags.ack_now = true;
        Some(TonicHandover {
            init_seq: self.snd.una,
            mss: self.opt.smss.min(u16::MAX as u32) as u16,
            snd_wnd: self.snd.wnd,
            snd_wscale: if self.opt.ws_ok {
                self.opt.snd_wscale
            } else {
                0
            },
        })
    }

    /// True while the NIC owns the sender side.
    pub fn tonic_owns_sender(&self) -> bool {
        self.tonic.is_some()
    }

    /// `tonic-tail`: one past the last byte the NIC was told about (`None` unless the NIC
    /// owns the sender).
    pub fn tonic_tail(&self) -> Option<Seq> {
        self.tonic.map(|n| n.tail)
    }

    /// How many bytes past `tonic-tail` to offer the NIC now, at most `max` (rounded down to
    /// an MSS multiple): the whole segments queued, or, once the remainder has waited
    /// [`SMALL_HOLD_NS`] or the write side is shut, the final small segment. `None` when
    /// nothing is to be offered (also while a small segment is undelivered).
    pub fn tonic_tail_due(&mut self, now: u64, max: usize) -> Option<u32> {
        let mss = self.opt.smss.max(1);
        let end = self.snd.end;
        let fin = self.flags.fin_queued;
        let n = self.tonic.as_mut()?;
        if n.small_pending {
            return None;
        }
        let queued = (end - n.tail).max(0) as u32;
        if queued == 0 {
            n.hold_until = 0;
            return None;
        }
        let cap = ((max as u32 / mss) * mss).max(mss);
        let whole = (queued / mss) * mss;
        if whole > 0 {
            return Some(whole.min(cap));
        }
        if n.hold_until == 0 {
            n.hold_until = now.saturating_add(SMALL_HOLD_NS).max(1);
        }
        if fin || now >= n.hold_until {
            return Some(queued);
        }
        None
    }

    /// The send-buffer bytes `[tonic-tail, tonic-tail + len)` (two slices, the buffer being a
    /// ring) and the sequence number one past them: the data and `tail` of a `TonicTail`
    /// message.
    pub fn tonic_tail_data(&self, len: u32) -> (Seq, [&[u8]; 2]) {
        let Some(n) = self.tonic else {
            return (self.snd.una, [&[], &[]]);
        };
        let off = (n.tail - self.snd.una).max(0) as usize;
        let (a, b) = self.sbuf.slices(off, len as usize);
        (n.tail + len, [a, b])
    }

    /// The NIC was told about `len` more bytes (after [`Tcb::tonic_tail_due`] and a successful
    /// send): `tonic-tail` moves; a piece shorter than one MSS is the final small segment.
    pub fn tonic_tail_sent(&mut self, len: u32) {
        let mss = self.opt.smss.max(1);
        if let Some(n) = self.tonic.as_mut() {
            n.tail += len;
            n.hold_until = 0;
            if !len.is_multiple_of(mss) {
                n.small_pending = true;
            }
            if self.snd.max.lt(n.tail) {
                self.snd.max = n.tail;
            }
        }
    }

    /// A delivery notification from the NIC: every byte before `delivered` is cumulatively
    /// acknowledged (snd.una). Frees that send-buffer space (`writable`). Values outside
    /// (snd.una, tonic-tail] are ignored.
    pub fn tonic_delivered(&mut self, delivered: Seq) -> Events {
        let mut ev = Events::default();
        let Some(n) = self.tonic.as_mut() else {
            return ev;
        };
        if !(self.snd.una.lt(delivered) && delivered.le(n.tail)) {
            return ev;
        }
        if n.small_pending && delivered == n.tail {
            n.small_pending = false;
        }
        self.sbuf.consume((delivered - self.snd.una) as usize);
        self.snd.una = delivered;
        self.snd.nxt = delivered;
        self.timers.retries = 0;
        ev.writable = true;
        ev
    }

    /// True when the NIC owns the sender, the write side is shut and every byte was
    /// delivered: time to remove the flow from the NIC and [`Tcb::resume_sender`] for the FIN.
    pub fn tonic_sender_done(&self) -> bool {
        self.tonic.is_some() && self.flags.fin_queued && self.snd.una == self.snd.end
    }

    /// Takes the sender side back from the NIC (after the flow was removed there, or when the
    /// NIC refused it): sending resumes from snd.una, with the FIN if the write side is shut.
    pub fn resume_sender(&mut self) {
        if self.tonic.take().is_none() {
            return;
        }
        self.snd.nxt = self.snd.una;
        self.snd.max = self.snd.una;
        self.rec.recover = self.snd.una;
        self.rec.rxt_next = self.snd.una;
        self.rec.in_recovery = false;
        self.rec.dupacks = 0;
        self.rec.sb.clear();
        self.snd.wl2 = self.snd.una;
        if self.snd.wnd == 0 {
            self.snd.wnd = self.snd.max_wnd.max(self.opt.smss);
        }
    }

    /// When the held sub-MSS remainder becomes due (for [`Tcb::poll_at`]).
    pub(super) fn tonic_hold_at(&self) -> Option<u64> {
        self.tonic
            .filter(|n| n.hold_until != 0 && !n.small_pending)
            .map(|n| n.hold_until)
    }
}

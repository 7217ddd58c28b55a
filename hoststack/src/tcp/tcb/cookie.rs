//! Connections from stateless handshakes: a SYN cookie made by the NIC (AccelTCP §4.1, a
//! 0x090A setup notification) or by the host's own listener when its SYN queue is full
//! (RFC 4987 §3.6). Both give the same thing: the options the SYN carried, our ISN, and the
//! final ACK, from which the connection starts ESTABLISHED.

use super::{State, Tcb};
use crate::tcp::segment::{TcpFlags, TcpOptions, TcpRepr};
use crate::tcp::seq::Seq;
use crate::tcp::TcpConfig;

use super::types::{Endpoints, Events};

/// What a stateless handshake agreed, as the SYN-ACK carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieHandshake {
    /// Our ISN (the cookie).
    pub iss: Seq,
    /// The peer's ISN (the final ACK's sequence number minus one).
    pub peer_isn: Seq,
    /// The peer's MSS, as the cookie's MSS class kept it.
    pub peer_mss: u16,
    /// Window scaling: (the peer's shift, ours), when both SYNs carried the option.
    pub window_scale: Option<(u8, u8)>,
    /// SACK permitted on both sides.
    pub sack_permitted: bool,
    /// The TSval of our SYN-ACK, when timestamps were negotiated; our TSvals continue above
    /// it (RFC 7323 §5.3: the peer's PAWS check needs them non-decreasing).
    pub syn_ack_tsval: Option<u32>,
    /// Our TSvals are kept even (see [`Tcb::use_even_tsvals`]).
    pub even_tsvals: bool,
}

impl Tcb {
    /// Makes every TSval this connection sends even: the timestamp clock runs at two ticks
    /// per millisecond (RFC 7323 §5.4 asks for 1 ms to 1 s per tick; twice as fast only
    /// halves the time before TSvals wrap, to 12 days, far beyond any PAWS window). On a
    /// setup-offloaded listener odd TSvals echoed back mark the NIC's SYN-cookie handshakes
    /// (AccelTCP §4.1), so the host's own must never be odd. Call before the first segment
    /// goes out.
    pub fn use_even_tsvals(&mut self) {
        self.opt.ts_shift = 1;
        self.opt.ts_offset &= !1;
    }

    /// The SYN-ACK of a stateless handshake (RFC 4987 §3.6): a throw-away passive-open TCB
    /// whose next [`Tcb::poll_transmit`] emits a SYN-ACK with ISN `iss` and, when timestamps
    /// are negotiated, TSval `tsval` (which carries the SYN's options). The caller sends that
    /// segment and drops the TCB: nothing of the connection is kept.
    pub fn stateless_syn_ack(
        cfg: &TcpConfig,
        ep: Endpoints,
        syn: &TcpRepr<'_>,
        iss: Seq,
        tsval: u32,
        now: u64,
    ) -> Tcb {
        let mut t = Tcb::accept(cfg, ep, syn, iss, now);
        t.opt.ts_offset = tsval.wrapping_sub((now / 1_000_000) as u32);
        t
    }

    /// A connection from the final ACK `ack` of a stateless handshake `h`: the SYN and
    /// SYN-ACK are taken as exchanged (state SynReceived with the SYN-ACK sent), then `ack`
    /// is processed as any segment, which moves the connection to ESTABLISHED and delivers
    /// any data (or FIN) it carries. Returns the TCB and the events of that input; when the
    /// ACK does not acknowledge our SYN-ACK the TCB is not established (the caller drops it).
    pub fn from_cookie(
        cfg: &TcpConfig,
        ep: Endpoints,
        h: &CookieHandshake,
        ack: &TcpRepr<'_>,
        now: u64,
    ) -> (Tcb, Events) {
        let syn = TcpRepr {
            src_port: ep.remote_port,
            dst_port: ep.local_port,
            seq: h.peer_isn,
            ack: Seq(0),
            flags: TcpFlags::SYN,
            window: ack.window,
            options: TcpOptions {
                mss: Some(h.peer_mss),
                window_scale: h.window_scale.map(|(peer, _)| peer),
                sack_permitted: h.sack_permitted,
                timestamp: h
                    .syn_ack_tsval
                    .and(ack.options.timestamp)
                    .map(|(tsval, _)| (tsval, 0)),
                ..TcpOptions::default()
            },
            payload: &[],
        };
        let mut t = Tcb::accept(cfg, ep, &syn, h.iss, now);
        if let Some((_, local)) = h.window_scale {
            if t.opt.ws_ok {
                t.opt.rcv_wscale = local;
            }
        }
        if h.even_tsvals {
            t.use_even_tsvals();
        }
        if let Some(v) = h.syn_ack_tsval {
            // Continue strictly above the SYN-ACK's TSval, keeping the parity rule.
            let step = 1u32 << t.opt.ts_shift;
            let first = (v | (step - 1)).wrapping_add(1);
            t.opt.ts_offset = first.wrapping_sub(((now / 1_000_000) as u32) << t.opt.ts_shift);
        }
        // Our SYN-ACK went out (from the cookie's maker) at about `now`.
        t.flags.syn_pending = false;
        t.flags.syn_sent = true;
        t.timers.syn_sent_at = now;
        t.snd.nxt = h.iss + 1;
        t.snd.max = t.snd.nxt;
        t.opt.last_ack_sent = t.rcv.nxt;
        let ev = t.input(ack, now);
        debug_assert!(t.state != State::SynSent);
        (t, ev)
    }

    /// True when `syn`, a SYN without ACK for this connection's 4-tuple, may start a new
    /// incarnation while this one is in TIME_WAIT (RFC 1122 §4.2.2.13: its sequence number is
    /// above RCV.NXT; RFC 6191 §2: its timestamp is newer than TS.Recent). The caller then
    /// ends this connection and treats the SYN as new. Never for SYN+FIN or SYN+RST, which
    /// no listener takes: a segment that cannot open the new connection does not end the old.
    pub fn time_wait_accepts_syn(&self, syn: &TcpRepr<'_>) -> bool {
        if self.state != State::TimeWait
            || !syn.flags.has(TcpFlags::SYN)
            || syn.flags.has(TcpFlags::ACK)
            || syn.flags.has(TcpFlags::RST)
            || syn.flags.has(TcpFlags::FIN)
        {
            return false;
        }
        // As Linux decides (tcp_timewait_state_process): not when PAWS would reject the SYN
        // (its TSval older than TS.Recent), and then when either its sequence number is above
        // RCV.NXT or its TSval is newer.
        let ts = match (self.opt.ts_ok, syn.options.timestamp) {
            (true, Some((tsval, _))) => Some(tsval.wrapping_sub(self.opt.ts_recent) as i32),
            _ => None,
        };
        if ts.is_some_and(|d| d < 0) {
            return false;
        }
        syn.seq.gt(self.rcv.nxt) || ts.is_some_and(|d| d > 0)
    }
}

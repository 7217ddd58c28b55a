//! The quasi-TCB of AccelTCP §5.2 ("Lazy TCB creation"): a small record for a connection the
//! NIC set up (a 0x090A setup notification, §4.1) under a listener that also offloads its
//! teardown (§4.2). It holds what a one-request, one-response, close connection needs: the
//! 4-tuple, the sequence numbers, the options the handshake agreed, the in-order bytes
//! received and the response written but not yet sent. A close right after the write hands the
//! connection to the NIC straight from this record ([`QuasiTcb::teardown_handover`]); anything
//! more grows it into a full [`Tcb`] ([`Tcb::from_quasi`]) whose state is what the connection
//! would have had as a full TCB from the start.
//!
//! Size: [`QuasiTcb`] is 72 bytes on 64-bit targets (the paper's is 40) plus the bytes it
//! keeps, against 968 bytes for a [`Tcb`] plus its rings (tested in `tests/quasi_tcb.rs`).

use offload_api::msg::{TcpState, TeardownRepr, Timestamps};

use super::cookie::CookieHandshake;
use super::teardown::{TeardownHandover, TeardownRefusal};
use super::types::Endpoints;
use super::vars::Timers;
use super::Tcb;
use crate::tcp::segment::{TcpFlags, TcpHeader, TcpOptions, TcpRepr};
use crate::tcp::seq::Seq;
use crate::tcp::TcpConfig;

/// Most bytes a quasi-TCB keeps (received plus written); beyond, it becomes a full TCB.
pub const QUASI_MAX_BYTES: usize = 16 * 1024;

const F_WS: u8 = 1;
const F_SACK: u8 = 2;
const F_TS: u8 = 4;
const F_FIN: u8 = 8;

/// Why a segment does not fit the quasi path: the connection needs a full TCB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuasiMiss {
    /// The segment is anything but an in-order ACK, data or FIN that fits (see
    /// [`QuasiTcb::input`]).
    TcpRepr,
    /// The received bytes would pass [`QuasiTcb::max_rx`].
    TooMuchData,
}

/// A connection's quasi-TCB (AccelTCP §5.2). See the module documentation.
#[derive(Clone, Debug)]
pub struct QuasiTcb {
    /// Received in-order bytes (`..rx_len`), then the bytes written and not sent.
    data: Vec<u8>,
    remote_ip: [u8; 4],
    remote_port: u16,
    local_port: u16,
    /// Our ISN; snd.nxt is one above (nothing was sent since the SYN-ACK).
    iss: u32,
    /// The peer's ISN.
    irs: u32,
    /// Our TSval offset (two ticks per ms, even TSvals: [`Tcb::use_even_tsvals`]).
    ts_offset: u32,
    /// TS.Recent (RFC 7323 §4.3).
    ts_recent: u32,
    /// The SYN-ACK's TSval (what the peer echoes until we send again).
    syn_ack_tsval: u32,
    /// The retransmission timeout after the handshake, µs (what the TCB would hand the NIC).
    rto_us: u32,
    /// The peer's last window field (unscaled).
    peer_window: u16,
    /// The peer's MSS.
    peer_mss: u16,
    /// Bytes received (`data[..rx_len]`), and how many of them the application read.
    rx_len: u16,
    read: u16,
    /// Window-scale shifts: the peer's and ours.
    snd_wscale: u8,
    rcv_wscale: u8,
    /// `F_*` bits.
    flags: u8,
    /// The stamp of the pending delayed-ACK timer (see [`QuasiTcb::set_timer`]); 0: none.
    timer: u32,
}

impl QuasiTcb {
    /// The quasi-TCB of a stateless handshake `h` completed by `ack` under `cfg`, created at
    /// `now`, or none when `ack` is not a plain ACK of our SYN-ACK (the caller builds a full
    /// TCB with [`Tcb::from_cookie`], which handles every case). The ACK's data is taken.
    pub fn from_cookie(
        cfg: &TcpConfig,
        ep: Endpoints,
        h: &CookieHandshake,
        ack: &TcpRepr<'_>,
        now: u64,
    ) -> Option<QuasiTcb> {
        let f = ack.flags;
        if !f.has(TcpFlags::ACK)
            || f.has(TcpFlags::SYN)
            || f.has(TcpFlags::RST)
            || f.has(TcpFlags::URG)
            || f.has(TcpFlags::FIN)
            || ack.ack != h.iss + 1
            || ack.seq != h.peer_isn + 1
            || !h.even_tsvals
            || ack.payload.len() > QUASI_MAX_BYTES
        {
            return None;
        }
        // As `Tcb::accept` negotiates from the SYN `Tcb::from_cookie` rebuilds.
        let ts = match (h.syn_ack_tsval, ack.options.timestamp) {
            (Some(v), Some((tsval, _))) if cfg.timestamps => Some((v, tsval)),
            _ => None,
        };
        let mut flags = 0;
        let (mut snd_wscale, mut rcv_wscale) = (0, 0);
        if let Some((peer, local)) = h.window_scale {
            flags |= F_WS;
            snd_wscale = peer.min(14);
            rcv_wscale = local;
        }
        if h.sack_permitted && cfg.sack {
            flags |= F_SACK;
        }
        let (mut ts_offset, mut ts_recent, mut syn_ack_tsval) = (0, 0, 0);
        if let Some((v, tsval)) = ts {
            flags |= F_TS;
            // As `Tcb::from_cookie`: strictly above the SYN-ACK's TSval, even.
            let first = (v | 1).wrapping_add(1);
            ts_offset = first.wrapping_sub(((now / 1_000_000) as u32) << 1);
            ts_recent = tsval;
            syn_ack_tsval = v;
        }
        // As `Tcb::from_cookie`: the SYN-ACK counts as sent when the ACK came, and the
        // handshake's RTT sample (of 0) sets the RTO.
        let mut timers = Timers::new(cfg);
        timers.rtt.sample(0);
        let rto_us = (timers.rtt.rto() / 1_000).min(u32::MAX as u64) as u32;
        Some(QuasiTcb {
            data: ack.payload.to_vec(),
            remote_ip: ep.remote_ip,
            remote_port: ep.remote_port,
            local_port: ep.local_port,
            iss: h.iss.0,
            irs: h.peer_isn.0,
            ts_offset,
            ts_recent,
            syn_ack_tsval,
            rto_us,
            peer_window: ack.window,
            peer_mss: h.peer_mss,
            rx_len: ack.payload.len() as u16,
            read: 0,
            snd_wscale,
            rcv_wscale,
            flags,
            timer: 0,
        })
    }

    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// The connection's endpoints (the local address is the caller's).
    pub fn endpoints(&self, local_ip: [u8; 4]) -> Endpoints {
        Endpoints {
            local_ip,
            local_port: self.local_port,
            remote_ip: self.remote_ip,
            remote_port: self.remote_port,
        }
    }

    /// RCV.NXT: one past the peer's ISN, its bytes and its FIN.
    pub fn rcv_nxt(&self) -> Seq {
        Seq(self.irs) + 1 + self.rx_len as u32 + self.has(F_FIN) as u32
    }

    /// The peer's window, scaled (SND.WND).
    pub fn snd_wnd(&self) -> u32 {
        (self.peer_window as u32) << self.snd_wscale
    }

    /// Bytes received and not read yet.
    pub fn unread(&self) -> &[u8] {
        &self.data[self.read as usize..self.rx_len as usize]
    }

    /// True once any received bytes wait to be acknowledged (the peer would retransmit
    /// them after its RTO: the caller grows the TCB after a delayed-ACK time).
    pub fn has_unacked(&self) -> bool {
        self.rx_len > 0 || self.has(F_FIN)
    }

    /// Records the timer the caller armed for this record, as `stamp` (non-zero; the caller
    /// derives it from the deadline), so that a timer left by an earlier record in the same
    /// slot is told apart.
    pub fn set_timer(&mut self, stamp: u32) {
        self.timer = stamp;
    }

    /// The stamp given to [`QuasiTcb::set_timer`] (0: none).
    pub fn timer(&self) -> u32 {
        self.timer
    }

    /// Takes up to `buf.len()` unread bytes; returns how many.
    pub fn recv(&mut self, buf: &mut [u8]) -> usize {
        let src = self.unread();
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        self.read += n as u16;
        n
    }

    /// Marks `n` unread bytes as read.
    pub fn recv_consume(&mut self, n: usize) {
        let n = n.min(self.unread().len());
        self.read += n as u16;
    }

    /// The peer's FIN arrived.
    pub fn fin_received(&self) -> bool {
        self.has(F_FIN)
    }

    /// Bytes written and not sent.
    pub fn pending(&self) -> &[u8] {
        &self.data[self.rx_len as usize..]
    }

    /// Most bytes a write may leave in the record: the peer's window and the record's bound
    /// (AccelTCP §4.2: the teardown's data must fit the peer's window).
    pub fn send_room(&self) -> usize {
        (self.snd_wnd() as usize)
            .min(QUASI_MAX_BYTES)
            .saturating_sub(self.data.len())
    }

    /// Keeps `data` to send; false (nothing kept) when it does not all fit
    /// [`QuasiTcb::send_room`].
    pub fn send(&mut self, data: &[u8]) -> bool {
        if data.len() > self.send_room() {
            return false;
        }
        self.data.extend_from_slice(data);
        true
    }

    /// The in-order receive path: `seg` is taken when it is an ACK of our SYN-ACK (nothing
    /// else was sent) at RCV.NXT, without SYN, RST or URG, whose data fits the record and the
    /// window we offered, with a timestamp that passes PAWS (RFC 7323 §5.3), and arrives
    /// before any FIN. Such a segment updates the peer's window and TS.Recent (only at the
    /// first byte: Last.ACK.sent stays at the peer's ISN + 1 since nothing is acknowledged),
    /// keeps its bytes and FIN. Anything else (out of order, a window probe, a duplicate, a
    /// RST...) is a miss and the caller grows a full TCB that takes the segment.
    pub fn input(&mut self, cfg: &TcpConfig, seg: &TcpRepr<'_>) -> Result<(), QuasiMiss> {
        let f = seg.flags;
        if !f.has(TcpFlags::ACK)
            || f.has(TcpFlags::SYN)
            || f.has(TcpFlags::RST)
            || f.has(TcpFlags::URG)
            || seg.ack != Seq(self.iss) + 1
            || seg.seq != self.rcv_nxt()
            || self.has(F_FIN)
        {
            return Err(QuasiMiss::TcpRepr);
        }
        let tsval = match (self.has(F_TS), seg.options.timestamp) {
            (true, Some((v, _))) if !(v.wrapping_sub(self.ts_recent) as i32).is_negative() => v,
            (false, None) => 0,
            _ => return Err(QuasiMiss::TcpRepr),
        };
        let len = seg.payload.len();
        let rx = self.rx_len as usize;
        // Twice the MSS: a TCB acknowledges every second full segment at once (RFC 5681
        // §4.2); the window we offered: `Tcb::syn_window`.
        let bound = (2 * self.peer_mss.min(cfg.mss) as usize).min(QUASI_MAX_BYTES);
        if rx + len > bound || rx + len > syn_window(cfg) || !self.pending().is_empty() && len > 0 {
            return Err(QuasiMiss::TooMuchData);
        }
        if self.has(F_TS) && seg.seq == Seq(self.irs) + 1 {
            self.ts_recent = tsval;
        }
        self.peer_window = seg.window;
        if len > 0 {
            self.data.extend_from_slice(seg.payload);
            self.rx_len = (rx + len) as u16;
        }
        if f.has(TcpFlags::FIN) {
            self.flags |= F_FIN;
        }
        Ok(())
    }

    /// The handover of this connection's close to the NIC at `now` (AccelTCP §4.2, App. A),
    /// the same as [`Tcb::teardown_handover`] gives for the connection as a full TCB: FIN_WAIT_1,
    /// or LAST_ACK after the peer's FIN; sequence number snd.nxt, ACK of rcv.nxt, the pending
    /// bytes and a FIN. The payload is [`QuasiTcb::pending`].
    pub fn teardown_handover(
        &self,
        cfg: &TcpConfig,
        now: u64,
    ) -> Result<TeardownHandover, TeardownRefusal> {
        if !self.unread().is_empty() {
            return Err(TeardownRefusal::UnreadData);
        }
        let remaining = self.pending().len() as u32;
        if remaining > self.snd_wnd() {
            return Err(TeardownRefusal::Window);
        }
        let ws = self.has(F_WS);
        let ts = self.has(F_TS);
        let eff_mss = (self.peer_mss as u32).min(cfg.mss as u32);
        let smss = eff_mss - if ts { 12 } else { 0 };
        let rcv_wnd = (syn_window(cfg) as u32).saturating_sub(self.rx_len as u32);
        let rcv_wscale = if ws { self.rcv_wscale } else { 0 };
        let snd = Seq(self.iss) + 1;
        let repr = TeardownRepr {
            mss: smss.clamp(1, u16::MAX as u32) as u16,
            state: if self.has(F_FIN) {
                TcpState::LastAck
            } else {
                TcpState::FinWait1
            },
            rto_us: self.rto_us,
            snd_una: snd.0,
            snd_nxt: snd.0,
            rcv_nxt: self.rcv_nxt().0,
            snd_wnd: self.snd_wnd(),
            rcv_wnd,
            snd_wscale: if ws { self.snd_wscale } else { 0 },
            rcv_wscale,
            sack_permitted: self.has(F_SACK),
            timestamps: ts.then(|| Timestamps {
                ts_recent: self.ts_recent,
                ts_val: self.ts_offset.wrapping_add(((now / 1_000_000) as u32) << 1),
            }),
        };
        let mut flags = TcpFlags::ACK | TcpFlags::FIN;
        if remaining > 0 {
            flags = flags | TcpFlags::PSH;
        }
        let header = TcpHeader {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: snd,
            ack: self.rcv_nxt(),
            flags,
            window: (rcv_wnd >> rcv_wscale).min(u16::MAX as u32) as u16,
            options: TcpOptions::default(),
        };
        Ok(TeardownHandover { repr, header })
    }
}

/// The window of our SYN-ACK, as `Tcb::syn_window` computes it for a new TCB.
fn syn_window(cfg: &TcpConfig) -> usize {
    let slack = (1usize << cfg.window_scale.min(14)) - 1;
    cfg.recv_buffer
        .min(u32::MAX as usize / 2)
        .saturating_sub(slack)
        .min(65_535)
}

impl Tcb {
    /// The full TCB of quasi-TCB `q` (AccelTCP §5.2), in the state the connection would have
    /// reached as a full TCB from its 0x090A: built by [`Tcb::from_cookie`] from the same
    /// handshake, then fed the bytes (and FIN) the record took as one segment, the bytes the
    /// application read consumed, and the pending bytes queued to send. Our timestamp clock
    /// continues where the record's ran.
    pub fn from_quasi(cfg: &TcpConfig, local_ip: [u8; 4], q: &QuasiTcb, now: u64) -> Tcb {
        let ep = q.endpoints(local_ip);
        let ts = q.has(F_TS);
        let h = CookieHandshake {
            iss: Seq(q.iss),
            peer_isn: Seq(q.irs),
            peer_mss: q.peer_mss,
            window_scale: q.has(F_WS).then_some((q.snd_wscale, q.rcv_wscale)),
            sack_permitted: q.has(F_SACK),
            syn_ack_tsval: ts.then_some(q.syn_ack_tsval),
            even_tsvals: true,
        };
        let tsopt = ts.then_some((q.ts_recent, q.syn_ack_tsval));
        let ack = TcpRepr {
            src_port: q.remote_port,
            dst_port: q.local_port,
            seq: Seq(q.irs) + 1,
            ack: Seq(q.iss) + 1,
            flags: TcpFlags::ACK,
            window: q.peer_window,
            options: TcpOptions {
                timestamp: tsopt,
                ..TcpOptions::default()
            },
            payload: &[],
        };
        let (mut t, _) = Tcb::from_cookie(cfg, ep, &h, &ack, now);
        if q.has_unacked() {
            let mut flags = TcpFlags::ACK;
            if q.has(F_FIN) {
                flags = flags | TcpFlags::FIN;
            }
            let seg = TcpRepr {
                flags,
                payload: &q.data[..q.rx_len as usize],
                ..ack
            };
            let _ = t.input(&seg, now);
            t.recv_consume(q.read as usize);
        }
        if ts {
            t.opt.ts_offset = q.ts_offset;
            t.opt.ts_recent = q.ts_recent;
        }
        if !q.pending().is_empty() {
            let _ = t.send(q.pending());
        }
        let _ = t.take_events();
        t
    }
}

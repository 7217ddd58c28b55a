//! The groups of a [`Tcb`](super::Tcb)'s variables, the way RFC 9293 §3.3.1 groups them
//! (send and receive sequence variables), plus the negotiated options, the configuration,
//! the pending actions, the timers and the loss-recovery state.
//!
//! Each group is a plain field of the TCB (no boxing, no indirection: the per-segment path
//! reads them as it read the flat fields). A handover of a connection reads and writes whole
//! groups: a connection built from a NIC-made handshake (AccelTCP §4.1) fills the sequence
//! variables and [`Negotiated`]; a teardown handed to the NIC (AccelTCP §4.2) exports the
//! send side and the timestamps; the Tonic handover (Tonic §5) hands [`SendSeq`] over and
//! resets [`Recovery`].

use super::super::cc::{CcAlgorithm, CongestionControl};
use super::super::rtt::RttEstimator;
use super::super::sack::Scoreboard;
use super::super::seq::Seq;
use super::super::TcpConfig;
use super::{DEFAULT_MSS, MIN_MSS};

/// Which timer runs (one slot: they never run together).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Timer {
    Off,
    /// Retransmission (RFC 6298), also for SYN / SYN-ACK.
    Rto,
    /// Zero-window probe, or the SWS-avoidance override (RFC 9293 §3.8.6.1, §3.8.6.2.1).
    Persist,
    /// 2·MSL.
    TimeWait,
    /// Orphaned FIN_WAIT_2 (closed by the application, waiting for the peer's FIN).
    FinWait2,
}

/// The per-connection copy of [`TcpConfig`] (what a socket option may change later, and
/// what the state machine reads on its paths). Fixed at creation except `nodelay`
/// (TCP_NODELAY) and `want_ts` (off before the handshake for a Tonic connection, Tonic §5).
#[derive(Debug)]
pub(super) struct TcbConfig {
    /// MSS we advertise (at least [`MIN_MSS`]).
    pub(super) mss: u16,
    /// Largest payload of one emitted segment (above the MSS: TSO on the NIC).
    pub(super) max_seg_payload: u32,
    /// Our window-scale shift, offered on the SYN (RFC 7323 §2.2; ≤ 14).
    pub(super) want_ws: u8,
    /// Offer window scaling on our SYN (RFC 7323 §2.2); only an offered option is used.
    pub(super) offer_ws: bool,
    /// Offer and use SACK (RFC 2018).
    pub(super) want_sack: bool,
    /// Offer and use timestamps (RFC 7323 §3).
    pub(super) want_ts: bool,
    /// TCP_NODELAY: Nagle's algorithm off (RFC 9293 §3.7.4).
    pub(super) nodelay: bool,
    /// Delayed-ACK timeout (RFC 9293 §3.8.6.3).
    pub(super) delayed_ack_ns: u64,
    /// Retransmissions (and unanswered window probes) before the connection times out.
    pub(super) max_retransmits: u32,
    /// Tail-loss probes (RFC 8985 §7).
    pub(super) tail_loss_probe: bool,
    /// SYN (or SYN-ACK) retransmissions before failing.
    pub(super) syn_retries: u32,
    /// TIME_WAIT duration (2·MSL).
    pub(super) time_wait_ns: u64,
    /// FIN_WAIT_2 timeout once the application closed.
    pub(super) fin_wait2_ns: u64,
    /// Upper RTO bound (RFC 6298 §2.5), also the persist interval's.
    pub(super) rto_max_ns: u64,
    /// The congestion controller built when the handshake completes.
    pub(super) cc: CcAlgorithm,
}

impl TcbConfig {
    pub(super) fn new(cfg: &TcpConfig) -> TcbConfig {
        TcbConfig {
            mss: cfg.mss.max(MIN_MSS as u16),
            max_seg_payload: cfg.max_segment_payload.min(65_535 - 80) as u32,
            want_ws: cfg.window_scale.min(14),
            offer_ws: true,
            want_sack: cfg.sack,
            want_ts: cfg.timestamps,
            nodelay: cfg.nodelay,
            delayed_ack_ns: cfg.delayed_ack_ns,
            max_retransmits: cfg.max_retransmits,
            tail_loss_probe: cfg.tail_loss_probe,
            syn_retries: cfg.syn_retries,
            time_wait_ns: cfg.time_wait_ns,
            fin_wait2_ns: cfg.fin_wait2_ns,
            rto_max_ns: cfg.rto_max_ns,
            cc: cfg.cc,
        }
    }
}

/// Send Sequence Variables (RFC 9293 §3.3.1), with two of our own: `end` and `max`.
///
/// Data starts at ISS + 1. Invariant (modulo 2³²): `una` ≤ `nxt` ≤ `max` ≤ `end` + 1, where
/// the one past `end` is the FIN once the write side is shut; the send buffer holds the
/// data bytes not yet acknowledged, up to `end`. While Tonic on the NIC owns the sender
/// (Tonic §5), `nxt` = `una` and `una` moves only by the NIC's delivery notifications.
#[derive(Debug)]
pub(super) struct SendSeq {
    /// ISS: our initial sequence number.
    pub(super) iss: Seq,
    /// SND.UNA: oldest unacknowledged sequence number.
    pub(super) una: Seq,
    /// SND.NXT: next sequence number to send (moves back to `una` on a go-back-N
    /// retransmission).
    pub(super) nxt: Seq,
    /// One past the highest number ever sent (SND.NXT before a go-back-N retransmission).
    pub(super) max: Seq,
    /// One past the last byte queued: the FIN's number once the write side is shut.
    pub(super) end: Seq,
    /// SND.WND: the peer's window, scaled, in bytes.
    pub(super) wnd: u32,
    /// The largest window the peer ever offered (MAX.SND.WND, RFC 5961 §5.2).
    pub(super) max_wnd: u32,
    /// SND.WL1: segment sequence number used for the last window update.
    pub(super) wl1: Seq,
    /// SND.WL2: segment acknowledgment number used for the last window update.
    pub(super) wl2: Seq,
}

impl SendSeq {
    pub(super) fn new(iss: Seq) -> SendSeq {
        SendSeq {
            iss,
            una: iss,
            nxt: iss,
            max: iss,
            end: iss + 1,
            wnd: 0,
            max_wnd: 0,
            wl1: Seq(0),
            wl2: iss,
        }
    }
}

/// Receive Sequence Variables (RFC 9293 §3.3.1), with the receive-side bookkeeping of
/// delayed ACKs (RFC 9293 §3.8.6.3, RFC 5681 §4.2).
///
/// RCV.WND is not stored: it is `adv` − `nxt` (see `Tcb::rcv_wnd`). Invariant: `adv` never
/// moves left (RFC 9293 §3.8.6.2.2: a window is never shrunk); `fin`, when set, is at or
/// after `nxt`.
#[derive(Debug)]
pub(super) struct RecvSeq {
    /// IRS: the peer's initial sequence number.
    pub(super) irs: Seq,
    /// RCV.NXT: next sequence number expected.
    pub(super) nxt: Seq,
    /// Right edge of the window we advertised (RCV.NXT + RCV.WND when sent; never moves
    /// left).
    pub(super) adv: Seq,
    /// The peer's FIN, received out of order.
    pub(super) fin: Option<Seq>,
    /// Estimated size of the peer's full segments (for delayed ACKs and window updates).
    pub(super) mss: u32,
    /// In-order bytes received since our last ACK.
    pub(super) unacked: u32,
}

impl RecvSeq {
    pub(super) fn new(mss: u32) -> RecvSeq {
        RecvSeq {
            irs: Seq(0),
            nxt: Seq(0),
            adv: Seq(0),
            fin: None,
            mss,
            unacked: 0,
        }
    }
}

/// What the handshake negotiated (RFC 9293 §3.7.1 MSS, RFC 7323 §2 window scale and §3–§5
/// timestamps, RFC 2018 SACK), and the per-connection state of the timestamp option.
///
/// Invariants: without window scaling both shifts are 0 (RFC 7323 §2.2); `smss` =
/// `eff_mss` − `base_opt_len`; `base_opt_len` is the length of the timestamp option when
/// `ts_ok`, else 0.
#[derive(Debug)]
pub(super) struct Negotiated {
    /// Window scaling is in use (both SYNs carried the option).
    pub(super) ws_ok: bool,
    /// Timestamps are in use (RFC 7323 §3.2): every segment carries TSopt.
    pub(super) ts_ok: bool,
    /// SACK is in use (RFC 2018 §2).
    pub(super) sack_ok: bool,
    /// Snd.Wind.Shift: the shift the peer's window fields take (RFC 7323 §2.3; ≤ 14).
    pub(super) snd_wscale: u8,
    /// Rcv.Wind.Shift: the shift of the window fields we send.
    pub(super) rcv_wscale: u8,
    /// TS.Recent: the TSval to echo (RFC 7323 §4.3).
    pub(super) ts_recent: u32,
    /// When TS.Recent was last updated (for the 24-day PAWS idle limit, RFC 7323 §5.5).
    pub(super) ts_recent_at: u64,
    /// Per-connection offset of our timestamp clock (RFC 7323 §5.4).
    pub(super) ts_offset: u32,
    /// Our timestamp clock runs at 2^`ts_shift` ticks per millisecond: 1 (even TSvals only)
    /// on connections of a setup-offloaded listener, whose odd TSvals mark the NIC's SYN
    /// cookies (AccelTCP §4.1); 0 elsewhere.
    pub(super) ts_shift: u8,
    /// Last.ACK.sent: the ACK field of our last segment (RFC 7323 §4.3).
    pub(super) last_ack_sent: Seq,
    /// min(peer MSS, our MSS): the largest segment the path takes, options included.
    pub(super) eff_mss: u32,
    /// Sender MSS: payload of a full segment with the usual options (RFC 5681 SMSS).
    pub(super) smss: u32,
    /// Bytes of options on every segment (timestamps).
    pub(super) base_opt_len: u32,
}

impl Negotiated {
    /// Nothing negotiated yet: the default MSS (RFC 9293 §3.7.1) bounded by ours, `cfg_mss`.
    pub(super) fn new(iss: Seq, cfg_mss: u16) -> Negotiated {
        let eff_mss = (cfg_mss as u32).min(DEFAULT_MSS);
        Negotiated {
            ws_ok: false,
            ts_ok: false,
            sack_ok: false,
            snd_wscale: 0,
            rcv_wscale: 0,
            ts_recent: 0,
            ts_recent_at: 0,
            ts_offset: iss.0.rotate_left(13) ^ 0x9e37_79b9,
            ts_shift: 0,
            last_ack_sent: Seq(0),
            eff_mss,
            smss: eff_mss,
            base_opt_len: 0,
        }
    }
}

/// State flags and the actions an input or application call decided and the next
/// `Tcb::poll_transmit` carries out (RFC 9293 §3.10: "send an ACK", "send a RST", ...).
/// Closing the connection clears the pending actions except the RSTs.
#[derive(Debug)]
pub(super) struct ConnFlags {
    /// The write side is shut: a FIN follows the queued data.
    pub(super) fin_queued: bool,
    /// The application closed: no more reads (data arriving gets a RST, RFC 1122
    /// §4.2.2.13).
    pub(super) read_closed: bool,
    /// The peer's FIN was received in order.
    pub(super) fin_rcvd: bool,
    /// Our SYN (or SYN-ACK) is due.
    pub(super) syn_pending: bool,
    /// Our SYN (or SYN-ACK) went out at least once.
    pub(super) syn_sent: bool,
    /// Our SYN (or SYN-ACK) was retransmitted (Karn: no RTT sample from the handshake).
    pub(super) syn_rexmitted: bool,
    /// A RST for this connection is due (abort).
    pub(super) rst_pending: bool,
    /// A RST answering a segment is due, with this sequence number.
    pub(super) reply_rst: Option<Seq>,
    /// An ACK is due at once.
    pub(super) ack_now: bool,
    /// A retransmission is due at once (fast retransmit, RTO).
    pub(super) rexmit_pending: bool,
    /// A zero-window probe is due at once.
    pub(super) probe_now: bool,
    /// The persist timer fired with a non-zero window: send less than a full segment
    /// (RFC 9293 §3.8.6.2.1 SWS override).
    pub(super) override_sws: bool,
}

impl ConnFlags {
    pub(super) fn new() -> ConnFlags {
        ConnFlags {
            fin_queued: false,
            read_closed: false,
            fin_rcvd: false,
            syn_pending: true,
            syn_sent: false,
            syn_rexmitted: false,
            rst_pending: false,
            reply_rst: None,
            ack_now: false,
            rexmit_pending: false,
            probe_now: false,
            override_sws: false,
        }
    }
}

/// Timers and RTT estimation: one retransmission / persist / TIME_WAIT slot (RFC 6298, RFC
/// 9293 §3.8.6.1, §3.10.7), the delayed ACK (RFC 9293 §3.8.6.3) and the RTT estimator (RFC
/// 6298 with Karn's rule, RFC 7323 §4 samples from TSecr).
///
/// Invariants: `at` is meaningful only while `running` ≠ [`Timer::Off`]; `ack_at` = 0 means
/// no delayed ACK is pending.
#[derive(Debug)]
pub(super) struct Timers {
    /// Which timer runs.
    pub(super) running: Timer,
    /// When it expires.
    pub(super) at: u64,
    /// Delayed-ACK deadline (0: none).
    pub(super) ack_at: u64,
    /// When our SYN (or SYN-ACK) went out (an RTT sample when it was not retransmitted).
    pub(super) syn_sent_at: u64,
    /// Consecutive retransmissions (of the SYN, or RTO expiries) without progress (RFC 6298
    /// §5.5 backoff; the connection fails past the configured limit).
    pub(super) retries: u32,
    /// Unanswered zero-window probes.
    pub(super) probes: u32,
    /// Exponential backoff of the persist interval.
    pub(super) persist_shift: u32,
    /// SRTT, RTTVAR and RTO (RFC 6298).
    pub(super) rtt: RttEstimator,
    /// The segment being timed (its end, its send time), RFC 6298 with Karn's rule.
    pub(super) rtt_timed: Option<(Seq, u64)>,
    /// A retransmission made the running timing invalid: take the next sample from TSecr.
    pub(super) rtt_ambiguous: bool,
}

impl Timers {
    pub(super) fn new(cfg: &TcpConfig) -> Timers {
        Timers {
            running: Timer::Off,
            at: 0,
            ack_at: 0,
            syn_sent_at: 0,
            retries: 0,
            probes: 0,
            persist_shift: 0,
            rtt: RttEstimator::new(cfg.rto_initial_ns, cfg.rto_min_ns, cfg.rto_max_ns),
            rtt_timed: None,
            rtt_ambiguous: false,
        }
    }
}

/// Congestion control and loss recovery: the controller (RFC 5681 and the configured
/// algorithm), fast recovery (RFC 5681 §3.2, RFC 6582 NewReno), SACK-based recovery (RFC 6675
/// with its scoreboard, RFC 2018) and tail-loss probes (RFC 8985 §7).
///
/// Invariants: `cc` is none until the handshake completes (it is built then, with the SMSS
/// just negotiated); `recover`, `rxt_next`, `partial_seen` and `rescue_done` describe the
/// current recovery only while `in_recovery`.
#[derive(Debug)]
pub(super) struct Recovery {
    /// The congestion controller (none before the handshake completes).
    pub(super) cc: Option<Box<dyn CongestionControl>>,
    /// In fast recovery.
    pub(super) in_recovery: bool,
    /// RFC 6582 `recover` (one past the highest number sent when recovery began); also
    /// RFC 6675 RecoveryPoint.
    pub(super) recover: Seq,
    /// Duplicate ACKs in a row (RFC 5681 §2).
    pub(super) dupacks: u32,
    /// A partial ACK was seen in this recovery (RFC 6582 §3.2 step 5, "Impatient" variant:
    /// the timer is reset on the first one only).
    pub(super) partial_seen: bool,
    /// RFC 6675 HighRxt + 1.
    pub(super) rxt_next: Seq,
    /// The rescue retransmission (RFC 6675 §4 NextSeg rule 4) was sent in this recovery.
    pub(super) rescue_done: bool,
    /// Tail-loss probe deadline (0: none), after RFC 8985 §7.
    pub(super) tlp_at: u64,
    /// A probe went out since the last new ACK.
    pub(super) tlp_done: bool,
    /// The probe is due: send it on this poll.
    pub(super) tlp_fire: bool,
    /// What the peer's SACK blocks say it holds (RFC 6675 §3 scoreboard).
    pub(super) sb: Scoreboard,
}

impl Recovery {
    pub(super) fn new(iss: Seq) -> Recovery {
        Recovery {
            cc: None,
            in_recovery: false,
            recover: iss,
            dupacks: 0,
            partial_seen: false,
            rxt_next: iss,
            rescue_done: false,
            tlp_at: 0,
            tlp_done: false,
            tlp_fire: false,
            sb: Scoreboard::new(),
        }
    }
}

/// RFC 5961 §7 throttling of challenge ACKs (and of ACKs for unacceptable ACK fields):
/// at most `CHALLENGE_ACKS_PER_SEC` in the second that began at `at`.
#[derive(Debug, Default)]
pub(super) struct AckThrottle {
    /// Start of the current one-second window.
    pub(super) at: u64,
    /// ACKs sent in it.
    pub(super) n: u32,
}

//! The protocol-module interface: what a Tonic transport module sees and returns (Tonic §3.5,
//! App. D).
//!
//! A module is the *programmable* part of Tonic (Fig. 2, red boxes): the second stage of the
//! Incoming module (loss detection and recovery, congestion-control parameters on incoming
//! packets) and the Periodic Updates module (timeouts, timers and counters), plus a
//! [`ModuleConfig`] (the `user_configs.vh` of the paper: credit scheme, initial window, rate or
//! credit, timer values, user-state size). The fixed engines know nothing about any protocol
//! (Tonic §3.5): a module sees only the hook inputs below and acts only through
//! [`HookOutput`] and its per-flow user context.
//!
//! Everything here is plain data: fixed-size arrays and integers, `#[repr(C)]`, no heap, so that
//! the versioned C ABI (`offload-api::tonic_abi`) can mirror it field for field. Units:
//! segments are numbered per flow from 0 ([`SegId`]), times are nanoseconds ([`Nanos`]), rates
//! are bits per second, credit is bytes.
//!
//! Stability: this file is the contract between the engines and every module (built-in or
//! loaded). Add to it; do not change or remove what is here (bump
//! [`MODULE_INTERFACE_VERSION`] if that is ever unavoidable).

use super::{Nanos, SegId, TonicError};

/// Version of this interface; a loaded module must declare the same.
pub const MODULE_INTERFACE_VERSION: u32 = 1;

/// Largest window (bits in each window bitmap) the engines support (Tonic Tab. 4: 256).
pub const MAX_WINDOW_SEGMENTS: u32 = 256;

/// Default window bitmap size (Tonic §6.1: "maximum window size to 128 segments").
pub const DEFAULT_WINDOW_SEGMENTS: u32 = 128;

/// 64-bit words in a [`WindowBits`] (enough for [`MAX_WINDOW_SEGMENTS`]).
pub const WINDOW_WORDS: usize = (MAX_WINDOW_SEGMENTS / 64) as usize;

/// Selective-ack blocks one incoming packet may carry (TCP's SACK option holds at most 4;
/// Tonic's prototype used one, "can be extended to more", §6.1.1).
pub const MAX_SACK_BLOCKS: usize = 4;

/// 32-bit words of protocol-specific packet data passed through to modules (App. D
/// `pkt_data_in`).
pub const PKT_DATA_WORDS: usize = 4;

/// Largest per-flow user context of any credit scheme, in bytes (Tonic Tab. 4, window).
pub const MAX_USER_CTX_BYTES: u32 = 448;

/// Largest per-flow user context in 64-bit words.
pub const MAX_USER_CTX_WORDS: usize = MAX_USER_CTX_BYTES.div_ceil(8) as usize;

/// Highest network priority a module may ask for: eight levels, 0 (lowest) to 7 (highest), as
/// the strict-priority queues of commodity switches that Homa uses (Montazeri et al.,
/// SIGCOMM 2018, §3.4: "8 priority levels").
pub const MAX_PRIORITY: u8 = 7;

/// How a flow earns the right to send (Tonic §3.3.1; the paper's `CR_TYPE` values).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CreditScheme {
    /// Congestion window: at most `wnd-size` segments beyond the first unacknowledged one,
    /// enforced by the data delivery engine.
    Window = 0,
    /// Rate with a maximum burst: credit(t) = min(R·(t − t0) + c0, D), in the credit engine.
    Rate = 1,
    /// Grant tokens: credit = tokens received − bytes sent, in the credit engine.
    Grant = 2,
}

impl CreditScheme {
    /// The user-context limit of this scheme in bytes (Tonic Tab. 4: 448 / 340 / 256 B).
    pub const fn user_ctx_limit(self) -> u32 {
        match self {
            CreditScheme::Window => 448,
            CreditScheme::Rate => 340,
            CreditScheme::Grant => 256,
        }
    }

    /// The scheme's short name (`wnd`, `rate`, `token`, as in Tonic Tab. 3).
    pub const fn name(self) -> &'static str {
        match self {
            CreditScheme::Window => "wnd",
            CreditScheme::Rate => "rate",
            CreditScheme::Grant => "token",
        }
    }

    /// The scheme with ABI value `v`, if any.
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(CreditScheme::Window),
            1 => Some(CreditScheme::Rate),
            2 => Some(CreditScheme::Grant),
            _ => None,
        }
    }
}

impl std::fmt::Display for CreditScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of an incoming control packet (App. D `pkt_type`: "ACK, NACK, SACK, CNP, etc.").
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PktType {
    /// A cumulative acknowledgment.
    #[default]
    Ack = 0,
    /// A cumulative acknowledgment with selective-ack blocks.
    Sack = 1,
    /// A negative acknowledgment naming a lost segment ([`IncomingPkt::nack`]); RoCE NAKs and
    /// NDP NACKs of trimmed packets.
    Nack = 2,
    /// A congestion notification packet (RoCEv2 / DCQCN).
    Cnp = 3,
    /// A grant (NDP PULL) carrying [`IncomingPkt::grant_bytes`] of credit.
    Grant = 4,
}

impl PktType {
    /// The type with ABI value `v`, if any.
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(PktType::Ack),
            1 => Some(PktType::Sack),
            2 => Some(PktType::Nack),
            3 => Some(PktType::Cnp),
            4 => Some(PktType::Grant),
            _ => None,
        }
    }
}

/// A half-open range of segments `[start, end)`; empty when `end <= start`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SegRange {
    /// First segment of the range.
    pub start: SegId,
    /// One past the last segment.
    pub end: SegId,
}

impl SegRange {
    /// The range `[start, end)`.
    pub const fn new(start: SegId, end: SegId) -> Self {
        SegRange { start, end }
    }

    /// Whether the range holds no segment.
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// One incoming control packet for a flow, as the NIC's parser hands it to the engines (the
/// inputs of App. D's `incoming` module that come from the packet). Plain data; the fixed
/// Incoming stage reads the ack fields, the module may read everything.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IncomingPkt {
    /// What kind of packet this is.
    pub pkt_type: PktType,
    /// Valid entries in [`sack`](Self::sack).
    pub sack_cnt: u8,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Receiver window in segments, valid with [`FLAG_RCV_WND`](Self::FLAG_RCV_WND).
    pub rcv_wnd: u32,
    /// Cumulative ack: the next segment the receiver expects; every segment below it is
    /// acknowledged (App. D `cumulative_ack`; a duplicate ack repeats `wnd-start`). A value at
    /// or below `wnd-start` acknowledges nothing new.
    pub cumulative_ack: SegId,
    /// Selectively acknowledged ranges (App. D `selective_ack`, generalized to blocks).
    pub sack: [SegRange; MAX_SACK_BLOCKS],
    /// The segment a NACK or a trimmed-packet notification reports lost.
    pub nack: SegId,
    /// Grant tokens in bytes (NDP PULL), added to the flow's credit in the grant scheme.
    pub grant_bytes: u32,
    /// Bytes the receiver saw ECN-marked, when the protocol reports counts (DCTCP-style
    /// receivers may instead set [`FLAG_ECN_ECHO`](Self::FLAG_ECN_ECHO)).
    pub ecn_bytes: u32,
    /// Echoed transmit timestamp of the segment that triggered this packet, valid with
    /// [`FLAG_TS_ECHO`](Self::FLAG_TS_ECHO) (RTT sample = `now - ts_echo`).
    pub ts_echo: Nanos,
    /// Protocol-specific data (App. D `pkt_data_in`).
    pub data: [u32; PKT_DATA_WORDS],
}

impl IncomingPkt {
    /// The receiver echoed congestion experienced (TCP ECE, for ECN-based control).
    pub const FLAG_ECN_ECHO: u16 = 1 << 0;
    /// The packet reports a trimmed data packet (NDP header-only packet): [`nack`](Self::nack)
    /// names it.
    pub const FLAG_TRIMMED: u16 = 1 << 1;
    /// [`rcv_wnd`](Self::rcv_wnd) is valid.
    pub const FLAG_RCV_WND: u16 = 1 << 2;
    /// [`ts_echo`](Self::ts_echo) is valid.
    pub const FLAG_TS_ECHO: u16 = 1 << 3;

    /// A plain cumulative ack of every segment below `cum`.
    pub fn ack(cum: SegId) -> Self {
        IncomingPkt {
            cumulative_ack: cum,
            ..Default::default()
        }
    }

    /// A cumulative ack of `cum` with selective blocks (at most [`MAX_SACK_BLOCKS`] are kept).
    pub fn sack(cum: SegId, blocks: &[SegRange]) -> Self {
        let mut p = IncomingPkt {
            pkt_type: PktType::Sack,
            cumulative_ack: cum,
            ..Default::default()
        };
        let n = blocks.len().min(MAX_SACK_BLOCKS);
        p.sack[..n].copy_from_slice(&blocks[..n]);
        p.sack_cnt = n as u8;
        p
    }

    /// A NACK of segment `lost` carrying cumulative ack `cum`.
    pub fn nack(cum: SegId, lost: SegId) -> Self {
        IncomingPkt {
            pkt_type: PktType::Nack,
            cumulative_ack: cum,
            nack: lost,
            ..Default::default()
        }
    }

    /// A congestion notification packet.
    pub fn cnp() -> Self {
        IncomingPkt {
            pkt_type: PktType::Cnp,
            ..Default::default()
        }
    }

    /// A grant of `bytes` tokens.
    pub fn grant(bytes: u32) -> Self {
        IncomingPkt {
            pkt_type: PktType::Grant,
            grant_bytes: bytes,
            ..Default::default()
        }
    }

    /// Whether flag bit(s) `f` are all set.
    pub const fn has(&self, f: u16) -> bool {
        self.flags & f == f
    }

    /// The valid selective-ack blocks.
    pub fn sack_blocks(&self) -> &[SegRange] {
        &self.sack[..(self.sack_cnt as usize).min(MAX_SACK_BLOCKS)]
    }
}

/// A window bitmap as a module sees it: bit `i` is segment `wnd_start + i` (the engine
/// rotates its ring so that the head is bit 0). Read-only to modules (Tonic §3.5: "a limited
/// set of read-only bitmap operations").
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WindowBits {
    /// The bits, word 0 first, least significant bit first.
    pub words: [u64; WINDOW_WORDS],
}

impl WindowBits {
    /// Whether bit `i` (segment `wnd_start + i`) is set; false beyond the bitmap.
    pub const fn get(&self, i: u32) -> bool {
        if i >= MAX_WINDOW_SEGMENTS {
            return false;
        }
        self.words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// The first set bit at or after `from`, if any.
    pub fn find_first_set(&self, from: u32) -> Option<u32> {
        let mut w = (from / 64) as usize;
        if w >= WINDOW_WORDS {
            return None;
        }
        let mut bits = self.words[w] & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                return Some(w as u32 * 64 + bits.trailing_zeros());
            }
            w += 1;
            if w == WINDOW_WORDS {
                return None;
            }
            bits = self.words[w];
        }
    }

    /// The first clear bit at or after `from` within the first `limit` bits, if any.
    pub fn find_first_clear(&self, from: u32, limit: u32) -> Option<u32> {
        (from..limit.min(MAX_WINDOW_SEGMENTS)).find(|&i| !self.get(i))
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Number of set bits among the first `n`.
    pub fn count_ones_below(&self, n: u32) -> u32 {
        let n = n.min(MAX_WINDOW_SEGMENTS);
        let mut c = 0;
        for (w, word) in self.words.iter().enumerate() {
            let lo = w as u32 * 64;
            if n <= lo {
                break;
            }
            let take = n - lo;
            c += if take >= 64 {
                word.count_ones()
            } else {
                (word & ((1u64 << take) - 1)).count_ones()
            };
        }
        c
    }

    /// The highest set bit, if any.
    pub fn last_set(&self) -> Option<u32> {
        self.words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// Whether no bit is set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }
}

/// The per-flow state of the data delivery engine (Tonic Tab. 2) as a module sees it,
/// read-only. The bitmaps are window-relative (bit 0 = `wnd_start`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowView {
    /// `wnd-start`: the first unacknowledged segment.
    pub wnd_start: SegId,
    /// The next new segment to generate: `highest-sent + 1` (App. D / Verilog `next_new`).
    pub next_new: SegId,
    /// One past the last segment the host has made available (`tonic-tail`, §5).
    pub tail: SegId,
    /// `total-sent`: segments transmitted so far, retransmissions included.
    pub total_sent: u64,
    /// `rtx-timer` period: how long after a reset the retransmission timer expires.
    pub rtx_timer_amount: Nanos,
    /// When the retransmission timer expires; 0 when it is not armed.
    pub rtx_deadline: Nanos,
    /// The current rate in bits per second (rate scheme; 0 otherwise).
    pub rate_bps: u64,
    /// `wnd-size`: the module's window in segments (the data delivery engine also applies
    /// `rcv_wnd` and the bitmap size).
    pub wnd_size: u32,
    /// The receiver's advertised window in segments (`u32::MAX` when none was advertised).
    pub rcv_wnd: u32,
    /// Segments the window bitmaps track (64, 128 or 256).
    pub window_capacity: u32,
    /// `outstanding-cnt`: generated segment addresses not yet transmitted.
    pub outstanding_cnt: u32,
    /// Segment size in bytes (every segment but a final small one).
    pub mss: u32,
    /// `is-idle`: the flow has nothing to generate (no new data, nothing marked).
    pub is_idle: bool,
    /// `acked`: selectively acknowledged segments.
    pub acked: WindowBits,
    /// `marked-for-rtx`: segments marked lost and not yet retransmitted.
    pub marked_for_rtx: WindowBits,
    /// `rtx-cnt`: segments retransmitted at least once (one bit per segment, §3.2.2).
    pub rtx_cnt: WindowBits,
}

impl FlowView {
    /// Segments sent and not cumulatively acknowledged (`highest-sent + 1 - wnd-start`).
    pub fn sent_out(&self) -> u64 {
        self.next_new.saturating_sub(self.wnd_start)
    }

    /// One past the last segment that has left the credit engine, assuming the
    /// `outstanding_cnt` addresses still in its ring (§3.1) are the newest generated ones:
    /// what "sent" means when marking losses (a segment still in the ring is not lost).
    pub fn transmitted_end(&self) -> SegId {
        self.next_new
            .saturating_sub(self.outstanding_cnt as u64)
            .max(self.wnd_start)
    }
}

/// Inputs of the Incoming hook (§3.5, App. D port list): the packet, what the fixed stage made
/// of it, and the flow's state *after* the fixed stage.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IncomingInput {
    /// Current time in nanoseconds.
    pub now: Nanos,
    /// The packet.
    pub pkt: IncomingPkt,
    /// Segments newly acknowledged by this packet, cumulatively or selectively.
    pub newly_acked_cnt: u32,
    /// `wnd-start` before the packet.
    pub old_wnd_start: SegId,
    /// `wnd-start` after the fixed stage (`max(old, cumulative_ack)`).
    pub new_wnd_start: SegId,
    /// The flow's state after the fixed stage.
    pub flow: FlowView,
}

/// What the Incoming hook's fast path ([`TonicModule::incoming_new_ack`]) is given: an
/// incoming packet whose fixed stage moved `wnd-start` forward, and the flow's `wnd-size`
/// before the hook. A subset of [`IncomingInput`], read in place of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewAckInput<'a> {
    /// The packet.
    pub pkt: &'a IncomingPkt,
    /// Segments newly acknowledged by the packet, cumulatively or selectively.
    pub newly_acked_cnt: u32,
    /// `wnd-size` before the hook ([`FlowView::wnd_size`]).
    pub wnd_size: u32,
    /// `wnd-start` before the packet.
    pub old_wnd_start: SegId,
    /// `wnd-start` after the fixed stage; above `old_wnd_start`.
    pub new_wnd_start: SegId,
    /// The next new segment to send ([`FlowView::next_new`]).
    pub next_new: SegId,
}

/// What the Incoming hook's fast path decided: the hook outputs `wnd_size` (as
/// [`HookOutput::set_wnd_size`]), a retransmission timer restart
/// ([`HookOutput::reset_rtx_timer`]) and, with `rtx_timer_amount`, a new timer period
/// ([`HookOutput::set_rtx_timer_amount`]); nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewAckOutput {
    /// New `wnd-size` in segments.
    pub wnd_size: u32,
    /// New retransmission timer period, if any.
    pub rtx_timer_amount: Option<Nanos>,
}

impl NewAckOutput {
    /// The same decision as a [`HookOutput`].
    pub fn to_hook_output(&self) -> HookOutput {
        let mut o = HookOutput::default();
        self.write(&mut o);
        o
    }

    /// Sets the decision's outputs in `out`.
    #[inline(always)]
    pub fn write(&self, out: &mut HookOutput) {
        out.set_wnd_size(self.wnd_size);
        if let Some(ns) = self.rtx_timer_amount {
            out.set_rtx_timer_amount(ns);
        }
        out.reset_rtx_timer();
    }
}

/// Inputs of the Periodic Updates hook: the flow's state and whether its retransmission timer
/// expired (Verilog `timeout_expired`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodicInput {
    /// Current time in nanoseconds.
    pub now: Nanos,
    /// The retransmission timer expired (`now >= rtx_deadline`); the engine has disarmed it.
    pub timeout_expired: bool,
    /// The flow's state.
    pub flow: FlowView,
}

/// What a hook asks the fixed engines to do (§3.5 / App. D outputs). Each field is applied
/// only when its bit is set in [`set`](Self::set); the setter methods set both.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookOutput {
    /// `OUT_*` bits: which fields are valid.
    pub set: u32,
    /// Segments to mark lost for retransmission (App. D `mark_for_rtx_from/to`), clipped to
    /// the sent part of the window; acknowledged segments are never marked.
    pub mark_rtx: SegRange,
    /// Segments to mark acknowledged (for protocols that decode acks from packet data).
    pub mark_acked: SegRange,
    /// A new cumulative ack (moves `wnd-start` forward only).
    pub cum_ack: SegId,
    /// New `wnd-size` in segments (App. D `wnd_size_out`).
    pub wnd_size: u32,
    /// Credit to add, in bytes (grant scheme: retransmission credit on timeouts, §3.3.2).
    pub add_credit: u32,
    /// New rate in bits per second (rate scheme), forwarded to the credit engine (§3.3.3).
    pub rate_bps: u64,
    /// New retransmission timer period (App. D `rtx_timer_amount_out`).
    pub rtx_timer_amount: Nanos,
    /// New network priority of the flow's packets from now on, 0 (lowest) to
    /// [`MAX_PRIORITY`] (highest): the 802.1p / DSCP class the NIC stamps on each data packet
    /// ([`TxSegment::priority`](crate::tonic::TxSegment::priority)). Homa's grants carry the
    /// priority the receiver wants the sender to use (Montazeri et al., SIGCOMM 2018, §3.4).
    /// Added after interface version 1 without changing the C ABI: loaded modules cannot set
    /// it and their flows keep [`ModuleConfig::init_priority`].
    pub priority: u8,
}

impl HookOutput {
    /// [`mark_rtx`](Self::mark_rtx) is valid.
    pub const OUT_MARK_RTX: u32 = 1 << 0;
    /// Only segments never retransmitted (`rtx-cnt` clear) are marked from `mark_rtx`.
    pub const OUT_MARK_RTX_FRESH_ONLY: u32 = 1 << 1;
    /// [`mark_acked`](Self::mark_acked) is valid.
    pub const OUT_MARK_ACKED: u32 = 1 << 2;
    /// [`cum_ack`](Self::cum_ack) is valid.
    pub const OUT_CUM_ACK: u32 = 1 << 3;
    /// [`wnd_size`](Self::wnd_size) is valid.
    pub const OUT_WND_SIZE: u32 = 1 << 4;
    /// [`add_credit`](Self::add_credit) is valid.
    pub const OUT_ADD_CREDIT: u32 = 1 << 5;
    /// [`rate_bps`](Self::rate_bps) is valid.
    pub const OUT_RATE: u32 = 1 << 6;
    /// [`rtx_timer_amount`](Self::rtx_timer_amount) is valid.
    pub const OUT_RTX_TIMER_AMOUNT: u32 = 1 << 7;
    /// Restart the retransmission timer at `now + period` (App. D `reset_rtx_timer`); the
    /// engine disarms it instead when nothing is in flight.
    pub const OUT_RESET_RTX_TIMER: u32 = 1 << 8;
    /// Disarm the retransmission timer.
    pub const OUT_STOP_RTX_TIMER: u32 = 1 << 9;
    /// [`priority`](Self::priority) is valid (in-tree modules only; see the field).
    pub const OUT_PRIORITY: u32 = 1 << 10;

    /// Whether bit(s) `bits` are all set.
    pub const fn has(&self, bits: u32) -> bool {
        self.set & bits == bits
    }

    /// Mark `[from, to)` lost for retransmission.
    pub fn mark_for_rtx(&mut self, from: SegId, to: SegId) {
        self.mark_rtx = SegRange::new(from, to);
        self.set |= Self::OUT_MARK_RTX;
    }

    /// Mark the never-retransmitted segments of `[from, to)` lost.
    pub fn mark_fresh_for_rtx(&mut self, from: SegId, to: SegId) {
        self.mark_for_rtx(from, to);
        self.set |= Self::OUT_MARK_RTX_FRESH_ONLY;
    }

    /// Mark `[from, to)` acknowledged.
    pub fn mark_acked(&mut self, from: SegId, to: SegId) {
        self.mark_acked = SegRange::new(from, to);
        self.set |= Self::OUT_MARK_ACKED;
    }

    /// Move the cumulative ack (`wnd-start`) to `seg`.
    pub fn set_cum_ack(&mut self, seg: SegId) {
        self.cum_ack = seg;
        self.set |= Self::OUT_CUM_ACK;
    }

    /// Set `wnd-size` to `w` segments.
    pub fn set_wnd_size(&mut self, w: u32) {
        self.wnd_size = w;
        self.set |= Self::OUT_WND_SIZE;
    }

    /// Add `bytes` of credit (grant scheme).
    pub fn add_credit(&mut self, bytes: u32) {
        self.add_credit = self.add_credit.saturating_add(bytes);
        self.set |= Self::OUT_ADD_CREDIT;
    }

    /// Set the rate to `bps` bits per second (rate scheme).
    pub fn set_rate(&mut self, bps: u64) {
        self.rate_bps = bps;
        self.set |= Self::OUT_RATE;
    }

    /// Set the retransmission timer period.
    pub fn set_rtx_timer_amount(&mut self, ns: Nanos) {
        self.rtx_timer_amount = ns;
        self.set |= Self::OUT_RTX_TIMER_AMOUNT;
    }

    /// Restart the retransmission timer.
    pub fn reset_rtx_timer(&mut self) {
        self.set |= Self::OUT_RESET_RTX_TIMER;
    }

    /// Disarm the retransmission timer.
    pub fn stop_rtx_timer(&mut self) {
        self.set |= Self::OUT_STOP_RTX_TIMER;
    }

    /// Send the flow's next packets at network priority `p` (clamped to [`MAX_PRIORITY`]).
    pub fn set_priority(&mut self, p: u8) {
        self.priority = p.min(MAX_PRIORITY);
        self.set |= Self::OUT_PRIORITY;
    }
}

/// Which hook's user-context update wins when both update one flow in the same cycle (§3.4:
/// "we rely on the user to specify which updated variables should be prioritized").
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CtxPriority {
    /// The Incoming hook's update wins.
    #[default]
    Incoming = 0,
    /// The Periodic Updates hook's update wins.
    Periodic = 1,
}

/// A module's configuration (the paper's `user_configs.vh`): credit scheme, state size and
/// initial values. Checked by [`validate`](Self::validate) when an engine is built.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleConfig {
    /// Which credit scheme the credit engine runs for this module.
    pub credit_scheme: CreditScheme,
    /// Which hook wins a same-cycle user-context conflict.
    pub ctx_priority: CtxPriority,
    /// Call Periodic Updates on every sweep visit, not only on timeouts (DCQCN timers,
    /// counters). When false the engine skips the hook for flows whose timer has not expired.
    pub periodic_every_visit: bool,
    /// Bytes of per-flow user context the module uses; at most
    /// [`CreditScheme::user_ctx_limit`] (Tonic Tab. 4).
    pub user_ctx_bytes: u32,
    /// Initial `wnd-size` in segments (window scheme: the initial congestion window; other
    /// schemes: the limited window of §3.2.2).
    pub init_wnd_size: u32,
    /// Initial rate in bits per second (rate scheme).
    pub init_rate_bps: u64,
    /// Maximum burst D in bytes (rate scheme): credit never exceeds it.
    pub max_burst_bytes: u32,
    /// Credit a new flow starts with, in bytes (grant scheme: NDP's first-RTT window; rate
    /// scheme: initial c0).
    pub init_credit_bytes: u32,
    /// Initial retransmission timer period.
    pub init_rtx_timer_ns: Nanos,
    /// Network priority of a new flow's packets, 0 to [`MAX_PRIORITY`] (Homa: the
    /// unscheduled priority). Added after interface version 1 without changing the C ABI:
    /// loaded modules get the default, 0.
    pub init_priority: u8,
}

impl Default for ModuleConfig {
    fn default() -> Self {
        ModuleConfig {
            credit_scheme: CreditScheme::Window,
            ctx_priority: CtxPriority::Incoming,
            periodic_every_visit: false,
            user_ctx_bytes: 0,
            init_wnd_size: 10,
            init_rate_bps: 0,
            max_burst_bytes: 0,
            init_credit_bytes: 0,
            init_rtx_timer_ns: 200_000_000,
            init_priority: 0,
        }
    }
}

impl ModuleConfig {
    /// Words of user context per flow (`user_ctx_bytes` rounded up to 8-byte words).
    pub const fn user_ctx_words(&self) -> usize {
        self.user_ctx_bytes.div_ceil(8) as usize
    }

    /// Checks the configuration of module `name`: the user context within the scheme's
    /// limit (Tab. 4), a non-zero initial window and timer, a rate-scheme burst.
    pub fn validate(&self, name: &str) -> Result<(), TonicError> {
        let limit = self.credit_scheme.user_ctx_limit();
        if self.user_ctx_bytes > limit {
            return Err(TonicError::UserCtxTooLarge {
                module: name.to_string(),
                bytes: self.user_ctx_bytes,
                limit,
                scheme: self.credit_scheme,
            });
        }
        let bad = |what: &str| {
            Err(TonicError::InvalidModuleConfig {
                module: name.to_string(),
                reason: what.to_string(),
            })
        };
        if self.init_wnd_size == 0 {
            return bad("init_wnd_size must be at least 1 segment");
        }
        if self.init_rtx_timer_ns == 0 {
            return bad("init_rtx_timer_ns must be positive");
        }
        if self.credit_scheme == CreditScheme::Rate && self.max_burst_bytes == 0 {
            return bad("the rate scheme needs max_burst_bytes (D) > 0");
        }
        if self.init_priority > MAX_PRIORITY {
            return bad("init_priority must be 0 to 7");
        }
        Ok(())
    }
}

/// A Tonic protocol module: the two programmable hooks plus its configuration (§3.5).
///
/// Modules hold no per-flow state of their own: everything per flow lives in the user
/// context (`ctx`, [`ModuleConfig::user_ctx_words`] words, zeroed at flow creation and then
/// set by [`init_flow`](Self::init_flow)), so one module value serves every flow, like the
/// paper's per-cycle combinational logic. Hooks must not panic and should be O(1).
pub trait TonicModule: Send + Sync {
    /// The module's registry name (e.g. `newreno`).
    fn name(&self) -> &str;

    /// The module's configuration; read once when an engine is built.
    fn config(&self) -> ModuleConfig;

    /// Sets up a new flow's user context (the paper's initial user variables). Default: all
    /// zero.
    fn init_flow(&self, now: Nanos, flow: &FlowView, ctx: &mut [u64]) {
        let _ = (now, flow, ctx);
    }

    /// A new flow's initial `wnd-size` in segments when it depends on the flow (its MSS),
    /// overriding [`ModuleConfig::init_wnd_size`]; `None` (the default) keeps that. Homa sizes
    /// the window to its unscheduled bytes so that no segment beyond what may be sent waits
    /// in the credit engine's ring. Added after interface version 1 (loaded modules: `None`).
    fn init_wnd_size(&self, flow: &FlowView) -> Option<u32> {
        let _ = flow;
        None
    }

    /// The programmable stage of Incoming: loss detection and recovery and congestion-control
    /// parameters on an incoming packet.
    fn incoming(&self, input: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput);

    /// The common case of [`incoming`](Self::incoming), tried first when the fixed stage
    /// moved `wnd-start` forward: a module whose hook, for this packet and context, would
    /// only set the window and restart the retransmission timer (a new ack outside loss
    /// recovery) may decide here from the few inputs it reads, without the engine building
    /// the whole [`IncomingInput`] (on a CPU, that copy and the test of every output bit
    /// are about a tenth of a decision's instructions).
    /// Returns `None`, with `ctx` untouched, to have the engine call
    /// [`incoming`](Self::incoming) instead; the default always does, and so do loaded
    /// modules.
    ///
    /// Invariant: `Some(o)` leaves `ctx` exactly as [`incoming`](Self::incoming) would on the
    /// full input, whose outputs would be [`NewAckOutput::to_hook_output`] of `o`.
    fn incoming_new_ack(&self, input: &NewAckInput<'_>, ctx: &mut [u64]) -> Option<NewAckOutput> {
        let _ = (input, ctx);
        None
    }

    /// Whether [`incoming_new_ack`](Self::incoming_new_ack) may answer at all; read once when
    /// an engine is built, which then never calls it for a module that says no (saving a
    /// call per ack). Default: `false`; a module that implements the fast path says `true`.
    fn has_new_ack_fast_path(&self) -> bool {
        false
    }

    /// Periodic Updates: timeouts and periodic timers and counters.
    fn periodic(&self, input: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput);

    /// Merges the user contexts that both hooks produced for one flow in the same cycle
    /// (§3.4). `before` is the context at the start of the cycle. Default: the context of the
    /// [`ModuleConfig::ctx_priority`] hook if it changed anything, else the other one's.
    fn merge_user_ctx(
        &self,
        before: &[u64],
        from_incoming: &[u64],
        from_periodic: &[u64],
        merged: &mut [u64],
    ) {
        let (first, second) = match self.config().ctx_priority {
            CtxPriority::Incoming => (from_incoming, from_periodic),
            CtxPriority::Periodic => (from_periodic, from_incoming),
        };
        let pick = if first != before { first } else { second };
        merged.copy_from_slice(pick);
    }
}

/// The low 32 bits of a context word (a helper for packing user variables).
pub const fn lo32(w: u64) -> u32 {
    w as u32
}

/// The high 32 bits of a context word.
pub const fn hi32(w: u64) -> u32 {
    (w >> 32) as u32
}

/// A context word from two 32-bit halves.
pub const fn pack32(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bits_queries() {
        let mut b = WindowBits::default();
        b.words[0] = 1 << 5 | 1 << 63;
        b.words[2] = 1 << 1;
        assert!(b.get(5) && b.get(63) && b.get(129) && !b.get(6) && !b.get(300));
        assert_eq!(b.find_first_set(0), Some(5));
        assert_eq!(b.find_first_set(6), Some(63));
        assert_eq!(b.find_first_set(64), Some(129));
        assert_eq!(b.find_first_set(130), None);
        assert_eq!(b.find_first_clear(5, 10), Some(6));
        assert_eq!(b.count_ones(), 3);
        assert_eq!(b.count_ones_below(64), 2);
        assert_eq!(b.count_ones_below(63), 1);
        assert_eq!(b.last_set(), Some(129));
    }

    #[test]
    fn config_limits_follow_table_4() {
        assert_eq!(CreditScheme::Window.user_ctx_limit(), 448);
        assert_eq!(CreditScheme::Rate.user_ctx_limit(), 340);
        assert_eq!(CreditScheme::Grant.user_ctx_limit(), 256);
        let mut c = ModuleConfig {
            credit_scheme: CreditScheme::Rate,
            user_ctx_bytes: 341,
            max_burst_bytes: 3000,
            ..Default::default()
        };
        assert!(matches!(
            c.validate("x"),
            Err(TonicError::UserCtxTooLarge { limit: 340, .. })
        ));
        c.user_ctx_bytes = 340;
        assert_eq!(c.user_ctx_words(), 43);
        assert!(c.validate("x").is_ok());
        c.max_burst_bytes = 0;
        assert!(c.validate("x").is_err());
    }

    #[test]
    fn output_setters_set_bits() {
        let mut o = HookOutput::default();
        o.mark_fresh_for_rtx(3, 5);
        o.set_wnd_size(7);
        o.reset_rtx_timer();
        assert!(o.has(HookOutput::OUT_MARK_RTX | HookOutput::OUT_MARK_RTX_FRESH_ONLY));
        assert!(o.has(HookOutput::OUT_WND_SIZE | HookOutput::OUT_RESET_RTX_TIMER));
        assert!(!o.has(HookOutput::OUT_RATE));
        assert_eq!(o.mark_rtx, SegRange::new(3, 5));
        assert_eq!(pack32(lo32(0xdead_beef_0000_0001), 9), 9 << 32 | 1);
    }
}

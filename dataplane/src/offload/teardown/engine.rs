//! The teardown engine: the per-flow state machine of connections whose close the host handed
//! to the NIC (AccelTCP §4.2, App. A "Connection teardown"), sans-I/O.
//!
//! A 0x090B message ([`TeardownEngine::offload`]) brings the connection's sequence space,
//! windows, timestamps and a TSO packet with every byte still to send. The engine takes a flow
//! id from a fixed-size slab, keeps a small state per flow plus the unacknowledged bytes, cuts
//! the bytes into MSS-sized segments and sends them and the FIN. From then on it owns the
//! connection (single ownership, AccelTCP §3) until the close completes:
//!
//! - ACKs advance snd.una and free acknowledged bytes; three duplicate ACKs retransmit the
//!   first unacknowledged segment (RFC 5681 §3.2), and the retransmission timeout resends it
//!   with exponential backoff (RFC 6298 §5.4–5.6), capped at [`TeardownConfig::max_rto_ns`];
//!   after [`TeardownConfig::max_retries`] timeouts in a row the engine gives up, sends a RST
//!   and frees the flow (as RFC 9293 §3.8.3's R2 threshold);
//! - the close follows RFC 9293 §3.10.7.4: an active close goes FIN_WAIT_1 → FIN_WAIT_2 →
//!   TIME_WAIT (or FIN_WAIT_1 → CLOSING → TIME_WAIT on a simultaneous close), a passive one
//!   (the peer's FIN came first) LAST_ACK → CLOSED; TIME_WAIT lasts
//!   [`TeardownConfig::time_wait_ns`] and a retransmitted FIN in it is acknowledged and
//!   restarts it;
//! - every segment is checked for sequence acceptability (RFC 9293 §3.10.7.4), RSTs and SYNs
//!   follow RFC 5961 (exact RST: close; RST or SYN inside the window: challenge ACK), and a RST
//!   in TIME_WAIT is ignored (RFC 1337). Segments with a bad checksum or malformed options are
//!   dropped. Every drop is counted by reason in [`TeardownStats`]; no frame makes the engine
//!   panic.
//!
//! Data from the peer after the host closed: the application has closed its socket, so
//! nothing can read it. The engine acknowledges in-order data and discards it (counted in
//! [`TeardownStats::peer_data`]) rather than answering with a RST as Linux does for data to a
//! closed socket: a RST would make the peer throw away the response it has not read yet, and
//! the peer learns from our FIN that nothing more will be read. Out-of-order data is not kept
//! (no reassembly on the NIC); it gets a duplicate ACK.
//!
//! The NIC sends within the peer's window only and does no congestion control: the host
//! offloads a close only when the remaining data fits the peer's window (AccelTCP §4.2, first
//! condition). While the window is shut, the retransmission timer resends the first
//! unacknowledged segment, which serves as a window probe.
//!
//! Segments carry the connection's Ethernet addresses (those of the 0x090B frame), the IPv4
//! TTL, TOS and DF of the TSO packet, and, when RFC 7323 timestamps are on, a TSval that
//! continues from the host's at one tick per millisecond and echoes TS.Recent; PAWS is not
//! applied (a closing connection sees few segments, and RFC 9293 sequence checks remain).

use std::collections::HashMap;

use offload_api::msg::{self, MsgError, TcpState, TeardownFrame, TeardownRepr};
use offload_api::wire::tcp::{self, TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::{EthernetFrame, EthernetRepr, Ipv4Error, Ipv4Packet, Ipv4Repr, Seq};

use super::timer::FlowTimers;

mod rx;
use crate::net::csum;
use crate::net::parse::{ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP, IPV4_HDR_LEN};
use crate::wheel::{WheelConfig, WheelConfigError};

/// Settings of the teardown engine of one NIC lcore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeardownConfig {
    /// Slab size: most connections being closed at once (AccelTCP §4.2: the number of
    /// offloaded flows is bounded by NIC memory; the host keeps under its threshold). A
    /// handover beyond it is refused and counted.
    pub max_flows: usize,
    /// Length of TIME_WAIT, nanoseconds (2·MSL, RFC 9293 §3.6.1; Linux uses 60 s).
    pub time_wait_ns: u64,
    /// Longest wait in FIN_WAIT_2 for the peer's FIN once ours is acknowledged,
    /// nanoseconds (the application has closed, so nobody else ends the connection;
    /// Linux's `tcp_fin_timeout`, 60 s). Kept apart from `time_wait_ns`: a short TIME_WAIT
    /// must not cut off a peer whose FIN is merely late.
    pub fin_wait2_ns: u64,
    /// Retransmission timeouts in a row after which the engine gives up and resets the
    /// connection (RFC 9293 §3.8.3, R2).
    pub max_retries: u32,
    /// Largest retransmission timeout after backoff, nanoseconds (RFC 6298 §2.5 allows a
    /// maximum of at least 60 s).
    pub max_rto_ns: u64,
    /// Smallest retransmission timeout, nanoseconds (an RTO of 0 from the host is raised to
    /// it).
    pub min_rto_ns: u64,
    /// Timer bitmaps of the wheel (AccelTCP §4.2, Figure 6); with `wheel_tick_ns` it spans
    /// one revolution, and longer timeouts take several (a round count per flow).
    pub wheel_slots: usize,
    /// Interval between two timer bitmaps, nanoseconds: timers fire late by less than one.
    pub wheel_tick_ns: u64,
    /// Report the number of teardowns in progress to the host (0x090E type 0x13, AccelTCP
    /// App. A) whenever it changed.
    pub count_report: bool,
}

impl Default for TeardownConfig {
    fn default() -> Self {
        TeardownConfig {
            max_flows: 65_536,
            time_wait_ns: 60_000_000_000,
            fin_wait2_ns: 60_000_000_000,
            max_retries: 8,
            max_rto_ns: 60_000_000_000,
            min_rto_ns: 1_000_000,
            wheel_slots: 1_024,
            wheel_tick_ns: 100_000,
            count_report: true,
        }
    }
}

/// Why a teardown offload was refused. The host has already forgotten the connection, so a
/// refusal means the connection is dropped without a close (the host's threshold is meant to
/// prevent this).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TeardownError {
    /// The message's header or fields are unusable.
    #[error("bad teardown message: {0}")]
    Message(#[from] MsgError),
    /// The TSO packet is not an IPv4/TCP packet starting at snd.una.
    #[error("bad teardown payload: {0}")]
    Payload(&'static str),
    /// A state the NIC does not take over (only ESTABLISHED, CLOSE_WAIT, FIN_WAIT_1,
    /// CLOSING and LAST_ACK are).
    #[error("teardown in state {0:?} not supported")]
    State(TcpState),
    /// The slab is full.
    #[error("teardown table full")]
    Full,
    /// A live teardown (not in TIME_WAIT) holds the same 4-tuple.
    #[error("teardown of this 4-tuple already in progress")]
    Duplicate,
}

/// Counters of the teardown engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeardownStats {
    /// Connections taken over.
    pub offloaded: u64,
    /// Handovers refused because the slab was full.
    pub refused_full: u64,
    /// Handovers refused for a bad message, payload or state, or a duplicate 4-tuple.
    pub refused_bad: u64,
    /// Segments retransmitted on a retransmission timeout (and the go-back-N resends after
    /// it).
    pub retransmits_rto: u64,
    /// Segments retransmitted on three duplicate ACKs.
    pub retransmits_fast: u64,
    /// Connections that entered TIME_WAIT.
    pub time_wait: u64,
    /// Connections closed normally (LAST_ACK acknowledged, or TIME_WAIT over).
    pub completed: u64,
    /// Connections reset by the peer.
    pub peer_rst: u64,
    /// Connections given up after `max_retries` timeouts (a RST was sent).
    pub gave_up: u64,
    /// FIN_WAIT_2 connections freed because the peer's FIN did not come within
    /// `fin_wait2_ns`.
    pub fin_wait2_timeouts: u64,
    /// TIME_WAIT connections ended early by a new SYN of the same 4-tuple (RFC 9293
    /// §3.10.7.4 / RFC 6191).
    pub tw_reused: u64,
    /// Segments sent (data, FIN, ACK, RST).
    pub segments_tx: u64,
    /// Segments the port did not take.
    pub tx_failed: u64,
    /// Peer segments carrying data after the host closed (acknowledged and discarded).
    pub peer_data: u64,
    /// Retransmitted FINs of the peer acknowledged (LAST_ACK, CLOSING, TIME_WAIT).
    pub dup_fin_acked: u64,
    /// Teardown counts sent to the host.
    pub count_reports: u64,
    /// Dropped: bad TCP checksum.
    pub bad_checksum: u64,
    /// Dropped: malformed TCP header or options.
    pub bad_options: u64,
    /// Dropped: outside the receive window (RFC 9293 §3.10.7.4; answered with an ACK).
    pub unacceptable: u64,
    /// Dropped: acknowledges data never sent (answered with an ACK).
    pub bad_ack: u64,
    /// Dropped: no ACK flag.
    pub no_ack: u64,
    /// SYNs in a synchronized state (RFC 5961 §4: challenge ACK).
    pub bad_syn: u64,
    /// RSTs inside the window but not at rcv.nxt (RFC 5961 §3: challenge ACK) or outside it.
    pub bad_rst: u64,
    /// Out-of-order data or FIN (duplicate ACK sent, not kept).
    pub out_of_order: u64,
}

/// Where a flow stands (the RFC 9293 §3.3.2 states a NIC-owned close can be in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowState {
    /// Our FIN is queued or sent, not acknowledged; the peer has not closed.
    FinWait1,
    /// Our FIN is acknowledged; waiting for the peer's.
    FinWait2,
    /// Both FINs sent, ours not yet acknowledged (simultaneous close).
    Closing,
    /// The peer closed first; our FIN is not yet acknowledged.
    LastAck,
    /// Both sides closed and acknowledged; waiting 2·MSL.
    TimeWait,
}

impl FlowState {
    /// The RFC 9293 state code of the offload API.
    pub fn tcp_state(self) -> TcpState {
        match self {
            FlowState::FinWait1 => TcpState::FinWait1,
            FlowState::FinWait2 => TcpState::FinWait2,
            FlowState::Closing => TcpState::Closing,
            FlowState::LastAck => TcpState::LastAck,
            FlowState::TimeWait => TcpState::TimeWait,
        }
    }
}

/// Why a segment was (re)sent, for the counters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    New,
    Rto,
    Fast,
}

/// What the engine did with a segment from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxOutcome {
    /// Not a segment of a connection the engine closes: pass it on.
    NotMine,
    /// Taken (used, or dropped and counted).
    Consumed,
}

/// Sends a whole Ethernet frame (checksums filled) out of NIC port `port`; false when the
/// port did not take it.
pub type Tx<'a> = &'a mut dyn FnMut(u16, &[u8]) -> bool;

/// Key of a flow: (remote IP, local IP, remote port, local port).
type Key = ([u8; 4], [u8; 4], u16, u16);

/// The state of one connection being closed on the NIC (AccelTCP §4.2's "small flow state",
/// plus the unacknowledged bytes).
///
/// Invariant: `una ≤ nxt ≤ max ≤ end + 1`, `data` holds the bytes `[una, end)` not yet
/// acknowledged (`data.len() == end − una` while `una ≤ end`), and the FIN has sequence
/// number `end`.
#[derive(Debug)]
struct Flow {
    key: Key,
    local_port: u16,
    remote_port: u16,
    port: u16,
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    tos: u8,
    ttl: u8,
    df: bool,
    ip_id: u16,
    state: FlowState,
    /// Our FIN completes TIME_WAIT when acknowledged (we closed first or simultaneously).
    una: Seq,
    nxt: Seq,
    max: Seq,
    end: Seq,
    rcv_nxt: Seq,
    snd_wnd: u32,
    snd_wscale: u8,
    rcv_wnd: u32,
    rcv_wscale: u8,
    mss: u32,
    /// (TS.Recent, host TSval at handover, handover time).
    ts: Option<(u32, u32, u64)>,
    rto_ns: u64,
    retries: u32,
    dupacks: u8,
    /// A fast retransmit was done; no other until snd.una passes this.
    recover: Option<Seq>,
    data: Vec<u8>,
}

impl Flow {
    fn fin_acked(&self) -> bool {
        self.una == self.end + 1
    }

    fn window_field(&self) -> u16 {
        (self.rcv_wnd >> self.rcv_wscale).min(u16::MAX as u32) as u16
    }

    fn ts_val(&self, now: u64) -> Option<(u32, u32)> {
        self.ts.map(|(recent, val, at)| {
            let ticks = now.saturating_sub(at) / 1_000_000;
            (val.wrapping_add(ticks as u32), recent)
        })
    }
}

/// The teardown engine of one NIC lcore. See the module documentation.
#[derive(Debug)]
pub struct TeardownEngine {
    cfg: TeardownConfig,
    flows: Vec<Option<Flow>>,
    free: Vec<u32>,
    by_key: HashMap<Key, u32>,
    timers: FlowTimers,
    stats: TeardownStats,
    live: usize,
    scratch: Vec<u8>,
}

impl TeardownEngine {
    /// An empty engine; fails when the timer wheel's dimensions are unusable (zero slots or
    /// tick, more than 2^32 flows).
    pub fn new(cfg: TeardownConfig) -> Result<TeardownEngine, WheelConfigError> {
        let timers = FlowTimers::new(WheelConfig {
            ids: cfg.max_flows.max(1),
            slots: cfg.wheel_slots,
            tick_ns: cfg.wheel_tick_ns,
            regions: 1,
        })?;
        Ok(TeardownEngine {
            flows: Vec::new(),
            free: Vec::new(),
            by_key: HashMap::new(),
            timers,
            stats: TeardownStats::default(),
            live: 0,
            scratch: Vec::with_capacity(2048),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TeardownConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> &TeardownStats {
        &self.stats
    }

    /// Connections being closed (TIME_WAIT included): the count reported to the host.
    pub fn in_progress(&self) -> usize {
        self.live
    }

    /// Records a teardown count sent to the host (for [`TeardownStats::count_reports`]).
    pub fn count_report_sent(&mut self) {
        self.stats.count_reports += 1;
    }

    /// Number of armed timers (one per flow while it waits for an ACK or in TIME_WAIT).
    pub fn timers_armed(&self) -> usize {
        self.timers.armed()
    }

    /// The state of the flow of `tuple` (local and remote as the NIC's side sees them).
    pub fn state_of(&self, tuple: msg::FourTuple) -> Option<FlowState> {
        let k = (
            tuple.remote_ip,
            tuple.local_ip,
            tuple.remote_port,
            tuple.local_port,
        );
        let id = *self.by_key.get(&k)?;
        self.flows[id as usize].as_ref().map(|f| f.state)
    }

    /// When a timer (retransmission, FIN_WAIT_2 limit, end of TIME_WAIT) may next expire:
    /// the wheel's bound, never late, possibly early by up to one tick.
    pub fn next_deadline(&self) -> Option<u64> {
        self.timers.next_deadline()
    }

    /// Takes over a connection from a whole 0x090B Ethernet frame received on NIC port `port`
    /// and sends its data and FIN (AccelTCP §4.2: "segments the data into TCP packets, and
    /// send them out"). Returns the flow id.
    pub fn offload(
        &mut self,
        port: u16,
        frame: &[u8],
        now: u64,
        tx: Tx<'_>,
    ) -> Result<u32, TeardownError> {
        let r = self.take(port, frame, now);
        let id = match r {
            Ok(id) => id,
            Err(TeardownError::Full) => {
                self.stats.refused_full += 1;
                return r;
            }
            Err(_) => {
                self.stats.refused_bad += 1;
                return r;
            }
        };
        self.stats.offloaded += 1;
        self.transmit_new(id, now, tx);
        self.arm_rto(id, now);
        Ok(id)
    }

    fn take(&mut self, port: u16, frame: &[u8], now: u64) -> Result<u32, TeardownError> {
        let view = TeardownFrame::new_checked(frame.get(msg::ETH_HEADER_LEN..).unwrap_or(&[]))?;
        let r = TeardownRepr::parse(&view)?;
        let payload = view.payload();
        let state = match r.state {
            TcpState::Established | TcpState::FinWait1 => FlowState::FinWait1,
            TcpState::Closing => FlowState::Closing,
            TcpState::CloseWait | TcpState::LastAck => FlowState::LastAck,
            s => return Err(TeardownError::State(s)),
        };
        // The TSO packet: IPv4 without fragmentation, TCP, first byte at snd.una.
        let ip = match Ipv4Packet::new_checked(payload) {
            Ok(ip) => ip,
            Err(Ipv4Error::BadVersion) => return Err(TeardownError::Payload("not IPv4")),
            Err(Ipv4Error::Truncated) if payload.len() < IPV4_HDR_LEN => {
                return Err(TeardownError::Payload("not IPv4"))
            }
            Err(_) => return Err(TeardownError::Payload("bad IPv4 lengths")),
        };
        if ip.protocol() != IPPROTO_TCP {
            return Err(TeardownError::Payload("not TCP"));
        }
        if ip.is_fragment() {
            return Err(TeardownError::Payload("fragment"));
        }
        let t = TcpPacket::new_checked(ip.payload_slice())
            .map_err(|_| TeardownError::Payload("bad TCP header"))?;
        if t.seq_number() != Seq(r.snd_una) {
            return Err(TeardownError::Payload("sequence number is not snd.una"));
        }
        let local_ip = ip.src_addr();
        let remote_ip = ip.dst_addr();
        let key = (remote_ip, local_ip, t.dst_port(), t.src_port());
        if let Some(&old) = self.by_key.get(&key) {
            if self.flows[old as usize]
                .as_ref()
                .is_some_and(|f| f.state == FlowState::TimeWait)
            {
                // The host reused the 4-tuple: the new connection replaces the old one.
                self.stats.tw_reused += 1;
                self.free_flow(old);
            } else {
                return Err(TeardownError::Duplicate);
            }
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.flows.len() < self.cfg.max_flows => {
                self.flows.push(None);
                (self.flows.len() - 1) as u32
            }
            None => return Err(TeardownError::Full),
        };
        let data = t.payload().to_vec();
        let una = Seq(r.snd_una);
        let end = una + data.len() as u32;
        let rto = (r.rto_us as u64 * 1_000).clamp(self.cfg.min_rto_ns, self.cfg.max_rto_ns);
        // Bytes in [snd.una, snd.nxt) already went out once: they are not sent again unless
        // the retransmission timer or duplicate ACKs say so. A snd.nxt outside the data
        // (none sent, or nonsense) starts from snd.una.
        let nxt = Seq(r.snd_nxt);
        let sent = if nxt.ge(una) && nxt.le(end) { nxt } else { una };
        let f = Flow {
            key,
            local_port: t.src_port(),
            remote_port: t.dst_port(),
            port,
            // The message view above holds the Ethernet header.
            dst_mac: EthernetFrame::new_unchecked(frame).dst_addr(),
            src_mac: EthernetFrame::new_unchecked(frame).src_addr(),
            tos: ip.dscp_ecn(),
            ttl: if ip.ttl() == 0 { 64 } else { ip.ttl() },
            df: ip.dont_frag(),
            ip_id: ip.ident(),
            state,
            una,
            nxt: sent,
            max: sent,
            end,
            rcv_nxt: Seq(r.rcv_nxt),
            snd_wnd: r.snd_wnd,
            snd_wscale: r.snd_wscale,
            rcv_wnd: r.rcv_wnd,
            rcv_wscale: r.rcv_wscale,
            mss: (r.mss as u32).max(64),
            ts: r.timestamps.map(|ts| (ts.ts_recent, ts.ts_val, now)),
            rto_ns: rto,
            retries: 0,
            dupacks: 0,
            recover: None,
            data,
        };
        self.flows[id as usize] = Some(f);
        self.by_key.insert(key, id);
        self.live += 1;
        Ok(id)
    }

    fn free_flow(&mut self, id: u32) {
        if let Some(f) = self.flows.get_mut(id as usize).and_then(Option::take) {
            self.by_key.remove(&f.key);
            self.timers.disarm(id);
            self.free.push(id);
            self.live -= 1;
        }
    }

    fn arm_rto(&mut self, id: u32, now: u64) {
        let Some(f) = self.flows[id as usize].as_ref() else {
            return;
        };
        if f.una.lt(f.max) || f.nxt.lt(f.end + 1) {
            self.timers.arm(id, now, f.rto_ns);
        } else {
            self.timers.disarm(id);
        }
    }

    /// Sends new segments of flow `id` from snd.nxt within the peer's window, the FIN with
    /// (or after) the last byte.
    fn transmit_new(&mut self, id: u32, now: u64, tx: Tx<'_>) {
        loop {
            let Some(f) = self.flows[id as usize].as_mut() else {
                return;
            };
            if f.nxt == f.end + 1 {
                return;
            }
            let wnd_end = f.una + f.snd_wnd;
            let left = (f.end - f.nxt).max(0) as u32;
            let room = (wnd_end - f.nxt).max(0) as u32;
            let len = left.min(f.mss).min(room);
            if len == 0 && left > 0 {
                return; // window shut: the retransmission timer probes
            }
            let why = if f.nxt.lt(f.max) { Why::Rto } else { Why::New };
            let seq = f.nxt;
            if !self.send_segment(id, seq, len, now, why, tx) {
                return;
            }
        }
    }

    /// Sends `len` bytes from `seq` (plus the FIN when they end at it) and advances snd.nxt
    /// and snd.max. False when nothing could be sent.
    fn send_segment(
        &mut self,
        id: u32,
        seq: Seq,
        len: u32,
        now: u64,
        why: Why,
        tx: Tx<'_>,
    ) -> bool {
        let Some(f) = self.flows[id as usize].as_mut() else {
            return false;
        };
        let fin = seq + len == f.end;
        if len == 0 && !fin {
            return false;
        }
        let off = (seq - f.una).max(0) as usize;
        if f.data.len() < off + len as usize {
            return false;
        }
        let mut flags = TcpFlags::ACK;
        if fin {
            flags = flags | TcpFlags::FIN;
        }
        if len > 0 && (fin || seq + len == f.end) {
            flags = flags | TcpFlags::PSH;
        }
        let data = std::mem::take(&mut f.data);
        build(
            &mut self.scratch,
            f,
            seq,
            flags,
            &data[off..off + len as usize],
            now,
        );
        f.data = data;
        let nxt = seq + len + fin as u32;
        f.nxt = f.nxt.max(nxt);
        if nxt.gt(f.max) {
            f.max = nxt;
        }
        match why {
            Why::New => {}
            Why::Rto => self.stats.retransmits_rto += 1,
            Why::Fast => self.stats.retransmits_fast += 1,
        }
        let port = f.port;
        self.emit(port, tx);
        true
    }

    /// Sends a pure ACK (also the challenge ACK of RFC 5961).
    fn send_ack(&mut self, id: u32, now: u64, tx: Tx<'_>) {
        let Some(f) = self.flows[id as usize].as_mut() else {
            return;
        };
        let seq = f.max;
        build(&mut self.scratch, f, seq, TcpFlags::ACK, &[], now);
        let port = f.port;
        self.emit(port, tx);
    }

    fn emit(&mut self, port: u16, tx: Tx<'_>) {
        if tx(port, &self.scratch) {
            self.stats.segments_tx += 1;
        } else {
            self.stats.tx_failed += 1;
        }
    }

    /// A timer of flow `id` expired at `now`: the end of TIME_WAIT (the flow is freed), or a
    /// retransmission timeout (RFC 6298 §5.4–5.6: resend the first unacknowledged segment,
    /// double the RTO up to the cap; give up with a RST after `max_retries`).
    pub fn on_timer(&mut self, id: u32, now: u64, tx: Tx<'_>) {
        let Some(f) = self.flows.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        match f.state {
            FlowState::TimeWait => {
                self.stats.completed += 1;
                self.free_flow(id);
                return;
            }
            FlowState::FinWait2 => {
                self.stats.fin_wait2_timeouts += 1;
                self.free_flow(id);
                return;
            }
            _ => {}
        }
        if f.retries >= self.cfg.max_retries {
            let (seq, port) = (f.max, f.port);
            build(
                &mut self.scratch,
                f,
                seq,
                TcpFlags::RST | TcpFlags::ACK,
                &[],
                now,
            );
            self.emit(port, tx);
            self.stats.gave_up += 1;
            self.free_flow(id);
            return;
        }
        f.retries += 1;
        f.rto_ns = (f.rto_ns.saturating_mul(2)).min(self.cfg.max_rto_ns);
        f.dupacks = 0;
        f.recover = None;
        // Go back: resend one segment from snd.una (a window probe when the window is shut);
        // the rest follows as ACKs come back.
        f.nxt = f.una;
        let una = f.una;
        let len = ((f.end - f.una).max(0) as u32).min(f.mss);
        self.send_segment(id, una, len, now, Why::Rto, tx);
        self.timers.arm(
            id,
            now,
            self.flows[id as usize].as_ref().map_or(0, |f| f.rto_ns),
        );
    }

    /// Runs every timer due at `now` ([`Self::on_timer`]).
    pub fn advance(&mut self, now: u64, tx: Tx<'_>) {
        let mut due = Vec::new();
        self.timers.advance(now, |id| due.push(id));
        for id in due {
            self.on_timer(id, now, tx);
        }
    }

    /// A SYN the host sends for `tuple`'s 4-tuple (a new connection it opens on a port it
    /// forgot): a TIME_WAIT flow of that 4-tuple ends (RFC 6191 reuse). True when one did.
    pub fn host_syn(&mut self, src: [u8; 4], dst: [u8; 4], src_port: u16, dst_port: u16) -> bool {
        let k = (dst, src, dst_port, src_port);
        let Some(&id) = self.by_key.get(&k) else {
            return false;
        };
        if self.flows[id as usize]
            .as_ref()
            .is_some_and(|f| f.state == FlowState::TimeWait)
        {
            self.stats.tw_reused += 1;
            self.free_flow(id);
            return true;
        }
        false
    }
}

/// Builds an Ethernet/IPv4/TCP segment of flow `f` in `out`: ACK of rcv.nxt, the flow's
/// advertised window, timestamps when on, `payload`, both checksums.
fn build(out: &mut Vec<u8>, f: &mut Flow, seq: Seq, flags: TcpFlags, payload: &[u8], now: u64) {
    let options = TcpOptions {
        timestamp: f.ts_val(now),
        ..TcpOptions::default()
    };
    let h = TcpHeader {
        src_port: f.local_port,
        dst_port: f.remote_port,
        seq,
        ack: f.rcv_nxt,
        flags,
        window: f.window_field(),
        options,
    };
    let thl = tcp::header_len(&h);
    out.clear();
    out.resize(ETH_HDR_LEN + IPV4_HDR_LEN + thl, 0);
    let mut eth = EthernetFrame::new_unchecked(&mut out[..]);
    EthernetRepr {
        dst: f.dst_mac,
        src: f.src_mac,
        ethertype: ETHERTYPE_IPV4,
    }
    .emit(&mut eth);
    f.ip_id = f.ip_id.wrapping_add(1);
    Ipv4Repr {
        src: f.key.1,
        dst: f.key.0,
        protocol: IPPROTO_TCP,
        payload_len: thl + payload.len(),
        ttl: f.ttl,
        ident: f.ip_id,
        dont_frag: f.df,
        dscp_ecn: f.tos,
    }
    .emit(&mut Ipv4Packet::new_unchecked(eth.payload_mut()));
    tcp::emit(&h, &mut out[ETH_HDR_LEN + IPV4_HDR_LEN..]);
    out.extend_from_slice(payload);
    let _ = csum::fill_checksums(out);
}

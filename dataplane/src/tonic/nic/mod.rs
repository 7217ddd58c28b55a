//! Tonic flows of TCP connections on a NIC lcore (Tonic NSDI '20 §5 "Integrating Tonic into
//! the Transport Layer", §3 for the engines; `docs/architecture.md`, "Life of a frame through
//! an NIC lcore", steps 3, 5 and 6).
//!
//! The host hands the *sender* side of a `TCP_TONIC` connection to the NIC with a
//! `TonicFlowAdd` (4-tuple, MSS, first sequence number, module name). From then on the NIC
//! owns snd.una, snd.nxt and snd.wnd, retransmissions and congestion control, in a
//! [`TonicEngine`] per protocol module (built through the [`Registry`] the first time a flow
//! names the module):
//!
//! - `TonicTail` messages carry the host's new send-buffer bytes (the DMA of the send
//!   buffer, §5's `tonic-tail`); the NIC keeps them until they are acknowledged;
//! - incoming ACKs of a Tonic flow are classified before the host path (data path step 3):
//!   the cumulative ACK and the SACK blocks are mapped to segment ids
//!   ([`TonicEngine::byte_to_seg`]), the peer's advertised window to `rcv_wnd` in segments,
//!   and the result goes to [`TonicEngine::incoming`]. A pure ACK ends there; a segment that
//!   also carries data, a FIN or a RST goes on to the host, which keeps the receive side and
//!   connection management;
//! - every loop iteration runs Periodic Updates (step 5: retransmission timeouts) and
//!   transmits (step 6): each [`TonicEngine::next_segment`] decision becomes an
//!   Ethernet/IPv4/TCP segment built from the DMA'd bytes, with `seq = init_seq + offset`,
//!   the host's current ACK number and window, and both checksums;
//! - as acknowledgments advance, `TonicDelivered` (cumulative snd.una) goes to the host, which
//!   frees its send buffer.
//!
//! The host keeps sending its own ACKs for data it receives; the NIC learns the ACK number
//! and window its segments carry from those frames and writes its own snd.nxt into their
//! sequence number (the host does not know it). The host sends one such ACK right after the
//! flow add.
//!
//! Window scaling: the flow add carries the peer's shift and the NIC applies it to every
//! window field it reads (RFC 7323 §2.3); its own segments copy the host's (already scaled)
//! window field.
//!
//! Limits: segments carry no TCP options (the host does not negotiate timestamps for these
//! connections); a segment that is already acknowledged when the scheduler picks it is
//! skipped (its bytes may be freed).
//!
//! Zero window: Tonic has no persist timer; the engine adds one (RFC 9293 §3.8.6.1). While
//! the peer's window is shut and nothing is in flight, every retransmission-timeout interval
//! the NIC sends a window probe, an ACK with sequence number `snd.una − 1` and no data, as
//! Linux does; the peer answers with its current window, so a lost window update does not
//! stall the connection. Successive probes back off exponentially (RFC 9293 §3.8.6.1,
//! SHLD-30): the engine's persist timer fires every retransmission-timeout interval, and the
//! NIC sends on the first firing, then after 2, 4, 8, ... intervals, at most
//! [`MAX_PROBE_GAP_NS`] apart, until the window opens.
//!
//! Per-flow traces (time, cwnd, snd.una, snd.nxt, retransmissions, timeouts) are recorded on
//! every ACK and timeout and written as CSV by [`TonicNic::write_trace_csv`].

use std::collections::{HashMap, VecDeque};
use std::io::Write;

use offload_api::msg::{
    self, AckStatus, FourTuple, InstallAckRepr, Message, MsgType, TonicDeliveredRepr,
    TonicFlowAddRepr,
};

use crate::buf::PacketBuf;
use crate::net::csum;
use crate::net::stack::NicStack;
use crate::offload::{HostTcp, OffloadIo};
use crate::tonic::module::{IncomingPkt, PktType, SegRange, MAX_SACK_BLOCKS};
use crate::tonic::modules::{ModuleParams, TcpState};
use crate::tonic::registry::Registry;
use crate::tonic::TxSegment;
use crate::tonic::{EngineParams, FlowId, Nanos, TonicEngine};

mod offload;
mod trace;
mod wire;

pub use trace::TracePoint;
use wire::build_segment;

/// Longest gap between two window probes of one flow: 60 s, RFC 6298 §2.5's least bound
/// for a retransmission timeout's maximum (Linux uses 120 s).
pub const MAX_PROBE_GAP_NS: Nanos = 60_000_000_000;

/// Built-in modules whose user context is App. D's TCP congestion state (for the traces).
const TCP_STATE_MODULES: [&str; 4] = ["reno", "newreno", "sack", "dctcp"];

/// Settings of the Tonic side of a NIC lcore.
#[derive(Clone, Copy, Debug)]
pub struct TonicNicConfig {
    /// Sizes of each engine (flows per module, window bitmap, ring depth N).
    pub engine: EngineParams,
    /// Parameters the modules are built with (initial window, RTO, ...).
    pub module: ModuleParams,
    /// Flows Periodic Updates visits per loop iteration (§3.2.3).
    pub periodic_budget: u32,
    /// Most segments transmitted per loop iteration (the tx burst).
    pub tx_burst: usize,
    /// Most trace points kept per flow.
    pub trace_limit: usize,
}

impl Default for TonicNicConfig {
    fn default() -> Self {
        TonicNicConfig {
            engine: EngineParams::default(),
            module: ModuleParams::default(),
            periodic_budget: 64,
            tx_burst: 32,
            trace_limit: 1 << 21,
        }
    }
}

/// Counters of the Tonic side of a NIC lcore (the statistics interface §5 proposes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TonicNicStats {
    /// Flows added.
    pub flows_added: u64,
    /// Flow adds refused (unknown module, table full, bad request).
    pub flows_refused: u64,
    /// Flows removed.
    pub flows_removed: u64,
    /// `TonicTail` messages taken.
    pub tail_msgs: u64,
    /// Data bytes they carried.
    pub tail_bytes: u64,
    /// `TonicTail` messages refused (unknown flow, gap, tail contract broken).
    pub tail_refused: u64,
    /// ACKs of Tonic flows taken from the wire.
    pub acks_in: u64,
    /// Of which pure ACKs that ended on the NIC.
    pub acks_consumed: u64,
    /// Segments of Tonic flows handed on to the host (data, FIN, RST, SYN).
    pub to_host: u64,
    /// Of which segments with data or a FIN whose ACK fields (a new cumulative ACK or SACK
    /// blocks, and the window) the engine took: the peer's ACKs riding on its own data.
    pub data_acks: u64,
    /// ACKs whose number was outside what the NIC sent (ignored).
    pub bad_acks: u64,
    /// Window updates (same ACK, new window) not given to the module as duplicates.
    pub window_updates: u64,
    /// Zero-window probes sent (the peer's window was shut with nothing in flight for one
    /// retransmission-timeout interval).
    pub window_probes: u64,
    /// Persist-timer firings that sent no probe because the probes' exponential backoff had
    /// not run out yet.
    pub probes_backed_off: u64,
    /// Segments transmitted.
    pub segments_tx: u64,
    /// Of which retransmissions.
    pub retransmits: u64,
    /// Scheduled segments skipped as already acknowledged.
    pub stale_skipped: u64,
    /// Segments not sent: no buffer, or no ACK number / MAC yet.
    pub tx_failed: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// `TonicDelivered` messages sent to the host.
    pub delivered_msgs: u64,
    /// Host frames of Tonic flows whose sequence number the NIC wrote.
    pub host_frames: u64,
    /// Install acks that could not go to the host (PCIe link ring full or no host link).
    pub acks_unsent: u64,
}

/// What [`TonicNic::rx`] decided for a frame from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxVerdict {
    /// Not a segment of a Tonic flow: the usual path.
    NotTonic,
    /// A pure ACK of a Tonic flow, fully handled on the NIC.
    Consumed,
    /// A segment of a Tonic flow that the host must also see (data, FIN, RST, SYN).
    ToHost,
}

struct Flow {
    host_id: u32,
    engine: usize,
    eflow: FlowId,
    port: u16,
    tuple: FourTuple,
    src_mac: [u8; 6],
    dst_mac: Option<[u8; 6]>,
    init_seq: u32,
    mss: u32,
    /// DMA'd send-buffer bytes `[base, tail)`.
    data: VecDeque<u8>,
    base: u64,
    tail: u64,
    /// Cumulatively acknowledged bytes (snd.una − init_seq).
    acked: u64,
    /// Last value reported to the host.
    reported: u64,
    /// One past the highest byte sent.
    hi_sent: u64,
    /// The host's ACK number and window for our segments.
    ack_no: Option<u32>,
    wnd: u16,
    /// The peer's last window, bytes.
    peer_wnd: u32,
    /// The shift of the peer's window field (RFC 7323 §2.3; 0 without window scaling).
    snd_wscale: u8,
    ip_id: u16,
    retransmits: u64,
    trace: Vec<TracePoint>,
    /// Gap to the next window probe (doubles after each, RFC 9293 §3.8.6.1); 0 while the
    /// peer's window is open.
    probe_gap: Nanos,
    /// No window probe before this time.
    probe_next: Nanos,
}

impl Flow {
    /// The ACK number and next-hop MAC its segments carry, resolving the MAC first if
    /// needed; None until the host has sent an ACK and ARP has an answer.
    fn addressing<B: PacketBuf>(
        &mut self,
        stack: &mut NicStack<B>,
        now: Nanos,
    ) -> Option<(u32, [u8; 6])> {
        if self.dst_mac.is_none() {
            self.dst_mac = stack.arp_lookup(self.port as usize, self.tuple.remote_ip, now);
        }
        Some((self.ack_no?, self.dst_mac?))
    }
}

struct EngineSlot {
    name: String,
    engine: TonicEngine,
    /// Engine flow id → flow slot.
    slot_of: Vec<usize>,
    free_ids: Vec<FlowId>,
}

/// The Tonic side of one NIC lcore. See the module documentation.
pub struct TonicNic {
    cfg: TonicNicConfig,
    registry: Registry,
    engines: Vec<EngineSlot>,
    flows: Vec<Option<Flow>>,
    free_slots: Vec<usize>,
    by_tuple: HashMap<u64, usize>,
    by_host: HashMap<u32, usize>,
    to_report: Vec<usize>,
    live: usize,
    stats: TonicNicStats,
    scratch: Vec<u8>,
    /// The decisions of one tx burst (`TonicEngine::next_segments`), `tx_burst` long.
    decided: Vec<TxSegment>,
}

/// Flow-table key: remote address, remote port, local port (one host address per port).
#[inline]
fn key(remote_ip: [u8; 4], remote_port: u16, local_port: u16) -> u64 {
    ((u32::from_be_bytes(remote_ip) as u64) << 32)
        | ((remote_port as u64) << 16)
        | local_port as u64
}

impl Default for TonicNic {
    fn default() -> Self {
        TonicNic::new(TonicNicConfig::default())
    }
}

impl TonicNic {
    /// No flows yet; engines are built when a flow first names their module.
    pub fn new(cfg: TonicNicConfig) -> Self {
        TonicNic {
            cfg,
            registry: Registry::builtin(),
            engines: Vec::new(),
            flows: Vec::new(),
            free_slots: Vec::new(),
            by_tuple: HashMap::new(),
            by_host: HashMap::new(),
            to_report: Vec::new(),
            live: 0,
            stats: TonicNicStats::default(),
            scratch: Vec::with_capacity(2048),
            decided: Vec::new(),
        }
    }

    /// Replaces the configuration; applies to engines built afterwards.
    pub fn set_config(&mut self, cfg: TonicNicConfig) {
        self.cfg = cfg;
    }

    /// The configuration.
    pub fn config(&self) -> &TonicNicConfig {
        &self.cfg
    }

    /// The module registry (to register loaded modules).
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// True while some flow exists (the per-packet checks run only then).
    #[inline(always)]
    pub fn has_flows(&self) -> bool {
        self.live > 0
    }

    /// Counters.
    pub fn stats(&self) -> &TonicNicStats {
        &self.stats
    }

    /// The engine running module `name`, if one was built (for its counters).
    pub fn engine(&self, name: &str) -> Option<&TonicEngine> {
        self.engines
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.engine)
    }

    /// The earliest retransmission deadline of any flow (for callers that jump in virtual
    /// time).
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.flows
            .iter()
            .flatten()
            .filter(|f| f.acked < f.tail)
            .filter_map(|f| {
                let v = self.engines[f.engine].engine.flow_view(f.eflow).ok()?;
                (v.rtx_deadline != 0).then_some(v.rtx_deadline)
            })
            .min()
    }

    /// A Tonic message from the host (EtherType 0x090E): flow add, remove or tail update.
    /// Returns the install ack to send back, if the message asks for one.
    pub fn host_message<B: PacketBuf>(
        &mut self,
        frame: &[u8],
        stack: &mut NicStack<B>,
        now: Nanos,
    ) -> Option<Message> {
        let p = msg::parse_frame(frame).ok()?;
        match p.message {
            Message::TonicFlowAdd(a) => {
                let status = self.add_flow(&a, stack, now);
                Some(Message::InstallAck(InstallAckRepr {
                    request_id: a.request_id,
                    request_type: MsgType::TonicFlowAdd,
                    status,
                }))
            }
            Message::TonicFlowRemove(r) => {
                let status = self.remove_flow(r.flow_id);
                Some(Message::InstallAck(InstallAckRepr {
                    request_id: r.request_id,
                    request_type: MsgType::TonicFlowRemove,
                    status,
                }))
            }
            Message::TonicTail(t) => {
                if !self.tail(t.flow_id, t.tail, p.payload) {
                    self.stats.tail_refused += 1;
                }
                None
            }
            _ => None,
        }
    }

    fn add_flow<B: PacketBuf>(
        &mut self,
        a: &TonicFlowAddRepr,
        stack: &mut NicStack<B>,
        now: Nanos,
    ) -> AckStatus {
        let port = a.port as usize;
        let k = key(a.tuple.remote_ip, a.tuple.remote_port, a.tuple.local_port);
        let refuse = |s: &mut Self, st| {
            s.stats.flows_refused += 1;
            st
        };
        if port >= stack.ports() || a.mss == 0 {
            return refuse(self, AckStatus::Invalid);
        }
        if self.by_tuple.contains_key(&k) || self.live_host_id(a.flow_id) {
            return refuse(self, AckStatus::Exists);
        }
        let name = a.module.as_str();
        let ei = match self.engines.iter().position(|e| e.name == name) {
            Some(i) => i,
            None => {
                let Ok(m) = self.registry.create(name, &self.cfg.module) else {
                    return refuse(self, AckStatus::Unsupported);
                };
                let Ok(engine) = TonicEngine::new(m, self.cfg.engine) else {
                    return refuse(self, AckStatus::Unsupported);
                };
                let n = self.cfg.engine.max_flows;
                self.engines.push(EngineSlot {
                    name: name.to_string(),
                    engine,
                    slot_of: vec![usize::MAX; n as usize],
                    free_ids: (0..n).rev().collect(),
                });
                self.engines.len() - 1
            }
        };
        let Some(eflow) = self.engines[ei].free_ids.pop() else {
            return refuse(self, AckStatus::TableFull);
        };
        if self.engines[ei]
            .engine
            .add_flow(eflow, a.mss as u32, now)
            .is_err()
        {
            self.engines[ei].free_ids.push(eflow);
            return refuse(self, AckStatus::Invalid);
        }
        let src_mac = if a.local_mac == [0; 6] {
            stack.iface(port).mac
        } else {
            a.local_mac
        };
        let dst_mac = if a.remote_mac == [0; 6] {
            let m = stack.arp_lookup(port, a.tuple.remote_ip, now);
            if m.is_none() {
                stack.resolve(port, a.tuple.remote_ip, now);
            }
            m
        } else {
            Some(a.remote_mac)
        };
        // A removed flow's slot keeps its trace until the host id is reused.
        if let Some(old) = self.by_host.remove(&a.flow_id) {
            self.flows[old] = None;
            self.free_slots.push(old);
        }
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.flows.push(None);
                self.flows.len() - 1
            }
        };
        self.flows[slot] = Some(Flow {
            host_id: a.flow_id,
            engine: ei,
            eflow,
            port: a.port,
            tuple: a.tuple,
            src_mac,
            dst_mac,
            init_seq: a.init_seq,
            mss: a.mss as u32,
            data: VecDeque::new(),
            base: 0,
            tail: 0,
            acked: 0,
            reported: 0,
            hi_sent: 0,
            ack_no: None,
            wnd: 0,
            peer_wnd: 0,
            snd_wscale: a.snd_wscale,
            ip_id: 0,
            retransmits: 0,
            trace: Vec::new(),
            probe_gap: 0,
            probe_next: 0,
        });
        self.engines[ei].slot_of[eflow as usize] = slot;
        self.by_tuple.insert(k, slot);
        self.by_host.insert(a.flow_id, slot);
        self.live += 1;
        self.stats.flows_added += 1;
        AckStatus::Ok
    }

    fn live_host_id(&self, host_id: u32) -> bool {
        self.by_host
            .get(&host_id)
            .and_then(|&s| self.flows[s].as_ref())
            .is_some_and(|f| f.eflow != FlowId::MAX)
    }

    fn remove_flow(&mut self, host_id: u32) -> AckStatus {
        let Some(&slot) = self.by_host.get(&host_id) else {
            return AckStatus::NotFound;
        };
        let Some(f) = self.flows[slot].as_mut() else {
            return AckStatus::NotFound;
        };
        if f.eflow == FlowId::MAX {
            return AckStatus::NotFound;
        }
        let e = &mut self.engines[f.engine];
        let _ = e.engine.remove_flow(f.eflow);
        e.slot_of[f.eflow as usize] = usize::MAX;
        e.free_ids.push(f.eflow);
        f.eflow = FlowId::MAX;
        f.data = VecDeque::new();
        self.by_tuple.remove(&key(
            f.tuple.remote_ip,
            f.tuple.remote_port,
            f.tuple.local_port,
        ));
        self.live -= 1;
        self.stats.flows_removed += 1;
        AckStatus::Ok
    }

    /// New send-buffer bytes: `data` ends just before sequence number `tail`.
    fn tail(&mut self, host_id: u32, tail: u32, data: &[u8]) -> bool {
        let Some(&slot) = self.by_host.get(&host_id) else {
            return false;
        };
        let Some(f) = self.flows[slot].as_mut() else {
            return false;
        };
        if f.eflow == FlowId::MAX {
            return false;
        }
        // The new tail as a byte offset (it moves forward by less than 2^31).
        let rel = tail.wrapping_sub(f.init_seq.wrapping_add(f.tail as u32)) as i32;
        if rel < 0 || rel as usize != data.len() {
            return false;
        }
        let new_tail = f.tail + rel as u64;
        if self.engines[f.engine]
            .engine
            .update_tail(f.eflow, new_tail)
            .is_err()
        {
            return false;
        }
        f.data.extend(data);
        f.tail = new_tail;
        self.stats.tail_msgs += 1;
        self.stats.tail_bytes += data.len() as u64;
        true
    }

    /// Periodic Updates, transmission and delivery notifications (data path steps 5 and 6).
    /// `io.to_port(port, frame)` sends one built frame out of a port (false: not sent);
    /// `io.to_host`
    /// sends one message frame over the PCIe link (false: ring full, retried next time).
    pub fn poll<B: PacketBuf>(
        &mut self,
        now: Nanos,
        stack: &mut NicStack<B>,
        io: &mut dyn OffloadIo,
    ) {
        for ei in 0..self.engines.len() {
            let rep = self.engines[ei]
                .engine
                .periodic(now, self.cfg.periodic_budget);
            if rep.timeouts > 0 {
                self.stats.timeouts += rep.timeouts as u64;
                self.note_timeouts(ei, now);
            }
            while let Some(ef) = self.engines[ei].engine.pop_probe() {
                self.send_probe(ei, ef, now, stack, io);
            }
        }
        // Up to `tx_burst` scheduling decisions, each engine's in one burst (the same
        // decisions as one `next_segment` call after another).
        if self.decided.len() != self.cfg.tx_burst {
            self.decided.resize(self.cfg.tx_burst, TxSegment::default());
        }
        let mut sent = 0;
        for ei in 0..self.engines.len() {
            let made = self.engines[ei]
                .engine
                .next_segments(now, &mut self.decided[sent..]);
            let first = sent;
            sent += made;
            for i in first..sent {
                let tx = self.decided[i];
                let slot = self.engines[ei].slot_of[tx.flow as usize];
                let Some(f) = self.flows.get_mut(slot).and_then(|f| f.as_mut()) else {
                    continue;
                };
                if tx.offset < f.base || tx.offset + tx.len as u64 > f.tail {
                    self.stats.stale_skipped += 1;
                    continue;
                }
                let Some((ack, dst_mac)) = f.addressing(stack, now) else {
                    self.stats.tx_failed += 1;
                    continue;
                };
                build_segment(&mut self.scratch, f, dst_mac, ack, tx.offset, tx.len, false);
                if !io.to_port(f.port, &self.scratch) {
                    self.stats.tx_failed += 1;
                    continue;
                }
                self.stats.segments_tx += 1;
                if tx.rtx {
                    self.stats.retransmits += 1;
                    f.retransmits += 1;
                }
                f.hi_sent = f.hi_sent.max(tx.offset + tx.len as u64);
            }
        }
        self.report(io);
    }

    /// Sends a window probe for flow `ef` of engine `ei`: an ACK one byte below `snd.una`,
    /// without data, which the peer answers with its window (RFC 9293 §3.8.6.1).
    fn send_probe<B: PacketBuf>(
        &mut self,
        ei: usize,
        ef: FlowId,
        now: Nanos,
        stack: &mut NicStack<B>,
        io: &mut dyn OffloadIo,
    ) {
        let Some(&slot) = self.engines[ei].slot_of.get(ef as usize) else {
            return;
        };
        let Some(f) = self.flows.get_mut(slot).and_then(|f| f.as_mut()) else {
            return;
        };
        if f.engine != ei || f.eflow != ef {
            return;
        }
        // Exponential backoff of successive probes (RFC 9293 §3.8.6.1, SHLD-30), counted in
        // persist-timer periods (the module's retransmission timeout).
        if f.probe_gap != 0 && now < f.probe_next {
            self.stats.probes_backed_off += 1;
            return;
        }
        let Some((ack, dst_mac)) = f.addressing(stack, now) else {
            self.stats.tx_failed += 1;
            return;
        };
        build_segment(&mut self.scratch, f, dst_mac, ack, f.acked, 0, true);
        if io.to_port(f.port, &self.scratch) {
            self.stats.window_probes += 1;
            let period = self.engines[ei]
                .engine
                .flow_view(ef)
                .map_or(MAX_PROBE_GAP_NS, |v| v.rtx_timer_amount.max(1));
            f.probe_gap = if f.probe_gap == 0 {
                period
            } else {
                f.probe_gap.saturating_mul(2).min(MAX_PROBE_GAP_NS)
            };
            f.probe_next = now + f.probe_gap;
        } else {
            self.stats.tx_failed += 1;
        }
    }

    /// `TonicDelivered` for every flow whose cumulative acknowledgment advanced.
    fn report(&mut self, io: &mut dyn OffloadIo) {
        let mut i = 0;
        while i < self.to_report.len() {
            let slot = self.to_report[i];
            i += 1;
            let Some(f) = self.flows[slot].as_mut() else {
                continue;
            };
            if f.acked <= f.reported {
                continue;
            }
            let m = Message::TonicDelivered(TonicDeliveredRepr {
                flow_id: f.host_id,
                delivered: f.init_seq.wrapping_add(f.acked as u32),
            });
            if m.write_frame([0; 6], [0; 6], &[], &mut self.scratch)
                .is_err()
            {
                continue;
            }
            if !io.to_host(f.port, &self.scratch) {
                // Ring full: keep the rest for the next iteration.
                self.to_report.drain(..i - 1);
                return;
            }
            f.reported = f.acked;
            self.stats.delivered_msgs += 1;
        }
        self.to_report.clear();
    }
}

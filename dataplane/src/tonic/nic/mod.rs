//! Tonic flows of TCP connections on a NIC lcore (Tonic NSDI '20 §5 "Linux socket
//! integration", §3 for the engines; `notes/tonic-extraction.md` §6.1–6.2; DESIGN.md "Data
//! path" steps 3, 5 and 6).
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
use crate::tonic::{EngineParams, FlowId, Nanos, TonicEngine};

mod offload;

const ETH: usize = 14;
/// Longest gap between two window probes of one flow: 60 s, RFC 6298 §2.5's least bound
/// for a retransmission timeout's maximum (Linux uses 120 s).
pub const MAX_PROBE_GAP_NS: Nanos = 60_000_000_000;

/// Built-in modules whose user context is App. D's TCP congestion state (for the traces).
const TCP_STATE_MODULES: [&str; 4] = ["reno", "newreno", "sack", "dctcp"];
const TCP_ACK: u8 = 0x10;
const TCP_PSH: u8 = 0x08;
const TCP_RST: u8 = 0x04;
const TCP_SYN: u8 = 0x02;
const TCP_FIN: u8 = 0x01;

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

/// One point of a flow's trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TracePoint {
    /// Time (the lcore's clock), nanoseconds.
    pub t_ns: u64,
    /// Congestion window, segments (App. D's `cwnd` for the TCP-style modules: reno,
    /// newreno, sack, dctcp; `wnd-size` for the others).
    pub cwnd: u32,
    /// Slow-start threshold, segments (`u32::MAX`: none, or not a TCP-style module).
    pub ssthresh: u32,
    /// The window the module gives the engine (`wnd-size`, Table 2), segments: for SACK,
    /// `sent_out + cwnd − pipe`.
    pub wnd_size: u32,
    /// Bytes cumulatively acknowledged (snd.una − init_seq).
    pub snd_una: u64,
    /// One past the highest byte sent (snd.nxt − init_seq).
    pub snd_nxt: u64,
    /// Retransmissions so far.
    pub retransmits: u64,
    /// Retransmission timeouts so far, of the flow's engine (all flows of its module).
    pub timeouts: u64,
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

    /// The trace of the flow the host calls `host_id` (while it exists, and after it was
    /// removed until the id is reused).
    pub fn trace(&self, host_id: u32) -> Option<&[TracePoint]> {
        let slot = *self.by_host.get(&host_id)?;
        self.flows[slot].as_ref().map(|f| f.trace.as_slice())
    }

    /// Writes the trace of flow `host_id` as CSV: `t_ns,cwnd,ssthresh,wnd_size,snd_una,
    /// snd_nxt,retransmits,timeouts` (windows in segments, sequence numbers as byte offsets
    /// from the flow's first byte, an unbounded ssthresh as -1).
    pub fn write_trace_csv(&self, host_id: u32, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "t_ns,cwnd,ssthresh,wnd_size,snd_una,snd_nxt,retransmits,timeouts"
        )?;
        for p in self.trace(host_id).unwrap_or(&[]) {
            let ss = if p.ssthresh >= 1 << 20 {
                -1
            } else {
                p.ssthresh as i64
            };
            writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                p.t_ns, p.cwnd, ss, p.wnd_size, p.snd_una, p.snd_nxt, p.retransmits, p.timeouts
            )?;
        }
        Ok(())
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

    /// A host frame for the wire (`frame` is IPv4 with its TCP segment at `tcp`, checksums
    /// not yet filled): when it belongs to a Tonic flow, learn the ACK number and window it
    /// carries and write the NIC's snd.nxt into its sequence number (the host does not know
    /// it, §5).
    pub fn host_tcp_frame(&mut self, frame: &mut [u8], tcp: HostTcp) {
        let l4 = tcp.l4_off;
        let Some(t) = frame.get(l4..l4 + tcp.l4_len) else {
            return;
        };
        let (sport, dport) = (be16(t, 0), be16(t, 2));
        let Some(&slot) = self.by_tuple.get(&key(tcp.dst, dport, sport)) else {
            return;
        };
        let Some(f) = self.flows[slot].as_mut() else {
            return;
        };
        if t[13] & TCP_ACK != 0 {
            f.ack_no = Some(be32(t, 8));
            f.wnd = be16(t, 14);
        }
        let seq = f.init_seq.wrapping_add(f.hi_sent as u32);
        frame[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        self.stats.host_frames += 1;
    }

    /// A TCP segment `t` (header and payload) from `src`, from the wire, already validated by
    /// the NIC stack: an ACK of a Tonic flow goes to its engine (§3.2.2, data path step 3).
    pub fn rx(&mut self, src: [u8; 4], t: &[u8], now: Nanos) -> RxVerdict {
        if t.len() < 20 {
            return RxVerdict::NotTonic;
        }
        let Some(&slot) = self.by_tuple.get(&key(src, be16(t, 0), be16(t, 2))) else {
            return RxVerdict::NotTonic;
        };
        let flags = t[13];
        let doff = ((t[12] >> 4) as usize * 4).clamp(20, t.len());
        let payload = t.len() - doff;
        self.stats.acks_in += 1;
        let pure = payload == 0 && flags & (TCP_SYN | TCP_FIN | TCP_RST) == 0;
        if flags & TCP_ACK == 0 || flags & (TCP_SYN | TCP_RST) != 0 {
            self.stats.to_host += 1;
            return RxVerdict::ToHost;
        }
        self.ack(slot, t, doff, pure, now);
        if pure {
            self.stats.acks_consumed += 1;
            RxVerdict::Consumed
        } else {
            self.stats.to_host += 1;
            RxVerdict::ToHost
        }
    }

    /// The ACK fields of segment `t` (TCP header and payload) for the flow in `slot`.
    fn ack(&mut self, slot: usize, t: &[u8], doff: usize, pure: bool, now: Nanos) {
        let Some(f) = self.flows[slot].as_mut() else {
            return;
        };
        let e = &mut self.engines[f.engine].engine;
        let base32 = f.init_seq.wrapping_add(f.acked as u32);
        let d = be32(t, 8).wrapping_sub(base32) as i32;
        let off = f.acked as i64 + d as i64;
        if off < 0 || off as u64 > f.hi_sent.max(f.acked) {
            self.stats.bad_acks += 1;
            return;
        }
        let off = off as u64;
        // The window field of a non-SYN segment is scaled (RFC 7323 §2.3).
        let wnd = (be16(t, 14) as u32) << f.snd_wscale;
        let old_wnd = f.peer_wnd;
        f.peer_wnd = wnd;
        if wnd >= f.mss {
            // The window takes a segment again (the engine counts it in whole segments): a
            // later shut window starts probing afresh.
            f.probe_gap = 0;
        }
        let mut blocks = [SegRange::default(); MAX_SACK_BLOCKS];
        let n = sack_blocks(&t[20..doff], |i, l, r| {
            if i >= MAX_SACK_BLOCKS {
                return;
            }
            let l = l.wrapping_sub(base32) as i32 as i64 + f.acked as i64;
            let r = r.wrapping_sub(base32) as i32 as i64 + f.acked as i64;
            if l < off as i64 || r <= l || r as u64 > f.hi_sent {
                return;
            }
            let (Ok(s), Ok(e2)) = (
                e.byte_to_seg(f.eflow, l as u64, true),
                e.byte_to_seg(f.eflow, r as u64, false),
            ) else {
                return;
            };
            if e2 > s {
                blocks[i] = SegRange::new(s, e2);
            }
        });
        let mut used = 0;
        for k in 0..n.min(MAX_SACK_BLOCKS) {
            if !blocks[k].is_empty() {
                blocks[used] = blocks[k];
                used += 1;
            }
        }
        let blocks_used = &blocks[..used];
        if off == f.acked && blocks_used.is_empty() {
            // Not new: a duplicate ACK only when it is a pure ACK with the same window
            // (RFC 5681 §2). A window update is taken only when the window was nearly shut,
            // and then also from a segment that carries data: the peer's send window comes
            // from any acceptable segment (RFC 9293 §3.10.7.4, SND.WL1/SND.WL2 rule), and a
            // peer with data to send puts its window update on that data rather than on a
            // pure ACK, so ignoring it would leave the flow blocked until a window probe.
            let update = wnd != old_wnd;
            let reopens = update && old_wnd < 2 * f.mss;
            if !reopens && (!pure || update) {
                if update {
                    self.stats.window_updates += 1;
                }
                return;
            }
        }
        let Ok(cum) = e.byte_to_seg(f.eflow, off, false) else {
            return;
        };
        let mut pkt = if blocks_used.is_empty() {
            IncomingPkt::ack(cum)
        } else {
            IncomingPkt::sack(cum, blocks_used)
        };
        if pkt.pkt_type != PktType::Sack {
            pkt.pkt_type = PktType::Ack;
        }
        pkt.flags |= IncomingPkt::FLAG_RCV_WND;
        pkt.rcv_wnd = wnd / f.mss;
        let Ok(rep) = e.incoming(f.eflow, &pkt, now) else {
            return;
        };
        if !pure {
            self.stats.data_acks += 1;
        }
        if rep.acked_bytes > f.acked {
            f.acked = rep.acked_bytes.min(f.tail);
            let free = (f.acked - f.base) as usize;
            f.data.drain(..free.min(f.data.len()));
            f.base = f.acked;
            self.to_report.push(slot);
        }
        Self::record(f, e, now, self.cfg.trace_limit);
    }

    fn record(f: &mut Flow, e: &TonicEngine, now: Nanos, limit: usize) {
        if f.trace.len() >= limit {
            return;
        }
        let wnd_size = e.flow_view(f.eflow).map(|v| v.wnd_size).unwrap_or(0);
        // The TCP-style window modules keep App. D's congestion state in their user context
        // (a read of the context, as a statistics interface would do, §5); for the others
        // the window the module hands the engine is the best view of it.
        let (cwnd, ssthresh) = if TCP_STATE_MODULES.contains(&e.module().name()) {
            let st = TcpState::load(e.dd().ctx(f.eflow));
            (st.cwnd, st.ss_thresh)
        } else {
            (wnd_size, u32::MAX)
        };
        f.trace.push(TracePoint {
            t_ns: now,
            cwnd,
            ssthresh,
            wnd_size,
            snd_una: f.acked,
            snd_nxt: f.hi_sent,
            retransmits: f.retransmits,
            timeouts: e.stats().timeouts,
        });
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
        let mut sent = 0;
        for ei in 0..self.engines.len() {
            while sent < self.cfg.tx_burst {
                let Some(tx) = self.engines[ei].engine.next_segment(now) else {
                    break;
                };
                sent += 1;
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

    /// A timeout hit some flow of engine `ei`: a trace point for each of its flows.
    fn note_timeouts(&mut self, ei: usize, now: Nanos) {
        let limit = self.cfg.trace_limit;
        let e = &self.engines[ei].engine;
        for f in self.flows.iter_mut().flatten() {
            if f.engine == ei && f.eflow != FlowId::MAX {
                Self::record(f, e, now, limit);
            }
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

#[inline(always)]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

#[inline(always)]
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Calls `each(i, left, right)` for the SACK blocks (RFC 2018) in TCP options `opts`;
/// returns how many there were.
fn sack_blocks(opts: &[u8], mut each: impl FnMut(usize, u32, u32)) -> usize {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else { break };
                let len = len as usize;
                if len < 2 || i + len > opts.len() {
                    break;
                }
                if kind == 5 {
                    let n = (len - 2) / 8;
                    for k in 0..n {
                        let b = i + 2 + 8 * k;
                        each(k, be32(opts, b), be32(opts, b + 4));
                    }
                    return n;
                }
                i += len;
            }
        }
    }
    0
}

/// Builds the segment `[offset, offset + len)` of flow `f` into `out`: Ethernet, IPv4 (DF,
/// TTL 64), TCP without options (ACK, PSH on the last byte available), payload from the
/// DMA'd bytes, both checksums. A `probe` (with `len` 0) carries sequence number
/// `offset − 1`: an old byte, which the peer acknowledges with its current window.
fn build_segment(
    out: &mut Vec<u8>,
    f: &mut Flow,
    dst_mac: [u8; 6],
    ack: u32,
    offset: u64,
    len: u32,
    probe: bool,
) {
    let len = len as usize;
    out.clear();
    out.resize(ETH + 40, 0);
    out[0..6].copy_from_slice(&dst_mac);
    out[6..12].copy_from_slice(&f.src_mac);
    out[12..14].copy_from_slice(&offload_api::ETHERTYPE_IPV4.to_be_bytes());
    f.ip_id = f.ip_id.wrapping_add(1);
    {
        let ip = &mut out[ETH..ETH + 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((40 + len) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&f.ip_id.to_be_bytes());
        ip[6] = 0x40;
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&f.tuple.local_ip);
        ip[16..20].copy_from_slice(&f.tuple.remote_ip);
    }
    {
        let t = &mut out[ETH + 20..ETH + 40];
        t[0..2].copy_from_slice(&f.tuple.local_port.to_be_bytes());
        t[2..4].copy_from_slice(&f.tuple.remote_port.to_be_bytes());
        let seq = f
            .init_seq
            .wrapping_add(offset as u32)
            .wrapping_sub(probe as u32);
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12] = 5 << 4;
        let last = !probe && offset + len as u64 == f.tail;
        t[13] = TCP_ACK | if last { TCP_PSH } else { 0 };
        t[14..16].copy_from_slice(&f.wnd.to_be_bytes());
    }
    let start = (offset - f.base) as usize;
    let (a, b) = f.data.as_slices();
    if start < a.len() {
        let end = (start + len).min(a.len());
        out.extend_from_slice(&a[start..end]);
        let rest = len - (end - start);
        out.extend_from_slice(&b[..rest]);
    } else {
        let s = start - a.len();
        out.extend_from_slice(&b[s..s + len]);
    }
    let _ = csum::fill_checksums(out);
}

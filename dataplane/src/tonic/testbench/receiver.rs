//! The testbench receiver: generates the control packets each protocol family expects
//! (Tonic §2.1: the receiver "solely" generates "per-packet cumulative and selective acks and
//! grant tokens"; §6.2: Tonic senders work with unmodified TCP and RoCE receivers).
//!
//! | kind | modules (by name; else by credit scheme) | answers |
//! |---|---|---|
//! | [`TcpCumulative`](ReceiverKind::TcpCumulative) | reno, newreno, dctcp | cumulative ack per segment (or every `ack_every` in-order ones, with a delayed-ack timer); immediate duplicate acks on out-of-order data; ECN echo (ECE) of the CE bit, an immediate ack when the CE state changes (DCTCP receiver) |
//! | [`TcpSack`](ReceiverKind::TcpSack) | sack; any other window-scheme module | as above, plus up to `sack_blocks` SACK blocks (RFC 2018: the block holding the newest segment first) |
//! | [`NdpPull`](ReceiverKind::NdpPull) | ndp; any other grant-scheme module | per packet: an ack with the packet as a SACK block; a NACK (flagged trimmed) for a trimmed header; a NACK for each segment a gap shows silently lost (the path is FIFO); one pull (grant of one segment) per arrival or NACK, paced at the bottleneck rate by the simulator |
//! | [`RoceGoBackN`](ReceiverKind::RoceGoBackN) | dcqcn; any other rate-scheme module | RoCEv2 responder: accepts only the expected PSN, acks cumulatively, discards out-of-order packets and sends one NAK (expected PSN) per sequence error; CNPs for CE-marked packets, at most one per flow per `cnp_interval` (DCQCN NP, 50 µs) |
//! | [`IrnSelective`](ReceiverKind::IrnSelective) | irn | keeps out-of-order packets; acks cumulatively; an out-of-order arrival gets a NACK carrying the cumulative ack and its PSN as a SACK block (IRN); CNPs as RoCE |
//! | [`HomaGrant`](ReceiverKind::HomaGrant) | homa | Homa's receiver (SIGCOMM 2018 §3.4): per packet, Homa's SRPT [`GrantScheduler`] decides GRANTs (newly granted bytes, grant offset, priority) to the `homa_overcommit` messages with the fewest remaining bytes, each kept RTTbytes ahead of its arrivals; every answer carries the cumulative ack and the packet as a SACK block (a GRANT to the packet's own message, else an ACK), so the sender's window moves and it sees progress; a trimmed header gets a RESEND of its segment (Homa-Tr, nanoTransport §4.4) |
//!
//! A trimmed header reaching a receiver other than NDP's counts as a lost packet.

use serde::Deserialize;

use super::link::Packet;
use crate::tonic::module::{CreditScheme, IncomingPkt, PktType, SegRange, MAX_SACK_BLOCKS};
use crate::tonic::modules::homa::{
    Grant, GrantScheduler, GRANT_OFFSET_WORD, GRANT_PRIO_WORD, RESEND_END_WORD,
};
use crate::tonic::{Nanos, SegId};

/// How the receiver answers. See the module documentation for the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiverKind {
    /// Cumulative TCP acks with ECN echo.
    TcpCumulative,
    /// TCP acks with SACK blocks.
    TcpSack,
    /// NDP: per-packet acks, NACKs, paced pulls.
    NdpPull,
    /// RoCEv2 go-back-N with DCQCN CNPs.
    RoceGoBackN,
    /// IRN: selective NACKs with CNPs.
    IrnSelective,
    /// Homa: SRPT grants with priorities, per-packet acks.
    HomaGrant,
}

impl ReceiverKind {
    /// The receiver a module expects: by name for the built-in modules, else by credit
    /// scheme (window → SACK, which also serves cumulative-ack senders; rate → RoCE; grant →
    /// NDP).
    pub fn for_module(name: &str, scheme: CreditScheme) -> Self {
        match name {
            "reno" | "newreno" | "dctcp" => ReceiverKind::TcpCumulative,
            "sack" => ReceiverKind::TcpSack,
            "ndp" => ReceiverKind::NdpPull,
            "dcqcn" => ReceiverKind::RoceGoBackN,
            "irn" => ReceiverKind::IrnSelective,
            "homa" => ReceiverKind::HomaGrant,
            _ => match scheme {
                CreditScheme::Window => ReceiverKind::TcpSack,
                CreditScheme::Rate => ReceiverKind::RoceGoBackN,
                CreditScheme::Grant => ReceiverKind::NdpPull,
            },
        }
    }

    /// The kebab-case name used in scenarios.
    pub fn name(self) -> &'static str {
        match self {
            ReceiverKind::TcpCumulative => "tcp-cumulative",
            ReceiverKind::TcpSack => "tcp-sack",
            ReceiverKind::NdpPull => "ndp-pull",
            ReceiverKind::RoceGoBackN => "roce-go-back-n",
            ReceiverKind::IrnSelective => "irn-selective",
            ReceiverKind::HomaGrant => "homa-grant",
        }
    }

    fn is_tcp(self) -> bool {
        matches!(self, ReceiverKind::TcpCumulative | ReceiverKind::TcpSack)
    }

    fn is_roce(self) -> bool {
        matches!(self, ReceiverKind::RoceGoBackN | ReceiverKind::IrnSelective)
    }
}

/// Receiver settings.
#[derive(Clone, Copy, Debug)]
pub struct RxParams {
    /// Behaviour.
    pub kind: ReceiverKind,
    /// TCP: ack every this many in-order segments.
    pub ack_every: u32,
    /// TCP: delayed-ack timeout.
    pub delayed_ack_timeout: Nanos,
    /// SACK blocks per ack.
    pub sack_blocks: u32,
    /// RoCE: minimum interval between CNPs of one flow.
    pub cnp_interval: Nanos,
    /// Homa: (message bytes, segment bytes, RTTbytes, overcommitment, top scheduled
    /// priority); `None` for other kinds.
    pub homa: Option<HomaRxParams>,
}

/// The Homa receiver's settings ([`ReceiverKind::HomaGrant`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomaRxParams {
    /// Each message's length in bytes.
    pub msg_bytes: u64,
    /// Payload bytes per full segment.
    pub segment_size: u32,
    /// RTTbytes: how far ahead of its arrivals a message is granted.
    pub rtt_bytes: u64,
    /// Messages granted at once.
    pub overcommit: u32,
    /// Priority of the shortest granted message's packets.
    pub sched_prio: u8,
}

/// Counters of the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Data packets that reached the receiver (not dropped by its NIC).
    pub data: u64,
    /// Trimmed headers received.
    pub headers: u64,
    /// Acks (and SACKs) sent.
    pub acks: u64,
    /// NACKs / NAKs sent.
    pub nacks: u64,
    /// CNPs sent.
    pub cnps: u64,
    /// Pulls requested (grants); Homa: GRANTs sent.
    pub pulls: u64,
    /// Out-of-order packets a go-back-N receiver discarded.
    pub discarded: u64,
}

/// What the receiver wants the simulator to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxOut {
    /// Send this control packet to the flow's sender.
    Ctrl(u32, IncomingPkt),
    /// Call [`Receiver::delayed_ack`] for the flow at this time.
    DelayedAck(u32, Nanos),
    /// Queue one pull (a grant of one segment) for the flow at the pacer.
    Pull(u32),
}

/// Per-flow receive state.
#[derive(Clone, Debug, Default)]
struct RxFlow {
    size: u64,
    got: Vec<u64>,
    /// NACKed by gap detection or trimming (NDP), so gaps do not NACK it again.
    nacked: Vec<u64>,
    delivered: u64,
    duplicates: u64,
    /// Next expected segment (cumulative ack; RoCE's ePSN).
    cum: SegId,
    /// One past the highest data segment seen (gap detection).
    highest: SegId,
    /// In-order segments not yet acked (delayed acks).
    pending: u32,
    dack_armed: bool,
    /// CE state of the last data packet (DCTCP receiver).
    ce_state: bool,
    last_cnp: Option<Nanos>,
    last_nak: Option<SegId>,
    complete_at: Option<Nanos>,
}

fn get(b: &[u64], i: SegId) -> bool {
    b[(i / 64) as usize] >> (i % 64) & 1 == 1
}

fn set(b: &mut [u64], i: SegId) {
    b[(i / 64) as usize] |= 1 << (i % 64);
}

/// The receiver. See the module documentation.
#[derive(Debug)]
pub struct Receiver {
    p: RxParams,
    flows: Vec<RxFlow>,
    stats: RxStats,
    sched: Option<GrantScheduler>,
    grants: Vec<Grant>,
}

impl Receiver {
    /// A receiver for `flows` flows of `size` segments each.
    pub fn new(p: RxParams, flows: u32, size: u64) -> Self {
        let words = size.div_ceil(64) as usize;
        let f = RxFlow {
            size,
            got: vec![0; words],
            nacked: vec![0; words],
            ..Default::default()
        };
        let sched = p
            .homa
            .filter(|_| p.kind == ReceiverKind::HomaGrant)
            .map(|h| GrantScheduler::new(flows, h.rtt_bytes, h.overcommit, h.sched_prio));
        Receiver {
            p,
            flows: vec![f; flows as usize],
            stats: RxStats::default(),
            sched,
            grants: Vec::new(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> &RxStats {
        &self.stats
    }

    /// Distinct segments of flow `f` received (in order, for go-back-N).
    pub fn delivered(&self, f: u32) -> u64 {
        self.flows[f as usize].delivered
    }

    /// Duplicate arrivals of flow `f`.
    pub fn duplicates(&self, f: u32) -> u64 {
        self.flows[f as usize].duplicates
    }

    /// The cumulative ack of flow `f`.
    pub fn cum(&self, f: u32) -> SegId {
        self.flows[f as usize].cum
    }

    /// When flow `f` had every segment, if it has.
    pub fn complete_at(&self, f: u32) -> Option<Nanos> {
        self.flows[f as usize].complete_at
    }

    /// Segments of flow `f` never received.
    pub fn missing(&self, f: u32) -> Vec<SegId> {
        let r = &self.flows[f as usize];
        (0..r.size).filter(|&s| !get(&r.got, s)).collect()
    }

    /// Whether flow `f` still wants data (pulls for a complete flow are not sent).
    pub fn wants_data(&self, f: u32) -> bool {
        self.flows[f as usize].complete_at.is_none()
    }

    /// A packet arrived for flow `pkt.flow` at `now`; control packets and requests go to `out`.
    pub fn on_packet(&mut self, now: Nanos, pkt: &Packet, out: &mut Vec<RxOut>) {
        let f = pkt.flow;
        if pkt.seg >= self.flows[f as usize].size {
            return;
        }
        if pkt.trimmed {
            self.stats.headers += 1;
            if self.p.kind == ReceiverKind::NdpPull {
                let r = &mut self.flows[f as usize];
                set(&mut r.nacked, pkt.seg);
                if !get(&r.got, pkt.seg) {
                    let mut n = IncomingPkt::nack(r.cum, pkt.seg);
                    n.flags |= IncomingPkt::FLAG_TRIMMED;
                    self.stats.nacks += 1;
                    self.stats.pulls += 1;
                    out.push(RxOut::Ctrl(f, n));
                    out.push(RxOut::Pull(f));
                }
            } else if self.p.kind == ReceiverKind::HomaGrant {
                // Homa-Tr (nanoTransport §4.4, §5.2): a trimmed header asks for its segment
                // again at once with a RESEND, instead of a timeout later.
                let r = &self.flows[f as usize];
                if !get(&r.got, pkt.seg) {
                    let mut n = IncomingPkt::nack(r.cum, pkt.seg);
                    n.flags |= IncomingPkt::FLAG_TRIMMED;
                    n.data[RESEND_END_WORD] = (pkt.seg + 1) as u32;
                    self.stats.nacks += 1;
                    out.push(RxOut::Ctrl(f, n));
                }
            }
            return;
        }
        self.stats.data += 1;
        if self.p.kind.is_roce() && pkt.ce {
            let r = &mut self.flows[f as usize];
            if r.last_cnp.is_none_or(|t| now >= t + self.p.cnp_interval) {
                r.last_cnp = Some(now);
                self.stats.cnps += 1;
                out.push(RxOut::Ctrl(f, IncomingPkt::cnp()));
            }
        }
        match self.p.kind {
            ReceiverKind::TcpCumulative | ReceiverKind::TcpSack => self.tcp(now, pkt, out),
            ReceiverKind::NdpPull => self.ndp(now, pkt, out),
            ReceiverKind::RoceGoBackN => self.roce(now, pkt, out),
            ReceiverKind::IrnSelective => self.irn(now, pkt, out),
            ReceiverKind::HomaGrant => self.homa(now, pkt, out),
        }
    }

    /// Records segment `s` of `f`; returns whether it was new. Advances `cum`.
    fn accept(&mut self, now: Nanos, f: u32, s: SegId) -> bool {
        let r = &mut self.flows[f as usize];
        if get(&r.got, s) {
            r.duplicates += 1;
            return false;
        }
        set(&mut r.got, s);
        r.delivered += 1;
        while r.cum < r.size && get(&r.got, r.cum) {
            r.cum += 1;
        }
        if r.delivered == r.size {
            r.complete_at = Some(now);
        }
        true
    }

    /// A TCP ack of flow `f` with its current state (SACK blocks, ECE).
    fn tcp_ack(&mut self, f: u32, newest: Option<SegId>, ece: bool, out: &mut Vec<RxOut>) {
        let r = &mut self.flows[f as usize];
        r.pending = 0;
        let mut pkt = if self.p.kind == ReceiverKind::TcpSack {
            let blocks = sack_blocks(&r.got, r.cum, r.highest, newest, self.p.sack_blocks);
            IncomingPkt::sack(r.cum, &blocks)
        } else {
            IncomingPkt::ack(r.cum)
        };
        if ece {
            pkt.flags |= IncomingPkt::FLAG_ECN_ECHO;
        }
        self.stats.acks += 1;
        out.push(RxOut::Ctrl(f, pkt));
    }

    fn tcp(&mut self, now: Nanos, pkt: &Packet, out: &mut Vec<RxOut>) {
        debug_assert!(self.p.kind.is_tcp());
        let f = pkt.flow;
        let (cum_before, old_ce) = {
            let r = &self.flows[f as usize];
            (r.cum, r.ce_state)
        };
        // DCTCP receiver: a CE change first acks what is pending with the old state.
        if pkt.ce != old_ce && self.flows[f as usize].pending > 0 {
            self.tcp_ack(f, None, old_ce, out);
        }
        self.flows[f as usize].ce_state = pkt.ce;
        let new = self.accept(now, f, pkt.seg);
        let r = &mut self.flows[f as usize];
        r.highest = r.highest.max(pkt.seg + 1);
        let in_order =
            new && pkt.seg == cum_before && r.cum == cum_before + 1 && r.highest == r.cum;
        if !in_order || self.p.ack_every <= 1 || r.complete_at.is_some() {
            self.tcp_ack(f, Some(pkt.seg), pkt.ce, out);
            return;
        }
        r.pending += 1;
        if r.pending >= self.p.ack_every {
            self.tcp_ack(f, Some(pkt.seg), pkt.ce, out);
        } else if !r.dack_armed {
            r.dack_armed = true;
            out.push(RxOut::DelayedAck(f, now + self.p.delayed_ack_timeout));
        }
    }

    /// The delayed-ack timer of flow `f` fired.
    pub fn delayed_ack(&mut self, f: u32, out: &mut Vec<RxOut>) {
        let r = &mut self.flows[f as usize];
        r.dack_armed = false;
        if r.pending > 0 {
            let ce = r.ce_state;
            self.tcp_ack(f, None, ce, out);
        }
    }

    fn ndp(&mut self, now: Nanos, pkt: &Packet, out: &mut Vec<RxOut>) {
        let f = pkt.flow;
        let highest = self.flows[f as usize].highest;
        // The path is FIFO for data: a gap below this packet is a silent loss (trimmed ones
        // were NACKed from their header, which overtakes later data).
        for m in highest..pkt.seg {
            let r = &mut self.flows[f as usize];
            if !get(&r.got, m) && !get(&r.nacked, m) {
                set(&mut r.nacked, m);
                self.stats.nacks += 1;
                self.stats.pulls += 1;
                out.push(RxOut::Ctrl(f, IncomingPkt::nack(r.cum, m)));
                out.push(RxOut::Pull(f));
            }
        }
        self.accept(now, f, pkt.seg);
        let r = &mut self.flows[f as usize];
        r.highest = r.highest.max(pkt.seg + 1);
        let ack = IncomingPkt::sack(r.cum, &[SegRange::new(pkt.seg, pkt.seg + 1)]);
        self.stats.acks += 1;
        self.stats.pulls += 1;
        out.push(RxOut::Ctrl(f, ack));
        out.push(RxOut::Pull(f));
    }

    fn roce(&mut self, now: Nanos, pkt: &Packet, out: &mut Vec<RxOut>) {
        let f = pkt.flow;
        let epsn = self.flows[f as usize].cum;
        if pkt.seg == epsn {
            self.accept(now, f, pkt.seg);
        } else if pkt.seg > epsn {
            self.stats.discarded += 1;
            let r = &mut self.flows[f as usize];
            if r.last_nak != Some(epsn) {
                r.last_nak = Some(epsn);
                self.stats.nacks += 1;
                out.push(RxOut::Ctrl(f, IncomingPkt::nack(epsn, epsn)));
            }
            return;
        } else {
            self.flows[f as usize].duplicates += 1;
        }
        self.stats.acks += 1;
        out.push(RxOut::Ctrl(f, IncomingPkt::ack(self.flows[f as usize].cum)));
    }

    fn homa(&mut self, now: Nanos, pkt: &Packet, out: &mut Vec<RxOut>) {
        let f = pkt.flow;
        let new = self.accept(now, f, pkt.seg);
        let r = &mut self.flows[f as usize];
        r.highest = r.highest.max(pkt.seg + 1);
        let own = SegRange::new(pkt.seg, pkt.seg + 1);
        let mut grants = std::mem::take(&mut self.grants);
        grants.clear();
        if let (Some(s), Some(h)) = (self.sched.as_mut(), self.p.homa) {
            let bytes = if new { pkt.len as u64 } else { 0 };
            s.on_data(f, h.msg_bytes, bytes, &mut grants);
        }
        let mut answered = false;
        for g in &grants {
            let Some(r) = self.flows.get(g.msg as usize) else {
                continue;
            };
            let mut p = if g.msg == f {
                answered = true;
                IncomingPkt::sack(r.cum, &[own])
            } else {
                IncomingPkt::ack(r.cum)
            };
            p.pkt_type = PktType::Grant;
            p.grant_bytes = g.bytes;
            p.data[GRANT_OFFSET_WORD] = g.offset as u32;
            p.data[GRANT_PRIO_WORD] = g.priority as u32;
            self.stats.pulls += 1;
            out.push(RxOut::Ctrl(g.msg, p));
        }
        self.grants = grants;
        if !answered {
            let cum = self.flows[f as usize].cum;
            self.stats.acks += 1;
            out.push(RxOut::Ctrl(f, IncomingPkt::sack(cum, &[own])));
        }
    }

    fn irn(&mut self, now: Nanos, pkt: &Packet, out: &mut Vec<RxOut>) {
        let f = pkt.flow;
        let cum_before = self.flows[f as usize].cum;
        self.accept(now, f, pkt.seg);
        let r = &mut self.flows[f as usize];
        if pkt.seg > cum_before {
            let mut n = IncomingPkt::sack(r.cum, &[SegRange::new(pkt.seg, pkt.seg + 1)]);
            n.pkt_type = PktType::Nack;
            n.nack = pkt.seg;
            self.stats.nacks += 1;
            out.push(RxOut::Ctrl(f, n));
        } else {
            self.stats.acks += 1;
            out.push(RxOut::Ctrl(f, IncomingPkt::ack(r.cum)));
        }
    }
}

/// SACK blocks over `got` above `cum` (below `highest`): the block holding `newest` first,
/// then the others from the highest down (RFC 2018 §4), at most `max` of them.
fn sack_blocks(
    got: &[u64],
    cum: SegId,
    highest: SegId,
    newest: Option<SegId>,
    max: u32,
) -> Vec<SegRange> {
    let mut all = Vec::new();
    let mut s = cum;
    while s < highest {
        if get(got, s) {
            let start = s;
            while s < highest && get(got, s) {
                s += 1;
            }
            all.push(SegRange::new(start, s));
        } else {
            s += 1;
        }
    }
    let max = (max as usize).min(MAX_SACK_BLOCKS);
    let mut out = Vec::with_capacity(max);
    if let Some(n) = newest {
        if let Some(i) = all.iter().position(|b| b.start <= n && n < b.end) {
            out.push(all.remove(i));
        }
    }
    out.extend(all.iter().rev().take(max - out.len()));
    out.truncate(max);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(kind: ReceiverKind, ack_every: u32) -> Receiver {
        Receiver::new(
            RxParams {
                kind,
                ack_every,
                delayed_ack_timeout: 1000,
                sack_blocks: 4,
                cnp_interval: 50_000,
                homa: None,
            },
            1,
            100,
        )
    }

    fn data(seg: SegId, ce: bool) -> Packet {
        Packet {
            flow: 0,
            seg,
            len: 1000,
            rtx: false,
            ce,
            trimmed: false,
            prio: 0,
        }
    }

    fn ctrl(out: &[RxOut]) -> Vec<IncomingPkt> {
        out.iter()
            .filter_map(|o| match o {
                RxOut::Ctrl(_, p) => Some(*p),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn table_by_name_and_scheme() {
        assert_eq!(
            ReceiverKind::for_module("dctcp", CreditScheme::Window),
            ReceiverKind::TcpCumulative
        );
        assert_eq!(
            ReceiverKind::for_module("mine", CreditScheme::Window),
            ReceiverKind::TcpSack
        );
        assert_eq!(
            ReceiverKind::for_module("mine", CreditScheme::Rate),
            ReceiverKind::RoceGoBackN
        );
        assert_eq!(
            ReceiverKind::for_module("mine", CreditScheme::Grant),
            ReceiverKind::NdpPull
        );
        assert_eq!(
            ReceiverKind::for_module("irn", CreditScheme::Rate),
            ReceiverKind::IrnSelective
        );
    }

    #[test]
    fn sack_blocks_newest_first() {
        let mut r = rx(ReceiverKind::TcpSack, 1);
        let mut out = vec![];
        for s in [0, 2, 3, 5, 7, 9, 11] {
            r.on_packet(s, &data(s, false), &mut out);
        }
        let last = *ctrl(&out).last().unwrap();
        assert_eq!(last.cumulative_ack, 1);
        assert_eq!(
            last.sack_blocks(),
            &[
                SegRange::new(11, 12),
                SegRange::new(9, 10),
                SegRange::new(7, 8),
                SegRange::new(5, 6)
            ]
        );
    }

    #[test]
    fn delayed_acks_and_ecn_echo() {
        let mut r = rx(ReceiverKind::TcpCumulative, 2);
        let mut out = vec![];
        r.on_packet(0, &data(0, false), &mut out);
        assert_eq!(out, vec![RxOut::DelayedAck(0, 1000)]);
        r.on_packet(1, &data(1, false), &mut out);
        assert_eq!(ctrl(&out).len(), 1);
        out.clear();
        // CE flips on the next in-order segment after one pending: ack the old state first.
        r.on_packet(2, &data(2, false), &mut out);
        r.on_packet(3, &data(3, true), &mut out);
        let acks = ctrl(&out);
        assert_eq!(acks.len(), 1, "{out:?}");
        assert!(!acks[0].has(IncomingPkt::FLAG_ECN_ECHO));
        assert_eq!(acks[0].cumulative_ack, 3);
        r.delayed_ack(0, &mut out);
        let acks = ctrl(&out);
        assert!(acks[1].has(IncomingPkt::FLAG_ECN_ECHO));
        assert_eq!(acks[1].cumulative_ack, 4);
        // Out of order: an immediate duplicate ack.
        out.clear();
        r.on_packet(5, &data(5, false), &mut out);
        assert_eq!(ctrl(&out)[0].cumulative_ack, 4);
    }

    #[test]
    fn roce_go_back_n_naks_once_and_cnps_are_rate_limited() {
        let mut r = rx(ReceiverKind::RoceGoBackN, 1);
        let mut out = vec![];
        r.on_packet(0, &data(0, true), &mut out);
        r.on_packet(1, &data(2, true), &mut out);
        r.on_packet(2, &data(3, false), &mut out);
        let c = ctrl(&out);
        let types: Vec<_> = c.iter().map(|p| p.pkt_type).collect();
        assert_eq!(types, vec![PktType::Cnp, PktType::Ack, PktType::Nack]);
        assert_eq!((c[2].nack, r.delivered(0)), (1, 1));
        r.on_packet(60_000, &data(1, true), &mut out);
        assert_eq!(ctrl(&out).last().unwrap().cumulative_ack, 2);
        assert_eq!(r.stats().cnps, 2);
    }

    #[test]
    fn ndp_nacks_trims_and_gaps_once() {
        let mut r = rx(ReceiverKind::NdpPull, 1);
        let mut out = vec![];
        let mut h = data(1, false);
        h.trimmed = true;
        h.len = 0;
        r.on_packet(0, &h, &mut out);
        r.on_packet(1, &data(0, false), &mut out);
        r.on_packet(2, &data(3, false), &mut out);
        let nacks: Vec<_> = ctrl(&out)
            .iter()
            .filter(|p| p.pkt_type == PktType::Nack)
            .map(|p| (p.nack, p.has(IncomingPkt::FLAG_TRIMMED)))
            .collect();
        assert_eq!(nacks, vec![(1, true), (2, false)]);
        let pulls = out.iter().filter(|o| matches!(o, RxOut::Pull(_))).count();
        assert_eq!(pulls, 4);
    }

    #[test]
    fn irn_nacks_out_of_order_with_a_sack() {
        let mut r = rx(ReceiverKind::IrnSelective, 1);
        let mut out = vec![];
        r.on_packet(0, &data(0, false), &mut out);
        r.on_packet(1, &data(2, false), &mut out);
        r.on_packet(2, &data(1, false), &mut out);
        let c = ctrl(&out);
        assert_eq!(c[1].pkt_type, PktType::Nack);
        assert_eq!(
            (c[1].cumulative_ack, c[1].sack_blocks()),
            (1, &[SegRange::new(2, 3)][..])
        );
        assert_eq!((c[2].pkt_type, c[2].cumulative_ack), (PktType::Ack, 3));
        assert_eq!(r.missing(0).len(), 97);
    }
}

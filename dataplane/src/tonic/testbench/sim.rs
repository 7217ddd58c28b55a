//! The testbench's discrete-event simulation in virtual time.
//!
//! Topology (Tonic §6.2: hosts on one switch, one receiver):
//!
//! ```text
//! sender 0 (engine, NIC at host_rate) ─┐
//! sender 1 ───────────────────────────┼─> switch buffer ─(rate, delay)─> receiver NIC ─> receiver
//! sender N-1 ─────────────────────────┘        ▲ trim / drop / ECN          │ loss_prob, [[drop]]
//!        ▲                                                                   │
//!        └──────────── control packets (ACK/SACK/NACK/CNP/grant), rtt − delay ┘
//! ```
//!
//! Each sender's NIC sends one segment at a time: when its port is free it asks its engine
//! for one scheduling decision ([`TonicEngine::next_segment`], §3.1 steps 1–9). It asks again
//! when the port frees, when a control packet arrives ([`TonicEngine::incoming`]), after each
//! Periodic Updates sweep ([`TonicEngine::periodic`], every `tonic.cycle`), and, in the rate
//! scheme, when a waiting flow will have earned credit for its next segment. Control packets
//! are small and the reverse path is uncongested: they arrive `rtt − delay` after the
//! receiver sends them. NDP pulls leave the receiver paced at the bottleneck rate, one per
//! full-size packet time.
//!
//! With `network.topology = "dumbbell"` data crosses two output ports in turn: switch A's
//! port onto the core link (the `[link]`) and switch B's port towards the receiver
//! (`network.edge_rate` / `edge_buffer`, the same queueing rules); `star` (the default) is
//! the picture above, one switch. Each port has its buffer, ECN marking, trimming and
//! strict-priority queues; a data packet carries the priority its engine gave it
//! ([`TxSegment::priority`](crate::tonic::TxSegment::priority)).
//!
//! With the hosts' timing variation on ([`super::variation`]: `network.tx_jitter`,
//! `network.clock_ppm`, `flows.start_window`) a sender NIC's serialization time follows its
//! clock, a data packet reaches the first switch up to `tx_jitter` after the NIC finished
//! it (the NIC is free at once: jitter delays packets, it does not slow the host), and
//! flows start at random offsets. Control packets' path stays fixed-delay.
//!
//! Events at the same instant run in the order they were scheduled, so a seed gives one run.

use std::collections::{BinaryHeap, VecDeque};

use super::event::Timed;
use super::link::{Enqueued, Link, LinkParams, LinkStats, Packet};
use super::receiver::{HomaRxParams, Receiver, ReceiverKind, RxOut, RxParams};
use super::report::{FlowSummary, TestbenchReport, TraceRow, TxRecord};
use super::rng::SplitMix64;
use super::scenario::{DropRule, Scenario, Topology};
use super::units::wire_time;
use super::variation::HostNic;
use super::TestbenchError;
use crate::tonic::module::{CreditScheme, IncomingPkt, PktType};
use crate::tonic::registry::Registry;
use crate::tonic::{Nanos, TonicEngine};

#[derive(Clone, Copy, Debug)]
enum Ev {
    FlowStart(u32),
    SenderWake(u32),
    Periodic(u32),
    SwitchArrive(u8, Packet),
    LinkDone(u8),
    RxArrive(Packet),
    Ctrl(u32, IncomingPkt),
    DelayedAck(u32),
    PullTick,
    Sample,
}

type Item = Timed<Ev>;

#[derive(Default)]
struct SenderSt {
    port_free: Nanos,
    wake_at: Option<Nanos>,
    /// Flows of this sender not yet acknowledged in full.
    left: u32,
}

#[derive(Default)]
struct FlowSt {
    start: Nanos,
    started: bool,
    tx: u64,
    rtx: u64,
    timeouts: u64,
    cnps: u64,
    completed: Option<Nanos>,
}

/// One run. Built by [`Sim::new`], consumed by [`Sim::run`].
pub(crate) struct Sim<'a> {
    s: &'a Scenario,
    engines: Vec<TonicEngine>,
    senders: Vec<SenderSt>,
    /// Each sender's NIC: serialization time and arrival at the switch
    /// ([`super::variation`]; exactly `wire_time` and no delay with the variation off).
    nics: Vec<HostNic>,
    flows: Vec<FlowSt>,
    /// The output ports data crosses, in order (one for a star, two for a dumbbell).
    links: Vec<Link>,
    rx: Receiver,
    kind: ReceiverKind,
    rng: SplitMix64,
    heap: BinaryHeap<Item>,
    /// Events that always happen a fixed delay after they are scheduled (control packets
    /// `rtt − delay` later, data arrivals at the receiver `delay` later) are in time order
    /// as scheduled: FIFOs instead of the heap, merged with it by `(time, seq)`, so the
    /// order of events is exactly the heap's.
    ctrl_q: VecDeque<Item>,
    rx_q: VecDeque<Item>,
    seq: u64,
    /// Events processed.
    events: u64,
    now: Nanos,
    per_sender: u32,
    segs: u64,
    rate_scheme: bool,
    /// The module keeps App. D's TCP state (its `cwnd` in context word 0's low half).
    tcp_ctx: bool,
    timer_slot: Nanos,
    pulls: VecDeque<u32>,
    pull_next: Nanos,
    pull_armed: bool,
    pull_gap: Nanos,
    drops: Vec<DropRule>,
    rx_nic_drops: u64,
    remaining: u32,
    trace: Vec<TraceRow>,
    tx_log: Vec<TxRecord>,
    cnp_log: Vec<(Nanos, u32)>,
    out: Vec<RxOut>,
}

impl<'a> Sim<'a> {
    pub(crate) fn new(s: &'a Scenario, registry: &Registry) -> Result<Self, TestbenchError> {
        s.check("(scenario)", registry)?;
        let mp = s.module_params();
        let ep = s.engine_params();
        let mut engines = Vec::with_capacity(s.flows.senders as usize);
        for _ in 0..s.flows.senders {
            engines.push(TonicEngine::new(registry.create(&s.module.name, &mp)?, ep)?);
        }
        let scheme = engines[0].config().credit_scheme;
        let kind = s
            .receiver
            .kind
            .unwrap_or_else(|| ReceiverKind::for_module(&s.module.name, scheme));
        let l = &s.link;
        let core = LinkParams {
            rate_bps: l.rate,
            buffer: l.buffer,
            header_buffer: l.header_buffer.unwrap_or(l.buffer),
            header_bytes: l.header_bytes,
            trim: l.trim,
            ecn_k: l.ecn_threshold,
            ecn_kmax: l.ecn_threshold_max,
            ecn_pmax: l.ecn_prob_max,
            ecn_on_dequeue: l.ecn_on_dequeue,
            loss_prob: l.loss_prob,
            priorities: l.priorities.clamp(1, 8) as u8,
        };
        let mut links = vec![Link::new(core)];
        if s.network.topology == Topology::Dumbbell {
            let buffer = s.network.edge_buffer.unwrap_or(l.buffer);
            links.push(Link::new(LinkParams {
                rate_bps: s.network.edge_rate.unwrap_or(s.host_rate()),
                buffer,
                header_buffer: l.header_buffer.unwrap_or(buffer),
                loss_prob: 0.0,
                ..core
            }));
        }
        let homa = (kind == ReceiverKind::HomaGrant).then(|| HomaRxParams {
            msg_bytes: s.flow_bytes(),
            segment_size: s.flows.segment_size,
            rtt_bytes: s
                .receiver
                .homa_rtt_bytes
                .unwrap_or(mp.init_credit_bytes as u64),
            overcommit: s.receiver.homa_overcommit,
            sched_prio: s.receiver.homa_sched_prio,
        });
        let r = &s.receiver;
        let total = s.total_flows();
        let rx = Receiver::new(
            RxParams {
                kind,
                ack_every: r.ack_every,
                delayed_ack_timeout: r.delayed_ack_timeout,
                sack_blocks: r.sack_blocks,
                cnp_interval: r.cnp_interval,
                homa,
            },
            total,
            s.flow_segments(),
        );
        let senders = (0..s.flows.senders)
            .map(|_| SenderSt {
                left: s.tonic.active_flow_cnt,
                ..Default::default()
            })
            .collect();
        let v = s.variation();
        let nics = (0..s.flows.senders)
            .map(|h| HostNic::new(&v, h, s.host_rate()))
            .collect();
        Ok(Sim {
            s,
            engines,
            senders,
            nics,
            flows: (0..total).map(|_| FlowSt::default()).collect(),
            links,
            rx,
            kind,
            rng: SplitMix64::new(s.seed),
            heap: BinaryHeap::new(),
            ctrl_q: VecDeque::new(),
            rx_q: VecDeque::new(),
            seq: 0,
            events: 0,
            now: 0,
            per_sender: s.tonic.active_flow_cnt,
            segs: s.flow_segments(),
            rate_scheme: scheme == CreditScheme::Rate,
            tcp_ctx: matches!(
                s.module.name.as_str(),
                "reno" | "newreno" | "sack" | "dctcp"
            ),
            timer_slot: 1 << ep.timer_shift,
            pulls: VecDeque::new(),
            pull_next: 0,
            pull_armed: false,
            pull_gap: wire_time((s.flows.segment_size + l.header_bytes) as u64, l.rate),
            drops: s.drops.clone(),
            rx_nic_drops: 0,
            remaining: total,
            trace: Vec::new(),
            tx_log: Vec::new(),
            cnp_log: Vec::new(),
            out: Vec::new(),
        })
    }

    fn at(&mut self, t: Nanos, ev: Ev) {
        self.seq += 1;
        let item = Item {
            t,
            seq: self.seq,
            ev,
        };
        self.heap.push(item);
    }

    /// Schedules a control packet `rtt − delay` from now (always that delay: FIFO order).
    fn at_ctrl(&mut self, g: u32, pkt: IncomingPkt) {
        self.seq += 1;
        let t = self.now + self.s.reverse_delay();
        debug_assert!(self.ctrl_q.back().is_none_or(|b| b.t <= t));
        self.ctrl_q.push_back(Item {
            t,
            seq: self.seq,
            ev: Ev::Ctrl(g, pkt),
        });
    }

    /// Schedules a data arrival at the receiver `delay` from now (FIFO order).
    fn at_rx(&mut self, p: Packet) {
        self.seq += 1;
        let t = self.now + self.s.forward_delay();
        debug_assert!(self.rx_q.back().is_none_or(|b| b.t <= t));
        self.rx_q.push_back(Item {
            t,
            seq: self.seq,
            ev: Ev::RxArrive(p),
        });
    }

    /// The earliest event of the heap and the FIFOs, by `(time, seq)`.
    fn pop(&mut self) -> Option<Item> {
        let key = |i: Option<&Item>| i.map_or((Nanos::MAX, u64::MAX), |i| (i.t, i.seq));
        let h = key(self.heap.peek());
        let c = key(self.ctrl_q.front());
        let r = key(self.rx_q.front());
        if h <= c && h <= r {
            self.heap.pop()
        } else if c <= r {
            self.ctrl_q.pop_front()
        } else {
            self.rx_q.pop_front()
        }
    }

    fn sender_of(&self, g: u32) -> (usize, u32) {
        ((g / self.per_sender) as usize, g % self.per_sender)
    }

    /// Runs to completion (every flow acknowledged) or the duration limit.
    pub(crate) fn run(mut self) -> Result<TestbenchReport, TestbenchError> {
        let offsets = self.s.variation().start_offsets(self.flows.len() as u32);
        for (g, off) in offsets.into_iter().enumerate() {
            let t = g as u64 * self.s.flows.start_interval + off;
            self.at(t, Ev::FlowStart(g as u32));
        }
        for sd in 0..self.senders.len() as u32 {
            self.at(self.s.tonic.cycle, Ev::Periodic(sd));
        }
        self.at(0, Ev::Sample);
        let mut end = self.s.duration;
        while let Some(item) = self.pop() {
            if item.t > self.s.duration {
                break;
            }
            self.events += 1;
            self.now = item.t;
            self.handle(item.ev)?;
            if self.remaining == 0 {
                end = self.now;
                break;
            }
        }
        self.now = end;
        for g in 0..self.flows.len() as u32 {
            if self.flows[g as usize].started && self.flows[g as usize].completed.is_none() {
                self.sample(g)?;
            }
        }
        Ok(self.report(end))
    }

    fn handle(&mut self, ev: Ev) -> Result<(), TestbenchError> {
        let now = self.now;
        match ev {
            Ev::FlowStart(g) => {
                let (sd, f) = self.sender_of(g);
                let e = &mut self.engines[sd];
                e.add_flow(f, self.s.flows.segment_size, now)?;
                e.update_tail(f, self.s.flow_bytes())?;
                let st = &mut self.flows[g as usize];
                st.started = true;
                st.start = now;
                self.try_send(sd);
            }
            Ev::SenderWake(sd) => {
                if self.senders[sd as usize].wake_at == Some(now) {
                    self.senders[sd as usize].wake_at = None;
                    self.try_send(sd as usize);
                }
            }
            Ev::Periodic(sd) => {
                let sdu = sd as usize;
                let live = self.engines[sdu].dd().live_flows();
                for _ in 0..live {
                    let f = self.engines[sdu].dd().sweep_peek();
                    let rep = self.engines[sdu].periodic(now, 1);
                    if let (Some(f), true) = (f, rep.timeouts > 0) {
                        self.flows[(sd * self.per_sender + f) as usize].timeouts += 1;
                    }
                }
                self.try_send(sdu);
                if self.senders[sdu].left > 0 {
                    self.at(now + self.s.tonic.cycle, Ev::Periodic(sd));
                }
            }
            Ev::SwitchArrive(hop, p) => {
                if let Enqueued::Started(t) = self.links[hop as usize].enqueue(p, &mut self.rng) {
                    self.at(now + t, Ev::LinkDone(hop));
                }
            }
            Ev::LinkDone(hop) => {
                let (done, next) = self.links[hop as usize].finish(&mut self.rng);
                if let Some(p) = done {
                    if (hop as usize) + 1 < self.links.len() {
                        self.at(now, Ev::SwitchArrive(hop + 1, p));
                    } else {
                        self.at_rx(p);
                    }
                }
                if let Some(t) = next {
                    self.at(now + t, Ev::LinkDone(hop));
                }
            }
            Ev::RxArrive(p) => {
                if !p.trimmed && self.nic_drop(&p) {
                    self.rx_nic_drops += 1;
                    return Ok(());
                }
                let mut out = std::mem::take(&mut self.out);
                self.rx.on_packet(now, &p, &mut out);
                self.dispatch(&mut out);
                self.out = out;
            }
            Ev::DelayedAck(g) => {
                let mut out = std::mem::take(&mut self.out);
                self.rx.delayed_ack(g, &mut out);
                self.dispatch(&mut out);
                self.out = out;
            }
            Ev::Ctrl(g, pkt) => {
                let (sd, f) = self.sender_of(g);
                if self.flows[g as usize].completed.is_some() {
                    return Ok(());
                }
                if pkt.pkt_type == PktType::Cnp {
                    self.flows[g as usize].cnps += 1;
                    if self.s.trace_cnps {
                        self.cnp_log.push((now, g));
                    }
                }
                let rep = self.engines[sd].incoming(f, &pkt, now)?;
                if rep.wnd_start >= self.segs {
                    self.flows[g as usize].completed = Some(now);
                    self.remaining -= 1;
                    self.senders[sd].left -= 1;
                    self.sample(g)?;
                }
                self.try_send(sd);
            }
            Ev::PullTick => {
                self.pull_armed = false;
                while let Some(g) = self.pulls.pop_front() {
                    if self.rx.wants_data(g) {
                        let grant = IncomingPkt::grant(self.s.flows.segment_size);
                        self.at_ctrl(g, grant);
                        self.pull_next = now + self.pull_gap;
                        break;
                    }
                }
                self.arm_pull();
            }
            Ev::Sample => {
                for g in 0..self.flows.len() as u32 {
                    let st = &self.flows[g as usize];
                    if st.started && st.completed.is_none() {
                        self.sample(g)?;
                    }
                }
                if self.s.check_invariants {
                    for (sd, e) in self.engines.iter_mut().enumerate() {
                        e.check_invariants(now).map_err(|m| {
                            TestbenchError::Invariant(format!("sender {sd} at {now} ns: {m}"))
                        })?;
                    }
                }
                self.at(now + self.s.trace_every(), Ev::Sample);
            }
        }
        Ok(())
    }

    /// The receiver NIC drops `p` (a scripted `[[drop]]` or `tonic.loss_prob`).
    fn nic_drop(&mut self, p: &Packet) -> bool {
        if let Some(d) = self
            .drops
            .iter_mut()
            .find(|d| d.flow == p.flow && d.segment == p.seg && d.count > 0)
        {
            d.count -= 1;
            return true;
        }
        self.rng.chance(self.s.tonic.loss_prob)
    }

    fn dispatch(&mut self, out: &mut Vec<RxOut>) {
        for o in out.drain(..) {
            match o {
                RxOut::Ctrl(g, pkt) => self.at_ctrl(g, pkt),
                RxOut::DelayedAck(g, t) => self.at(t, Ev::DelayedAck(g)),
                RxOut::Pull(g) => self.pulls.push_back(g),
            }
        }
        self.arm_pull();
    }

    fn arm_pull(&mut self) {
        if !self.pull_armed && !self.pulls.is_empty() {
            self.pull_armed = true;
            self.at(self.now.max(self.pull_next), Ev::PullTick);
        }
    }

    fn wake(&mut self, sd: usize, t: Nanos) {
        if self.senders[sd].wake_at.is_some_and(|w| w <= t) {
            return;
        }
        self.senders[sd].wake_at = Some(t);
        self.at(t, Ev::SenderWake(sd as u32));
    }

    /// One scheduling decision if sender `sd`'s port is free.
    fn try_send(&mut self, sd: usize) {
        let now = self.now;
        let free = self.senders[sd].port_free;
        if free > now {
            self.wake(sd, free);
            return;
        }
        match self.engines[sd].next_segment(now) {
            Some(tx) => {
                let g = sd as u32 * self.per_sender + tx.flow;
                let st = &mut self.flows[g as usize];
                st.tx += 1;
                st.rtx += tx.rtx as u64;
                if self.s.trace_segments {
                    self.tx_log.push(TxRecord {
                        time_ns: now,
                        flow: g,
                        seg: tx.seg,
                        rtx: tx.rtx,
                    });
                }
                let bytes = (tx.len + self.s.link.header_bytes) as u64;
                let done = now + self.nics[sd].serialize(bytes);
                let arrive = self.nics[sd].arrival(done);
                self.senders[sd].port_free = done;
                let p = Packet {
                    flow: g,
                    seg: tx.seg,
                    len: tx.len,
                    rtx: tx.rtx,
                    ce: false,
                    trimmed: false,
                    prio: tx.priority,
                };
                self.at(arrive, Ev::SwitchArrive(0, p));
                self.wake(sd, done);
            }
            None if self.rate_scheme => {
                if let Some(t) = self.rate_wake(sd) {
                    self.wake(sd, t);
                }
            }
            None => {}
        }
    }

    /// In the rate scheme: the earliest time a flow of `sd` waiting with an address in its
    /// ring has earned credit for a full segment (at least one rate-timer slot ahead, as the
    /// engine's timers fire at slot granularity).
    fn rate_wake(&self, sd: usize) -> Option<Nanos> {
        let e = &self.engines[sd];
        let ce = e.ce();
        let need = self.s.flows.segment_size as i64;
        (0..self.per_sender)
            .filter(|&f| ce.ring_len(f) > 0 && !ce.ready_set().contains(f))
            .filter_map(|f| {
                let deficit = (need - ce.credit(f, self.now)).max(0) as u64;
                let bps = ce.rate(f).bps();
                (bps > 0).then(|| wire_time(deficit, bps).max(self.timer_slot))
            })
            .min()
            .map(|w| self.now + w)
    }

    fn sample(&mut self, g: u32) -> Result<(), TestbenchError> {
        let (sd, f) = self.sender_of(g);
        let e = &self.engines[sd];
        let v = e.flow_view(f)?;
        let st = &self.flows[g as usize];
        self.trace.push(TraceRow {
            time_ns: self.now,
            flow: g,
            wnd_size: v.wnd_size,
            rate_bps: if self.rate_scheme { v.rate_bps } else { 0 },
            credit_bytes: e.ce().credit(f, self.now),
            snd_una: v.wnd_start,
            snd_nxt: v.next_new,
            rcv_cum: self.rx.cum(g),
            transmitted: st.tx,
            retransmissions: st.rtx,
            timeouts: st.timeouts,
            queue_bytes: self.links.iter().map(Link::queued_bytes).sum(),
            cwnd: if self.tcp_ctx {
                e.dd().ctx(f)[0] as u32
            } else {
                v.wnd_size
            },
        });
        Ok(())
    }

    fn report(self, end: Nanos) -> TestbenchReport {
        let flows = self
            .flows
            .iter()
            .enumerate()
            .map(|(g, st)| {
                let g = g as u32;
                FlowSummary {
                    flow: g,
                    sender: g / self.per_sender,
                    segments: self.segs,
                    bytes: self.s.flow_bytes(),
                    delivered: self.rx.delivered(g),
                    duplicates: self.rx.duplicates(g),
                    transmitted: st.tx,
                    retransmissions: st.rtx,
                    timeouts: st.timeouts,
                    cnps: st.cnps,
                    start_ns: st.start,
                    rx_complete_ns: self.rx.complete_at(g),
                    completed_ns: st.completed,
                }
            })
            .collect();
        TestbenchReport {
            name: self.s.name.clone(),
            module: self.s.module.name.clone(),
            receiver: self.kind,
            segment_size: self.s.flows.segment_size,
            end_ns: end,
            flows,
            trace: self.trace,
            tx_log: self.tx_log,
            cnp_log: self.cnp_log,
            events: self.events,
            link: link_stats(&self.links),
            receiver_stats: *self.rx.stats(),
            rx_nic_drops: self.rx_nic_drops,
            engines: self.engines.iter().map(|e| *e.stats()).collect(),
        }
    }
}

/// The ports' counters as one: arrivals at the first, departures from the last, losses of
/// every kind summed, the largest queue of any.
fn link_stats(links: &[Link]) -> LinkStats {
    let mut t = LinkStats::default();
    for l in links {
        let s = l.stats();
        t.dropped += s.dropped;
        t.trimmed += s.trimmed;
        t.ecn_marked += s.ecn_marked;
        t.lost += s.lost;
        t.max_queue_bytes = t.max_queue_bytes.max(s.max_queue_bytes);
    }
    if let (Some(first), Some(last)) = (links.first(), links.last()) {
        t.arrived = first.stats().arrived;
        t.sent = last.stats().sent;
    }
    t
}

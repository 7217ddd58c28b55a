//! The host stack's own TCP ([`hoststack::tcp::tcb::Tcb`], NewReno per RFC 6582) on the
//! testbench's network model, in virtual time: the "hard-coded implementation" side of
//! Tonic §6.2.1 (the paper used ns-3's native stack; here it is the host stack's TCB, an
//! implementation separate from the Tonic NewReno module).
//!
//! The model is the testbench's star (`dataplane::tonic::testbench`, `sim.rs`), rebuilt
//! around pairs of `Tcb`s:
//!
//! - each sender host has a NIC at `host_rate` that sends the segments its connections
//!   emitted one at a time, in the order they were emitted (a FIFO: the host stack has no
//!   per-packet round robin across flows, unlike Tonic's §3.1 scheduler);
//! - the hosts' timing variation is the testbench's
//!   ([`dataplane::tonic::testbench::variation`]: each NIC's clock offset and transmit
//!   jitter through the same [`HostNic`], flow start offsets from the same draws), so a
//!   scenario's seed gives both implementations the same clocks and start times;
//! - the switch port towards the receiver is the testbench's own
//!   [`Link`](dataplane::tonic::testbench::link::Link) (rate, buffer with tail drop, ECN,
//!   random loss), then `forward_delay` of propagation;
//! - the receiver's NIC drops data segments by the same rules as the testbench's: scripted
//!   drops ([`DropRule`]: the first `count` arrivals of segment `segment` of flow `flow`),
//!   then the seeded `loss_prob`;
//! - the receiving `Tcb`s' segments (ACKs) reach the senders `reverse_delay` later on an
//!   uncongested path, as the testbench's control packets do.
//!
//! Segments cross the model as bytes: `poll_transmit` output is serialized with
//! `segment::emit`, parsed back with `segment::parse` and given to the peer's `input`. The
//! handshake happens at time 0 outside the network (the Tonic flows need none). The
//! sending applications keep the send buffers full; the receiving ones read everything at
//! once.

use std::collections::{BinaryHeap, HashMap, VecDeque};

use dataplane::tonic::testbench::event::Timed;
use dataplane::tonic::testbench::link::{Enqueued, Link, LinkParams, Packet};
use dataplane::tonic::testbench::rng::SplitMix64;
use dataplane::tonic::testbench::scenario::DropRule;
use dataplane::tonic::testbench::variation::{HostNic, Variation};
use dataplane::tonic::testbench::TxRecord;
use dataplane::tonic::Nanos;
use hoststack::tcp::segment::{self, TcpHeader};
use hoststack::tcp::seq::Seq;
use hoststack::tcp::tcb::{Endpoints, Tcb};
use hoststack::tcp::TcpConfig;

/// New data segments each sending application keeps written beyond what the NIC has
/// started sending. Tonic's engine generates segments only when the NIC can take them (its ring of
/// N = 4 addresses per flow, §3.1), so its flight is what is on the wire; a TCB given the
/// whole flow at once would instead push its full window into the NIC's queue and count
/// that queue as flight (RFC 5681 FlightSize), halving a different quantity. Writing just
/// ahead of the NIC (like Linux's TCP small queues) keeps the two comparable.
pub const LEAD: u64 = 4;

/// The `Tcb`s' clock starts here (virtual time 0 of the model).
const BASE: u64 = 1_000_000_000;

/// What to run.
#[derive(Clone, Debug)]
pub struct TcbNetParams {
    /// Sender hosts.
    pub senders: u32,
    /// Connections per sender host (global flow id `sender · flows_per_sender + k`).
    pub flows_per_sender: u32,
    /// Payload bytes per connection.
    pub flow_bytes: u64,
    /// Segment payload (the MSS both ends use).
    pub segment_size: u32,
    /// Each sender NIC's rate, bit/s.
    pub host_rate: u64,
    /// The switch port towards the receiver.
    pub link: LinkParams,
    /// One-way delay of data.
    pub forward_delay: Nanos,
    /// One-way delay of ACKs.
    pub reverse_delay: Nanos,
    /// Random drops of data at the receiver's NIC.
    pub loss_prob: f64,
    /// Scripted drops at the receiver's NIC.
    pub drops: Vec<DropRule>,
    /// Seed of the link's and the NIC's random choices.
    pub seed: u64,
    /// Virtual-time limit.
    pub duration: Nanos,
    /// cwnd sampling interval (flows below `sample_flows`).
    pub sample_every: Nanos,
    /// How many flows (from 0) to sample.
    pub sample_flows: u32,
    /// Log every transmitted data segment of the sampled flows.
    pub trace_segments: bool,
    /// Receiver's delayed-ACK timeout (an ACK at least every second segment regardless).
    pub delayed_ack: Nanos,
    /// Receive buffer, the largest window the receiver offers, bytes.
    pub recv_buffer: usize,
    /// Minimum (and, before any sample, initial) retransmission timeout.
    pub rto_min: Nanos,
    /// The hosts' timing variation (off: every flow starts at 0, exact NIC clocks, no
    /// jitter).
    pub variation: Variation,
}

/// One cwnd sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CwndSample {
    /// Virtual time.
    pub time_ns: Nanos,
    /// Flow.
    pub flow: u32,
    /// The congestion window in segments without the RFC 6582 inflation: cwnd outside
    /// recovery, ssthresh (what the window deflates to) inside.
    pub cwnd: f64,
    /// The window as the TCB holds it (inflated during recovery), segments.
    pub cwnd_raw: f64,
    /// Queued bytes at the switch port.
    pub queue_bytes: u64,
}

/// The outcome.
#[derive(Clone, Debug, Default)]
pub struct TcbNetRun {
    /// cwnd samples of the sampled flows, in time order.
    pub samples: Vec<CwndSample>,
    /// Transmitted data segments of the sampled flows (time the NIC started each).
    pub tx_log: Vec<TxRecord>,
    /// Payload bytes each flow's receiver read, by flow.
    pub delivered: Vec<u64>,
    /// When each flow's sender had everything acknowledged.
    pub completed: Vec<Option<Nanos>>,
    /// Retransmitted segments per flow.
    pub retransmissions: Vec<u64>,
    /// RTO expiries per flow.
    pub timeouts: Vec<u64>,
    /// Data segments transmitted in all.
    pub data_segments: u64,
    /// Events processed.
    pub events: u64,
    /// When the run stopped.
    pub end_ns: Nanos,
    /// Drops at the switch (buffer full) and random drops at the receiver's NIC.
    pub switch_drops: u64,
    /// Drops at the receiver's NIC.
    pub nic_drops: u64,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A sender NIC finished a packet.
    NicDone(u32),
    /// The switch port finished a packet.
    LinkDone,
    /// Packet `id` reaches the receiver's NIC.
    RxArrive(u64),
    /// A segment (id) from a receiver reaches its sender.
    AckArrive(u64),
    /// Timer work of (flow, side: 0 sender, 1 receiver).
    Poll(u32, u8),
    /// The sending application of flow `g` starts writing (a start offset).
    Start(u32),
    /// Packet `id` reaches the switch port (after its transmit jitter).
    SwitchArrive(u64),
    Sample,
}

type Item = Timed<Ev>;

struct Conn {
    tcb: [Tcb; 2],
    /// Sequence number of the first payload byte.
    data_iss: Seq,
    /// Bytes handed to the sending TCB so far.
    written: u64,
    /// Highest data segment index transmitted + 1.
    sent_hi: u64,

    armed: [Option<Nanos>; 2],
}

struct InFlight {
    flow: u32,
    bytes: Vec<u8>,
    /// Data segment index (None: no payload).
    seg: Option<u64>,
    /// Payload bytes.
    payload: u32,
}

struct Net<'a> {
    p: &'a TcbNetParams,
    conns: Vec<Conn>,
    nic_q: Vec<VecDeque<u64>>,
    nic_busy: Vec<bool>,
    nics: Vec<HostNic>,
    link: Link,
    rng: SplitMix64,
    heap: BinaryHeap<Item>,
    seq: u64,
    now: Nanos,
    pkts: HashMap<u64, InFlight>,
    next_id: u64,
    drops: Vec<DropRule>,
    run: TcbNetRun,
    remaining: u32,
    zeros: Vec<u8>,
    scratch: Vec<u8>,
}

fn serialize(h: &TcpHeader, p: [&[u8]; 2]) -> Vec<u8> {
    let hl = segment::header_len(h);
    let mut b = vec![0u8; hl + p[0].len() + p[1].len()];
    segment::emit(h, &mut b);
    b[hl..hl + p[0].len()].copy_from_slice(p[0]);
    b[hl + p[0].len()..].copy_from_slice(p[1]);
    b
}

/// Runs the model to completion (every flow acknowledged) or the duration limit.
pub fn run(p: &TcbNetParams) -> Result<TcbNetRun, String> {
    let flows = p.senders * p.flows_per_sender;
    let mss = p.segment_size.min(u16::MAX as u32) as u16;
    let cfg = TcpConfig {
        mss,
        max_segment_payload: mss as usize,
        sack: false,
        timestamps: false,
        nodelay: true,
        send_buffer: 1 << 20,
        recv_buffer: p.recv_buffer,
        delayed_ack_ns: p.delayed_ack,
        rto_initial_ns: p.rto_min,
        rto_min_ns: p.rto_min,
        tail_loss_probe: false,
        max_retransmits: 64,
        ..TcpConfig::default()
    };
    let mut conns = Vec::with_capacity(flows as usize);
    for g in 0..flows {
        let ep = Endpoints {
            local_ip: [10, 0, (g / p.flows_per_sender) as u8, 1],
            local_port: 10_000 + (g % 50_000) as u16,
            remote_ip: [10, 1, 0, 1],
            remote_port: 80,
        };
        let back = Endpoints {
            local_ip: ep.remote_ip,
            local_port: ep.remote_port,
            remote_ip: ep.local_ip,
            remote_port: ep.local_port,
        };
        let iss = Seq(1000 + g.wrapping_mul(7919));
        let mut a = Tcb::connect(&cfg, ep, iss, BASE);
        let syn = one_out(&mut a);
        let syn_seg = segment::parse(&syn).map_err(|e| format!("SYN: {e:?}"))?;
        let mut b = Tcb::accept(&cfg, back, &syn_seg, Seq(5000 + g), BASE);
        let sa = one_out(&mut b);
        a.input(
            &segment::parse(&sa).map_err(|e| format!("SYN-ACK: {e:?}"))?,
            BASE,
        );
        let ack = one_out(&mut a);
        b.input(
            &segment::parse(&ack).map_err(|e| format!("ACK: {e:?}"))?,
            BASE,
        );
        conns.push(Conn {
            tcb: [a, b],
            data_iss: iss + 1,
            written: 0,
            sent_hi: 0,
            armed: [None, None],
        });
    }
    let net = Net {
        p,
        conns,
        nic_q: vec![VecDeque::new(); p.senders as usize],
        nic_busy: vec![false; p.senders as usize],
        nics: (0..p.senders)
            .map(|h| HostNic::new(&p.variation, h, p.host_rate))
            .collect(),
        link: Link::new(p.link),
        rng: SplitMix64::new(p.seed),
        heap: BinaryHeap::new(),
        seq: 0,
        now: 0,
        pkts: HashMap::new(),
        next_id: 0,
        drops: p.drops.clone(),
        run: TcbNetRun {
            delivered: vec![0; flows as usize],
            completed: vec![None; flows as usize],
            retransmissions: vec![0; flows as usize],
            timeouts: vec![0; flows as usize],
            ..TcbNetRun::default()
        },
        remaining: flows,
        zeros: vec![0u8; 1 << 16],
        scratch: vec![0u8; 1 << 16],
    };
    net.go()
}

/// The single segment a fresh handshake step emits.
fn one_out(t: &mut Tcb) -> Vec<u8> {
    let mut v = Vec::new();
    t.poll_transmit(BASE, &mut |o| v.push(serialize(&o.header, o.payload)));
    v.into_iter().next().unwrap_or_default()
}

impl Net<'_> {
    fn at(&mut self, t: Nanos, ev: Ev) {
        self.seq += 1;
        self.heap.push(Item {
            t,
            seq: self.seq,
            ev,
        });
    }

    fn go(mut self) -> Result<TcbNetRun, String> {
        let starts = self.p.variation.start_offsets(self.conns.len() as u32);
        for (g, t) in starts.into_iter().enumerate() {
            if t == 0 {
                self.fill(g as u32);
                self.flush(g as u32, 0);
            } else {
                self.at(t, Ev::Start(g as u32));
            }
        }
        if self.p.sample_flows > 0 {
            self.at(0, Ev::Sample);
        }
        let mut end = self.p.duration;
        while let Some(it) = self.heap.pop() {
            if it.t > self.p.duration {
                break;
            }
            self.now = it.t;
            self.run.events += 1;
            self.handle(it.ev);
            if self.remaining == 0 {
                end = self.now;
                break;
            }
        }
        self.now = end;
        self.sample();
        self.run.end_ns = end;
        self.run.switch_drops = self.link.stats().dropped;
        for (g, c) in self.conns.iter().enumerate() {
            self.run.timeouts[g] = c.tcb[0].stats().rto_expiries;
            self.run.retransmissions[g] = c.tcb[0].stats().retransmits;
        }
        Ok(self.run)
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::NicDone(h) => {
                let id = self.nic_q[h as usize]
                    .pop_front()
                    .expect("a packet in service");
                let (g, data) = (self.pkts[&id].flow, self.pkts[&id].seg.is_some());
                if self.p.variation.tx_jitter == 0 {
                    self.switch_arrive(id);
                } else {
                    let t = self.nics[h as usize].arrival(self.now);
                    self.at(t, Ev::SwitchArrive(id));
                }
                self.nic_busy[h as usize] = false;
                self.nic_start(h);
                if data {
                    // A segment left: the application may write the next one.
                    self.fill(g);
                    self.flush(g, 0);
                }
            }
            Ev::LinkDone => {
                let (done, next) = self.link.finish(&mut self.rng);
                if let Some(pk) = done {
                    self.at(self.now + self.p.forward_delay, Ev::RxArrive(pk.seg));
                }
                if let Some(t) = next {
                    self.at(self.now + t, Ev::LinkDone);
                }
            }
            Ev::RxArrive(id) => {
                let Some(pk) = self.pkts.remove(&id) else {
                    return;
                };
                if let Some(s) = pk.seg {
                    if self.nic_drop(pk.flow, s) {
                        self.run.nic_drops += 1;
                        return;
                    }
                }
                self.deliver(pk.flow, 1, &pk.bytes);
            }
            Ev::AckArrive(id) => {
                let Some(pk) = self.pkts.remove(&id) else {
                    return;
                };
                self.deliver(pk.flow, 0, &pk.bytes);
            }
            Ev::Poll(g, side) => {
                if self.conns[g as usize].armed[side as usize] == Some(self.now) {
                    self.conns[g as usize].armed[side as usize] = None;
                    self.flush(g, side);
                }
            }
            Ev::Sample => {
                self.sample();
                self.at(self.now + self.p.sample_every, Ev::Sample);
            }
            Ev::Start(g) => {
                self.fill(g);
                self.flush(g, 0);
            }
            Ev::SwitchArrive(id) => self.switch_arrive(id),
        }
    }

    fn sample(&mut self) {
        let q = self.link.queued_bytes();
        let mss = self.p.segment_size as f64;
        for g in 0..self.p.sample_flows.min(self.conns.len() as u32) {
            if self.run.completed[g as usize].is_some() && self.now > 0 {
                continue;
            }
            let t = &self.conns[g as usize].tcb[0];
            let (cw, ss) = t.cwnd();
            let eff = if t.in_recovery() { ss.min(cw) } else { cw };
            self.run.samples.push(CwndSample {
                time_ns: self.now,
                flow: g,
                cwnd: eff as f64 / mss,
                cwnd_raw: cw as f64 / mss,
                queue_bytes: q,
            });
        }
    }

    fn nic_drop(&mut self, flow: u32, seg: u64) -> bool {
        if let Some(d) = self
            .drops
            .iter_mut()
            .find(|d| d.flow == flow && d.segment == seg && d.count > 0)
        {
            d.count -= 1;
            return true;
        }
        self.rng.chance(self.p.loss_prob)
    }

    /// Hands `b` to side `side` of flow `g`, then lets both applications act and sends
    /// what the TCB has to send.
    fn deliver(&mut self, g: u32, side: u8, b: &[u8]) {
        let Ok(seg) = segment::parse(b) else {
            return;
        };
        let now = BASE + self.now;
        self.conns[g as usize].tcb[side as usize].input(&seg, now);
        if side == 1 {
            let c = &mut self.conns[g as usize];
            loop {
                let n = c.tcb[1].recv(&mut self.scratch).unwrap_or(0);
                if n == 0 {
                    break;
                }
                self.run.delivered[g as usize] += n as u64;
            }
        } else {
            self.fill(g);
            let c = &self.conns[g as usize];
            if c.written == self.p.flow_bytes
                && c.tcb[0].send_queued() == 0
                && self.run.completed[g as usize].is_none()
            {
                self.run.completed[g as usize] = Some(self.now);
                self.remaining -= 1;
                if g < self.p.sample_flows {
                    self.sample();
                }
            }
        }
        self.flush(g, side);
    }

    /// The sending application: keeps at most [`LEAD`] segments of new data beyond what
    /// the NIC has started sending.
    fn fill(&mut self, g: u32) {
        let c = &mut self.conns[g as usize];
        let mss = self.p.segment_size as u64;
        let target = self.p.flow_bytes.min((c.sent_hi + LEAD) * mss);
        while c.written < target {
            let want = (target - c.written).min(self.zeros.len() as u64) as usize;
            let n = c.tcb[0].send(&self.zeros[..want]).unwrap_or(0);
            if n == 0 {
                break;
            }
            c.written += n as u64;
        }
    }

    /// Everything side `side` of flow `g` has to send now; re-arms its timer.
    fn flush(&mut self, g: u32, side: u8) {
        let now = BASE + self.now;
        let mut out: Vec<Vec<u8>> = Vec::new();
        loop {
            let c = &mut self.conns[g as usize];
            c.tcb[side as usize]
                .poll_transmit(now, &mut |o| out.push(serialize(&o.header, o.payload)));
            if c.tcb[side as usize].poll_at() != Some(0) {
                break;
            }
        }
        for b in out {
            self.emit(g, side, b);
        }
        let c = &mut self.conns[g as usize];
        if let Some(t) = c.tcb[side as usize].poll_at() {
            let t = t.saturating_sub(BASE).max(self.now);
            if c.armed[side as usize].is_none_or(|a| t < a || a < self.now) {
                c.armed[side as usize] = Some(t);
                self.at(t, Ev::Poll(g, side));
            }
        }
    }

    fn emit(&mut self, g: u32, side: u8, b: Vec<u8>) {
        let id = self.next_id;
        self.next_id += 1;
        if side == 1 {
            self.pkts.insert(
                id,
                InFlight {
                    flow: g,
                    bytes: b,
                    seg: None,
                    payload: 0,
                },
            );
            self.at(self.now + self.p.reverse_delay, Ev::AckArrive(id));
            return;
        }
        let (seg, payload) = match segment::parse(&b) {
            Ok(s) if !s.payload.is_empty() => {
                let off = s.seq.0.wrapping_sub(self.conns[g as usize].data_iss.0) as u64;
                (
                    Some(off / self.p.segment_size as u64),
                    s.payload.len() as u32,
                )
            }
            _ => (None, 0),
        };
        self.pkts.insert(
            id,
            InFlight {
                flow: g,
                bytes: b,
                seg,
                payload,
            },
        );
        let h = g / self.p.flows_per_sender;
        self.nic_q[h as usize].push_back(id);
        self.nic_start(h);
    }

    /// Starts sender NIC `h` on its next packet if it is idle.
    fn nic_start(&mut self, h: u32) {
        if self.nic_busy[h as usize] {
            return;
        }
        let Some(&id) = self.nic_q[h as usize].front() else {
            return;
        };
        self.nic_busy[h as usize] = true;
        let pk = &self.pkts[&id];
        let bytes = pk.payload as u64 + self.p.link.header_bytes as u64;
        let (g, seg) = (pk.flow, pk.seg);
        if let Some(s) = seg {
            self.run.data_segments += 1;
            let c = &mut self.conns[g as usize];
            let rtx = s < c.sent_hi;
            c.sent_hi = c.sent_hi.max(s + 1);
            if self.p.trace_segments && g < self.p.sample_flows {
                self.run.tx_log.push(TxRecord {
                    time_ns: self.now,
                    flow: g,
                    seg: s,
                    rtx,
                });
            }
        }
        let done = self.now + self.nics[h as usize].serialize(bytes);
        self.at(done, Ev::NicDone(h));
    }

    fn switch_arrive(&mut self, id: u64) {
        let pk = &self.pkts[&id];
        let p = Packet {
            flow: pk.flow,
            seg: id,
            len: pk.payload,
            rtx: false,
            ce: false,
            trimmed: false,
            prio: 0,
        };
        match self.link.enqueue(p, &mut self.rng) {
            Enqueued::Started(t) => self.at(self.now + t, Ev::LinkDone),
            Enqueued::Dropped => {
                self.pkts.remove(&id);
            }
            Enqueued::Queued | Enqueued::Trimmed => {}
        }
    }
}

//! A whole nicemu node in one thread: a NIC lcore on its ports and a host context joined by
//! an emulated PCIe link, stepped one after the other: the two sides share one CPU, for small
//! machines and deterministic tests.
//!
//! [`wire_pair`] joins two such nodes with an in-memory wire, and [`Pair::run_until`] drives
//! them in virtual time: deterministic, and as fast as the CPU allows.

use std::sync::Arc;

use dataplane::clock::Clock;
use dataplane::lcore::{LcoreSetup, Mode, NicLcore, PortSlot};
use dataplane::net::stack::{IfaceConfig, NicStack, StackConfig};
use dataplane::offload;
use dataplane::offload::teardown::TeardownOffload;
use dataplane::port::wire::{self, Impairments, LinkCounters, WireConfig, WireQueue};
use dataplane::port::Port;
use dataplane::tonic::nic::TonicNic;
use hoststack::{Context, HostConfig};
use offload_api::link::{link, HostEnd, LinkConfig};

/// A NIC lcore and the host context it serves.
pub struct Node<P: Port> {
    /// The NIC side.
    pub nic: NicLcore<P>,
    /// The host side (the mTCP-style API).
    pub host: Context<HostEnd>,
}

/// How to build one node on one port.
#[derive(Clone)]
pub struct NodeSpec {
    /// Name (for reports).
    pub name: String,
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// The host's (and the NIC port's) IPv4 address.
    pub ip: [u8; 4],
    /// Prefix length of the port's subnet.
    pub prefix: u8,
    /// The PCIe link.
    pub link: LinkConfig,
    /// Host stack settings (its `ip` and `port` are set from this spec).
    pub host: HostConfig,
    /// NIC stack settings.
    pub stack: StackConfig,
}

impl NodeSpec {
    /// Defaults for a node with `ip`/`prefix` and `mac`.
    pub fn new(name: &str, ip: [u8; 4], prefix: u8, mac: [u8; 6]) -> Self {
        NodeSpec {
            name: name.into(),
            mac,
            ip,
            prefix,
            link: LinkConfig::default(),
            host: HostConfig::new(ip, 0),
            stack: StackConfig::default(),
        }
    }
}

impl<P: Port> Node<P> {
    /// A node whose NIC owns `port` (as port index 0), with clock `clock`.
    pub fn new(spec: NodeSpec, port: P, clock: &Clock) -> Self {
        let (host_end, nic_end) = link(&spec.link);
        let mut nic = NicLcore::new(
            LcoreSetup {
                name: spec.name.clone(),
                core: None,
                mode: Mode::Nic,
                burst: 32,
                clock: clock.clone(),
                host: Some(nic_end),
            },
            vec![PortSlot {
                port,
                index: 0,
                name: format!("{}.p0", spec.name),
                peer: None,
                pcap: None,
            }],
            NicStack::new(
                vec![IfaceConfig::new(spec.mac, vec![(spec.ip, spec.prefix)])],
                spec.stack,
            ),
        );
        nic.set_offloads(offload::default_chain());
        let mut hc = spec.host;
        hc.ip = spec.ip;
        hc.port = 0;
        let c = clock.clone();
        let host = Context::new(hc, host_end, Arc::new(move || c.now_ns()));
        Node { nic, host }
    }

    /// The Tonic offload on the NIC's chain (its flows, counters and traces).
    pub fn tonic(&self) -> &TonicNic {
        self.nic
            .offload()
            .expect("every node's chain has Tonic (offload::default_chain)")
    }

    /// The teardown offload on the NIC's chain (AccelTCP §4.2: its flows and counters).
    pub fn teardown(&self) -> &TeardownOffload {
        self.nic
            .offload()
            .expect("every node's chain has the teardown offload (offload::default_chain)")
    }

    /// One NIC iteration then one host poll; returns the work done (frames and timers).
    pub fn step(&mut self) -> usize {
        self.nic.poll_once() + self.host.poll()
    }
}

/// Two nodes on the two ends of an in-memory wire, sharing a virtual clock.
pub struct Pair {
    /// Node A (10.0.0.1 by default).
    pub a: Node<WireQueue>,
    /// Node B (10.0.0.2 by default).
    pub b: Node<WireQueue>,
    /// The shared virtual clock.
    pub clock: Clock,
    /// Counters of the wire's two directions (A → B, B → A).
    pub links: [Arc<LinkCounters>; 2],
}

/// Address of node A in [`wire_pair`].
pub const A_IP: [u8; 4] = [10, 0, 0, 1];
/// Address of node B in [`wire_pair`].
pub const B_IP: [u8; 4] = [10, 0, 0, 2];

/// Default specs of the two nodes of [`wire_pair`].
pub fn pair_specs() -> (NodeSpec, NodeSpec) {
    (
        NodeSpec::new("a", A_IP, 24, [0x02, 0, 0, 0, 0, 0x0a]),
        NodeSpec::new("b", B_IP, 24, [0x02, 0, 0, 0, 0, 0x0b]),
    )
}

/// Two nodes joined by a wire with impairments `ab` (A → B) and `ba`, on a virtual clock.
pub fn wire_pair(a: NodeSpec, b: NodeSpec, ab: Impairments, ba: Impairments) -> Pair {
    let clock = Clock::virtual_clock();
    clock.advance(1_000_000_000);
    let (mut ea, mut eb) = wire::wire_pair(&WireConfig {
        queues: 1,
        ring_size: 8192,
        a_to_b: ab,
        b_to_a: ba,
        macs: [a.mac, b.mac],
        clock: clock.clone(),
        ..WireConfig::default()
    });
    let qa = ea.take_queue(0).expect("queue 0");
    let qb = eb.take_queue(0).expect("queue 0");
    Pair {
        a: Node::new(a, qa, &clock),
        b: Node::new(b, qb, &clock),
        clock,
        links: [ea.tx_link(), eb.tx_link()],
    }
}

impl Pair {
    /// True when no frame is on the wire in either direction.
    pub fn wire_idle(&self) -> bool {
        self.links.iter().all(|l| l.snapshot().in_flight() == 0)
    }

    /// Steps both nodes until `done` holds, at most `max_steps` steps; virtual time advances
    /// `quantum_ns` per step, and jumps to the next host timer or NIC teardown timer
    /// (retransmission, TIME_WAIT) after 64 idle steps with nothing on the wire (a jump must not overtake a frame in flight: a delayed wire would
    /// deliver it after timers that it should have stopped). Returns whether `done` held.
    pub fn run_until(
        &mut self,
        max_steps: u64,
        quantum_ns: u64,
        mut done: impl FnMut(&mut Pair) -> bool,
    ) -> bool {
        let mut idle = 0u32;
        for _ in 0..max_steps {
            if done(self) {
                return true;
            }
            let w = self.a.step() + self.b.step();
            if w == 0 {
                idle += 1;
            } else {
                idle = 0;
            }
            let now = self.clock.now_ns();
            let next = [
                self.a.host.next_timer(),
                self.b.host.next_timer(),
                self.a.teardown().engine().next_deadline(),
                self.b.teardown().engine().next_deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if idle > 64 && t > now && self.wire_idle() => {
                    self.clock.advance(t - now);
                    idle = 0;
                }
                _ => self.clock.advance(quantum_ns),
            }
        }
        done(self)
    }
}

/// The flow → host core map of a NIC whose port spreads flows over `queues` queues with RSS
/// `mode` (NIC lcore k owns queue k and serves host core k): the core that receives the
/// replies of a connection, i.e. the RSS queue of the reversed tuple (remote → local). Host
/// contexts use it to pick source ports whose replies come back to them (mTCP's
/// `mtcp_init_rss`).
pub fn rss_flow_core(mode: dataplane::rss::RssMode, queues: u16) -> hoststack::stack::FlowCore {
    let reta = dataplane::rss::Reta::new(queues);
    Arc::new(move |ep: &hoststack::tcp::tcb::Endpoints| {
        let Some(key) = mode.key() else {
            return 0;
        };
        let mut input = [0u8; 12];
        let n = dataplane::rss::ipv4_input(
            ep.remote_ip,
            ep.local_ip,
            Some((ep.remote_port, ep.local_port)),
            &mut input,
        );
        reta.queue(dataplane::rss::toeplitz(key, &input[..n])) as usize
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::rss::RssMode;
    use hoststack::memlink;
    use std::net::SocketAddrV4;

    /// A loop that runs other work between NIC iterations (a `shared` lcore) and ends each
    /// iteration with `end_iteration` charges the NIC only for its own iterations; without
    /// it, the other work's time lands in the NIC's idle (or busy) cycles.
    #[test]
    fn end_iteration_keeps_other_work_out_of_the_nic_cycles() {
        let (a, b) = pair_specs();
        let mut p = wire_pair(a, b, Impairments::default(), Impairments::default());
        let hz = dataplane::cycles::measure_tsc_hz(std::time::Duration::from_millis(20));
        let other_work = std::time::Duration::from_millis(10);
        let mut cycles = |end: bool| {
            let before = p.a.nic.finish();
            let before = before.busy_cycles + before.idle_cycles;
            for _ in 0..5 {
                p.a.nic.poll_once();
                if end {
                    p.a.nic.end_iteration();
                }
                std::thread::sleep(other_work);
            }
            let after = p.a.nic.finish();
            after.busy_cycles + after.idle_cycles - before
        };
        let shared = cycles(true);
        let plain = cycles(false);
        // Five sleeps of 10 ms are 50 ms of TSC; five empty iterations are microseconds.
        assert!(shared < hz / 100, "{shared} cycles with end_iteration");
        assert!(plain >= hz / 25, "{plain} cycles without it");
    }

    /// Outgoing connections of host core 2 of 4 pick source ports whose replies the NIC's
    /// RSS steers to queue 2 (mTCP's `mtcp_init_rss`), checked against the wire's own
    /// frame hash.
    #[test]
    fn source_ports_bring_replies_back_to_the_core() {
        for mode in [RssMode::Standard, RssMode::Symmetric] {
            let map = rss_flow_core(mode, 4);
            let mut cfg = HostConfig::new([10, 0, 0, 1], 0);
            cfg.core = 2;
            cfg.flow_core = Some(map);
            let (la, _lb) = memlink::pair(1 << 16);
            let mut ctx = Context::new(cfg, la, Arc::new(|| 1_000_000_000));
            let reta = dataplane::rss::Reta::new(4);
            for i in 0..50u16 {
                let fd = ctx.socket().unwrap();
                ctx.set_nonblocking(fd, true).unwrap();
                let server = SocketAddrV4::new([10, 0, 0, 9].into(), 80 + i % 3);
                let _ = ctx.connect(fd, server);
                let local = ctx.getsockname(fd).unwrap();
                // A reply frame (server → us), hashed as the NIC would.
                let reply = dataplane::frames::tcp(
                    [2; 6],
                    [4; 6],
                    [10, 0, 0, 9],
                    [10, 0, 0, 1],
                    server.port(),
                    local.port(),
                    1,
                    1,
                    0x10,
                    b"",
                );
                let h = dataplane::rss::hash_frame(mode.key().unwrap(), &reply);
                assert_eq!(reta.queue(h), 2, "{mode:?} port {}", local.port());
            }
        }
    }
}

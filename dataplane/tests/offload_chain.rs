//! The offload seam from the outside: a tiny offload, written here and put on an lcore's
//! chain without touching the lcore, sees the frames that pass the NIC stack with their
//! parsed headers, and its verdicts take effect: UDP to one port is counted and dropped, UDP
//! to another is answered on the same port, UDP to a third goes out of the other port, the
//! rest reaches the host. A control message it takes is consumed; one it does not take is
//! counted as unhandled and goes nowhere. Its counters show up in the lcore's report. A
//! fast path written here (a burst hook, as the splice offload's) takes its frames before
//! the NIC stack and the per-frame chain, and the rest of each burst goes on in order.

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::clock::Clock;
use dataplane::config::Config;
use dataplane::lcore::{LcoreReport, Mode, NicLcore};
use dataplane::net::parse::{IPPROTO_UDP, L3};
use dataplane::offload::{
    BurstVerdicts, CounterSink, Offload, OffloadChain, OffloadCtx, RxFrame, Verdict,
};
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use dataplane::runtime::{build_wire, RunOptions};
use offload_api::link::HostEnd;
use offload_api::msg::{ListenAddRepr, ListenRemoveRepr, Message, MsgType};

const CFG: &str = r#"
[[port]]
name = "p0"
driver = "wire"
wire = "left"
ipv4 = ["192.0.2.1/24"]
[[port]]
name = "p1"
driver = "wire"
wire = "right"
ipv4 = ["198.51.100.1/24"]
[[lcore]]
core = 0
role = "nic"
"#;

const DROP_PORT: u16 = 9999;
const ECHO_PORT: u16 = 7777;
const RELAY_PORT: u16 = 8888;
const PEER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const PEER_IP: [u8; 4] = [192, 0, 2, 10];
const NIC_IP: [u8; 4] = [192, 0, 2, 1];

/// Drops UDP to [`DROP_PORT`], echoes UDP to [`ECHO_PORT`] (MACs swapped), relays UDP to
/// [`RELAY_PORT`] out of port 1, and takes `ListenRemove` control messages.
#[derive(Default)]
struct UdpPortFilter {
    dropped: u64,
    echoed: u64,
    relayed: u64,
    seen: u64,
    controls: u64,
}

impl<B: PacketBuf> Offload<B> for UdpPortFilter {
    fn name(&self) -> &'static str {
        "udp-filter"
    }

    fn active(&self) -> bool {
        true
    }

    fn wire_rx(&mut self, _cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        self.seen += 1;
        let L3::Ipv4 {
            proto: IPPROTO_UDP,
            l4_off,
            ..
        } = rx.hdr.l3
        else {
            return Verdict::Pass;
        };
        let d = rx.buf.data();
        let dport = u16::from_be_bytes([d[l4_off + 2], d[l4_off + 3]]);
        match dport {
            DROP_PORT => {
                self.dropped += 1;
                Verdict::Consumed
            }
            ECHO_PORT => {
                self.echoed += 1;
                let f = rx.buf.data_mut();
                let (dst, src) = f.split_at_mut(6);
                dst.swap_with_slice(&mut src[..6]);
                Verdict::Reply
            }
            RELAY_PORT => {
                self.relayed += 1;
                Verdict::Out(1)
            }
            _ => Verdict::Pass,
        }
    }

    fn host_control(
        &mut self,
        _cx: &mut OffloadCtx<'_, B>,
        _port: u16,
        msg: MsgType,
        _frame: &[u8],
    ) -> Verdict {
        if msg != MsgType::ListenRemove {
            return Verdict::Pass;
        }
        self.controls += 1;
        Verdict::Consumed
    }

    fn counters(&self, out: CounterSink<'_>) {
        out("seen", self.seen);
        out("dropped", self.dropped);
        out("echoed", self.echoed);
        out("relayed", self.relayed);
        out("controls", self.controls);
    }
}

struct Rig {
    lcore: NicLcore<WireQueue>,
    host: HostEnd,
    left: WireQueue,
    right: WireQueue,
}

fn rig() -> Rig {
    let cfg = Config::parse(CFG, "test").unwrap();
    let opts = RunOptions {
        mode: Mode::Nic,
        pin: false,
        host_channels: true,
        ..RunOptions::default()
    };
    let mut topo = build_wire(&cfg, &opts, Clock::real()).unwrap();
    let left = topo.peers.get_mut("left").unwrap().take_queue(0).unwrap();
    let right = topo.peers.get_mut("right").unwrap().take_queue(0).unwrap();
    let mut lcore = topo.lcores.remove(0);
    // The test's chain replaces the configuration's: only the filter.
    lcore.set_offloads(OffloadChain::new().with(Box::new(UdpPortFilter::default())));
    // The peer's MAC is known, so nothing waits on ARP.
    Rig {
        lcore,
        host: topo.host.remove(0),
        left,
        right,
    }
}

fn udp_to(dport: u16, tag: u8) -> HeapBuf {
    let nic_mac = dataplane::runtime::wire_mac(0);
    HeapBuf::from_frame(&dataplane::frames::udp(
        PEER_MAC, nic_mac, PEER_IP, NIC_IP, 40_000, dport, &[tag; 32],
    ))
}

/// Runs the lcore a bounded number of iterations.
fn spin(r: &mut Rig, n: usize) {
    for _ in 0..n {
        r.lcore.poll_once();
    }
}

fn report(r: &mut Rig) -> LcoreReport {
    r.lcore.finish()
}

#[test]
fn a_tiny_offload_on_the_chain_sees_parsed_frames_and_its_verdicts_take_effect() {
    let mut r = rig();
    let mut batch: Vec<HeapBuf> = Vec::new();
    for i in 0..10u8 {
        batch.push(udp_to(DROP_PORT, i));
        batch.push(udp_to(ECHO_PORT, i));
        batch.push(udp_to(RELAY_PORT, i));
        batch.push(udp_to(53, i));
    }
    r.left.tx_burst(&mut batch);
    spin(&mut r, 50);

    // Echoed frames come back on the left wire with the MACs swapped.
    let mut back = Vec::new();
    r.left.rx_burst(&mut back, 1024);
    assert_eq!(back.len(), 10, "one echo per frame to the echo port");
    for b in &back {
        let d = b.data();
        assert_eq!(&d[0..6], &PEER_MAC, "echo goes back to the sender");
        assert_eq!(u16::from_be_bytes([d[36], d[37]]), ECHO_PORT);
    }
    // Relayed frames leave through the other port, unchanged.
    let mut relayed = Vec::new();
    r.right.rx_burst(&mut relayed, 1024);
    assert_eq!(relayed.len(), 10, "one relay per frame to the relay port");
    assert!(relayed
        .iter()
        .all(|b| u16::from_be_bytes([b.data()[36], b.data()[37]]) == RELAY_PORT));
    // Only the frames the filter passed reach the host.
    let mut to_host = 0;
    while let Some((_, f)) = r.host.recv() {
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 53);
        to_host += 1;
    }
    assert_eq!(to_host, 10);

    let rep = report(&mut r);
    let o = rep.offload("udp-filter").expect("the filter reports");
    assert_eq!(o.counter("seen"), 40);
    assert_eq!(o.counter("dropped"), 10);
    assert_eq!(o.counter("echoed"), 10);
    assert_eq!(o.counter("relayed"), 10);
    assert_eq!(o.verdicts.wire_consumed, 10);
    assert_eq!(o.verdicts.wire_replied, 10);
    assert_eq!(o.verdicts.wire_out, 10);
    assert_eq!(rep.to_host, 10);
    // The filter is the one that saw the frames: the lcore got them through the chain.
    assert_eq!(
        r.lcore.offload::<UdpPortFilter>().map(|f| f.dropped),
        Some(10)
    );
}

#[test]
fn control_messages_go_to_the_offload_that_takes_them_and_never_to_a_wire() {
    let mut r = rig();
    let taken = Message::ListenRemove(ListenRemoveRepr {
        request_id: 1,
        addr: NIC_IP,
        port: 80,
    });
    let not_taken = Message::ListenAdd(ListenAddRepr::default());
    for m in [taken, not_taken, taken] {
        let mut f = Vec::new();
        m.write_frame([0; 6], [0; 6], &[], &mut f).unwrap();
        r.host.send(0, &f).unwrap();
    }
    spin(&mut r, 10);
    let rep = report(&mut r);
    let o = rep.offload("udp-filter").unwrap();
    assert_eq!(o.counter("controls"), 2);
    assert_eq!(o.verdicts.control, 2);
    assert_eq!(
        rep.control_unhandled, 1,
        "the listen registration nobody takes (yet)"
    );
    assert_eq!(rep.from_host, 3);
    let (mut l, mut rt) = (Vec::new(), Vec::new());
    r.left.rx_burst(&mut l, 64);
    r.right.rx_burst(&mut rt, 64);
    assert!(
        l.is_empty() && rt.is_empty(),
        "control messages never reach a wire"
    );
}

/// A fast path over whole bursts, before the NIC stack: UDP to `port` (read at the fixed
/// offsets of an Ethernet/IPv4 frame without options) gets `verdict`.
struct BurstTaker {
    port: u16,
    verdict: Verdict,
    bursts: u64,
    taken: u64,
}

impl<B: PacketBuf> Offload<B> for BurstTaker {
    fn name(&self) -> &'static str {
        "burst-taker"
    }

    fn active(&self) -> bool {
        true
    }

    fn has_wire_burst(&self) -> bool {
        true
    }

    fn wire_burst(
        &mut self,
        _cx: &mut OffloadCtx<'_, B>,
        _port: usize,
        frames: &mut [B],
        verdicts: &mut BurstVerdicts<'_>,
    ) {
        self.bursts += 1;
        for (k, b) in frames.iter().enumerate() {
            let d = b.data();
            if verdicts.open(k)
                && d.len() >= 38
                && d[23] == IPPROTO_UDP
                && u16::from_be_bytes([d[36], d[37]]) == self.port
            {
                verdicts.set(k, self.verdict);
                self.taken += 1;
            }
        }
    }

    fn counters(&self, out: CounterSink<'_>) {
        out("bursts", self.bursts);
        out("taken", self.taken);
    }
}

#[test]
fn burst_hooks_take_their_frames_first_and_the_rest_keep_their_order() {
    let mut r = rig();
    // Two fast paths and the per-frame filter: relayed frames leave from the first hook,
    // dropped ones from the second; neither reaches the filter's wire_rx.
    r.lcore.set_offloads(
        OffloadChain::new()
            .with(Box::new(BurstTaker {
                port: RELAY_PORT,
                verdict: Verdict::Out(1),
                bursts: 0,
                taken: 0,
            }))
            .with(Box::new(BurstTaker {
                port: DROP_PORT,
                verdict: Verdict::Consumed,
                bursts: 0,
                taken: 0,
            }))
            .with(Box::new(UdpPortFilter::default())),
    );
    let mut batch: Vec<HeapBuf> = Vec::new();
    for i in 0..10u8 {
        batch.push(udp_to(RELAY_PORT, i));
        batch.push(udp_to(53, i));
        batch.push(udp_to(DROP_PORT, i));
        batch.push(udp_to(54, i));
    }
    r.left.tx_burst(&mut batch);
    spin(&mut r, 50);

    let mut relayed = Vec::new();
    r.right.rx_burst(&mut relayed, 1024);
    let tags: Vec<u8> = relayed.iter().map(|b| b.data()[42]).collect();
    assert_eq!(tags, (0..10).collect::<Vec<u8>>(), "relayed, in order");
    // What no hook took reaches the host in arrival order, through the filter.
    let mut to_host = Vec::new();
    while let Some((_, f)) = r.host.recv() {
        to_host.push((u16::from_be_bytes([f[36], f[37]]), f[42]));
    }
    let want: Vec<(u16, u8)> = (0..10u8).flat_map(|i| [(53, i), (54, i)]).collect();
    assert_eq!(to_host, want);

    let rep = report(&mut r);
    let [relay, drop, filter] = &rep.offloads[..] else {
        panic!("three offloads: {:?}", rep.offloads);
    };
    assert_eq!(relay.counter("taken"), 10);
    assert_eq!(relay.verdicts.wire_out, 10);
    assert_eq!(relay.verdicts.wire_consumed, 0);
    assert!(relay.counter("bursts") >= 1);
    assert_eq!(drop.counter("taken"), 10);
    assert_eq!(drop.verdicts.wire_consumed, 10);
    assert_eq!(drop.verdicts.wire_out, 0);
    assert_eq!(
        filter.counter("seen"),
        20,
        "the per-frame hook saw only the rest"
    );
    assert_eq!(rep.to_host, 20);
}

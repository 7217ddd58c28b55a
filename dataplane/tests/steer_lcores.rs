//! Steering between NIC lcores ([`dataplane::steer`]) in virtual time: two lcores, each
//! with its own queue of one port and its own host link; a frame for a connection of the
//! other lcore's host (a local port of the ephemeral range with the other residue) is handed
//! to that lcore and reaches its host, in order, while frames of this lcore's connections,
//! and of listening ports (outside the range, or registered inside it) stay where they
//! arrived.

use dataplane::buf::HeapBuf;
use dataplane::clock::Clock;
use dataplane::config::Config;
use dataplane::lcore::{Mode, NicLcore};
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use dataplane::runtime::{build_wire, wire_mac, RunOptions};
use dataplane::steer::Steer;
use offload_api::link::HostEnd;
use offload_api::wire::tcp::{TcpFlags, TcpHeader};
use offload_api::wire::Seq;

const CFG: &str = r#"
[[port]]
name = "p0"
driver = "wire"
wire = "w"
ipv4 = ["192.0.2.1/24"]
[[lcore]]
core = 0
role = "nic"
"#;

const PEER_IP: [u8; 4] = [192, 0, 2, 9];
const NIC_IP: [u8; 4] = [192, 0, 2, 1];

/// One lcore with its wire's far end and its host link.
struct Side {
    lcore: NicLcore<WireQueue>,
    wire: WireQueue,
    host: HostEnd,
}

fn side(clock: &Clock, pcap: Option<&std::path::Path>) -> Side {
    let cfg = Config::parse(CFG, "test").unwrap();
    let opts = RunOptions {
        mode: Mode::Nic,
        pin: false,
        host_channels: true,
        pcap: pcap
            .map(|p| vec![("p0".to_string(), p.to_path_buf())])
            .unwrap_or_default(),
        ..RunOptions::default()
    };
    let mut topo = build_wire(&cfg, &opts, clock.clone()).unwrap();
    let wire = topo.peers.get_mut("w").unwrap().take_queue(0).unwrap();
    Side {
        lcore: topo.lcores.remove(0),
        wire,
        host: topo.host.remove(0),
    }
}

/// A TCP segment from the peer to the NIC's `dst_port`, with payload `seq` (to tell them
/// apart).
fn seg(dst_port: u16, seq: u32) -> Vec<u8> {
    let h = TcpHeader {
        src_port: 8080,
        dst_port,
        seq: Seq(seq),
        flags: TcpFlags::ACK,
        ..TcpHeader::default()
    };
    dataplane::frames::tcp_with([2, 0, 0, 0, 0, 9], wire_mac(0), PEER_IP, NIC_IP, &h, b"x")
}

fn host_frames(h: &mut HostEnd) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while let Some((_, f)) = h.recv() {
        v.push(f.as_ref().to_vec());
    }
    v
}

/// Frames in the capture file at `path` (the 24-byte file header, then records with their
/// captured length at offset 8 of each 16-byte record header).
fn pcap_records(path: &std::path::Path) -> usize {
    let b = std::fs::read(path).unwrap();
    let (mut at, mut n) = (24, 0);
    while at + 16 <= b.len() {
        let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + len;
        n += 1;
    }
    n
}

fn dst_port_seq(f: &[u8]) -> (u16, u32) {
    (
        u16::from_be_bytes([f[36], f[37]]),
        u32::from_be_bytes([f[38], f[39], f[40], f[41]]),
    )
}

#[test]
fn frames_of_the_other_lcores_connections_reach_its_host() {
    let clock = Clock::virtual_clock();
    let dir = std::env::temp_dir().join(format!("nicemu-steer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (pa, pb) = (dir.join("a.pcap"), dir.join("b.pcap"));
    let (mut a, mut b) = (side(&clock, Some(&pa)), side(&clock, Some(&pb)));
    let steer = Steer::new(vec![a.lcore.doorbell(), b.lcore.doorbell()], (32768, 60999));
    a.lcore.set_steer(steer.clone(), 0);
    b.lcore.set_steer(steer.clone(), 1);
    // Lcore 0 receives: its own connection's (even port), lcore 1's (odd ports, in
    // order), and a listening port's.
    let frames = [
        seg(40_000, 1),
        seg(40_001, 2),
        seg(80, 3),
        seg(40_003, 4),
        seg(40_001, 5),
    ];
    let mut burst: Vec<HeapBuf> = frames.iter().map(|f| HeapBuf::from_frame(f)).collect();
    a.wire.tx_burst(&mut burst);
    a.lcore.poll_once();
    let got_a: Vec<_> = host_frames(&mut a.host)
        .iter()
        .map(|f| dst_port_seq(f))
        .collect();
    assert_eq!(got_a, vec![(40_000, 1), (80, 3)]);
    assert!(
        host_frames(&mut b.host).is_empty(),
        "lcore 1 has not run yet"
    );
    b.lcore.poll_once();
    let got_b: Vec<_> = host_frames(&mut b.host)
        .iter()
        .map(|f| dst_port_seq(f))
        .collect();
    assert_eq!(got_b, vec![(40_001, 2), (40_003, 4), (40_001, 5)]);
    let (ra, rb) = (a.lcore.finish(), b.lcore.finish());
    assert_eq!((ra.steered_out, ra.steered_in, ra.steer_dropped), (3, 0, 0));
    assert_eq!((rb.steered_out, rb.steered_in, rb.steer_dropped), (0, 3, 0));
    assert_eq!((ra.to_host, rb.to_host), (2, 3));
    // Nothing went back out of either wire, and nothing is left to steer.
    let mut back = Vec::new();
    assert_eq!(
        a.wire.rx_burst(&mut back, 64) + b.wire.rx_burst(&mut back, 64),
        0
    );
    assert!(steer.is_empty(0) && steer.is_empty(1));
    // Each frame is captured once, where it arrived.
    assert_eq!((pcap_records(&pa), pcap_records(&pb)), (5, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_steering_every_frame_stays_on_the_lcore_it_reached() {
    let clock = Clock::virtual_clock();
    let mut a = side(&clock, None);
    let mut burst: Vec<HeapBuf> = [seg(40_000, 1), seg(40_001, 2)]
        .iter()
        .map(|f| HeapBuf::from_frame(f))
        .collect();
    a.wire.tx_burst(&mut burst);
    a.lcore.poll_once();
    assert_eq!(host_frames(&mut a.host).len(), 2);
    assert_eq!(a.lcore.finish().steered_out, 0);
}

/// A port some context listens on ([`Steer::listen`]) inside the ephemeral range: frames
/// to it stay on the lcore they reached, whichever residue the port has, as an accepted
/// connection's must; the other ports of the range are still steered.
#[test]
fn frames_to_a_listening_port_inside_the_range_stay_where_they_arrived() {
    let clock = Clock::virtual_clock();
    let (mut a, mut b) = (side(&clock, None), side(&clock, None));
    let steer = Steer::new(vec![a.lcore.doorbell(), b.lcore.doorbell()], (32768, 60999));
    a.lcore.set_steer(steer.clone(), 0);
    b.lcore.set_steer(steer.clone(), 1);
    steer.listen(40_001);
    let mut burst: Vec<HeapBuf> = [seg(40_001, 1), seg(40_003, 2), seg(40_001, 3)]
        .iter()
        .map(|f| HeapBuf::from_frame(f))
        .collect();
    a.wire.tx_burst(&mut burst);
    a.lcore.poll_once();
    b.lcore.poll_once();
    let got = |h: &mut HostEnd| -> Vec<(u16, u32)> {
        host_frames(h).iter().map(|f| dst_port_seq(f)).collect()
    };
    assert_eq!(got(&mut a.host), vec![(40_001, 1), (40_001, 3)]);
    assert_eq!(got(&mut b.host), vec![(40_003, 2)]);
    let (ra, rb) = (a.lcore.finish(), b.lcore.finish());
    assert_eq!((ra.steered_out, rb.steered_in), (1, 1));
}

//! The NIC's connection-splicing offload (AccelTCP §4.3, App. A "Connection splicing") on an
//! lcore with two wire ports, driven from the wires and the host link in virtual time:
//! install and its ack, translation both ways (checksums verify, fields follow the offsets),
//! refusals (table full, exists, invalid), FIN/FIN close reported after the linger, RST
//! from either side reported with its side, idle timeout, malformed segments counted and
//! dropped, segments the host kept passed back through `host_tcp` and in the install's
//! payload, and two lcores sharing one table.

mod closing;
mod install;

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::clock::Clock;
use dataplane::config::Config;
use dataplane::lcore::{Mode, NicLcore};
use dataplane::offload::splice::{SpliceConfig, SpliceOffload, SpliceTable};
use dataplane::offload::OffloadChain;
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use dataplane::runtime::{build_wire, wire_mac, RunOptions};
use offload_api::link::HostEnd;
use offload_api::msg::{
    self, AckStatus, CloseReason, FourTuple, Message, MsgType, SpliceCloseRepr, SpliceInstallRepr,
    SpliceSide,
};
use offload_api::wire::checksum::verify;
use offload_api::wire::tcp::{self, SackBlock, TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::Seq;
use std::sync::Arc;

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

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x0c];
const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x5e];
const CLIENT_IP: [u8; 4] = [192, 0, 2, 10];
const PROXY_A_IP: [u8; 4] = [192, 0, 2, 1];
const PROXY_B_IP: [u8; 4] = [198, 51, 100, 1];
const SERVER_IP: [u8; 4] = [198, 51, 100, 20];
const CLIENT_PORT: u16 = 40_000;
const PROXY_A_PORT: u16 = 80;
const PROXY_B_PORT: u16 = 50_000;
const SERVER_PORT: u16 = 8080;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// `B.snd_nxt − A.rcv_nxt` and `B.rcv_nxt − A.snd_nxt`, chosen so that sums wrap.
const SEQ_OFFSET: u32 = 0xF000_0000;
const ACK_OFFSET: u32 = 0x1234_5678;
const TS_AB: u32 = 1000;
const TS_BA: u32 = 0xFFFF_FF00;

struct Rig {
    lcore: NicLcore<WireQueue>,
    host: HostEnd,
    left: WireQueue,
    right: WireQueue,
    clock: Clock,
}

fn rig(cfg: SpliceConfig) -> Rig {
    rig_with(SpliceTable::new(cfg))
}

fn rig_with(table: Arc<SpliceTable>) -> Rig {
    let cfg = Config::parse(CFG, "test").unwrap();
    let opts = RunOptions {
        mode: Mode::Nic,
        pin: false,
        host_channels: true,
        ..RunOptions::default()
    };
    let clock = Clock::virtual_clock();
    clock.advance(1_000 * SEC);
    let mut topo = build_wire(&cfg, &opts, clock.clone()).unwrap();
    let left = topo.peers.get_mut("left").unwrap().take_queue(0).unwrap();
    let right = topo.peers.get_mut("right").unwrap().take_queue(0).unwrap();
    let mut lcore = topo.lcores.remove(0);
    lcore.set_offloads(OffloadChain::new().with(Box::new(SpliceOffload::new(table))));
    Rig {
        lcore,
        host: topo.host.remove(0),
        left,
        right,
        clock,
    }
}

fn small() -> SpliceConfig {
    SpliceConfig {
        max_pairs: 4,
        idle_timeout_ns: 30 * SEC,
        linger_ns: SEC,
    }
}

fn install_repr(id: u32) -> SpliceInstallRepr {
    SpliceInstallRepr {
        request_id: id,
        seq_offset: SEQ_OFFSET,
        ack_offset: ACK_OFFSET,
        ts_offset_ab: TS_AB,
        ts_offset_ba: TS_BA,
        // Where the tests' segments start: the client's at 100, the server's at 900.
        a_start: 100,
        b_start: 900,
        a: SpliceSide {
            tuple: FourTuple {
                local_ip: PROXY_A_IP,
                local_port: PROXY_A_PORT,
                remote_ip: CLIENT_IP,
                remote_port: CLIENT_PORT,
            },
            local_mac: [0; 6], // filled from port 0
            remote_mac: CLIENT_MAC,
            port: 0,
            peer_wscale: 7,
            local_wscale: 9,
            sack_permitted: true,
            timestamps: true,
        },
        b: SpliceSide {
            tuple: FourTuple {
                local_ip: PROXY_B_IP,
                local_port: PROXY_B_PORT,
                remote_ip: SERVER_IP,
                remote_port: SERVER_PORT,
            },
            local_mac: wire_mac(1),
            remote_mac: SERVER_MAC,
            port: 1,
            peer_wscale: 8,
            local_wscale: 7,
            sack_permitted: true,
            timestamps: true,
        },
    }
}

fn spin(r: &mut Rig) {
    for _ in 0..8 {
        r.lcore.poll_once();
    }
}

fn from_host(r: &mut Rig) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while let Some((_, f)) = r.host.recv() {
        v.push(f.as_ref().to_vec());
    }
    v
}

fn wire_out(q: &mut WireQueue) -> Vec<Vec<u8>> {
    let mut back = Vec::new();
    q.rx_burst(&mut back, 1024);
    back.iter().map(|b| b.data().to_vec()).collect()
}

/// Sends install `m` with `payload` and returns the ack's status.
fn install_with(r: &mut Rig, m: SpliceInstallRepr, payload: &[u8]) -> AckStatus {
    let mut f = Vec::new();
    Message::SpliceInstall(m)
        .write_frame([0; 6], [0; 6], payload, &mut f)
        .unwrap();
    r.host.send(0, &f).unwrap();
    spin(r);
    let acks = from_host(r);
    assert_eq!(acks.len(), 1, "one install ack");
    let Message::InstallAck(a) = msg::parse_frame(&acks[0]).unwrap().message else {
        panic!("not an install ack");
    };
    assert_eq!(a.request_type, MsgType::SpliceInstall);
    assert_eq!(a.request_id, m.request_id);
    a.status
}

fn install(r: &mut Rig) {
    assert_eq!(install_with(r, install_repr(7), &[]), AckStatus::Ok);
}

/// A segment from the client to the proxy's side A.
fn client_seg(h: TcpHeader, payload: &[u8]) -> Vec<u8> {
    let h = TcpHeader {
        src_port: CLIENT_PORT,
        dst_port: PROXY_A_PORT,
        ..h
    };
    dataplane::frames::tcp_with(CLIENT_MAC, wire_mac(0), CLIENT_IP, PROXY_A_IP, &h, payload)
}

/// A segment from the server to the proxy's side B.
fn server_seg(h: TcpHeader, payload: &[u8]) -> Vec<u8> {
    let h = TcpHeader {
        src_port: SERVER_PORT,
        dst_port: PROXY_B_PORT,
        ..h
    };
    dataplane::frames::tcp_with(SERVER_MAC, wire_mac(1), SERVER_IP, PROXY_B_IP, &h, payload)
}

fn from_client(r: &mut Rig, h: TcpHeader, payload: &[u8]) {
    let f = client_seg(h, payload);
    r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(r);
}

fn from_server(r: &mut Rig, h: TcpHeader, payload: &[u8]) {
    let f = server_seg(h, payload);
    r.right.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(r);
}

fn hdr(flags: TcpFlags, seq: u32, ack: u32) -> TcpHeader {
    TcpHeader {
        seq: Seq(seq),
        ack: Seq(ack),
        flags,
        window: 1000,
        options: TcpOptions {
            timestamp: Some((50, 60)),
            ..TcpOptions::default()
        },
        ..TcpHeader::default()
    }
}

/// Checks the frame's IPv4 header and TCP checksums and returns its TCP segment.
fn checked(f: &[u8], src: [u8; 4], dst: [u8; 4]) -> TcpPacket<&[u8]> {
    assert!(verify(&f[14..34]), "IPv4 header checksum");
    assert_eq!(&f[26..30], &src);
    assert_eq!(&f[30..34], &dst);
    let t = TcpPacket::new_checked(&f[34..]).unwrap();
    assert!(t.verify_checksum(src, dst), "TCP checksum");
    t
}

fn counter(r: &mut Rig, name: &str) -> u64 {
    r.lcore.finish().offload("splice").unwrap().counter(name)
}

fn report(r: &mut Rig) -> SpliceCloseRepr {
    let m = from_host(r);
    assert_eq!(m.len(), 1, "one closure report");
    assert_eq!(u16::from_be_bytes([m[0][12], m[0][13]]), 0x090D);
    let Message::SpliceClose(c) = msg::parse_frame(&m[0]).unwrap().message else {
        panic!("not a closure report");
    };
    c
}

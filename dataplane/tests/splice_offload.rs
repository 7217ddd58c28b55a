//! The NIC's connection-splicing offload (AccelTCP §4.3, App. A "Connection splicing") on an
//! lcore with two wire ports, driven from the wires and the host link in virtual time:
//! install and its ack, translation both ways (checksums verify, fields follow the offsets),
//! refusals (table full, exists, invalid), FIN/FIN close reported after the linger, RST
//! from either side reported with its side, idle timeout, malformed segments counted and
//! dropped, segments the host kept passed back through `host_tcp` and in the install's
//! payload, and two lcores sharing one table.

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

#[test]
fn install_is_acked_and_both_directions_translate() {
    let mut r = rig(small());
    install(&mut r);
    assert_eq!(counter(&mut r, "active_pairs"), 1);

    // Client → server: data with timestamps and SACK blocks.
    let mut h = hdr(TcpFlags::ACK | TcpFlags::PSH, 0x0FFF_FFF0, 0xEDCB_A990);
    h.window = 300;
    h.options.sack[0] = SackBlock {
        left: Seq(0xEDCB_B000),
        right: Seq(0xEDCB_C000),
    };
    h.options.sack_len = 1;
    from_client(&mut r, h, b"GET / HTTP/1.1\r\n\r\n");
    let out = wire_out(&mut r.right);
    assert_eq!(out.len(), 1);
    assert!(wire_out(&mut r.left).is_empty() && from_host(&mut r).is_empty());
    let f = &out[0];
    assert_eq!(&f[0..6], &SERVER_MAC);
    assert_eq!(&f[6..12], &wire_mac(1));
    let t = checked(f, PROXY_B_IP, SERVER_IP);
    assert_eq!((t.src_port(), t.dst_port()), (PROXY_B_PORT, SERVER_PORT));
    assert_eq!(t.seq_number(), Seq(0x0FFF_FFF0u32.wrapping_add(SEQ_OFFSET)));
    assert_eq!(t.ack_number(), Seq(0xEDCB_A990u32.wrapping_add(ACK_OFFSET)));
    // 300 << 7 bytes, announced with B's shift of 7.
    assert_eq!(t.window_len(), 300);
    let o = tcp::parse_options(t.options()).unwrap();
    assert_eq!(o.timestamp, Some((50 + TS_AB, 60u32.wrapping_sub(TS_BA))));
    assert_eq!(
        o.sack_blocks()[0].left,
        Seq(0xEDCB_B000u32.wrapping_add(ACK_OFFSET))
    );
    assert_eq!(t.payload(), b"GET / HTTP/1.1\r\n\r\n");

    // Server → client.
    let mut h = hdr(TcpFlags::ACK, 0x2000, 0x0000_0010);
    h.window = 64;
    from_server(&mut r, h, &[7; 333]);
    let out = wire_out(&mut r.left);
    assert_eq!(out.len(), 1);
    let f = &out[0];
    assert_eq!(&f[0..6], &CLIENT_MAC);
    assert_eq!(
        &f[6..12],
        &wire_mac(0),
        "zero local MAC filled from the port"
    );
    let t = checked(f, PROXY_A_IP, CLIENT_IP);
    assert_eq!((t.src_port(), t.dst_port()), (PROXY_A_PORT, CLIENT_PORT));
    assert_eq!(t.seq_number(), Seq(0x2000u32.wrapping_sub(ACK_OFFSET)));
    assert_eq!(t.ack_number(), Seq(0x10u32.wrapping_sub(SEQ_OFFSET)));
    // 64 << 8 bytes, announced with A's shift of 9.
    assert_eq!(t.window_len(), 32);
    let o = tcp::parse_options(t.options()).unwrap();
    assert_eq!(
        o.timestamp,
        Some((50u32.wrapping_add(TS_BA), 60u32.wrapping_sub(TS_AB)))
    );

    assert_eq!(counter(&mut r, "translated_ab"), 1);
    assert_eq!(counter(&mut r, "translated_ba"), 1);
    assert_eq!(counter(&mut r, "installs"), 1);
    let rep = r.lcore.finish();
    assert_eq!(rep.offload("splice").unwrap().verdicts.wire_out, 2);
}

#[test]
fn unrelated_traffic_passes_to_the_host() {
    let mut r = rig(small());
    install(&mut r);
    let h = TcpHeader {
        src_port: CLIENT_PORT + 1,
        dst_port: PROXY_A_PORT,
        ..hdr(TcpFlags::ACK, 1, 1)
    };
    let f = dataplane::frames::tcp_with(CLIENT_MAC, wire_mac(0), CLIENT_IP, PROXY_A_IP, &h, b"x");
    r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(&mut r);
    assert_eq!(from_host(&mut r).len(), 1);
    assert!(wire_out(&mut r.right).is_empty());
}

#[test]
fn refusals_full_exists_invalid() {
    let mut r = rig(SpliceConfig {
        max_pairs: 1,
        ..small()
    });
    install(&mut r);
    // The same 4-tuples again: refused as existing.
    let mut dup = install_repr(8);
    dup.request_id = 8;
    assert_eq!(install_with(&mut r, dup, &[]), AckStatus::TableFull);
    // Another pair: table full (capacity 1); the host relays it itself.
    let mut other = install_repr(9);
    other.a.tuple.remote_port += 1;
    other.b.tuple.local_port += 1;
    assert_eq!(install_with(&mut r, other, &[]), AckStatus::TableFull);
    assert_eq!(counter(&mut r, "refused_full"), 2);

    let mut r = rig(small());
    install(&mut r);
    assert_eq!(
        install_with(&mut r, install_repr(8), &[]),
        AckStatus::Exists
    );
    let mut bad = install_repr(10);
    bad.a.tuple.remote_port += 5;
    bad.b.tuple.local_port += 5;
    bad.b.port = 7; // no such port
    assert_eq!(install_with(&mut r, bad, &[]), AckStatus::Invalid);
    let mut same = install_repr(11);
    same.b = same.a;
    assert_eq!(install_with(&mut r, same, &[]), AckStatus::Invalid);
    // A window-scale shift above 14 does not parse: Invalid with the request id.
    let mut f = Vec::new();
    Message::SpliceInstall(install_repr(12))
        .write_frame([0; 6], [0; 6], &[], &mut f)
        .unwrap();
    f[14 + 24 + 26] = 15;
    r.host.send(0, &f).unwrap();
    spin(&mut r);
    let acks = from_host(&mut r);
    let Message::InstallAck(a) = msg::parse_frame(&acks[0]).unwrap().message else {
        panic!("not an ack");
    };
    assert_eq!((a.request_id, a.status), (12, AckStatus::Invalid));
    assert_eq!(counter(&mut r, "refused_exists"), 1);
    assert_eq!(counter(&mut r, "refused_invalid"), 3);
    assert_eq!(counter(&mut r, "active_pairs"), 1);
}

#[test]
fn fin_fin_close_is_reported_after_the_linger() {
    let mut r = rig(small());
    install(&mut r);
    let fa = TcpFlags::FIN | TcpFlags::ACK;
    // Client: 5 bytes then FIN at 100..105, FIN = 105.
    from_client(&mut r, hdr(fa, 100, 500), b"hello");
    // Server (B space): acks the FIN (106 + SEQ_OFFSET), sends its FIN at 900.
    let ack_fin_a = 106u32.wrapping_add(SEQ_OFFSET);
    from_server(&mut r, hdr(TcpFlags::ACK, 900, ack_fin_a), &[]);
    from_server(&mut r, hdr(fa, 900, ack_fin_a), b"bye");
    // Client acks the server's FIN (A space): 904 - ACK_OFFSET.
    from_client(
        &mut r,
        hdr(TcpFlags::ACK, 106, 904u32.wrapping_sub(ACK_OFFSET)),
        &[],
    );
    assert_eq!(wire_out(&mut r.right).len(), 2);
    assert_eq!(wire_out(&mut r.left).len(), 2);
    assert!(
        from_host(&mut r).is_empty(),
        "no report before the linger ends"
    );
    // A retransmitted last ACK in the linger still translates.
    r.clock.advance(500 * MS);
    from_client(
        &mut r,
        hdr(TcpFlags::ACK, 106, 904u32.wrapping_sub(ACK_OFFSET)),
        &[],
    );
    assert_eq!(wire_out(&mut r.right).len(), 1);
    assert!(from_host(&mut r).is_empty());
    r.clock.advance(600 * MS);
    spin(&mut r);
    let c = report(&mut r);
    assert_eq!(c.reason, CloseReason::Fin);
    assert_eq!(c.rst_side, 0);
    assert_eq!(c.request_id, 7);
    assert_eq!((c.bytes_ab, c.bytes_ba), (5, 3));
    assert_eq!((c.packets_ab, c.packets_ba), (3, 2));
    assert_eq!(c.a.remote_ip, CLIENT_IP);
    assert_eq!(c.b.remote_ip, SERVER_IP);
    assert_eq!(counter(&mut r, "closed_fin"), 1);
    assert_eq!(counter(&mut r, "active_pairs"), 0);
    assert_eq!(counter(&mut r, "reports_sent"), 1);
    // The entries are gone: the next segment goes to the host.
    from_client(&mut r, hdr(TcpFlags::ACK, 106, 1), &[]);
    assert_eq!(from_host(&mut r).len(), 1);
}

#[test]
fn rst_from_either_side_is_forwarded_and_reported_with_its_side() {
    for (side, code) in [(0, 1u8), (1, 2u8)] {
        let mut r = rig(small());
        install(&mut r);
        from_client(&mut r, hdr(TcpFlags::ACK | TcpFlags::PSH, 100, 20), b"abc");
        assert_eq!(wire_out(&mut r.right).len(), 1);
        if side == 0 {
            from_client(&mut r, hdr(TcpFlags::RST | TcpFlags::ACK, 103, 20), &[]);
            let out = wire_out(&mut r.right);
            assert_eq!(out.len(), 1, "the RST is forwarded");
            let t = checked(&out[0], PROXY_B_IP, SERVER_IP);
            assert!(t.flags().has(TcpFlags::RST));
        } else {
            from_server(&mut r, hdr(TcpFlags::RST, 77, 0), &[]);
            let out = wire_out(&mut r.left);
            assert_eq!(out.len(), 1, "the RST is forwarded");
            let t = checked(&out[0], PROXY_A_IP, CLIENT_IP);
            assert!(t.flags().has(TcpFlags::RST));
            assert_eq!(t.ack_number(), Seq(0), "no ACK flag: ack left alone");
        }
        spin(&mut r);
        assert!(from_host(&mut r).is_empty(), "reported after the linger");
        r.clock.advance(SEC + 1);
        spin(&mut r);
        let c = report(&mut r);
        assert_eq!(c.reason, CloseReason::Rst);
        assert_eq!(c.rst_side, code);
        assert_eq!(c.bytes_ab, 3);
        assert_eq!(counter(&mut r, "closed_rst"), 1);
        assert_eq!(counter(&mut r, "active_pairs"), 0);
    }
}

#[test]
fn idle_pairs_time_out_and_activity_postpones_it() {
    let mut r = rig(small());
    install(&mut r);
    r.clock.advance(20 * SEC);
    from_client(&mut r, hdr(TcpFlags::ACK, 100, 1), b"z");
    r.clock.advance(20 * SEC);
    spin(&mut r);
    assert!(
        from_host(&mut r).is_empty(),
        "activity 20 s ago: not idle yet"
    );
    assert_eq!(
        r.lcore.next_deadline(),
        Some(r.clock.now_ns() + 10 * SEC),
        "re-armed from the last activity"
    );
    r.clock.advance(10 * SEC);
    spin(&mut r);
    let c = report(&mut r);
    assert_eq!(c.reason, CloseReason::Timeout);
    assert_eq!((c.bytes_ab, c.packets_ab, c.packets_ba), (1, 1, 0));
    assert_eq!(counter(&mut r, "closed_idle"), 1);
    assert_eq!(r.lcore.next_deadline(), None);
}

#[test]
fn malformed_segments_are_counted_and_dropped() {
    let mut r = rig(small());
    install(&mut r);
    // A timestamp option with length 3 (RFC 7323 §3.2 says 10); the checksum is valid, so
    // the NIC stack lets it through and only the splice looks at options.
    let mut f = client_seg(hdr(TcpFlags::ACK, 1, 1), b"data");
    let ts = (54..66).find(|&i| f[i] == 8 && f[i + 1] == 10).unwrap();
    f[ts + 1] = 3;
    f[50] = 0;
    f[51] = 0;
    let tcp_end = 14 + usize::from(u16::from_be_bytes([f[16], f[17]]));
    let c = offload_api::wire::checksum::l4_checksum(CLIENT_IP, PROXY_A_IP, 6, &f[34..tcp_end]);
    f[50..52].copy_from_slice(&c.to_be_bytes());
    r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(&mut r);
    assert!(wire_out(&mut r.right).is_empty());
    assert!(from_host(&mut r).is_empty());
    assert_eq!(counter(&mut r, "malformed"), 1);
    // Garbage of every length on both wires: no panic, the pair still works.
    for n in 0..80usize {
        let mut g = client_seg(hdr(TcpFlags::ACK, 1, 1), &[]);
        g.truncate(n.min(g.len()));
        for (i, b) in g.iter_mut().enumerate().skip(34) {
            *b = (i * 37 + n) as u8;
        }
        r.left.tx_burst(&mut vec![HeapBuf::from_frame(&g)]);
        r.right.tx_burst(&mut vec![HeapBuf::from_frame(&g)]);
    }
    spin(&mut r);
    let _ = from_host(&mut r);
    let _ = wire_out(&mut r.left);
    let _ = wire_out(&mut r.right);
    from_client(&mut r, hdr(TcpFlags::ACK, 1, 1), b"ok");
    assert_eq!(wire_out(&mut r.right).len(), 1);
}

/// The lcore's splice fast path does not verify the TCP checksum: the differential update
/// (RFC 1624 eqn. 3) carries a corrupt segment's error through, so it leaves exactly as
/// corrupt as it came and the peer drops it.
#[test]
fn corrupt_segments_are_translated_and_leave_corrupt() {
    let mut r = rig(small());
    install(&mut r);
    let mut f = client_seg(hdr(TcpFlags::ACK, 5, 5), b"payload");
    f[50] ^= 0x5a;
    r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(&mut r);
    let out = wire_out(&mut r.right);
    assert_eq!(out.len(), 1);
    let g = &out[0];
    assert!(verify(&g[14..34]), "IPv4 header checksum");
    let t = TcpPacket::new_checked(&g[34..]).unwrap();
    assert!(!t.verify_checksum(PROXY_B_IP, SERVER_IP), "still corrupt");
    assert_eq!(t.payload(), b"payload");

    assert_eq!(counter(&mut r, "translated_ab"), 1);
}

#[test]
fn host_kept_segments_translate_through_host_tcp_and_the_install_payload() {
    let mut r = rig(small());
    // The install carries a client segment the host buffered during the handover.
    let kept = client_seg(hdr(TcpFlags::ACK | TcpFlags::PSH, 1000, 2000), b"early");
    let mut ip = kept[14..].to_vec();
    ip[10] = 0; // the host leaves checksums to the NIC
    ip[11] = 0;
    ip[36] = 0;
    ip[37] = 0;
    assert_eq!(install_with(&mut r, install_repr(7), &ip), AckStatus::Ok);
    let out = wire_out(&mut r.right);
    assert_eq!(out.len(), 1, "the install's payload went out translated");
    let t = checked(&out[0], PROXY_B_IP, SERVER_IP);
    assert_eq!(t.seq_number(), Seq(1000u32.wrapping_add(SEQ_OFFSET)));
    assert_eq!(t.payload(), b"early");

    // Another kept segment, passed back as an ordinary host frame tagged with port 0.
    let mut f = server_seg(hdr(TcpFlags::ACK, 3000, 4000), b"late");
    f[0..12].fill(0);
    f[24] = 0;
    f[25] = 0;
    f[50] = 0;
    f[51] = 0;
    r.host.send(0, &f).unwrap();
    spin(&mut r);
    let out = wire_out(&mut r.left);
    assert_eq!(out.len(), 1, "redirected to side A's port");
    assert_eq!(&out[0][0..6], &CLIENT_MAC);
    let t = checked(&out[0], PROXY_A_IP, CLIENT_IP);
    assert_eq!(t.seq_number(), Seq(3000u32.wrapping_sub(ACK_OFFSET)));
    assert_eq!(t.payload(), b"late");
    assert_eq!(counter(&mut r, "from_host"), 2);
    assert!(wire_out(&mut r.right).is_empty());
}

#[test]
fn two_lcores_share_one_table_and_the_installer_reports() {
    let table = SpliceTable::new(small());
    let mut r0 = rig_with(table.clone());
    let mut r1 = rig_with(table.clone());
    install(&mut r0);
    assert_eq!(table.len(), 1);
    // lcore 1 never saw the install but translates the pair's segments.
    from_client(&mut r1, hdr(TcpFlags::ACK, 100, 6), b"hi");
    assert_eq!(wire_out(&mut r1.right).len(), 1);
    // A RST through lcore 1: forwarded there, reported by lcore 0.
    from_server(&mut r1, hdr(TcpFlags::RST | TcpFlags::ACK, 7, 8), &[]);
    assert_eq!(wire_out(&mut r1.left).len(), 1);
    assert!(from_host(&mut r1).is_empty());
    // The entries linger: a segment the client still had in flight reaches the server
    // (which answers it with a RST of its own), not the host.
    assert_eq!(table.len(), 1, "entries linger after a RST");
    from_client(&mut r1, hdr(TcpFlags::ACK, 102, 6), &[]);
    assert_eq!(wire_out(&mut r1.right).len(), 1);
    spin(&mut r0);
    assert!(
        from_host(&mut r0).is_empty(),
        "no report before the linger ends"
    );
    r0.clock.advance(SEC + 1);
    spin(&mut r0);
    assert_eq!(table.len(), 0, "entries removed after the linger");
    let c = report(&mut r0);
    assert_eq!((c.reason, c.rst_side), (CloseReason::Rst, 2));
    assert_eq!((c.bytes_ab, c.packets_ab, c.packets_ba), (2, 2, 1));
}

/// Frames an offload sends, counted (the stress test's lcores have no ports).
#[derive(Default)]
struct CountIo {
    to_host: Vec<Vec<u8>>,
    to_port: usize,
}

impl dataplane::offload::OffloadIo for CountIo {
    fn to_port(&mut self, _port: u16, _frame: &[u8]) -> bool {
        self.to_port += 1;
        true
    }
    fn to_host(&mut self, _port: u16, frame: &[u8]) -> bool {
        self.to_host.push(frame.to_vec());
        true
    }
}

fn bare_stack() -> dataplane::net::stack::NicStack<HeapBuf> {
    use dataplane::net::stack::{IfaceConfig, NicStack, StackConfig};
    NicStack::new(
        vec![
            IfaceConfig::new(wire_mac(0), vec![(PROXY_A_IP, 24)]),
            IfaceConfig::new(wire_mac(1), vec![(PROXY_B_IP, 24)]),
        ],
        StackConfig::default(),
    )
}

/// Offers wire frame `f` (arrived on `port`) to `o`; returns the verdict.
fn offer(
    o: &mut SpliceOffload,
    stack: &mut dataplane::net::stack::NicStack<HeapBuf>,
    io: &mut CountIo,
    now: u64,
    port: usize,
    f: &[u8],
) -> dataplane::offload::Verdict {
    use dataplane::offload::{Offload, OffloadCtx, RxFrame};
    let hdr = dataplane::net::parse::parse_headers(f).unwrap();
    let mut buf = HeapBuf::from_frame(f);
    let mut rx = RxFrame {
        port,
        buf: &mut buf,
        hdr: &hdr,
    };
    let mut cx = OffloadCtx { now, stack, io };
    Offload::<HeapBuf>::wire_rx(o, &mut cx, &mut rx)
}

#[test]
fn lcores_racing_on_one_table_close_every_pair_exactly_once() {
    use dataplane::offload::{Offload, OffloadCtx, Verdict};
    const PAIRS: u16 = 256;
    let table = SpliceTable::new(SpliceConfig {
        max_pairs: 1024,
        idle_timeout_ns: 1 << 60,
        linger_ns: 0,
    });
    let pair = |i: u16| {
        let mut r = install_repr(u32::from(i));
        r.a.tuple.remote_port = CLIENT_PORT + i;
        r.b.tuple.local_port = PROXY_B_PORT + i;
        r
    };
    let mut owner = SpliceOffload::new(table.clone());
    let mut stack = bare_stack();
    let mut io = CountIo::default();
    for i in 0..PAIRS {
        let mut f = Vec::new();
        Message::SpliceInstall(pair(i))
            .write_frame([0; 6], [0; 6], &[], &mut f)
            .unwrap();
        let mut cx = OffloadCtx {
            now: SEC,
            stack: &mut stack,
            io: &mut io,
        };
        Offload::<HeapBuf>::host_control(&mut owner, &mut cx, 0, MsgType::SpliceInstall, &f);
    }
    assert_eq!(io.to_host.len(), usize::from(PAIRS));
    io.to_host.clear();
    assert_eq!(table.len(), usize::from(PAIRS));

    let c = |i: u16, h: TcpHeader, p: &[u8]| {
        let h = TcpHeader {
            src_port: CLIENT_PORT + i,
            dst_port: PROXY_A_PORT,
            ..h
        };
        dataplane::frames::tcp_with(CLIENT_MAC, wire_mac(0), CLIENT_IP, PROXY_A_IP, &h, p)
    };
    let s = |i: u16, h: TcpHeader, p: &[u8]| {
        let h = TcpHeader {
            src_port: SERVER_PORT,
            dst_port: PROXY_B_PORT + i,
            ..h
        };
        dataplane::frames::tcp_with(SERVER_MAC, wire_mac(1), SERVER_IP, PROXY_B_IP, &h, p)
    };
    // Two more lcores: each closes its half of the pairs (even: FIN/FIN, odd: RST), while
    // both send data on every pair in between.
    let workers: Vec<_> = (0..2u16)
        .map(|w| {
            let table = table.clone();
            std::thread::spawn(move || {
                let mut o = SpliceOffload::new(table);
                let mut stack = bare_stack();
                let mut io = CountIo::default();
                let fa = TcpFlags::FIN | TcpFlags::ACK;
                let mut outs = 0usize;
                for round in 0..4u32 {
                    for i in 0..PAIRS {
                        let v = offer(
                            &mut o,
                            &mut stack,
                            &mut io,
                            2 * SEC,
                            0,
                            &c(i, hdr(TcpFlags::ACK, 100 + round, 1), b"d"),
                        );
                        assert!(matches!(v, Verdict::Out(1) | Verdict::Pass));
                        outs += usize::from(v == Verdict::Out(1));
                        let _ = offer(
                            &mut o,
                            &mut stack,
                            &mut io,
                            2 * SEC,
                            1,
                            &s(i, hdr(TcpFlags::ACK, round, 1), b"e"),
                        );
                        if i % 2 != w || round != 2 {
                            continue;
                        }
                        if i % 4 < 2 {
                            let ack_a = 105u32.wrapping_add(SEQ_OFFSET);
                            let ack_b = 904u32.wrapping_sub(ACK_OFFSET);
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                0,
                                &c(i, hdr(fa, 100, 500), b"four"),
                            );
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                1,
                                &s(i, hdr(fa, 900, ack_a), b"bye"),
                            );
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                0,
                                &c(i, hdr(TcpFlags::ACK, 105, ack_b), &[]),
                            );
                        } else {
                            offer(
                                &mut o,
                                &mut stack,
                                &mut io,
                                2 * SEC,
                                1,
                                &s(i, hdr(TcpFlags::RST, 1, 0), &[]),
                            );
                        }
                    }
                }
                assert!(io.to_host.is_empty(), "only the owner reports");
                outs
            })
        })
        .collect();
    let sent: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    // Rounds 0–2 find every pair installed (closes happen in round 2, after the data).
    assert!(sent >= 2 * 3 * usize::from(PAIRS), "{sent}");
    let mut cx = OffloadCtx {
        now: 3 * SEC,
        stack: &mut stack,
        io: &mut io,
    };
    Offload::<HeapBuf>::poll(&mut owner, &mut cx);
    let mut seen = vec![0u8; usize::from(PAIRS)];
    for f in &io.to_host {
        let Message::SpliceClose(r) = msg::parse_frame(f).unwrap().message else {
            panic!("not a report");
        };
        let i = r.request_id as u16;
        seen[usize::from(i)] += 1;
        if i % 4 < 2 {
            assert_eq!((r.reason, r.rst_side), (CloseReason::Fin, 0), "pair {i}");
        } else {
            assert_eq!((r.reason, r.rst_side), (CloseReason::Rst, 2), "pair {i}");
        }
        assert!(r.packets_ab >= 3 && r.bytes_ab >= 3, "pair {i}: {r:?}");
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    assert_eq!(table.len(), 0);
    assert!(!Offload::<HeapBuf>::active(&owner));
}

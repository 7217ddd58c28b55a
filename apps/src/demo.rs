//! `nicemu demo`: the embedded default topology, driven step by step in one thread.
//!
//! A NIC lcore sits between a client peer (port p0, a wire losing 1%) and a server peer
//! (port p1). The demo plays both peers and the host: ARP, ping, forwarding with the wire's
//! loss, malformed frames, and host-originated frames that need ARP resolution, checksums
//! and software TSO; then the host stack: two nodes moving 10 MB each way over a lossy wire
//! and a 64-byte echo (`demo_tcp`). Every step checks its result; a failed check fails the
//! demo.

use std::time::Duration;

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::clock::Clock;
use dataplane::config::{fmt_mac, Config};
use dataplane::cycles::measure_tsc_hz;
use dataplane::frames;
use dataplane::lcore::{Mode, NicLcore};
use dataplane::net::parse::{parse, L3};
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use dataplane::runtime::{build_wire, RunOptions};
use offload_api::wire::TcpPacket;

use crate::report;

const CONFIG: &str = include_str!("../../configs/demo.toml");
const CLIENT_MAC: [u8; 6] = [0x02, 0x63, 0x6c, 0, 0, 1];
const CLIENT_IP: [u8; 4] = [192, 0, 2, 10];
const NIC0_IP: [u8; 4] = [192, 0, 2, 1];
const SERVER_MAC: [u8; 6] = [0x02, 0x73, 0x76, 0, 0, 1];
const SERVER_IP: [u8; 4] = [198, 51, 100, 10];
const NIC1_IP: [u8; 4] = [198, 51, 100, 1];

struct Peer {
    q: WireQueue,
    inbox: Vec<HeapBuf>,
}

impl Peer {
    fn send(&mut self, frame: &[u8]) {
        let mut v = vec![HeapBuf::from_frame(frame)];
        self.q.tx_burst(&mut v);
    }
    fn recv(&mut self) -> Vec<Vec<u8>> {
        self.q.rx_burst(&mut self.inbox, 1024);
        self.inbox.drain(..).map(|b| b.data().to_vec()).collect()
    }
}

/// Polls the NIC and collects what each peer receives, `rounds` times.
fn pump(
    nic: &mut NicLcore<WireQueue>,
    client: &mut Peer,
    server: &mut Peer,
    rounds: usize,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let (mut c, mut s) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        nic.poll_once();
        c.extend(client.recv());
        s.extend(server.recv());
    }
    (c, s)
}

pub(crate) fn check(ok: bool, what: String) -> Result<(), String> {
    println!("  [{}] {what}", if ok { "ok" } else { "FAILED" });
    if ok {
        Ok(())
    } else {
        Err(format!("demo check failed: {what}"))
    }
}

/// Runs the demo.
pub fn run(frames: u32, dpdk_seconds: f64) -> Result<(), String> {
    let cfg = Config::parse(CONFIG, "configs/demo.toml (embedded)").map_err(|e| e.to_string())?;
    let opts = RunOptions {
        mode: Mode::Forward,
        host_channels: true,
        pin: false,
        ..RunOptions::default()
    };
    let mut topo = build_wire(&cfg, &opts, Clock::real()).map_err(|e| e.to_string())?;
    let mut nic = topo.lcores.remove(0);
    let mut host = topo.host.remove(0);
    let take = |name: &str, topo: &mut dataplane::runtime::WireTopology| Peer {
        q: topo
            .peers
            .get_mut(name)
            .and_then(|e| e.take_queue(0))
            .expect("demo wire"),
        inbox: Vec::new(),
    };
    let mut client = take("client", &mut topo);
    let mut server = take("server", &mut topo);
    let nic0_mac = dataplane::runtime::wire_mac(0);
    let nic1_mac = dataplane::runtime::wire_mac(1);
    let start = std::time::Instant::now();
    let tsc_hz = measure_tsc_hz(Duration::from_millis(20));
    println!(
        "nicemu demo: client {} --wire(1% loss)-- [p0 NIC p1] --wire-- server {}",
        ip(CLIENT_IP),
        ip(SERVER_IP)
    );

    println!(
        "1. ARP: the client resolves the NIC's address {}",
        ip(NIC0_IP)
    );
    client.send(&frames::arp_request(CLIENT_MAC, CLIENT_IP, NIC0_IP));
    let (got, _) = pump(&mut nic, &mut client, &mut server, 4);
    let reply = got
        .iter()
        .find(|f| f.len() >= 42 && f[12..14] == [8, 6] && f[20..22] == [0, 2]);
    // The client wire loses 1%: a lost request or reply is retried, as a host would.
    let reply = match reply {
        Some(r) => Some(r.clone()),
        None => {
            client.send(&frames::arp_request(CLIENT_MAC, CLIENT_IP, NIC0_IP));
            pump(&mut nic, &mut client, &mut server, 4)
                .0
                .into_iter()
                .find(|f| f.len() >= 42 && f[20..22] == [0, 2])
        }
    };
    check(
        reply.as_ref().is_some_and(|r| r[22..28] == nic0_mac),
        format!(
            "ARP reply says {} is at {}",
            ip(NIC0_IP),
            fmt_mac(&nic0_mac)
        ),
    )?;

    println!("2. ICMP: the client pings the NIC 10 times");
    let mut replies = 0;
    for seq in 0..10u16 {
        client.send(&frames::icmp_echo_request(
            CLIENT_MAC,
            nic0_mac,
            CLIENT_IP,
            NIC0_IP,
            7,
            seq,
            b"nicemu demo ping",
        ));
        let (got, _) = pump(&mut nic, &mut client, &mut server, 2);
        replies += got
            .iter()
            .filter(|f| {
                matches!(parse(f), Ok(p) if matches!(p.l3, L3::Ipv4 { proto: 1, .. })) && f[34] == 0
            })
            .count();
    }
    check(
        replies >= 8,
        format!("{replies}/10 echo replies (the wire loses 1% each way)"),
    )?;

    println!("3. Forwarding: the client sends {frames} UDP frames to the server through the NIC");
    let mut sent = Vec::new();
    let mut received = Vec::new();
    for i in 0..frames {
        let payload: Vec<u8> = (0..(18 + i % 1400))
            .map(|k| (k ^ i) as u8)
            .chain(i.to_be_bytes())
            .collect();
        let f = frames::udp(
            CLIENT_MAC, nic0_mac, CLIENT_IP, SERVER_IP, 40000, 9, &payload,
        );
        client.send(&f);
        sent.push(f);
        if i % 32 == 31 {
            received.extend(pump(&mut nic, &mut client, &mut server, 1).1);
        }
    }
    received.extend(pump(&mut nic, &mut client, &mut server, 8).1);
    let link = topo
        .links
        .iter()
        .find(|l| l.0 == "client")
        .map(|l| l.2.snapshot())
        .unwrap_or_default();
    let lost = link.lost;
    // Every frame that arrives must be byte-identical to one that was sent, in order.
    let mut it = sent.iter();
    let intact = received.iter().all(|r| it.by_ref().any(|s| s == r));
    check(
        intact,
        format!(
            "{} frames arrived, every byte intact and in order",
            received.len()
        ),
    )?;
    let expect = frames as u64 - lost;
    check(
        received.len() as u64 + 12 >= expect && received.len() as u64 <= expect,
        format!(
            "delivered {} + lost on the wire {lost} ≈ sent {frames} (pings and ARP share the wire)",
            received.len()
        ),
    )?;

    println!("4. Malformed frames are dropped and counted");
    let good = frames::udp(CLIENT_MAC, nic0_mac, CLIENT_IP, SERVER_IP, 1, 2, b"x");
    let mut bad = Vec::new();
    bad.push(good[..30].to_vec()); // truncated
    let mut f = good.clone();
    f[24] ^= 0xff; // IP checksum
    bad.push(f);
    let mut f = good.clone();
    f[20] = 0x20; // MF: a fragment (checksum kept valid, so the fragment rule is what drops it)
    dataplane::net::csum::fill_ipv4_header(&mut f[14..34]);
    bad.push(f);
    let mut f = good.clone();
    f[14] = 0x46; // IHL 6: IP options, which the pipeline does not support
    dataplane::net::csum::fill_ipv4_header(&mut f[14..38]);
    bad.push(f);
    let mut f = good.clone();
    f[12..14].copy_from_slice(&0x090Au16.to_be_bytes()); // host<->NIC control type from the wire
    bad.push(f);
    let before = nic.stack().counters().drops.total();
    let mut delivered = 0;
    for f in &bad {
        // The lossy wire may eat one; resend until the NIC has seen it (bounded).
        for _ in 0..5 {
            let seen = nic.stack().counters().drops.total();
            client.send(f);
            pump(&mut nic, &mut client, &mut server, 1);
            if nic.stack().counters().drops.total() > seen {
                delivered += 1;
                break;
            }
        }
    }
    let dropped = nic.stack().counters().drops.total() - before;
    check(
        delivered == bad.len() as u64 && dropped == bad.len() as u64,
        format!(
            "{dropped} of {} malformed frames dropped and counted, none forwarded",
            bad.len()
        ),
    )?;

    println!(
        "5. Host transmit: a UDP datagram and a 6000-byte TCP segment to the server, MAC unknown"
    );
    let mut udp = frames::udp(
        nic1_mac,
        [0; 6],
        NIC1_IP,
        SERVER_IP,
        5000,
        5001,
        b"from the host",
    );
    zero_checksums(&mut udp);
    let payload: Vec<u8> = (0..6000u32).map(|k| (k % 251) as u8).collect();
    let mut big = frames::tcp(
        nic1_mac, [0; 6], NIC1_IP, SERVER_IP, 5000, 80, 1000, 1, 0x18, &payload,
    );
    zero_checksums(&mut big);
    let _ = host.send(1, &udp);
    let _ = host.send(1, &big);
    let mut at_server = Vec::new();
    for _ in 0..50 {
        let (_, s) = pump(&mut nic, &mut client, &mut server, 1);
        for f in s {
            if f.len() >= 42 && f[12..14] == [8, 6] && f[20..22] == [0, 1] && f[38..42] == SERVER_IP
            {
                server.send(&frames::arp(
                    2,
                    SERVER_MAC,
                    SERVER_IP,
                    f[6..12].try_into().unwrap(),
                    f[22..28].try_into().unwrap(),
                    f[28..32].try_into().unwrap(),
                ));
            } else {
                at_server.push(f);
            }
        }
        if at_server.len() >= 6 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let valid = at_server
        .iter()
        .filter(|f| parse(f).is_ok() && f[0..6] == SERVER_MAC)
        .count();
    let tcp_bytes: usize = at_server
        .iter()
        .filter_map(|f| match parse(f) {
            Ok(p) => match p.l3 {
                L3::Ipv4 {
                    proto: 6,
                    l4_off,
                    l4_len,
                    ..
                } => Some(
                    TcpPacket::new_unchecked(&f[l4_off..l4_off + l4_len])
                        .payload()
                        .len(),
                ),
                _ => None,
            },
            _ => None,
        })
        .sum();
    check(
        valid == at_server.len() && valid >= 2,
        format!(
            "the NIC resolved {} by ARP and delivered {valid} frames with valid checksums",
            ip(SERVER_IP)
        ),
    )?;
    check(tcp_bytes == 6000, format!("software TSO split the TCP segment into MSS-sized segments carrying all {tcp_bytes} bytes"))?;

    let rep = nic.finish();
    println!();
    print!(
        "{}",
        report::summary(std::slice::from_ref(&rep), start.elapsed(), tsc_hz)
    );
    for (name, out, back) in &topo.links {
        println!(
            "wire {name}: nic->peer {}; peer->nic {}",
            report::link(&out.snapshot()),
            report::link(&back.snapshot())
        );
    }
    crate::demo_tcp::run()?;
    if dpdk_seconds > 0.0 {
        crate::cli::nic::dpdk_demo(dpdk_seconds)?;
    }
    Ok(())
}

fn zero_checksums(f: &mut [u8]) {
    f[24] = 0;
    f[25] = 0;
    let l4 = 34;
    match f[23] {
        6 => {
            f[l4 + 16] = 0;
            f[l4 + 17] = 0
        }
        17 => {
            f[l4 + 6] = 0;
            f[l4 + 7] = 0
        }
        _ => {}
    }
}

fn ip(a: [u8; 4]) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

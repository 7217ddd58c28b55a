//! The pcap writer's files are read by the reference tool, tshark, with every frame intact.

use std::path::PathBuf;
use std::process::Command;

use dataplane::net::fill_checksums;
use dataplane::pcap::{read_pcap, PcapWriter};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, Icmpv4Packet, Icmpv4Repr, IpProtocol,
    Ipv4Address, Ipv4Packet, Ipv4Repr,
};

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const IP_A: [u8; 4] = [10, 0, 0, 1];
const IP_B: [u8; 4] = [10, 0, 0, 2];

fn eth(ethertype: u16, body_len: usize) -> Vec<u8> {
    let mut f = vec![0u8; 14 + body_len];
    f[0..6].copy_from_slice(&MAC_B);
    f[6..12].copy_from_slice(&MAC_A);
    f[12..14].copy_from_slice(&ethertype.to_be_bytes());
    f
}

fn arp_frame() -> Vec<u8> {
    let mut f = eth(0x0806, 28);
    ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(MAC_A),
        source_protocol_addr: Ipv4Address::from(IP_A),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: Ipv4Address::from(IP_B),
    }
    .emit(&mut ArpPacket::new_unchecked(&mut f[14..]));
    f
}

fn ipv4_frame(proto: IpProtocol, l4_len: usize) -> Vec<u8> {
    let mut f = eth(0x0800, 20 + l4_len);
    Ipv4Repr {
        src_addr: Ipv4Address::from(IP_A),
        dst_addr: Ipv4Address::from(IP_B),
        next_header: proto,
        payload_len: l4_len,
        hop_limit: 64,
    }
    .emit(
        &mut Ipv4Packet::new_unchecked(&mut f[14..]),
        &ChecksumCapabilities::default(),
    );
    f
}

fn icmp_frame() -> Vec<u8> {
    let repr = Icmpv4Repr::EchoRequest {
        ident: 1,
        seq_no: 2,
        data: b"ping-data",
    };
    let mut f = ipv4_frame(IpProtocol::Icmp, repr.buffer_len());
    repr.emit(
        &mut Icmpv4Packet::new_unchecked(&mut f[34..]),
        &ChecksumCapabilities::default(),
    );
    f
}

fn tcp_frame(payload_len: usize) -> Vec<u8> {
    let mut f = ipv4_frame(IpProtocol::Tcp, 20 + payload_len);
    let t = &mut f[34..];
    t[0..2].copy_from_slice(&40000u16.to_be_bytes());
    t[2..4].copy_from_slice(&80u16.to_be_bytes());
    t[4..8].copy_from_slice(&1u32.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = 0x18; // PSH|ACK
    t[14..16].copy_from_slice(&1024u16.to_be_bytes());
    for (i, b) in t[20..].iter_mut().enumerate() {
        *b = i as u8;
    }
    fill_checksums(&mut f).unwrap();
    f
}

fn out_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.pcap", std::process::id()))
}

fn tshark_fields(path: &PathBuf) -> Vec<(usize, u16)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-T", "fields", "-e", "frame.len", "-e", "eth.type"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run tshark ({e}): this test needs it, install tshark \
                 (e.g. `apt-get install tshark`, see ci/)"
            )
        });
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut it = l.split('\t');
            let len = it.next().unwrap().trim().parse().unwrap();
            let ty = it
                .next()
                .unwrap_or_else(|| panic!("no eth.type in {l:?}"))
                .trim();
            let ty = u16::from_str_radix(ty.trim_start_matches("0x"), 16).unwrap();
            (len, ty)
        })
        .collect()
}

#[test]
fn tshark_reads_every_frame() {
    let frames = [arp_frame(), icmp_frame(), tcp_frame(1000), tcp_frame(0)];
    let path = out_path("tshark");
    let t0 = 1_700_000_000_000_000_000u64;
    {
        let mut w = PcapWriter::create(&path, 0).unwrap();
        for (i, f) in frames.iter().enumerate() {
            w.write(t0 + i as u64 * 1_000_123, f).unwrap();
        }
        assert_eq!(w.packets(), 4);
        // Drop flushes.
    }
    let got = tshark_fields(&path);
    let want: Vec<(usize, u16)> = vec![
        (42, 0x0806),
        (14 + 20 + 8 + 9, 0x0800),
        (14 + 20 + 20 + 1000, 0x0800),
        (54, 0x0800),
    ];
    assert_eq!(got, want);

    // Round trip through our own reader.
    let back = read_pcap(&path).unwrap();
    assert_eq!(back.len(), frames.len());
    for (i, ((ts, bytes), f)) in back.iter().zip(frames.iter()).enumerate() {
        assert_eq!(*ts, t0 + i as u64 * 1_000_123);
        assert_eq!(bytes, f);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn tshark_sees_original_length_of_snapped_frames() {
    let path = out_path("snap");
    let f = tcp_frame(1400);
    {
        let mut w = PcapWriter::create(&path, 96).unwrap();
        w.write(1, &f).unwrap();
        w.flush().unwrap();
    }
    assert_eq!(tshark_fields(&path), vec![(f.len(), 0x0800)]);
    let back = read_pcap(&path).unwrap();
    assert_eq!(back, vec![(1, f[..96].to_vec())]);
    std::fs::remove_file(&path).unwrap();
}

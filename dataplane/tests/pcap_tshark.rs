//! The pcap writer's files are read by the reference tool, tshark, with every frame intact.

use std::path::PathBuf;
use std::process::Command;

use dataplane::frames;
use dataplane::pcap::{read_pcap, PcapWriter};

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const IP_A: [u8; 4] = [192, 0, 2, 1];
const IP_B: [u8; 4] = [192, 0, 2, 2];

fn arp_frame() -> Vec<u8> {
    frames::arp_request(MAC_A, IP_A, IP_B)
}

fn icmp_frame() -> Vec<u8> {
    frames::icmp_echo_request(MAC_A, MAC_B, IP_A, IP_B, 1, 2, b"ping-data")
}

fn tcp_frame(payload_len: usize) -> Vec<u8> {
    frames::tcp(
        MAC_A,
        MAC_B,
        IP_A,
        IP_B,
        40000,
        80,
        1,
        0,
        0x18,
        &vec![0x42; payload_len],
    )
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
    // Short frames are padded to the Ethernet minimum of 60 bytes by the builders.
    let want: Vec<(usize, u16)> = vec![
        (60, 0x0806),
        (60, 0x0800),
        (14 + 20 + 20 + 1000, 0x0800),
        (60, 0x0800),
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

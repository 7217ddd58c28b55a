//! A connection whose windows allow more segments than the host ↔ NIC link has free
//! descriptors sends only what fits and the rest on later flushes: nothing is lost on a
//! full link, so nothing is retransmitted and the peer sees no gap.

mod common;

use common::*;

#[test]
fn a_window_larger_than_the_link_loses_no_segment() {
    // 8 descriptors per direction; the receiver offers a 256 KB window (about 180 full
    // segments), so a single transmit could emit many times what the link holds.
    let mut cb = cfg(B);
    cb.tcp.recv_buffer = 256 * 1024;
    let mut net = Net::with_link(cfg(A), cb, 8);
    let (c, s) = connected(&mut net, 80);
    let data: Vec<u8> = (0..2_000_000u32)
        .map(|i| (i * 13 + i / 509) as u8)
        .collect();
    let (mut sent, mut got) = (0usize, Vec::with_capacity(data.len()));
    let mut buf = vec![0u8; 65536];
    assert!(net.run_until(2_000_000, |n| {
        if sent < data.len() {
            if let Ok(k) = n.a.write(s, &data[sent..]) {
                sent += k;
            }
        }
        while let Ok(k) = n.b.read(c, &mut buf) {
            if k == 0 {
                break;
            }
            got.extend_from_slice(&buf[..k]);
        }
        got.len() == data.len()
    }));
    assert!(got == data, "bytes differ");
    assert_eq!(net.a.stats().link_full, 0, "segments lost on the full link");
    let t = net.a.tcp_totals();
    assert_eq!(t.retransmits, 0, "{t:?}");
    assert_eq!(net.b.tcp_totals().ooo_segments, 0);
    assert!(t.segs_out > 1_000);
}

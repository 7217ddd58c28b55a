//! Installs and their refusals, translation both ways, traffic that is not spliced, and segments the host kept during the handover.

use super::*;

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
    // The table's presence filter ruled it out: no shard lock taken.
    assert_eq!(counter(&mut r, "table_lookups"), 0);
    // The pair's own segments: looked up in the table once, then from the lcore's cache.
    for _ in 0..3 {
        from_client(&mut r, hdr(TcpFlags::ACK, 100, 900), b"y");
    }
    assert_eq!(wire_out(&mut r.right).len(), 3);
    assert_eq!(counter(&mut r, "table_lookups"), 1);
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

/// The fast path reads the IPv4 header as words: the type of service, the TTL and DF may be
/// anything, but a fragment (MF, or a fragment offset) is never translated (only whole
/// segments can be, RFC 791 §3.2), and neither is a header with options.
#[test]
fn fast_path_takes_any_tos_ttl_and_df_but_no_fragment_or_ip_options() {
    let mut r = rig(small());
    install(&mut r);
    // Rewrites header bytes `at` (offsets in the frame) and fixes the header checksum.
    let variant = |edits: &[(usize, u8)]| {
        let mut f = client_seg(hdr(TcpFlags::ACK, 9, 9), b"x");
        for &(at, v) in edits {
            f[at] = v;
        }
        f[24..26].copy_from_slice(&[0, 0]);
        let c = offload_api::wire::checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    };
    let send = |r: &mut Rig, f: Vec<u8>| {
        r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
        spin(r);
        let _ = from_host(r);
        wire_out(&mut r.right).len()
    };
    // TOS 0xb8 (DSCP EF), TTL 1, DF: translated.
    assert_eq!(send(&mut r, variant(&[(15, 0xb8), (22, 1), (20, 0x40)])), 1);
    assert_eq!(counter(&mut r, "translated_ab"), 1);
    // MF; an offset in the low byte; an offset in the high bits (0x1f00): never translated.
    for edits in [
        [(20, 0x20), (21, 0)],
        [(20, 0), (21, 0x01)],
        [(20, 0x1f), (21, 0)],
    ] {
        assert_eq!(send(&mut r, variant(&edits)), 0, "fragment {edits:?}");
    }
    // A header length of 24 bytes (IHL 6) on a 20-byte header: not the fast path's shape.
    assert_eq!(send(&mut r, variant(&[(14, 0x46)])), 0);
    assert_eq!(counter(&mut r, "translated_ab"), 1);
    // The pair still works.
    from_client(&mut r, hdr(TcpFlags::ACK, 10, 9), b"y");
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

/// More pairs than an lcore's cache has slots (512), their segments mixed in bursts: every
/// segment is translated once, and every pair's report counts exactly its own segments
/// and bytes, whichever entries evicted which from the cache on the way.
#[test]
fn more_pairs_than_cache_slots_count_every_segment_once() {
    const PAIRS: u16 = 1_500;
    let mut r = rig(SpliceConfig {
        max_pairs: 2_048,
        idle_timeout_ns: 30 * SEC,
        linger_ns: SEC,
    });
    for i in 0..PAIRS {
        let mut m = install_repr(u32::from(i));
        m.a.tuple.remote_port = CLIENT_PORT + i;
        m.b.tuple.local_port = PROXY_B_PORT + i;
        assert_eq!(install_with(&mut r, m, &[]), AckStatus::Ok);
    }
    // Pair i gets `1 + i % 3` segments in a row, each of `1 + i % 5` bytes, in bursts of
    // 32: a pair's later segments hit the cache and are counted at the burst's end, unless
    // a pair whose key takes the same slot evicts the entry first.
    let seg = |i: u16, k: u16| {
        let h = TcpHeader {
            src_port: CLIENT_PORT + i,
            dst_port: PROXY_A_PORT,
            ..hdr(TcpFlags::ACK, 100 + u32::from(k * (1 + i % 5)), 1)
        };
        let payload = vec![b'x'; usize::from(1 + i % 5)];
        dataplane::frames::tcp_with(CLIENT_MAC, wire_mac(0), CLIENT_IP, PROXY_A_IP, &h, &payload)
    };
    // Pairs that take the same cache slot side by side: each evicts the one before it
    // within the burst, while that one's counts are still unflushed.
    let mut order: Vec<u16> = (0..PAIRS).collect();
    order.sort_by_key(|&i| {
        SpliceOffload::cache_slot(CLIENT_IP, CLIENT_PORT + i, PROXY_A_IP, PROXY_A_PORT)
    });
    let frames: Vec<Vec<u8>> = order
        .into_iter()
        .flat_map(|i| (0..=i % 3).map(move |k| seg(i, k)))
        .collect();
    let mut sent = 0;
    for chunk in frames.chunks(32) {
        let mut burst: Vec<HeapBuf> = chunk.iter().map(|f| HeapBuf::from_frame(f)).collect();
        r.left.tx_burst(&mut burst);
        spin(&mut r);
        sent += wire_out(&mut r.right).len();
    }
    assert_eq!(sent, frames.len(), "every segment translated and sent");
    assert!(from_host(&mut r).is_empty());
    assert_eq!(counter(&mut r, "translated_ab"), frames.len() as u64);
    // The idle timeout reports every pair with its own counts.
    r.clock.advance(31 * SEC);
    let mut reports = Vec::new();
    // The host link holds 1,024 frames: the rest follow as it drains.
    for _ in 0..8 {
        spin(&mut r);
        reports.extend(from_host(&mut r));
    }
    assert_eq!(reports.len(), usize::from(PAIRS));
    for m in &reports {
        let Message::SpliceClose(c) = msg::parse_frame(m).unwrap().message else {
            panic!("not a closure report");
        };
        let i = u16::try_from(c.request_id).unwrap();
        let n = u64::from(1 + i % 3);
        assert_eq!(c.packets_ab, n, "pair {i}");
        assert_eq!(c.bytes_ab, n * u64::from(1 + i % 5), "pair {i}");
        assert_eq!(c.reason, CloseReason::Timeout);
    }
}

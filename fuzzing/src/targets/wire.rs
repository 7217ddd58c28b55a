//! The Ethernet and IPv4 views, and the splice translation (AccelTCP §4.3, Figure 8).

use super::*;
use offload_api::msg::{FourTuple, SpliceInstallRepr, SpliceSide};
use offload_api::splice::{self, PairTracker, Side};
use offload_api::wire::ethernet::{self, EthernetFrame, EthernetRepr};
use offload_api::wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use offload_api::wire::TcpPacket;

/// The Ethernet and IPv4 views and their reprs: a frame whose header parses is emitted again
/// from its repr and must read back the same fields; a checked IPv4 view never reads past its
/// buffer; a filled checksum verifies (RFC 791 §3.1).
pub fn ip_wire(data: &[u8]) {
    let Ok(eth) = EthernetFrame::new_checked(data) else {
        assert!(data.len() < ethernet::HEADER_LEN);
        return;
    };
    let er = EthernetRepr::parse(&eth);
    let mut out = data.to_vec();
    out[..ethernet::HEADER_LEN].fill(0);
    er.emit(&mut EthernetFrame::new_unchecked(&mut out[..]));
    assert_eq!(out, data, "an Ethernet header survives parse/emit");
    assert_eq!(eth.payload().len(), data.len() - ethernet::HEADER_LEN);

    let ip_bytes = eth.payload();
    let Ok(ip) = Ipv4Packet::new_checked(ip_bytes) else {
        return;
    };
    // A checked view's lengths hold: header inside the total length, total inside the buffer.
    let (hl, total) = (ip.header_len(), ip.total_len());
    assert!(hl >= ipv4::HEADER_LEN && hl <= total && total <= ip_bytes.len());
    assert_eq!(ip.options().len(), hl - ipv4::HEADER_LEN);
    assert_eq!(ip.payload().len(), total - hl);
    let _ = ip.verify_checksum();
    let Ok(r) = Ipv4Repr::parse(&ip) else {
        assert!(ip.is_fragment());
        return;
    };
    assert_eq!(r.payload_len, total - hl);
    // Emitted again (without options) and read back: the same fields.
    let mut buf = vec![0u8; r.total_len()];
    buf[ipv4::HEADER_LEN..].copy_from_slice(ip.payload());
    let mut p = Ipv4Packet::new_unchecked(&mut buf[..]);
    r.emit(&mut p);
    p.fill_checksum();
    let back = Ipv4Packet::new_checked(&buf[..]).expect("an emitted header is checked");
    assert!(back.verify_checksum(), "a filled checksum verifies");
    assert_eq!(
        Ipv4Repr::parse(&back),
        Ok(r),
        "an IPv4 repr survives emit/parse"
    );
    assert_eq!(back.payload(), ip.payload());
}

/// What the NIC's splice fast path checks before [`splice::translate_established`]: IPv4
/// with a 20-byte header, not a fragment, TCP, on `d`'s arriving 4-tuple.
fn fast_path_shape(f: &[u8], d: &splice::Dir) -> bool {
    let Some(h) = f.first_chunk::<38>() else {
        return false;
    };
    let eth = EthernetFrame::new_unchecked(&h[..]);
    let ip = Ipv4Packet::new_unchecked(&h[ethernet::HEADER_LEN..]);
    let ports = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    eth.ethertype() == ethernet::ETHERTYPE_IPV4
        && ip.version() == 4
        && ip.header_len() == 20
        && !ip.is_fragment()
        && ip.protocol() == 6
        && (ip.src_addr(), ports(34), ip.dst_addr(), ports(36)) == d.in_key()
}

/// The splice translation: a splice pair built from the input (offsets anywhere in the
/// sequence space, window scales up to 14, SACK and timestamps on or off each side) and a
/// frame, mostly made to arrive on the pair's 4-tuple with valid checksums.
/// - [`splice::translate`] (fixed-offset form first) and [`splice::translate_general`] (the
///   full walk) agree on the result and on every byte;
/// - a refused frame is unchanged;
/// - a translated frame keeps its length, leaves with the out side's addresses, ports and
///   MACs and the sequence arithmetic of the install, and a checksum that verified still
///   verifies (RFC 1624's update equals a recomputation);
/// - the pair's tracker takes the result.
pub fn splice(data: &[u8]) {
    splice_translates(data);
}

/// [`splice`], saying whether the frame was translated (the seeds must reach that).
pub fn splice_translates(data: &[u8]) -> bool {
    let mut b = Bytes(data);
    let Some(sel) = b.u8() else { return false };
    let Some(r) = install(&mut b) else {
        return false;
    };
    let (ab, ba) = splice::directions(&r);
    let d = if sel & 1 == 0 { ab } else { ba };
    let mut frame = b.take(2048).to_vec();
    let at_tuple = sel & 2 == 0;
    let fix_sums = sel & 4 == 0;
    let l4_off = if sel & 8 == 0 {
        // Where the IPv4 header says the TCP header starts.
        frame
            .get(ethernet::HEADER_LEN)
            .map_or(0, |v| ethernet::HEADER_LEN + usize::from(v & 0x0f) * 4)
    } else {
        usize::from(sel >> 4) * 4 + ethernet::HEADER_LEN
    };
    if at_tuple {
        aim(&mut frame, l4_off, &d, fix_sums);
    }
    let before = frame.clone();
    let sums = sums_hold(&before, l4_off);

    let mut general = frame.clone();
    let rg = splice::translate_general(&mut general, l4_off, &d);
    let rt = splice::translate(&mut frame, l4_off, &d);
    assert_eq!(rt, rg, "translate and translate_general agree");
    assert_eq!(
        frame, general,
        "translate and translate_general write the same bytes"
    );
    if fast_path_shape(&before, &d) {
        // The NIC's fast path checked these itself: the established form skips them.
        let (mut est, mut common) = (before.clone(), before.clone());
        let re = splice::translate_established(&mut est, &d);
        assert_eq!(re, splice::translate_common(&mut common, &d));
        assert_eq!(
            est, common,
            "translate_established writes what translate_common does"
        );
    }
    let Ok(t) = rt else {
        assert_eq!(frame, before, "a refused frame is unchanged");
        return false;
    };
    assert_eq!(frame.len(), before.len());
    let eth = EthernetFrame::new_unchecked(&frame[..]);
    assert_eq!((eth.src_addr(), eth.dst_addr()), (d.src_mac(), d.dst_mac()));
    let ip = Ipv4Packet::new_unchecked(eth.payload());
    assert_eq!((ip.src_addr(), ip.dst_addr()), (d.out_src_ip, d.out_dst_ip));
    let tcp = &frame[l4_off..ethernet::HEADER_LEN + ip.total_len()];
    let port = |i: usize| u16::from_be_bytes([tcp[i], tcp[i + 1]]);
    assert_eq!((port(0), port(2)), (d.out_src_port, d.out_dst_port));
    assert_eq!(t.seq_out, t.seq_in.wrapping_add(d.seq_add));
    let rd = |i: usize| u32::from_be_bytes([tcp[i], tcp[i + 1], tcp[i + 2], tcp[i + 3]]);
    assert_eq!((rd(4), rd(8)), (t.seq_out, t.ack_out));
    if t.flags.has(TcpFlags::ACK) {
        assert_eq!(t.ack_out, t.ack_in.wrapping_add(d.ack_add));
    } else {
        assert_eq!(t.ack_out, t.ack_in);
    }
    let (ip_ok, tcp_ok) = sums;
    if ip_ok {
        assert!(
            checksum::verify(&eth.payload()[..ip.header_len()]),
            "IPv4 checksum kept"
        );
    }
    if tcp_ok {
        assert!(
            checksum::verify_l4(d.out_src_ip, d.out_dst_ip, 6, tcp),
            "TCP checksum kept"
        );
    }
    let mut tracker = PairTracker::new(0, r.a_start, r.b_start);
    tracker.observe(d.from, &t, 1);
    let other = if d.from == Side::A { Side::B } else { Side::A };
    tracker.observe(other, &t, 2);
    true
}

/// A splice install from the input, with the values its parser accepts (window-scale shifts
/// at most 14, RFC 7323 §2.3).
fn install(b: &mut Bytes) -> Option<SpliceInstallRepr> {
    let side = |b: &mut Bytes| -> Option<SpliceSide> {
        let flags = b.u8()?;
        let ip = |b: &mut Bytes| -> Option<[u8; 4]> { Some(b.u32()?.to_be_bytes()) };
        let tuple = FourTuple {
            local_ip: ip(b)?,
            local_port: b.u16()?,
            remote_ip: ip(b)?,
            remote_port: b.u16()?,
        };
        let mut mac = [0u8; 6];
        mac[2..].copy_from_slice(&b.u32()?.to_be_bytes());
        let mut remote = mac;
        remote[0] = 2;
        Some(SpliceSide {
            tuple,
            local_mac: mac,
            remote_mac: remote,
            port: u16::from(flags >> 7),
            peer_wscale: b.u8()? % 15,
            local_wscale: b.u8()? % 15,
            sack_permitted: flags & 1 != 0,
            timestamps: flags & 2 != 0,
        })
    };
    let a = side(b)?;
    let bs = side(b)?;
    Some(SpliceInstallRepr {
        request_id: 1,
        seq_offset: b.u32()?,
        ack_offset: b.u32()?,
        ts_offset_ab: b.u32()?,
        ts_offset_ba: b.u32()?,
        a,
        b: bs,
        a_start: b.u32()?,
        b_start: b.u32()?,
    })
}

/// Makes `frame` arrive on `d`'s 4-tuple as IPv4/TCP (EtherType, version, protocol, the
/// total length clamped to the frame) and, with `fix_sums`, gives it valid checksums.
fn aim(frame: &mut [u8], l4_off: usize, d: &splice::Dir, fix_sums: bool) {
    let ip_at = ethernet::HEADER_LEN;
    let ihl = l4_off.wrapping_sub(ip_at);
    if frame.len() < l4_off + tcp::FIXED_HEADER_LEN || !(ipv4::HEADER_LEN..=60).contains(&ihl) {
        return;
    }
    EthernetFrame::new_unchecked(&mut *frame).set_ethertype(ethernet::ETHERTYPE_IPV4);
    let total = (frame.len() - ip_at).min(usize::from(u16::MAX));
    let mut ip = Ipv4Packet::new_unchecked(&mut frame[ip_at..]);
    ip.set_version_and_header_len(ipv4::VERSION, ihl);
    let have = ip.total_len();
    if have < ihl + tcp::FIXED_HEADER_LEN || have > total {
        ip.set_total_len(total as u16);
    }
    let df = ip.dont_frag();
    ip.set_whole_datagram(df); // never a fragment
    ip.set_protocol(ipv4::IPPROTO_TCP);
    ip.set_src_addr(d.in_src_ip);
    ip.set_dst_addr(d.in_dst_ip);
    let ip_total = ip.total_len();
    if fix_sums {
        ip.fill_checksum();
    }
    let mut seg = TcpPacket::new_unchecked(&mut frame[l4_off..ip_at + ip_total]);
    seg.set_src_port(d.in_src_port);
    seg.set_dst_port(d.in_dst_port);
    if fix_sums {
        seg.fill_checksum(d.in_src_ip, d.in_dst_ip);
    }
}

/// Whether `frame`'s IPv4 header checksum and its TCP checksum verify (false where the
/// headers do not fit).
fn sums_hold(frame: &[u8], l4_off: usize) -> (bool, bool) {
    let ip_at = ethernet::HEADER_LEN;
    let Some(ip) = frame.get(ip_at..) else {
        return (false, false);
    };
    let Ok(p) = Ipv4Packet::new_checked(ip) else {
        return (false, false);
    };
    let ip_ok = p.verify_checksum();
    let Some(tcp_bytes) = frame.get(l4_off..ip_at + p.total_len()) else {
        return (ip_ok, false);
    };
    let tcp_ok = tcp_bytes.len() >= tcp::FIXED_HEADER_LEN
        && checksum::verify_l4(p.src_addr(), p.dst_addr(), 6, tcp_bytes);
    (ip_ok, tcp_ok)
}

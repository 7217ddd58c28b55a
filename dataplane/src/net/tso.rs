//! Software TCP segmentation offload: split a host-built Ethernet/IPv4/TCP frame larger than
//! the port MTU into MSS-sized segments (what a NIC's TSO engine does, and what Linux's
//! `tcp_gso_segment` does in software).

use offload_api::wire::tcp::{TcpFlags, TcpPacket};
use offload_api::wire::{EthernetFrame, Ipv4Packet};

use super::csum::ipv4_for_tx;
use super::parse::{DropReason, ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP};
use crate::buf::PacketBuf;

/// Makes `b`'s frame exactly `n` bytes long (content unspecified); false if it cannot.
#[inline]
pub(crate) fn set_len<B: PacketBuf>(b: &mut B, n: usize) -> bool {
    let len = b.len();
    if n >= len {
        b.append(n - len).is_some()
    } else {
        b.trim(len - n)
    }
}

/// The MSS that segments of `frame` (Ethernet/IPv4/TCP) get on a link of IP MTU `mtu`:
/// `mtu` − IP header − TCP header with options (RFC 9293 §3.7.1). `Err` when the frame's
/// headers are malformed or leave no room for payload (`TsoTooLarge`).
pub fn mss_for(frame: &[u8], mtu: u16) -> Result<usize, DropReason> {
    let (ihl, doff, _) = headers(frame)?;
    let mss = mtu as usize;
    if mss <= ihl + doff {
        return Err(DropReason::TsoTooLarge);
    }
    Ok(mss - ihl - doff)
}

/// Validates the headers of a host TCP frame; returns (IHL*4, TCP header length, total_length).
#[inline]
fn headers(frame: &[u8]) -> Result<(usize, usize, usize), DropReason> {
    let eth = EthernetFrame::new_checked(frame).map_err(|_| DropReason::Truncated)?;
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return Err(DropReason::Unsupported);
    }
    let ip = ipv4_for_tx(eth.payload_slice())?;
    if ip.protocol() != IPPROTO_TCP {
        return Err(DropReason::TsoTooLarge);
    }
    let tcp = TcpPacket::new_checked(ip.payload_slice()).map_err(super::parse::tcp_drop_reason)?;
    Ok((ip.header_len(), tcp.header_len(), ip.total_len()))
}

/// Splits the Ethernet/IPv4/TCP `frame` into segments whose IP packets fit in `mtu`, each in a
/// new buffer from `alloc`, pushed to `out`; returns how many were pushed.
///
/// Each segment carries a copy of the Ethernet, IP (options included) and TCP (options
/// included) headers with: IP total length of the segment, IP identification incremented by
/// one per segment, TCP sequence number advanced by the payload before it, FIN and PSH only on
/// the last segment, CWR only on the first, and fresh IP and TCP checksums (RFC 791 §3.1,
/// RFC 9293 §3.1). The urgent pointer is copied unchanged. A frame that already fits yields
/// one segment (checksums filled).
///
/// Invariant: on `Ok(n)`, the segments' payloads concatenate to the original payload; on
/// `Err`, `out` is left as it was (segments already built are freed): `NoBuffer` when `alloc`
/// fails or a buffer is too small, `TsoTooLarge` when the frame is not TCP or the headers
/// leave no room for payload, and the header validation reasons of
/// [`super::csum::fill_checksums`].
pub fn segment<B: PacketBuf>(
    frame: &[u8],
    mtu: u16,
    alloc: &mut dyn FnMut() -> Option<B>,
    out: &mut Vec<B>,
) -> Result<usize, DropReason> {
    let (ihl, doff, total) = headers(frame)?;
    let mss = mss_for(frame, mtu)?;
    let hdrs = ETH_HDR_LEN + ihl + doff;
    let payload = &frame[hdrs..ETH_HDR_LEN + total];
    let nseg = payload.len().div_ceil(mss).max(1);
    let t = ETH_HDR_LEN + ihl;
    let head = TcpPacket::new_unchecked(&frame[t..ETH_HDR_LEN + total]);
    let (seq0, flags) = (head.seq_number(), head.flags());
    let ip = Ipv4Packet::new_unchecked(&frame[ETH_HDR_LEN..t]);
    let (id0, src, dst) = (ip.ident(), ip.src_addr(), ip.dst_addr());
    let start = out.len();
    for i in 0..nseg {
        let lo = (i * mss).min(payload.len());
        let hi = ((i + 1) * mss).min(payload.len());
        let chunk = &payload[lo..hi];
        let Some(mut b) = alloc() else {
            out.truncate(start);
            return Err(DropReason::NoBuffer);
        };
        if !set_len(&mut b, hdrs + chunk.len()) {
            out.truncate(start);
            return Err(DropReason::NoBuffer);
        }
        let d = b.data_mut();
        d[..hdrs].copy_from_slice(&frame[..hdrs]);
        d[hdrs..].copy_from_slice(chunk);
        let mut ip = Ipv4Packet::new_unchecked(&mut d[ETH_HDR_LEN..t]);
        ip.set_total_len((ihl + doff + chunk.len()) as u16);
        ip.set_ident(id0.wrapping_add(i as u16));
        ip.fill_checksum();
        let mut tcp = TcpPacket::new_unchecked(&mut d[t..]);
        tcp.set_seq_number(seq0 + lo as u32);
        let mut f = flags.0;
        if i + 1 != nseg {
            f &= !(TcpFlags::FIN.0 | TcpFlags::PSH.0);
        }
        if i != 0 {
            f &= !TcpFlags::CWR.0;
        }
        tcp.set_flags(TcpFlags(f));
        tcp.fill_checksum(src, dst);
        out.push(b);
    }
    Ok(nseg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::HeapBuf;
    use crate::net::parse::testframes::*;
    use crate::net::parse::{parse, L3};
    use smoltcp::wire::TcpControl;

    fn big_frame(payload: &[u8], control: TcpControl, extra_flags: u8) -> Vec<u8> {
        let mut f = tcp(IP_A, IP_B, 0xffff_f000, control, &[]);
        f[47] |= extra_flags;
        f.extend_from_slice(payload);
        let total = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[18..20].copy_from_slice(&0xfffeu16.to_be_bytes()); // IP id wraps too
        f
    }

    fn alloc() -> Option<HeapBuf> {
        Some(HeapBuf::new())
    }

    #[test]
    fn splits_9000_bytes_into_valid_segments() {
        let payload: Vec<u8> = (0..9000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let f = big_frame(&payload, TcpControl::Fin, TcpFlags::PSH.0 | TcpFlags::CWR.0);
        let mut out = Vec::new();
        let n = segment::<HeapBuf>(&f, 1500, &mut alloc, &mut out).unwrap();
        assert_eq!(n, 7); // 6 × 1460 + 240
        assert_eq!(out.len(), 7);
        let mut joined = Vec::new();
        let mut expect_seq = 0xffff_f000u32;
        for (i, b) in out.iter().enumerate() {
            let d = b.data();
            assert!(d.len() - 14 <= 1500);
            let p = parse(d).unwrap_or_else(|e| panic!("segment {i}: {e}"));
            let L3::Ipv4 { l4_off, l4_len, .. } = p.l3 else {
                panic!()
            };
            assert_eq!(&d[..14], &f[..14]);
            let id = u16::from_be_bytes([d[18], d[19]]);
            assert_eq!(id, 0xfffeu16.wrapping_add(i as u16));
            let seq = u32::from_be_bytes([d[38], d[39], d[40], d[41]]);
            assert_eq!(seq, expect_seq);
            let data = &d[l4_off + 20..l4_off + l4_len];
            assert_eq!(data.len(), if i < 6 { 1460 } else { 240 });
            expect_seq = expect_seq.wrapping_add(data.len() as u32);
            joined.extend_from_slice(data);
            let flags = d[47];
            let last = i == 6;
            assert_eq!(flags & TcpFlags::FIN.0 != 0, last, "FIN only on last");
            assert_eq!(flags & TcpFlags::PSH.0 != 0, last, "PSH only on last");
            assert_eq!(flags & TcpFlags::CWR.0 != 0, i == 0, "CWR only on first");
            assert!(flags & 0x10 != 0, "ACK on every segment");
        }
        assert_eq!(joined, payload);
    }

    #[test]
    fn mss_accounts_for_tcp_options() {
        let payload = vec![0x5a; 3000];
        let mut f = big_frame(&payload, TcpControl::Psh, 0);
        // Insert 12 bytes of options (NOP NOP TS) after the 20-byte TCP header.
        let opts = [1u8, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        f.splice(54..54, opts);
        f[46] = (8 << 4) | (f[46] & 0x0f);
        let total = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        assert_eq!(mss_for(&f, 1500), Ok(1448));
        let mut out = Vec::new();
        let n = segment::<HeapBuf>(&f, 1500, &mut alloc, &mut out).unwrap();
        assert_eq!(n, 3);
        for b in &out {
            assert!(parse(b.data()).is_ok());
            assert_eq!(&b.data()[54..66], &opts);
        }
        assert_eq!(out[0].len(), 14 + 1500);
        assert_eq!(out[2].len(), 14 + 20 + 32 + 3000 - 2 * 1448);
    }

    #[test]
    fn alloc_failure_leaves_out_unchanged() {
        let f = big_frame(&[1; 5000], TcpControl::Psh, 0);
        let mut out = vec![HeapBuf::from_frame(b"keep")];
        let mut left = 2;
        let mut alloc2 = || {
            if left == 0 {
                return None;
            }
            left -= 1;
            Some(HeapBuf::new())
        };
        assert_eq!(
            segment::<HeapBuf>(&f, 1500, &mut alloc2, &mut out),
            Err(DropReason::NoBuffer)
        );
        assert_eq!(out.len(), 1);
        let mut tiny = || Some(HeapBuf::with_room(100, 0));
        assert_eq!(
            segment::<HeapBuf>(&f, 1500, &mut tiny, &mut out),
            Err(DropReason::NoBuffer)
        );
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn refuses_non_tcp_and_tiny_mtu() {
        let mut u = udp(IP_A, IP_B, &[0; 100]);
        let mut out: Vec<HeapBuf> = Vec::new();
        assert_eq!(
            segment(&u, 60, &mut alloc, &mut out),
            Err(DropReason::TsoTooLarge)
        );
        u.truncate(10);
        assert_eq!(
            segment(&u, 60, &mut alloc, &mut out),
            Err(DropReason::Truncated)
        );
        let f = big_frame(&[1; 100], TcpControl::Psh, 0);
        assert_eq!(
            segment(&f, 40, &mut alloc, &mut out),
            Err(DropReason::TsoTooLarge)
        );
        assert!(out.is_empty());
    }
}

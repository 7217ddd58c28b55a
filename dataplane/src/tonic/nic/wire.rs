//! The TCP side of the Tonic NIC path: ACKs of Tonic flows from the wire mapped to segment
//! ids for the engines (Tonic §3.2.2: the cumulative ACK, SACK blocks per RFC 2018 and the
//! advertised window), the host's segments of Tonic flows, and the segments the NIC builds.

use offload_api::wire::tcp::{self, parse_options, TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::{EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, Seq};
use offload_api::{ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP, IPV4_HDR_LEN};

use super::*;

impl TonicNic {
    /// A host frame for the wire (`frame` is IPv4 with its TCP segment at `tcp`, checksums
    /// not yet filled): when it belongs to a Tonic flow, learn the ACK number and window it
    /// carries and write the NIC's snd.nxt into its sequence number (the host does not know
    /// it, §5).
    pub fn host_tcp_frame(&mut self, frame: &mut [u8], tcp: HostTcp) {
        let Some(t) = frame.get_mut(tcp.l4_off..tcp.l4_off + tcp.l4_len) else {
            return;
        };
        let Ok(mut t) = TcpPacket::new_checked(t) else {
            return;
        };
        let k = key(tcp.dst, t.dst_port(), t.src_port());
        let Some(f) = self.by_tuple.get(&k).and_then(|&s| self.flows[s].as_mut()) else {
            return;
        };
        if t.flags().has(TcpFlags::ACK) {
            f.ack_no = Some(t.ack_number().0);
            f.wnd = t.window_len();
        }
        t.set_seq_number(Seq(f.init_seq) + f.hi_sent as u32);
        self.stats.host_frames += 1;
    }

    /// A TCP segment `t` (header and payload) from `src`, from the wire, already validated by
    /// the NIC stack: an ACK of a Tonic flow goes to its engine (§3.2.2, data path step 3).
    pub fn rx(&mut self, src: [u8; 4], t: &[u8], now: Nanos) -> RxVerdict {
        let Ok(t) = TcpPacket::new_checked(t) else {
            return RxVerdict::NotTonic;
        };
        let Some(&slot) = self.by_tuple.get(&key(src, t.src_port(), t.dst_port())) else {
            return RxVerdict::NotTonic;
        };
        let flags = t.flags();
        self.stats.acks_in += 1;
        let pure = t.payload().is_empty()
            && !flags.has(TcpFlags::SYN)
            && !flags.has(TcpFlags::FIN)
            && !flags.has(TcpFlags::RST);
        if !flags.has(TcpFlags::ACK) || flags.has(TcpFlags::SYN) || flags.has(TcpFlags::RST) {
            self.stats.to_host += 1;
            return RxVerdict::ToHost;
        }
        self.ack(slot, &t, pure, now);
        if pure {
            self.stats.acks_consumed += 1;
            RxVerdict::Consumed
        } else {
            self.stats.to_host += 1;
            RxVerdict::ToHost
        }
    }

    /// The ACK fields of segment `t` for the flow in `slot`.
    fn ack(&mut self, slot: usize, t: &TcpPacket<&[u8]>, pure: bool, now: Nanos) {
        let Some(f) = self.flows[slot].as_mut() else {
            return;
        };
        let e = &mut self.engines[f.engine].engine;
        let base32 = f.init_seq.wrapping_add(f.acked as u32);
        let d = t.ack_number().0.wrapping_sub(base32) as i32;
        let off = f.acked as i64 + d as i64;
        if off < 0 || off as u64 > f.hi_sent.max(f.acked) {
            self.stats.bad_acks += 1;
            return;
        }
        let off = off as u64;
        // The window field of a non-SYN segment is scaled (RFC 7323 §2.3).
        let wnd = (t.window_len() as u32) << f.snd_wscale;
        let old_wnd = f.peer_wnd;
        f.peer_wnd = wnd;
        if wnd >= f.mss {
            // The window takes a segment again (the engine counts it in whole segments): a
            // later shut window starts probing afresh.
            f.probe_gap = 0;
        }
        let mut blocks = [SegRange::default(); MAX_SACK_BLOCKS];
        // SACK blocks (RFC 2018); a segment with malformed options counts as carrying none.
        let opts = parse_options(t.options()).unwrap_or_default();
        let n = opts.sack_blocks().len();
        for (i, b) in opts.sack_blocks().iter().enumerate().take(MAX_SACK_BLOCKS) {
            let l = b.left.0.wrapping_sub(base32) as i32 as i64 + f.acked as i64;
            let r = b.right.0.wrapping_sub(base32) as i32 as i64 + f.acked as i64;
            if l < off as i64 || r <= l || r as u64 > f.hi_sent {
                continue;
            }
            let (Ok(s), Ok(e2)) = (
                e.byte_to_seg(f.eflow, l as u64, true),
                e.byte_to_seg(f.eflow, r as u64, false),
            ) else {
                continue;
            };
            if e2 > s {
                blocks[i] = SegRange::new(s, e2);
            }
        }
        let mut used = 0;
        for k in 0..n.min(MAX_SACK_BLOCKS) {
            if !blocks[k].is_empty() {
                blocks[used] = blocks[k];
                used += 1;
            }
        }
        let blocks_used = &blocks[..used];
        if off == f.acked && blocks_used.is_empty() {
            // Not new: a duplicate ACK only when it is a pure ACK with the same window
            // (RFC 5681 §2). A window update is taken only when the window was nearly shut,
            // and then also from a segment that carries data: the peer's send window comes
            // from any acceptable segment (RFC 9293 §3.10.7.4, SND.WL1/SND.WL2 rule), and a
            // peer with data to send puts its window update on that data rather than on a
            // pure ACK, so ignoring it would leave the flow blocked until a window probe.
            let update = wnd != old_wnd;
            let reopens = update && old_wnd < 2 * f.mss;
            if !reopens && (!pure || update) {
                if update {
                    self.stats.window_updates += 1;
                }
                return;
            }
        }
        let Ok(cum) = e.byte_to_seg(f.eflow, off, false) else {
            return;
        };
        let mut pkt = if blocks_used.is_empty() {
            IncomingPkt::ack(cum)
        } else {
            IncomingPkt::sack(cum, blocks_used)
        };
        if pkt.pkt_type != PktType::Sack {
            pkt.pkt_type = PktType::Ack;
        }
        pkt.flags |= IncomingPkt::FLAG_RCV_WND;
        pkt.rcv_wnd = wnd / f.mss;
        let Ok(rep) = e.incoming(f.eflow, &pkt, now) else {
            return;
        };
        if !pure {
            self.stats.data_acks += 1;
        }
        if rep.acked_bytes > f.acked {
            f.acked = rep.acked_bytes.min(f.tail);
            let free = (f.acked - f.base) as usize;
            f.data.drain(..free.min(f.data.len()));
            f.base = f.acked;
            self.to_report.push(slot);
        }
        Self::record(f, e, now, self.cfg.trace_limit);
    }
}

/// Builds the segment `[offset, offset + len)` of flow `f` into `out`: Ethernet, IPv4 (DF,
/// TTL 64), TCP without options (ACK, PSH on the last byte available), payload from the
/// DMA'd bytes, both checksums. A `probe` (with `len` 0) carries sequence number
/// `offset − 1`: an old byte, which the peer acknowledges with its current window.
pub(super) fn build_segment(
    out: &mut Vec<u8>,
    f: &mut Flow,
    dst_mac: [u8; 6],
    ack: u32,
    offset: u64,
    len: u32,
    probe: bool,
) {
    let len = len as usize;
    let hdrs = ETH_HDR_LEN + IPV4_HDR_LEN + tcp::FIXED_HEADER_LEN;
    out.clear();
    out.resize(hdrs, 0);
    let mut eth = EthernetFrame::new_unchecked(&mut out[..]);
    EthernetRepr {
        dst: dst_mac,
        src: f.src_mac,
        ethertype: ETHERTYPE_IPV4,
    }
    .emit(&mut eth);
    f.ip_id = f.ip_id.wrapping_add(1);
    Ipv4Repr {
        src: f.tuple.local_ip,
        dst: f.tuple.remote_ip,
        protocol: IPPROTO_TCP,
        payload_len: tcp::FIXED_HEADER_LEN + len,
        ttl: 64,
        ident: f.ip_id,
        dont_frag: true,
        dscp_ecn: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(eth.payload_mut()));
    let last = !probe && offset + len as u64 == f.tail;
    let h = TcpHeader {
        src_port: f.tuple.local_port,
        dst_port: f.tuple.remote_port,
        seq: Seq(f
            .init_seq
            .wrapping_add(offset as u32)
            .wrapping_sub(probe as u32)),
        ack: Seq(ack),
        flags: if last {
            TcpFlags::ACK | TcpFlags::PSH
        } else {
            TcpFlags::ACK
        },
        window: f.wnd,
        options: TcpOptions::default(),
    };
    tcp::emit(&h, &mut out[ETH_HDR_LEN + IPV4_HDR_LEN..hdrs]);
    let start = (offset - f.base) as usize;
    let (a, b) = f.data.as_slices();
    if start < a.len() {
        let end = (start + len).min(a.len());
        out.extend_from_slice(&a[start..end]);
        let rest = len - (end - start);
        out.extend_from_slice(&b[..rest]);
    } else {
        let s = start - a.len();
        out.extend_from_slice(&b[s..s + len]);
    }
    let _ = csum::fill_checksums(out);
}

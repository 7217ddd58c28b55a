//! The TCP side of the Tonic NIC path: ACKs of Tonic flows from the wire mapped to segment
//! ids for the engines (Tonic §3.2.2: the cumulative ACK, SACK blocks per RFC 2018 and the
//! advertised window), the host's segments of Tonic flows, and the segments the NIC builds.

use super::*;

impl TonicNic {
    /// A host frame for the wire (`frame` is IPv4 with its TCP segment at `tcp`, checksums
    /// not yet filled): when it belongs to a Tonic flow, learn the ACK number and window it
    /// carries and write the NIC's snd.nxt into its sequence number (the host does not know
    /// it, §5).
    pub fn host_tcp_frame(&mut self, frame: &mut [u8], tcp: HostTcp) {
        let l4 = tcp.l4_off;
        let Some(t) = frame.get(l4..l4 + tcp.l4_len) else {
            return;
        };
        let (sport, dport) = (be16(t, 0), be16(t, 2));
        let Some(&slot) = self.by_tuple.get(&key(tcp.dst, dport, sport)) else {
            return;
        };
        let Some(f) = self.flows[slot].as_mut() else {
            return;
        };
        if t[13] & TCP_ACK != 0 {
            f.ack_no = Some(be32(t, 8));
            f.wnd = be16(t, 14);
        }
        let seq = f.init_seq.wrapping_add(f.hi_sent as u32);
        frame[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        self.stats.host_frames += 1;
    }

    /// A TCP segment `t` (header and payload) from `src`, from the wire, already validated by
    /// the NIC stack: an ACK of a Tonic flow goes to its engine (§3.2.2, data path step 3).
    pub fn rx(&mut self, src: [u8; 4], t: &[u8], now: Nanos) -> RxVerdict {
        if t.len() < 20 {
            return RxVerdict::NotTonic;
        }
        let Some(&slot) = self.by_tuple.get(&key(src, be16(t, 0), be16(t, 2))) else {
            return RxVerdict::NotTonic;
        };
        let flags = t[13];
        let doff = ((t[12] >> 4) as usize * 4).clamp(20, t.len());
        let payload = t.len() - doff;
        self.stats.acks_in += 1;
        let pure = payload == 0 && flags & (TCP_SYN | TCP_FIN | TCP_RST) == 0;
        if flags & TCP_ACK == 0 || flags & (TCP_SYN | TCP_RST) != 0 {
            self.stats.to_host += 1;
            return RxVerdict::ToHost;
        }
        self.ack(slot, t, doff, pure, now);
        if pure {
            self.stats.acks_consumed += 1;
            RxVerdict::Consumed
        } else {
            self.stats.to_host += 1;
            RxVerdict::ToHost
        }
    }

    /// The ACK fields of segment `t` (TCP header and payload) for the flow in `slot`.
    fn ack(&mut self, slot: usize, t: &[u8], doff: usize, pure: bool, now: Nanos) {
        let Some(f) = self.flows[slot].as_mut() else {
            return;
        };
        let e = &mut self.engines[f.engine].engine;
        let base32 = f.init_seq.wrapping_add(f.acked as u32);
        let d = be32(t, 8).wrapping_sub(base32) as i32;
        let off = f.acked as i64 + d as i64;
        if off < 0 || off as u64 > f.hi_sent.max(f.acked) {
            self.stats.bad_acks += 1;
            return;
        }
        let off = off as u64;
        // The window field of a non-SYN segment is scaled (RFC 7323 §2.3).
        let wnd = (be16(t, 14) as u32) << f.snd_wscale;
        let old_wnd = f.peer_wnd;
        f.peer_wnd = wnd;
        if wnd >= f.mss {
            // The window takes a segment again (the engine counts it in whole segments): a
            // later shut window starts probing afresh.
            f.probe_gap = 0;
        }
        let mut blocks = [SegRange::default(); MAX_SACK_BLOCKS];
        let n = sack_blocks(&t[20..doff], |i, l, r| {
            if i >= MAX_SACK_BLOCKS {
                return;
            }
            let l = l.wrapping_sub(base32) as i32 as i64 + f.acked as i64;
            let r = r.wrapping_sub(base32) as i32 as i64 + f.acked as i64;
            if l < off as i64 || r <= l || r as u64 > f.hi_sent {
                return;
            }
            let (Ok(s), Ok(e2)) = (
                e.byte_to_seg(f.eflow, l as u64, true),
                e.byte_to_seg(f.eflow, r as u64, false),
            ) else {
                return;
            };
            if e2 > s {
                blocks[i] = SegRange::new(s, e2);
            }
        });
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

#[inline(always)]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

#[inline(always)]
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Calls `each(i, left, right)` for the SACK blocks (RFC 2018) in TCP options `opts`;
/// returns how many there were.
fn sack_blocks(opts: &[u8], mut each: impl FnMut(usize, u32, u32)) -> usize {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else { break };
                let len = len as usize;
                if len < 2 || i + len > opts.len() {
                    break;
                }
                if kind == 5 {
                    let n = (len - 2) / 8;
                    for k in 0..n {
                        let b = i + 2 + 8 * k;
                        each(k, be32(opts, b), be32(opts, b + 4));
                    }
                    return n;
                }
                i += len;
            }
        }
    }
    0
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
    out.clear();
    out.resize(ETH + 40, 0);
    out[0..6].copy_from_slice(&dst_mac);
    out[6..12].copy_from_slice(&f.src_mac);
    out[12..14].copy_from_slice(&offload_api::ETHERTYPE_IPV4.to_be_bytes());
    f.ip_id = f.ip_id.wrapping_add(1);
    {
        let ip = &mut out[ETH..ETH + 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((40 + len) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&f.ip_id.to_be_bytes());
        ip[6] = 0x40;
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&f.tuple.local_ip);
        ip[16..20].copy_from_slice(&f.tuple.remote_ip);
    }
    {
        let t = &mut out[ETH + 20..ETH + 40];
        t[0..2].copy_from_slice(&f.tuple.local_port.to_be_bytes());
        t[2..4].copy_from_slice(&f.tuple.remote_port.to_be_bytes());
        let seq = f
            .init_seq
            .wrapping_add(offset as u32)
            .wrapping_sub(probe as u32);
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12] = 5 << 4;
        let last = !probe && offset + len as u64 == f.tail;
        t[13] = TCP_ACK | if last { TCP_PSH } else { 0 };
        t[14..16].copy_from_slice(&f.wnd.to_be_bytes());
    }
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

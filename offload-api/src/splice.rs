//! Connection-splicing header translation, sans I/O (AccelTCP §4.3, Figures 7 and 8; App. A
//! "Connection splicing").
//!
//! A spliced pair is two TCP connections of a proxy — side A to the client, side B to the
//! server — that the NIC merges into one logical connection by rewriting every segment's
//! headers. [`directions`] turns a [`SpliceInstallRepr`] into the two per-direction
//! parameter sets ([`Dir`]); [`translate`] rewrites one Ethernet/IPv4/TCP frame in place with
//! them; [`PairTracker`] follows the pair's teardown (FIN and its ACK per direction, RST) and
//! its traffic.
//!
//! What [`translate`] rewrites, for a segment arriving on side X and leaving on side Y:
//!
//! - Ethernet source and destination: Y's `local_mac` and `remote_mac`;
//! - IPv4 source and destination, TCP ports: Y's 4-tuple (source = the proxy's local address
//!   on Y, destination = Y's peer), Figure 7;
//! - sequence and acknowledgement numbers, TSval and TSecr, SACK block edges: the offsets of
//!   [`SpliceInstallRepr`]'s documentation, modulo 2³² (RFC 9293 §3.4);
//! - the window: `w << X.peer_wscale` bytes leave as `bytes >> Y.local_wscale`, at most 65535
//!   (RFC 7323 §2.3; a SYN's window is never scaled, §2.2, and passes unchanged);
//! - options Y did not negotiate: SACK blocks (RFC 2018 §3) and timestamps (RFC 7323 §3.2:
//!   "If a TSopt is received on a connection where TSopt was not negotiated … the TSopt MUST
//!   be ignored") are overwritten with NOPs, so the header length and the payload stay put.
//!   The opposite case — Y negotiated timestamps, X did not — cannot be fixed without growing
//!   the header; such segments are translated and flagged ([`Translated::ts_missing`]): Y's
//!   peer may drop them (RFC 7323 §3.2 "SHOULD silently drop"), so hosts should splice only
//!   connections that agree on timestamps.
//!
//! The IPv4 header checksum and the TCP checksum are updated differentially, never recomputed
//! (RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`, summed over all changed words): the address and
//! port part and the sequence offset are pre-computed per direction (Figure 8 lines 2–4: the
//! "checksum offsets"), the sequence and acknowledgement offsets — and the timestamp offsets
//! when the option sits word-aligned after two NOPs, as Linux sends it — are added as
//! one's-complement constants with Figure 8's wrap-around correction (lines 9–10: when
//! `x + offset` wraps past 2³², the one's-complement sum loses one, because 2³² ≡ 1 modulo
//! 0xffff), and the window and any other options area (options may sit at odd offsets) are
//! updated word by word. The IPv4 TTL is left alone: the NIC splices as the proxy's endpoint,
//! not as a router (AccelTCP Figure 7 keeps it).
//!
//! Invariant: [`translate`] never panics; on any error the frame is unchanged.

use crate::msg::{FourTuple, MacAddr, SpliceInstallRepr};
use crate::wire::checksum::{fold, fold_small};
use crate::wire::ethernet::{EthernetFrame, ETHERTYPE_IPV4, HEADER_LEN as ETH_HDR_LEN};
use crate::wire::ipv4::{self, Ipv4Packet, HEADER_LEN as IPV4_HDR_LEN, IPPROTO_TCP};
use crate::wire::tcp::{self, TcpFlags, TcpPacket};
use crate::wire::Seq;

/// Most SACK/timestamp options a 40-byte options area can hold (each takes at least 10 bytes).
const MAX_REWRITTEN_OPTIONS: usize = 4;

/// Which of the two spliced connections: A, the client side, or B, the server side
/// ([`SpliceInstallRepr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The client-side connection.
    A = 0,
    /// The server-side connection.
    B = 1,
}

impl Side {
    /// The other side.
    pub const fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    /// 0 for A, 1 for B (an index into per-side arrays).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The closure report's `rst_side` code: 1 for A, 2 for B (0 means none).
    pub const fn code(self) -> u8 {
        self as u8 + 1
    }
}

/// The translation of one direction of a spliced pair: segments arriving on side `from`
/// leave on the other side. Made by [`directions`].
///
/// Invariant: the pre-computed checksum deltas (`ip_delta`, `tcp_delta`, `ack_delta`,
/// `ts_delta`) are the one's-complement sums of the changes the fixed rewrites make to a
/// segment carrying exactly the `in_*` 4-tuple (AccelTCP Figure 8, lines 2–4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dir {
    /// The side segments arrive on.
    pub from: Side,
    /// Arriving IPv4 source (the `from` side's peer).
    pub in_src_ip: [u8; 4],
    /// Arriving IPv4 destination (the proxy's address on the `from` side).
    pub in_dst_ip: [u8; 4],
    /// Arriving TCP source port.
    pub in_src_port: u16,
    /// Arriving TCP destination port.
    pub in_dst_port: u16,
    /// The leaving Ethernet addresses as they lie in the header: destination (the out
    /// side's `remote_mac`; zero until resolved), then source (its `local_mac`). One
    /// 12-byte copy; [`Dir::dst_mac`], [`Dir::src_mac`] and [`Dir::set_dst_mac`] read and
    /// write them.
    macs: [u8; 12],
    /// Leaving IPv4 source (the proxy's address on the out side).
    pub out_src_ip: [u8; 4],
    /// Leaving IPv4 destination (the out side's peer).
    pub out_dst_ip: [u8; 4],
    /// Leaving TCP source port.
    pub out_src_port: u16,
    /// Leaving TCP destination port.
    pub out_dst_port: u16,
    /// NIC port of the out side.
    pub out_port: u16,
    /// Added to the sequence number (mod 2³²).
    pub seq_add: u32,
    /// Added to the acknowledgement number and SACK edges (mod 2³²).
    pub ack_add: u32,
    /// Added to TSval (mod 2³²).
    pub tsval_add: u32,
    /// Added to TSecr (mod 2³²).
    pub tsecr_add: u32,
    /// Window-scale shift of arriving windows (the `from` side's `peer_wscale`).
    pub in_wscale: u8,
    /// Window-scale shift of leaving windows (the out side's `local_wscale`).
    pub out_wscale: u8,
    /// The out side negotiated SACK (else SACK options become NOPs).
    pub out_sack: bool,
    /// The out side negotiated timestamps (else timestamp options become NOPs).
    pub out_ts: bool,
    ip_delta: u64,
    tcp_delta: u64,
    ack_delta: u64,
    ts_delta: u64,
    /// The four deltas in the machine's byte order (`to_be`: swapped on a little-endian
    /// machine), for sums over words read as the machine reads them (RFC 1071 §2(B): the
    /// one's-complement sum does not depend on byte order; a swap is a multiplication by
    /// 256 modulo 0xffff, so swapped terms give the swapped sum).
    ip_delta_ne: u16,
    tcp_delta_ne: u16,
    ack_delta_ne: u16,
    ts_delta_ne: u16,
    /// `out_src_ip` and `out_dst_ip` as they lie in the IPv4 header (one 8-byte store).
    out_ips: [u8; 8],
    /// `out_src_port` and `out_dst_port` as they lie in the TCP header (one 4-byte store).
    out_ports: [u8; 4],
}

/// Sum of the two 16-bit halves of `v` (its one's-complement contribution, modulo 0xffff).
#[inline(always)]
fn sum16(v: u32) -> u64 {
    u64::from(v >> 16) + u64::from(v & 0xffff)
}

/// One's-complement change when 32-bit field `old` becomes `new`: `~old + new` per word.
#[inline(always)]
fn delta32(old: u32, new: u32) -> u64 {
    sum16(!old) + sum16(new)
}

/// One's-complement change when 16-bit field `old` becomes `new`.
#[inline(always)]
fn delta16(old: u16, new: u16) -> u64 {
    u64::from(!old) + u64::from(new)
}

fn ip_u32(a: [u8; 4]) -> u32 {
    u32::from_be_bytes(a)
}

impl Dir {
    /// The direction from side `from` to side `to` with the given offsets, pre-computing the
    /// checksum deltas.
    fn new(
        (from, fs, ts): (Side, &crate::msg::SpliceSide, &crate::msg::SpliceSide),
        seq_add: u32,
        ack_add: u32,
        tsval_add: u32,
        tsecr_add: u32,
    ) -> Dir {
        let (i, o): (FourTuple, FourTuple) = (fs.tuple, ts.tuple);
        let ip_delta = delta32(ip_u32(i.remote_ip), ip_u32(o.local_ip))
            + delta32(ip_u32(i.local_ip), ip_u32(o.remote_ip));
        let tcp_delta = ip_delta
            + delta16(i.remote_port, o.local_port)
            + delta16(i.local_port, o.remote_port)
            + sum16(seq_add);
        Dir {
            from,
            in_src_ip: i.remote_ip,
            in_dst_ip: i.local_ip,
            in_src_port: i.remote_port,
            in_dst_port: i.local_port,
            macs: {
                let mut m = [0; 12];
                m[..6].copy_from_slice(&ts.remote_mac);
                m[6..].copy_from_slice(&ts.local_mac);
                m
            },
            out_src_ip: o.local_ip,
            out_dst_ip: o.remote_ip,
            out_src_port: o.local_port,
            out_dst_port: o.remote_port,
            out_port: ts.port,
            seq_add,
            ack_add,
            tsval_add,
            tsecr_add,
            in_wscale: fs.peer_wscale.min(14),
            out_wscale: ts.local_wscale.min(14),
            out_sack: ts.sack_permitted,
            out_ts: ts.timestamps,
            // Folded to 16 bits (the same one's-complement value): a segment's sum then
            // stays below 2³² and folds in two steps.
            ip_delta: u64::from(fold(ip_delta)),
            tcp_delta: u64::from(fold(tcp_delta)),
            ack_delta: u64::from(fold(sum16(ack_add))),
            ts_delta: u64::from(fold(sum16(tsval_add) + sum16(tsecr_add))),
            ip_delta_ne: fold(ip_delta).to_be(),
            tcp_delta_ne: fold(tcp_delta).to_be(),
            ack_delta_ne: fold(sum16(ack_add)).to_be(),
            ts_delta_ne: fold(sum16(tsval_add) + sum16(tsecr_add)).to_be(),
            out_ips: (u64::from(ip_u32(o.local_ip)) << 32 | u64::from(ip_u32(o.remote_ip)))
                .to_be_bytes(),
            out_ports: (u32::from(o.local_port) << 16 | u32::from(o.remote_port)).to_be_bytes(),
        }
    }

    /// Leaving Ethernet destination (the out side's `remote_mac`; zero until resolved).
    pub fn dst_mac(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.macs[..6]);
        m
    }

    /// Leaving Ethernet source (the out side's `local_mac`).
    pub fn src_mac(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.macs[6..]);
        m
    }

    /// Sets the leaving Ethernet destination (once the out side's peer is resolved).
    pub fn set_dst_mac(&mut self, m: MacAddr) {
        self.macs[..6].copy_from_slice(&m);
    }

    /// The arriving 4-tuple as (source IP, source port, destination IP, destination port).
    pub fn in_key(&self) -> ([u8; 4], u16, [u8; 4], u16) {
        (
            self.in_src_ip,
            self.in_src_port,
            self.in_dst_ip,
            self.in_dst_port,
        )
    }

    /// The window a segment carrying `w` leaves with: `min((w << in_wscale) >> out_wscale,
    /// 65535)` (RFC 7323 §2.3); a SYN's window is never scaled (§2.2).
    #[inline]
    pub fn window(&self, w: u16, syn: bool) -> u16 {
        if syn || self.in_wscale == self.out_wscale {
            return w;
        }
        let bytes = u64::from(w) << self.in_wscale;
        (bytes >> self.out_wscale).min(65_535) as u16
    }
}

/// The two directions of a pair: `(A → B, B → A)`, with the arithmetic of
/// [`SpliceInstallRepr`]: A → B adds `seq_offset` to seq, `ack_offset` to ack and SACK
/// edges, `ts_offset_ab` to TSval and subtracts `ts_offset_ba` from TSecr; B → A subtracts
/// `ack_offset` from seq, `seq_offset` from ack and SACK edges, adds `ts_offset_ba` to TSval
/// and subtracts `ts_offset_ab` from TSecr (AccelTCP App. A; all modulo 2³²).
pub fn directions(r: &SpliceInstallRepr) -> (Dir, Dir) {
    let ab = Dir::new(
        (Side::A, &r.a, &r.b),
        r.seq_offset,
        r.ack_offset,
        r.ts_offset_ab,
        r.ts_offset_ba.wrapping_neg(),
    );
    let ba = Dir::new(
        (Side::B, &r.b, &r.a),
        r.ack_offset.wrapping_neg(),
        r.seq_offset.wrapping_neg(),
        r.ts_offset_ba,
        r.ts_offset_ab.wrapping_neg(),
    );
    (ab, ba)
}

/// What [`translate`] did to a segment (what the pair's [`PairTracker`] needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translated {
    /// The segment's TCP flags.
    pub flags: TcpFlags,
    /// Sequence number as it arrived.
    pub seq_in: u32,
    /// Sequence number as it left.
    pub seq_out: u32,
    /// Acknowledgement number as it arrived.
    pub ack_in: u32,
    /// Acknowledgement number as it left (equal to `ack_in` without the ACK flag: then the
    /// field is not translated).
    pub ack_out: u32,
    /// TCP payload bytes.
    pub payload_len: u32,
    /// The out side's NIC port.
    pub out_port: u16,
    /// A SACK option was overwritten with NOPs (the out side did not negotiate SACK).
    pub sack_stripped: bool,
    /// A timestamp option was overwritten with NOPs (the out side has no timestamps).
    pub ts_stripped: bool,
    /// The out side negotiated timestamps but the segment carries none (RFC 7323 §3.2: its
    /// receiver may drop it).
    pub ts_missing: bool,
}

impl Translated {
    /// With FIN: the sequence number just after it, in the arriving sequence space
    /// (`seq + payload + SYN + 1`: SYN and FIN each occupy one number, RFC 9293 §3.4).
    #[inline]
    pub fn fin_end(&self) -> Option<u32> {
        self.flags.has(TcpFlags::FIN).then(|| {
            self.seq_in
                .wrapping_add(self.payload_len)
                .wrapping_add(1)
                .wrapping_add(u32::from(self.flags.has(TcpFlags::SYN)))
        })
    }

    /// True when the segment carries an ACK at or beyond `end` (modulo 2³², RFC 9293 §3.4)
    /// in the space its acknowledgement leaves in — the arriving space of the other
    /// direction, where that direction's [`Translated::fin_end`] lives.
    #[inline]
    pub fn acknowledges(&self, end: u32) -> bool {
        self.flags.has(TcpFlags::ACK) && self.ack_out.wrapping_sub(end) as i32 >= 0
    }
}

/// Why [`translate`] refused a frame (it is then unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The frame ends before a header or before the IPv4 total length.
    #[error("frame truncated")]
    Truncated,
    /// Not an IPv4 frame (EtherType), or not IPv4 version 4.
    #[error("not an IPv4 frame")]
    NotIpv4,
    /// The IPv4 header length is below 20 or does not put the TCP header at `l4_off`.
    #[error("bad IPv4 header length")]
    BadIpHeader,
    /// A fragment (RFC 791 §3.2): only whole segments can be translated.
    #[error("IPv4 fragment")]
    Fragment,
    /// The IPv4 protocol is not TCP.
    #[error("not TCP")]
    NotTcp,
    /// The TCP data offset is below 5 words or beyond the segment (RFC 9293 §3.1).
    #[error("bad TCP data offset")]
    BadDataOffset,
    /// An option's length byte is invalid (RFC 9293 §3.2), or a SACK / timestamp option has
    /// the wrong length (RFC 2018 §3, RFC 7323 §3.2).
    #[error("malformed TCP option")]
    BadOption,
    /// The segment's 4-tuple is not the direction's arriving 4-tuple.
    #[error("4-tuple does not belong to this direction")]
    TupleMismatch,
}

#[inline(always)]
fn rd32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

#[inline(always)]
fn wr32(b: &mut [u8], i: usize, v: u32) {
    b[i..i + 4].copy_from_slice(&v.to_be_bytes());
}

/// `x + add` modulo 2³² and the one's-complement correction of Figure 8 lines 9–10: the
/// checksum delta of the change is `sum16(add)` (pre-computed) minus one when the addition
/// wrapped; minus one is added as 0xfffe (≡ −1 modulo 0xffff).
#[inline(always)]
fn add_wrap(x: u32, add: u32) -> (u32, u64) {
    let (v, wrapped) = x.overflowing_add(add);
    (v, u64::from(wrapped) * 0xfffe)
}

/// Sum of the 16-bit words of `b` (even length).
#[inline(always)]
fn words(b: &[u8]) -> u64 {
    b.chunks_exact(2)
        .map(|w| u64::from(u16::from_be_bytes([w[0], w[1]])))
        .sum()
}

/// Where a SACK (kind 5) or timestamp (kind 8) option sits in the TCP header.
#[derive(Clone, Copy)]
struct Opt {
    kind: u8,
    at: usize,
    len: usize,
}

/// Finds the SACK and timestamp options in the options area `tcp[20..doff]` (RFC 9293 §3.2:
/// EOL ends the list, NOP is one byte, every other option has a length byte ≥ 2 inside the
/// area). SACK must be 2 + 8·n bytes with 1 ≤ n ≤ 4 (RFC 2018 §3), timestamps 10 (RFC 7323
/// §3.2), MSS 4, window scale 3, SACK-permitted 2; other kinds are skipped.
fn find_options(
    tcp: &[u8],
    doff: usize,
) -> Result<([Opt; MAX_REWRITTEN_OPTIONS], usize), TranslateError> {
    let mut found = [Opt {
        kind: 0,
        at: 0,
        len: 0,
    }; MAX_REWRITTEN_OPTIONS];
    let mut n = 0;
    let mut i = 20;
    while i < doff {
        let kind = tcp[i];
        match kind {
            0 => break,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let len = usize::from(
            *tcp.get(i + 1)
                .filter(|_| i + 1 < doff)
                .ok_or(TranslateError::BadOption)?,
        );
        if len < 2 || i + len > doff {
            return Err(TranslateError::BadOption);
        }
        let ok = match kind {
            2 => len == 4,
            3 => len == 3,
            4 => len == 2,
            5 => len >= 10 && (len - 2) % 8 == 0 && len <= 34,
            8 => len == 10,
            _ => true,
        };
        if !ok {
            return Err(TranslateError::BadOption);
        }
        if kind == 5 || kind == 8 {
            // At most four 10-byte options fit in 40 bytes, so `n` never overflows.
            if let Some(slot) = found.get_mut(n) {
                *slot = Opt { kind, at: i, len };
                n += 1;
            }
        }
        i += len;
    }
    Ok((found, n))
}

/// Rewrites the Ethernet/IPv4/TCP frame `frame`, whose TCP header starts at `l4_off`, from
/// the arriving side of `d` to its out side (see the module documentation), updating both
/// checksums differentially (RFC 1624 eqn. 3, AccelTCP Figure 8).
///
/// Bytes after the IPv4 total length (Ethernet padding) are left alone. Checks, before
/// changing anything: the Ethernet and IPv4 headers (EtherType, version, header length equal
/// to `l4_off − 14`, total length inside the frame, not a fragment, protocol TCP), the TCP
/// data offset, the options' lengths, and the 4-tuple against `d`'s arriving one.
///
/// A valid checksum stays valid: the result equals a full recomputation (both lie in
/// 0..=0xfffe and are congruent modulo 0xffff). Never panics; on `Err` the frame is unchanged.
///
/// The shape of nearly every established segment takes [`translate_common`]; the rest the
/// general walk, [`translate_general`].
#[inline]
pub fn translate(frame: &mut [u8], l4_off: usize, d: &Dir) -> Result<Translated, TranslateError> {
    if l4_off == ETH_HDR_LEN + IPV4_HDR_LEN {
        if let Some(t) = translate_common(frame, d) {
            return Ok(t);
        }
    }
    translate_general(frame, l4_off, d)
}

/// [`translate`] for every shape, without the fixed-offset form: the checks in full and the
/// options walked. Public so that the two forms can be checked against each other.
pub fn translate_general(
    frame: &mut [u8],
    l4_off: usize,
    d: &Dir,
) -> Result<Translated, TranslateError> {
    if frame.len() < ETH_HDR_LEN + IPV4_HDR_LEN {
        return Err(TranslateError::Truncated);
    }
    let eth = EthernetFrame::new_unchecked(&*frame);
    let ip = Ipv4Packet::new_unchecked(eth.payload());
    if eth.ethertype() != ETHERTYPE_IPV4 || ip.version() != ipv4::VERSION {
        return Err(TranslateError::NotIpv4);
    }
    let ihl = ip.header_len();
    if ihl < IPV4_HDR_LEN || ETH_HDR_LEN + ihl != l4_off {
        return Err(TranslateError::BadIpHeader);
    }
    let total = ip.total_len();
    if total < ihl + tcp::FIXED_HEADER_LEN || ETH_HDR_LEN + total > frame.len() {
        return Err(TranslateError::Truncated);
    }
    if ip.is_fragment() {
        return Err(TranslateError::Fragment);
    }
    if ip.protocol() != IPPROTO_TCP {
        return Err(TranslateError::NotTcp);
    }
    let (head, tcp) = frame[..ETH_HDR_LEN + total].split_at_mut(l4_off);
    let t = TcpPacket::new_unchecked(&*tcp);
    let doff = t.header_len();
    if doff < tcp::FIXED_HEADER_LEN || doff > tcp.len() {
        return Err(TranslateError::BadDataOffset);
    }
    let ip = Ipv4Packet::new_unchecked(&head[ETH_HDR_LEN..]);
    if ip.src_addr() != d.in_src_ip
        || ip.dst_addr() != d.in_dst_ip
        || t.src_port() != d.in_src_port
        || t.dst_port() != d.in_dst_port
    {
        return Err(TranslateError::TupleMismatch);
    }
    let (opts, n_opts) = find_options(tcp, doff)?;

    // Nothing can fail from here on.
    let mut eth = EthernetFrame::new_unchecked(head);
    eth.set_dst_addr(d.dst_mac());
    eth.set_src_addr(d.src_mac());
    let mut ip = Ipv4Packet::new_unchecked(eth.payload_mut());
    ip.set_src_addr(d.out_src_ip);
    ip.set_dst_addr(d.out_dst_ip);
    let ip_csum = !fold(u64::from(!ip.checksum()) + d.ip_delta);
    ip.set_checksum(ip_csum);

    let mut t = TcpPacket::new_unchecked(&mut *tcp);
    let flags = t.flags();
    let mut acc = d.tcp_delta;
    t.set_src_port(d.out_src_port);
    t.set_dst_port(d.out_dst_port);
    let seq_in = t.seq_number().0;
    let (seq_out, c) = add_wrap(seq_in, d.seq_add);
    acc += c;
    t.set_seq_number(Seq(seq_out));
    let ack_in = t.ack_number().0;
    let mut ack_out = ack_in;
    if flags.has(TcpFlags::ACK) {
        let (v, c) = add_wrap(ack_in, d.ack_add);
        acc += d.ack_delta + c;
        ack_out = v;
        t.set_ack_number(Seq(v));
    }
    let w = t.window_len();
    let w2 = d.window(w, flags.has(TcpFlags::SYN));
    acc += delta16(w, w2);
    t.set_window_len(w2);

    let (mut sack_stripped, mut ts_stripped, mut has_ts) = (false, false, false);
    if n_opts > 0 {
        // Options may sit at odd offsets: account the whole (aligned) options area word by
        // word, before and after.
        let area = 20..doff;
        acc += 0xffff * (area.len() as u64 / 2) - words(&tcp[area.clone()]);
        for o in &opts[..n_opts] {
            match o.kind {
                8 => {
                    has_ts = true;
                    if d.out_ts {
                        let tsval = rd32(tcp, o.at + 2).wrapping_add(d.tsval_add);
                        let tsecr = rd32(tcp, o.at + 6).wrapping_add(d.tsecr_add);
                        wr32(tcp, o.at + 2, tsval);
                        wr32(tcp, o.at + 6, tsecr);
                    } else {
                        tcp[o.at..o.at + o.len].fill(1);
                        ts_stripped = true;
                    }
                }
                _ => {
                    if d.out_sack {
                        let mut e = o.at + 2;
                        while e + 4 <= o.at + o.len {
                            let v = rd32(tcp, e).wrapping_add(d.ack_add);
                            wr32(tcp, e, v);
                            e += 4;
                        }
                    } else {
                        tcp[o.at..o.at + o.len].fill(1);
                        sack_stripped = true;
                    }
                }
            }
        }
        acc += words(&tcp[area]);
    }
    let mut t = TcpPacket::new_unchecked(&mut *tcp);
    let tcp_csum = !fold(u64::from(!t.checksum()) + acc);
    t.set_checksum(tcp_csum);

    Ok(Translated {
        flags,
        seq_in,
        seq_out,
        ack_in,
        ack_out,
        payload_len: (tcp.len() - doff) as u32,
        out_port: d.out_port,
        sack_stripped,
        ts_stripped,
        ts_missing: d.out_ts && !has_ts && !flags.has(TcpFlags::RST),
    })
}

/// Traffic and teardown of one direction of a pair, as [`PairTracker`] saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirTrack {
    /// TCP payload bytes translated (retransmissions included).
    pub bytes: u64,
    /// Where the relayed bytes of this direction start, in its arriving sequence space
    /// (the install's `a_start` / `b_start`).
    pub start: u32,
    /// One past the highest payload byte seen, as an offset from `start` (bytes before
    /// `start`, retransmissions of what the host already took, do not count).
    pub high: u64,
    /// Segments translated.
    pub packets: u64,
    /// The sequence number just after this direction's FIN, in its arriving sequence space
    /// (`seq + payload + 1`), once a FIN was seen (RFC 9293 §3.4: FIN occupies one number).
    pub fin_end: Option<u32>,
    /// The other direction acknowledged that FIN.
    pub fin_acked: bool,
}

/// The state of a spliced pair that the NIC follows passively (AccelTCP §4.3 "Tracking
/// teardown state"): per direction (index [`Side::index`] of the side segments arrive on)
/// bytes, packets and FIN; the side that sent a RST; the last activity.
///
/// Invariant: `fin_acked` implies `fin_end.is_some()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairTracker {
    /// Per direction: `dirs[Side::A.index()]` is A → B.
    pub dirs: [DirTrack; 2],
    /// The side whose peer sent the first RST.
    pub rst: Option<Side>,
    /// Time of the last segment, in the caller's clock.
    pub last_activity: u64,
}

impl PairTracker {
    /// A tracker whose last activity is `now`, counting bytes from `a_start` (A → B) and
    /// `b_start` (B → A).
    pub fn new(now: u64, a_start: u32, b_start: u32) -> PairTracker {
        let mut t = PairTracker {
            last_activity: now,
            ..PairTracker::default()
        };
        t.dirs[0].start = a_start;
        t.dirs[1].start = b_start;
        t
    }

    /// Accounts segment `t` that arrived on side `from` at `now`: counters, FIN (its end in
    /// the arriving space), and whether its ACK covers the other direction's FIN — the
    /// other direction's FIN end is in *its* arriving space, which is this segment's
    /// translated acknowledgement space.
    pub fn observe(&mut self, from: Side, t: &Translated, now: u64) {
        self.last_activity = self.last_activity.max(now);
        let d = &mut self.dirs[from.index()];
        d.bytes += u64::from(t.payload_len);
        d.packets += 1;
        if t.payload_len > 0 {
            // Offset of the segment's end from `start`, modulo 2³²: a segment that ends at
            // or before `start` reads as a huge offset (negative) and is not counted. Each
            // byte counts once however often it is retransmitted; a direction relays less
            // than 2 GB between segments, so the offset never wraps ambiguously.
            let end = t.seq_in.wrapping_add(t.payload_len).wrapping_sub(d.start);
            if (end as i32) > 0 {
                d.high = d.high.max(u64::from(end));
            }
        }
        if t.flags.has(TcpFlags::RST) {
            self.rst.get_or_insert(from);
            return;
        }
        if let Some(end) = t.fin_end() {
            // A retransmitted FIN has the same end; keep the first.
            d.fin_end.get_or_insert(end);
        }
        let o = &mut self.dirs[from.other().index()];
        if o.fin_end.is_some_and(|end| t.acknowledges(end)) {
            o.fin_acked = true;
        }
    }

    /// Both FINs were sent and acknowledged: the pair has closed normally.
    pub fn closed_by_fin(&self) -> bool {
        self.dirs.iter().all(|d| d.fin_acked)
    }

    /// Bytes relayed A → B and B → A from the splice point on, each once (the span up to
    /// the highest payload byte seen).
    pub fn bytes(&self) -> (u64, u64) {
        (self.dirs[0].high, self.dirs[1].high)
    }

    /// Segments A → B and B → A.
    pub fn packets(&self) -> (u64, u64) {
        (self.dirs[0].packets, self.dirs[1].packets)
    }
}

/// [`translate`] for the shape of nearly every segment of an established pair: an IPv4
/// header without options (not a fragment), a 32-byte TCP header whose options are NOP NOP
/// timestamps (RFC 7323 App. A, as Linux and nicemu send them), towards an out side that
/// negotiated timestamps. Reads and writes at fixed offsets with one bounds check, for the
/// NIC's per-segment path (AccelTCP §4.3).
///
/// `None`: the frame has another shape, or not `d`'s arriving 4-tuple; it is unchanged and
/// [`translate`] walks it in full. `Some`: exactly what [`translate_general`] with the TCP
/// header at byte 34 does to the frame and returns (a property test checks both ways).
// Inlined: returned through memory, its 40-byte result is read back before the stores that
// wrote it retire (a store-forwarding stall that cost more than the translation saved).
#[inline(always)]
pub fn translate_common(frame: &mut [u8], d: &Dir) -> Option<Translated> {
    const IP: usize = ETH_HDR_LEN;
    const TCP: usize = ETH_HDR_LEN + IPV4_HDR_LEN;
    let h: &[u8; TCP + 4] = frame.first_chunk()?;
    {
        let eth = EthernetFrame::new_unchecked(&h[..]);
        let ip = Ipv4Packet::new_unchecked(&h[IP..]);
        let tcp = TcpPacket::new_unchecked(&h[TCP..]);
        if eth.ethertype() != ETHERTYPE_IPV4
            || ip.version() != ipv4::VERSION
            || ip.header_len() != IPV4_HDR_LEN
            || ip.is_fragment()
            || ip.protocol() != IPPROTO_TCP
            || ip.src_addr() != d.in_src_ip
            || ip.dst_addr() != d.in_dst_ip
            || tcp.src_port() != d.in_src_port
            || tcp.dst_port() != d.in_dst_port
        {
            return None;
        }
    }
    translate_established(frame, d)
}

/// [`translate_common`] without the checks its caller has made: the NIC's splice fast path
/// has read the Ethernet and IPv4 headers at the same fixed offsets (IPv4, version 4, a
/// 20-byte header, not a fragment, TCP) and found `d` by the frame's own 4-tuple, so only
/// the TCP header's shape and the lengths are checked here.
///
/// Precondition (unchecked; a frame that breaks it is translated as if it held): the frame
/// passes those checks of [`translate_common`]. `None` and `Some` as there.
#[inline(always)]
pub fn translate_established(frame: &mut [u8], d: &Dir) -> Option<Translated> {
    /// Where the IPv4 and TCP headers start, and the length of the whole shape: Ethernet,
    /// IPv4 without options, and a TCP header with NOP NOP TS (32 bytes).
    const IP: usize = ETH_HDR_LEN;
    const TCP: usize = ETH_HDR_LEN + IPV4_HDR_LEN;
    const HEAD: usize = TCP + 32;
    let len = frame.len();
    // One length check; everything below reads and writes at constant offsets inside it.
    let h: &mut [u8; HEAD] = frame.first_chunk_mut()?;
    {
        let ip = Ipv4Packet::new_unchecked(&h[IP..]);
        let total = ip.total_len();
        // The data offset (8 words) and the first option bytes: NOP NOP TS(8, 10).
        if !d.out_ts
            || total < IPV4_HDR_LEN + 32
            || ETH_HDR_LEN + total > len
            || h[TCP + tcp::field::DATA_OFF] >> 4 != 8
            || h[TCP + tcp::field::OPTIONS..TCP + tcp::field::OPTIONS + 4] != [1, 1, 8, 10]
        {
            return None;
        }
    }
    // The rewrite, as `translate` does it, at the fields' offsets (RFC 791 §3.1, RFC 9293
    // §3.1, RFC 7323 §3.2) in the fixed-size header: no bounds checks left.
    use ipv4::field as ipf;
    use tcp::field as tcpf;
    let be16 = |h: &[u8; HEAD], i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    let be32 = |h: &[u8; HEAD], i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let put16 =
        |h: &mut [u8; HEAD], i: usize, v: u16| h[i..i + 2].copy_from_slice(&v.to_be_bytes());
    let put32 =
        |h: &mut [u8; HEAD], i: usize, v: u32| h[i..i + 4].copy_from_slice(&v.to_be_bytes());
    // The checksums are summed over words as the machine reads them (byte-swapped on a
    // little-endian one), with the deltas in the same order (`Dir::ip_delta_ne`): no swap
    // of the checksum fields or of their sums. A wrapped 32-bit addition's correction,
    // -1 (0xfffe), is `0xfffe.to_be()` in that order.
    let ne16 = |h: &[u8; HEAD], i: usize| u16::from_ne_bytes([h[i], h[i + 1]]);
    let put_ne16 =
        |h: &mut [u8; HEAD], i: usize, v: u16| h[i..i + 2].copy_from_slice(&v.to_ne_bytes());
    let ne = u64::from;
    let wrapped_ne = |c: u64| {
        if c != 0 {
            u64::from(0xfffe_u16.to_be())
        } else {
            0
        }
    };
    let total = usize::from(be16(h, IP + ipf::LENGTH.start));
    h[0..12].copy_from_slice(&d.macs);
    // Source and destination address are adjacent (RFC 791 §3.1).
    h[IP + ipf::SRC_ADDR.start..IP + ipf::DST_ADDR.end].copy_from_slice(&d.out_ips);
    let ip_csum = !fold_small(u64::from(!ne16(h, IP + ipf::CHECKSUM.start)) + ne(d.ip_delta_ne));
    put_ne16(h, IP + ipf::CHECKSUM.start, ip_csum);

    let flags = TcpFlags(h[TCP + tcpf::FLAGS]);
    h[TCP + tcpf::SRC_PORT.start..TCP + tcpf::DST_PORT.end].copy_from_slice(&d.out_ports);
    let seq_in = be32(h, TCP + tcpf::SEQ_NUM.start);
    let (seq_out, c_seq) = add_wrap(seq_in, d.seq_add);
    put32(h, TCP + tcpf::SEQ_NUM.start, seq_out);
    let mut acc = ne(d.tcp_delta_ne) + wrapped_ne(c_seq);
    let ack_in = be32(h, TCP + tcpf::ACK_NUM.start);
    let mut ack_out = ack_in;
    if flags.has(TcpFlags::ACK) {
        let (v, c) = add_wrap(ack_in, d.ack_add);
        acc += ne(d.ack_delta_ne) + wrapped_ne(c);
        ack_out = v;
        put32(h, TCP + tcpf::ACK_NUM.start, v);
    }
    // The window changes only between different scales. With the same shift on both sides
    // (the common case) it stays, and its checksum change is `delta16(w, w)`, 0xffff (a
    // one's-complement zero, added as `translate_general` adds it, so that both give the
    // same checksum bits).
    if d.in_wscale != d.out_wscale {
        let w = be16(h, TCP + tcpf::WIN_SIZE.start);
        let w2 = d.window(w, flags.has(TcpFlags::SYN));
        acc += delta16(w.to_be(), w2.to_be());
        put16(h, TCP + tcpf::WIN_SIZE.start, w2);
    } else {
        acc += 0xffff;
    }
    // TSval and TSecr, word-aligned after the two NOPs.
    const TSVAL: usize = TCP + tcpf::OPTIONS + 4;
    let (tsval, c1) = add_wrap(be32(h, TSVAL), d.tsval_add);
    let (tsecr, c2) = add_wrap(be32(h, TSVAL + 4), d.tsecr_add);
    acc += ne(d.ts_delta_ne) + wrapped_ne(c1) + wrapped_ne(c2);
    put32(h, TSVAL, tsval);
    put32(h, TSVAL + 4, tsecr);
    let tcp_csum = !fold_small(u64::from(!ne16(h, TCP + tcpf::CHECKSUM.start)) + acc);
    put_ne16(h, TCP + tcpf::CHECKSUM.start, tcp_csum);
    Some(Translated {
        flags,
        seq_in,
        seq_out,
        ack_in,
        ack_out,
        payload_len: (total - IPV4_HDR_LEN - 32) as u32,
        out_port: d.out_port,
        sack_stripped: false,
        ts_stripped: false,
        ts_missing: false,
    })
}

//! AccelTCP connection-setup offload (§4.1): the NIC answers SYNs to registered listeners with
//! SYN-cookie SYN-ACKs and turns a valid final ACK into a 0x090A setup notification for the
//! host (App. A), keeping no per-connection state.
//!
//! - The host registers a listener with a 0x090E listen-add message (the options to offer)
//!   and removes it with listen-remove; both are answered with an install ack.
//! - A SYN with the timestamp option to a registered listener gets a SYN-ACK whose ISN is a
//!   cookie ([`offload_api::syncookie`]) and whose TSval carries the SYN's options and the
//!   NIC mark. A SYN without timestamps goes to the host (§3: the host keeps full control).
//! - An ACK (with or without data, FIN included) to a registered listener whose TSecr carries
//!   the NIC mark is checked: valid, it goes to the host inside a setup notification; invalid
//!   (expired, rotated out, wrong hash), it is dropped and counted. Segments whose TSecr lacks
//!   the mark belong to connections the host set up itself and pass.
//! - Flag combinations Linux drops are dropped and counted (`bad_flags`): SYN+FIN, and
//!   segments with none of SYN, ACK and RST. RSTs (SYN+RST too) and SYN+ACKs pass: the host
//!   resets or answers them as its connections and listener decide.
//!
//! Ordinary ACKs of NIC-made connections do not carry the mark: the host keeps their TSvals
//! even. A duplicate setup notification (the peer's data arrived before the host's first
//! segment changed its TSecr) is fine: the host feeds its payload to the existing connection.
//!
//! A peer may send several segments before the host's first segment reaches it (a pipelined
//! or long request): all of them echo the SYN-ACK's TSval, but only the first carries the
//! sequence number the cookie binds (the peer's ISN + 1, as in Linux's syncookies), so
//! the others cannot be checked. The NIC therefore remembers, for a short while and in a
//! bounded table, the connections it has handed to the host ([`RECENT_SLOTS`],
//! [`RECENT_NS`]): a marked segment whose cookie does not check but whose 4-tuple and ISS
//! are in that table goes to the host as an ordinary segment of its connection. Before a
//! cookie checks, the NIC keeps nothing per connection (§4.1), and a forged ACK never
//! reaches the host. The table is direct-mapped (one slot per keyed hash of the 4-tuple, a
//! newer connection overwrites an older one in its slot): one cache line written per
//! connection. A segment whose entry was overwritten or has expired is dropped, as before,
//! and the peer retransmits it once the host's segments have changed its TSecr.

use offload_api::msg::{
    AckStatus, InstallAckRepr, ListenAddFrame, ListenAddRepr, ListenOptions, ListenRemoveFrame,
    ListenRemoveRepr, Message, MsgType, NegotiatedOptions, SetupRepr, WindowScales, ETH_HEADER_LEN,
};
use offload_api::syncookie::{
    self, CookieConfig, CookieError, CookieOptions, CookieTuple, SynCookies,
};
use offload_api::wire::tcp::{self, TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::{EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, Seq};

use crate::buf::PacketBuf;
use crate::net::csum;
use crate::net::parse::{ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP, IPV4_HDR_LEN};
use crate::offload::{CounterSink, Offload, OffloadCtx, RxFrame, RxTcp, Verdict};

/// Window the SYN-ACK advertises (never scaled, RFC 7323 §2.2); the host announces its own
/// window from its first segment on.
pub const SYN_ACK_WINDOW: u16 = 65_535;

/// Most listeners one NIC lcore registers; more are refused (`AckStatus::TableFull`) and
/// their SYNs go to the host.
pub const MAX_LISTENERS: usize = 256;

/// Slots of the table of connections handed to the host (see the module documentation);
/// a power of two.
pub const RECENT_SLOTS: usize = 16_384;

/// How long the NIC remembers a connection it handed to the host: a peer echoes the
/// SYN-ACK's TSval only until the host's first segment reaches it, a round trip after the
/// setup (or a delayed ACK or a retransmission timeout later, RFC 6298's 1 s initial RTO).
pub const RECENT_NS: u64 = 10_000_000_000;

/// Counters of the setup offload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetupStats {
    /// SYNs to a registered listener.
    pub syns: u64,
    /// SYN-ACKs with a cookie sent.
    pub cookies_sent: u64,
    /// SYNs to a registered listener handed to the host: no timestamp option, or a listener
    /// that does not offer timestamps.
    pub syns_to_host: u64,
    /// Final ACKs whose cookie checked: setup notifications sent.
    pub validated: u64,
    /// Final ACKs refused: cookie older than the allowed age.
    pub rejected_expired: u64,
    /// Final ACKs refused: made with a key that has rotated out.
    pub rejected_rotated: u64,
    /// Final ACKs refused: the hash does not match (forged, or another connection's).
    pub rejected_hash: u64,
    /// Final ACKs refused: option bits in TSecr that no SYN-ACK carries.
    pub rejected_options: u64,
    /// Segments that echo the SYN-ACK's TSval after their connection's cookie checked
    /// (the peer sent more than one segment before the host's first): to the host as
    /// ordinary segments.
    pub later_segments: u64,
    /// SYN-ACKs or setup notifications not sent: no buffer, or the link's ring full.
    pub send_failed: u64,
    /// Listen registrations added (or updated) / removed.
    pub listen_added: u64,
    /// Listen registrations removed.
    pub listen_removed: u64,
    /// Control messages of the setup types that did not parse.
    pub bad_control: u64,
    /// Segments to a registered listener dropped for their flags: SYN+FIN without ACK (no
    /// stack opens with it; Linux's `tcp_rcv_state_process` drops it in LISTEN rather than
    /// answer), and segments with none of SYN, ACK and RST (dropped in LISTEN, RFC 9293
    /// §3.10.7.2, and in every synchronized state, §3.10.7.4: "if the ACK bit is off, drop").
    pub bad_flags: u64,
}

/// The NIC's SYN-cookie responder (AccelTCP §4.1) on an lcore's offload chain.
///
/// Invariant: holds no state for a connection whose cookie has not checked; remembers at most
/// [`RECENT_SLOTS`] connections handed to the host, each for at most [`RECENT_NS`]; listeners
/// are unique by (address, port), address `[0; 4]` matching any address of the NIC.
pub struct SetupOffload {
    /// Registered listeners: a handful per host, searched on every TCP frame from the wire,
    /// so a short array scanned by port beats a hashed map (no SipHash per frame).
    listeners: Vec<(([u8; 4], u16), ListenOptions)>,
    cookies: SynCookies,
    /// Offset of the TSval clock (RFC 7323 §5.4: not the raw time).
    ts_offset: u32,
    stats: SetupStats,
    scratch: Vec<u8>,
    started: bool,
    /// Connections handed to the host, direct-mapped by [`recent_slot`].
    recent: Box<[Recent]>,
    /// The key of [`recent_slot`]'s hash (random: the 4-tuples come from the wire).
    recent_seed: u64,
}

/// A connection handed to the host: its 4-tuple, ISS, the peer's ISN, and when (0: none).
#[derive(Clone, Copy, Default)]
struct Recent {
    tuple: ([u8; 4], [u8; 4], u16, u16),
    iss: u32,
    peer_isn: u32,
    at: u64,
}

fn tuple_key(ct: &CookieTuple) -> ([u8; 4], [u8; 4], u16, u16) {
    (ct.remote_ip, ct.local_ip, ct.remote_port, ct.local_port)
}

/// The slot of `ct`: a keyed multiply-xorshift mix of the 4-tuple.
fn recent_slot(ct: &CookieTuple, seed: u64) -> usize {
    let ips = (u64::from(u32::from_be_bytes(ct.remote_ip)) << 32)
        | u64::from(u32::from_be_bytes(ct.local_ip));
    let ports = (u64::from(ct.remote_port) << 16) | u64::from(ct.local_port);
    let x = (ips ^ seed) ^ ports.rotate_left(29);
    let h = (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (h >> 40) as usize & (RECENT_SLOTS - 1)
}

impl SetupOffload {
    /// A responder with cookie settings `cfg` and a random key.
    pub fn new(cfg: CookieConfig) -> SetupOffload {
        let mut cookies = SynCookies::random(cfg, 0);
        let ts_offset = cookies.make(
            &CookieTuple {
                remote_ip: [0; 4],
                remote_port: 0,
                local_ip: [0; 4],
                local_port: 0,
            },
            0,
            0,
            0,
        );
        Self::with_cookies(cookies, ts_offset)
    }

    /// A responder with a given generator and TSval offset (deterministic tests).
    pub fn with_cookies(cookies: SynCookies, ts_offset: u32) -> SetupOffload {
        SetupOffload {
            listeners: Vec::new(),
            cookies,
            ts_offset,
            stats: SetupStats::default(),
            scratch: Vec::with_capacity(128),
            started: false,
            recent: vec![Recent::default(); RECENT_SLOTS].into_boxed_slice(),
            recent_seed: {
                use std::hash::BuildHasher;
                std::collections::hash_map::RandomState::new().hash_one(ts_offset)
            },
        }
    }

    /// Its counters.
    pub fn stats(&self) -> &SetupStats {
        &self.stats
    }

    /// Registered listeners.
    pub fn listeners(&self) -> usize {
        self.listeners.len()
    }

    fn listener(&self, dst: [u8; 4], port: u16) -> Option<ListenOptions> {
        let mut any = None;
        for &((addr, p), o) in &self.listeners {
            if p == port {
                if addr == dst {
                    return Some(o);
                }
                if addr == [0; 4] {
                    any = Some(o);
                }
            }
        }
        any
    }

    fn ack_to_host<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        req: (u32, MsgType),
        status: AckStatus,
    ) {
        let m = Message::InstallAck(InstallAckRepr {
            request_id: req.0,
            request_type: req.1,
            status,
        });
        if m.write_frame([0; 6], [0; 6], &[], &mut self.scratch)
            .is_err()
            || !cx.io.to_host(port, &self.scratch)
        {
            self.stats.send_failed += 1;
        }
    }

    /// Answers a SYN (`t`, from `src` to `dst`) with a cookie SYN-ACK out of `rx_port`.
    fn syn<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        rx: &RxFrame<'_, B>,
        (src, dst): ([u8; 4], [u8; 4]),
        t: &TcpPacket<&[u8]>,
        l: ListenOptions,
    ) -> Verdict {
        self.stats.syns += 1;
        let Ok(o) = tcp::parse_options(t.options()) else {
            return Verdict::Pass; // the host counts it as malformed
        };
        let Some((peer_tsval, _)) = o.timestamp.filter(|_| l.timestamps) else {
            self.stats.syns_to_host += 1;
            return Verdict::Pass;
        };
        let ct = CookieTuple {
            remote_ip: src,
            remote_port: t.src_port(),
            local_ip: dst,
            local_port: t.dst_port(),
        };
        let peer_mss = o.mss.unwrap_or(536);
        let iss = self.cookies.make(&ct, t.seq_number().0, peer_mss, cx.now);
        let co = CookieOptions {
            mss: peer_mss,
            peer_wscale: o.window_scale,
            sack_permitted: o.sack_permitted,
        };
        let clock = self.ts_offset.wrapping_add((cx.now / 1_000_000) as u32);
        let tsval = syncookie::encode_ts(clock, &co, true);
        let h = TcpHeader {
            src_port: t.dst_port(),
            dst_port: t.src_port(),
            seq: Seq(iss),
            ack: t.seq_number() + 1,
            flags: TcpFlags::SYN | TcpFlags::ACK,
            window: SYN_ACK_WINDOW,
            options: TcpOptions {
                mss: Some(l.mss),
                window_scale: l.window_scale.filter(|_| o.window_scale.is_some()),
                sack_permitted: l.sack_permitted && o.sack_permitted,
                timestamp: Some((tsval, peer_tsval)),
                ..TcpOptions::default()
            },
        };
        let hdr = rx.hdr;
        let out = &mut self.scratch;
        let hl = tcp::header_len(&h);
        out.clear();
        out.resize(ETH_HDR_LEN + IPV4_HDR_LEN + hl, 0);
        let mut eth = EthernetFrame::new_unchecked(&mut out[..]);
        EthernetRepr {
            dst: hdr.src_mac,
            src: hdr.dst_mac,
            ethertype: ETHERTYPE_IPV4,
        }
        .emit(&mut eth);
        Ipv4Repr {
            src: dst,
            dst: src,
            protocol: IPPROTO_TCP,
            payload_len: hl,
            ttl: 64,
            ident: 0,
            dont_frag: true,
            dscp_ecn: 0,
        }
        .emit(&mut Ipv4Packet::new_unchecked(eth.payload_mut()));
        tcp::emit(&h, &mut out[ETH_HDR_LEN + IPV4_HDR_LEN..]);
        if csum::fill_checksums(out).is_err() || !cx.io.to_port(rx.port as u16, out) {
            self.stats.send_failed += 1;
        } else {
            self.stats.cookies_sent += 1;
        }
        Verdict::Consumed
    }

    /// Checks the cookie of an ACK whose TSecr carries the NIC mark and sends the setup
    /// notification; drops it when the cookie does not check.
    #[allow(clippy::too_many_arguments)]
    fn final_ack<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        rx: &RxFrame<'_, B>,
        (src, dst): ([u8; 4], [u8; 4]),
        t: &TcpPacket<&[u8]>,
        tsecr: u32,
        l: ListenOptions,
        ip_len: usize,
    ) -> Verdict {
        let ct = CookieTuple {
            remote_ip: src,
            remote_port: t.src_port(),
            local_ip: dst,
            local_port: t.dst_port(),
        };
        let iss = t.ack_number().0.wrapping_sub(1);
        let peer_isn = t.seq_number().0.wrapping_sub(1);
        let mss = match self.cookies.check(&ct, iss, peer_isn, cx.now) {
            Ok(m) => m,
            Err(_) if self.is_recent(&ct, iss, peer_isn, cx.now) => {
                self.stats.later_segments += 1;
                return Verdict::Pass;
            }
            Err(e) => {
                match e {
                    CookieError::Expired => self.stats.rejected_expired += 1,
                    CookieError::Rotated => self.stats.rejected_rotated += 1,
                    CookieError::BadHash => self.stats.rejected_hash += 1,
                }
                return Verdict::Consumed;
            }
        };
        let Some(co) = syncookie::decode_ts(tsecr, mss) else {
            self.stats.rejected_options += 1;
            return Verdict::Consumed;
        };
        let window_scale = match (co.peer_wscale, l.window_scale) {
            (Some(peer), Some(local)) => Some(WindowScales { peer, local }),
            _ => None,
        };
        let m = Message::Setup(SetupRepr {
            iss,
            syn_ack_tsval: tsecr,
            options: NegotiatedOptions {
                peer_mss: co.mss,
                local_mss: l.mss,
                window_scale,
                sack_permitted: co.sack_permitted && l.sack_permitted,
                timestamps: true,
            },
        });
        let frame = rx.buf.data();
        let ip = &frame[ETH_HDR_LEN..ETH_HDR_LEN + ip_len];
        if m.write_frame(rx.hdr.dst_mac, rx.hdr.src_mac, ip, &mut self.scratch)
            .is_err()
            || !cx.io.to_host(rx.port as u16, &self.scratch)
        {
            self.stats.send_failed += 1;
        } else {
            self.stats.validated += 1;
            self.remember(ct, iss, peer_isn, cx.now);
        }
        Verdict::Consumed
    }

    /// Records a connection handed to the host in its slot.
    fn remember(&mut self, ct: CookieTuple, iss: u32, peer_isn: u32, now: u64) {
        self.recent[recent_slot(&ct, self.recent_seed)] = Recent {
            tuple: tuple_key(&ct),
            iss,
            peer_isn,
            at: now.max(1),
        };
    }

    /// Whether a segment of `ct` that acknowledges `iss + 1` and starts at
    /// `seq_minus_one + 1` belongs to a connection handed to the host less than
    /// [`RECENT_NS`] ago: the same ISS, and a sequence number at or after the first one the
    /// peer sent (within 2³⁰, RFC 7323 §5.2's bound on how far a sequence number moves).
    fn is_recent(&self, ct: &CookieTuple, iss: u32, seq_minus_one: u32, now: u64) -> bool {
        let e = &self.recent[recent_slot(ct, self.recent_seed)];
        e.at != 0
            && e.tuple == tuple_key(ct)
            && e.iss == iss
            && now.saturating_sub(e.at) < RECENT_NS
            && seq_minus_one.wrapping_sub(e.peer_isn) < 1 << 30
    }
}

impl Default for SetupOffload {
    fn default() -> Self {
        SetupOffload::new(CookieConfig::default())
    }
}

impl<B: PacketBuf> Offload<B> for SetupOffload {
    fn name(&self) -> &'static str {
        "setup"
    }

    /// Active while some listener is registered.
    fn active(&self) -> bool {
        !self.listeners.is_empty()
    }

    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let Some(RxTcp {
            src,
            dst,
            l4_off,
            seg,
        }) = rx.tcp()
        else {
            return Verdict::Pass;
        };
        let l4_len = seg.len();
        if !self.started {
            self.started = true;
            self.cookies.rotate(cx.now);
        }
        let Ok(t) = TcpPacket::new_checked(seg) else {
            return Verdict::Pass;
        };
        let Some(l) = self.listener(dst, t.dst_port()) else {
            return Verdict::Pass;
        };
        let f = t.flags();
        // RST, SYN+RST included, to the host: it may reset a connection the NIC knows
        // nothing of (RFC 9293 §3.10.7.4 checks RST before SYN), and a listener ignores it.
        if f.has(TcpFlags::RST) {
            return Verdict::Pass;
        }
        if f.has(TcpFlags::SYN) {
            if f.has(TcpFlags::ACK) {
                return Verdict::Pass;
            }
            if f.has(TcpFlags::FIN) {
                self.stats.bad_flags += 1;
                return Verdict::Consumed;
            }
            return self.syn(cx, rx, (src, dst), &t, l);
        }
        if !f.has(TcpFlags::ACK) {
            self.stats.bad_flags += 1;
            return Verdict::Consumed;
        }
        let Some(tsecr) = tcp::parse_options(t.options())
            .ok()
            .and_then(|o| o.timestamp)
            .map(|(_, ecr)| ecr)
        else {
            return Verdict::Pass;
        };
        if !syncookie::ts_is_nic(tsecr) {
            return Verdict::Pass;
        }
        let ip_len = l4_off - ETH_HDR_LEN + l4_len;
        self.final_ack(cx, rx, (src, dst), &t, tsecr, l, ip_len)
    }

    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        let body = frame.get(ETH_HEADER_LEN..).unwrap_or(&[]);
        match msg {
            MsgType::ListenAdd => {
                let Ok(r) = ListenAddFrame::new_checked(body)
                    .map_err(|_| ())
                    .and_then(|f| ListenAddRepr::parse(&f).map_err(|_| ()))
                else {
                    self.stats.bad_control += 1;
                    return Verdict::Consumed;
                };
                let status = if r.options.mss < 64 {
                    AckStatus::Invalid
                } else {
                    let k = (r.addr, r.port);
                    let full = self.listeners.len() >= MAX_LISTENERS;
                    match self.listeners.iter_mut().find(|(key, _)| *key == k) {
                        Some((_, o)) => {
                            *o = r.options;
                            self.stats.listen_added += 1;
                            AckStatus::Ok
                        }
                        None if full => AckStatus::TableFull,
                        None => {
                            self.listeners.push((k, r.options));
                            self.stats.listen_added += 1;
                            AckStatus::Ok
                        }
                    }
                };
                self.ack_to_host(cx, port, (r.request_id, MsgType::ListenAdd), status);
                Verdict::Consumed
            }
            MsgType::ListenRemove => {
                let Ok(r) = ListenRemoveFrame::new_checked(body)
                    .map_err(|_| ())
                    .and_then(|f| ListenRemoveRepr::parse(&f).map_err(|_| ()))
                else {
                    self.stats.bad_control += 1;
                    return Verdict::Consumed;
                };
                let k = (r.addr, r.port);
                let found = self.listeners.iter().position(|(key, _)| *key == k);
                let status = if let Some(i) = found {
                    self.listeners.swap_remove(i);
                    self.stats.listen_removed += 1;
                    AckStatus::Ok
                } else {
                    AckStatus::NotFound
                };
                self.ack_to_host(cx, port, (r.request_id, MsgType::ListenRemove), status);
                Verdict::Consumed
            }
            _ => Verdict::Pass,
        }
    }

    fn counters(&self, out: CounterSink<'_>) {
        let s = &self.stats;
        out("listeners", self.listeners.len() as u64);
        out("syns", s.syns);
        out("cookies_sent", s.cookies_sent);
        out("syns_to_host", s.syns_to_host);
        out("validated", s.validated);
        out("rejected_expired", s.rejected_expired);
        out("rejected_rotated", s.rejected_rotated);
        out("rejected_hash", s.rejected_hash);
        out("rejected_options", s.rejected_options);
        out("later_segments", s.later_segments);
        out("send_failed", s.send_failed);
        out("listen_added", s.listen_added);
        out("listen_removed", s.listen_removed);
        out("bad_control", s.bad_control);
        out("bad_flags", s.bad_flags);
    }
}

//! Stateless connection setup on the host side: listeners registered with the NIC's
//! SYN-cookie responder (`TCP_SETUP_OFFLOAD`, AccelTCP §4.1), the connections its 0x090A
//! setup notifications create, and the host's own SYN cookies when a listener's SYN queue is
//! full (RFC 4987 §3.6, Linux's `tcp_syncookies = 1`), with the same encoding
//! ([`offload_api::syncookie`]).

use offload_api::msg::{self, ListenAddRepr, ListenOptions, ListenRemoveRepr, Message};
use offload_api::syncookie::{self, CookieError, CookieOptions, CookieTuple};

use super::{key, Context, Fd, Owner, SockState};
use crate::frame::{self, HostLink};
use crate::tcp::segment::{self, TcpRepr};
use crate::tcp::seq::Seq;
use crate::tcp::tcb::{CookieHandshake, Endpoints, Tcb};

/// Counters of stateless setup on the host.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct SetupHostStats {
    /// Listen registrations sent to the NIC (listen or setsockopt on a listener).
    pub listen_registered: u64,
    /// Listen removals sent to the NIC (setsockopt off, or close of the listener).
    pub listen_unregistered: u64,
    /// Install acks of listen registrations that refused them.
    pub listen_refused: u64,
    /// Setup notifications (0x090A) that created a connection.
    pub nic_setups: u64,
    /// Setup notifications for a connection that already existed (the peer's next segment
    /// still echoed the NIC's TSval): its segment went to the connection.
    pub nic_setup_dups: u64,
    /// Setup notifications for the 4-tuple of a connection in TIME_WAIT: the old connection
    /// ended and the new one was created.
    pub time_wait_reused: u64,
    /// Setup notifications dropped: no setup-offloaded listener on the port, accept queue
    /// full, no connection slot, or an ACK that did not complete the handshake.
    pub nic_setup_dropped: u64,
    /// SYN-ACKs with a host-made cookie (the listener's SYN queue was full).
    pub cookies_sent: u64,
    /// Final ACKs whose host-made cookie checked: connections created.
    pub cookies_validated: u64,
    /// ACKs to a listener whose cookie did not check (answered with a RST, as before).
    pub cookies_rejected: u64,
}

impl<L: HostLink> Context<L> {
    /// Counters of stateless setup.
    pub fn setup_stats(&self) -> &SetupHostStats {
        &self.setup_stats
    }

    pub(super) fn send_control(&mut self, m: &Message) -> bool {
        let port = self.cfg.port;
        let Context {
            link,
            scratch,
            stats,
            ..
        } = self;
        let ok = link.send_built(port, scratch, &mut |buf| {
            if m.write_frame([0; 6], [0; 6], &[], buf).is_err() {
                buf.clear();
            }
        });
        if ok {
            stats.frames_out += 1;
        } else {
            stats.link_full += 1;
        }
        ok
    }

    /// The options a listener's SYN-ACKs offer, from the context's TCP settings.
    fn listen_options(&self) -> ListenOptions {
        let t = &self.cfg.tcp;
        ListenOptions {
            mss: t.mss,
            window_scale: Some(t.window_scale.min(14)),
            sack_permitted: t.sack,
            timestamps: t.timestamps,
        }
    }

    /// Registers listener `fd` with the NIC's SYN-cookie responder (AccelTCP App. A listen
    /// registration), when it listens and has `TCP_SETUP_OFFLOAD`.
    pub(super) fn setup_register(&mut self, fd: Fd) {
        let Ok(s) = self.sock(fd) else { return };
        let (SockState::Listening(_), Some(local), true) =
            (&s.state, s.local, s.opts.setup_offload)
        else {
            return;
        };
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let m = Message::ListenAdd(ListenAddRepr {
            request_id: self.next_request_id,
            addr: self.cfg.ip,
            port: local.port(),
            options: self.listen_options(),
        });
        if self.send_control(&m) {
            self.setup_stats.listen_registered += 1;
        }
    }

    /// Removes the NIC registration of a listener on `port`.
    pub(super) fn setup_unregister(&mut self, port: u16) {
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let m = Message::ListenRemove(ListenRemoveRepr {
            request_id: self.next_request_id,
            addr: self.cfg.ip,
            port,
        });
        if self.send_control(&m) {
            self.setup_stats.listen_unregistered += 1;
        }
    }

    /// An install ack of a listen registration or removal.
    pub(super) fn setup_install_ack(&mut self, a: msg::InstallAckRepr) {
        if a.status != msg::AckStatus::Ok && a.request_type == msg::MsgType::ListenAdd {
            self.setup_stats.listen_refused += 1;
        }
    }

    /// A 0x090A setup notification: the NIC completed a SYN-cookie handshake (AccelTCP §4.1,
    /// App. A). The carried ACK (with any data) creates the connection ESTABLISHED under the
    /// listener, or goes to the connection when it already exists.
    pub(super) fn setup_input(&mut self, f: &[u8], now: u64) {
        let Ok(p) = msg::parse_frame(f) else {
            self.stats.malformed += 1;
            return;
        };
        let Message::Setup(r) = p.message else {
            self.stats.malformed += 1;
            return;
        };
        let Ok(tf) = frame::parse_ipv4_tcp(p.payload) else {
            self.stats.malformed += 1;
            return;
        };
        if tf.dst_ip != self.cfg.ip {
            self.stats.not_ours += 1;
            return;
        }
        let Ok(seg) = segment::parse(tf.tcp) else {
            self.stats.malformed += 1;
            return;
        };
        let k = key(tf.src_ip, seg.src_port, tf.dst_ip, seg.dst_port);
        if let Some(&cid) = self.demux.get(&k) {
            if cid & super::quasi::QUASI != 0 {
                self.setup_stats.nic_setup_dups += 1;
                self.quasi_input(cid & !super::quasi::QUASI, &seg, now);
                return;
            }
            let time_wait = self.conns[cid as usize]
                .as_ref()
                .is_some_and(|c| c.tcb.state() == crate::tcp::tcb::State::TimeWait);
            if !time_wait {
                self.setup_stats.nic_setup_dups += 1;
                self.conn_input(cid, &seg, now);
                return;
            }
            // A new connection on the 4-tuple of one in TIME_WAIT: its handshake was made
            // and checked on the NIC, so the old incarnation's duplicates cannot be confused
            // with it (the peer's timestamps are newer: RFC 6191). The old one ends.
            self.setup_stats.time_wait_reused += 1;
            self.free_conn(cid);
        }
        let lfd = match self.listeners.get(&seg.dst_port) {
            Some(&lfd) if self.sock(lfd).is_ok_and(|s| s.opts.setup_offload) => lfd,
            _ => {
                self.setup_stats.nic_setup_dropped += 1;
                return;
            }
        };
        let o = r.options;
        let h = CookieHandshake {
            iss: Seq(r.iss),
            peer_isn: Seq(seg.seq.0.wrapping_sub(1)),
            peer_mss: o.peer_mss,
            window_scale: o.window_scale.map(|w| (w.peer, w.local)),
            sack_permitted: o.sack_permitted,
            syn_ack_tsval: o.timestamps.then_some(r.syn_ack_tsval),
            even_tsvals: true,
        };
        if let Some(ok) = self.quasi_create(lfd, tf.src_ip, &seg, &h, now) {
            if ok {
                self.setup_stats.nic_setups += 1;
            } else {
                self.setup_stats.nic_setup_dropped += 1;
            }
            return;
        }
        if !self.cookie_conn(lfd, tf.src_ip, &seg, &h, now) {
            self.setup_stats.nic_setup_dropped += 1;
            return;
        }
        self.setup_stats.nic_setups += 1;
    }

    /// Creates the connection of a completed stateless handshake under listener `lfd`;
    /// false when the listener cannot take it (accept queue full, no slot) or `ack` does not
    /// complete the handshake.
    fn cookie_conn(
        &mut self,
        lfd: Fd,
        remote_ip: [u8; 4],
        ack: &TcpRepr<'_>,
        h: &CookieHandshake,
        now: u64,
    ) -> bool {
        let (full, opts) = {
            let Ok(s) = self.sock(lfd) else { return false };
            let SockState::Listening(l) = &s.state else {
                return false;
            };
            (
                l.accept_queue.len() >= l.backlog,
                self.tcp_config_for(&s.opts),
            )
        };
        if full || self.at_conn_limit() {
            return false;
        }
        let ep = Endpoints {
            local_ip: self.cfg.ip,
            local_port: ack.dst_port,
            remote_ip,
            remote_port: ack.src_port,
        };
        let (tcb, ev) = Tcb::from_cookie(&opts, ep, h, ack, now);
        if !ev.established {
            return false;
        }
        let cid = self.alloc_conn(tcb);
        {
            let c = self.conns[cid as usize].as_mut().expect("just allocated");
            c.listener = Some(lfd);
            c.half_open = true;
            c.owner = Owner::Host;
        }
        if let Ok(s) = self.sock_mut(lfd) {
            if let SockState::Listening(l) = &mut s.state {
                l.half_open += 1;
            }
        }
        self.demux
            .insert(key(remote_ip, ack.src_port, self.cfg.ip, ack.dst_port), cid);
        self.stats.passive_opens += 1;
        self.after_input(cid, ev);
        true
    }

    fn cookie_tuple(&self, remote_ip: [u8; 4], seg: &TcpRepr<'_>) -> CookieTuple {
        CookieTuple {
            remote_ip,
            remote_port: seg.src_port,
            local_ip: self.cfg.ip,
            local_port: seg.dst_port,
        }
    }

    /// Answers a SYN to listener `lfd` with a host-made cookie instead of keeping a half-open
    /// connection (RFC 4987 §3.6): the listener's SYN queue is full.
    pub(super) fn cookie_syn_ack(
        &mut self,
        lfd: Fd,
        remote_ip: [u8; 4],
        syn: &TcpRepr<'_>,
        now: u64,
    ) {
        let Ok(s) = self.sock(lfd) else { return };
        let opts = self.tcp_config_for(&s.opts);
        let ct = self.cookie_tuple(remote_ip, syn);
        let peer_mss = syn.options.mss.unwrap_or(536);
        let iss = self.cookies.make(&ct, syn.seq.0, peer_mss, now);
        let co = CookieOptions {
            mss: peer_mss,
            peer_wscale: syn.options.window_scale,
            sack_permitted: syn.options.sack_permitted,
        };
        // The clock part of the TSval: any value; the host keeps none of it.
        let clock = (now / 1_000_000) as u32 ^ iss.rotate_left(7);
        // Not NIC-made: the mark bit stays clear, so the TSval is even as a setup-offloaded
        // listener's must be.
        let tsval = syncookie::encode_ts(clock, &co, false);
        let ep = Endpoints {
            local_ip: self.cfg.ip,
            local_port: syn.dst_port,
            remote_ip,
            remote_port: syn.src_port,
        };
        let mut tcb = Tcb::stateless_syn_ack(&opts, ep, syn, Seq(iss), tsval, now);
        let Context {
            link,
            scratch,
            ip_id,
            stats,
            cfg,
            setup_stats,
            ..
        } = self;
        let port = cfg.port;
        tcb.poll_transmit(now, &mut |o| {
            *ip_id = ip_id.wrapping_add(1);
            let id = *ip_id;
            if link.send_built(port, scratch, &mut |buf| {
                frame::build_tcp(buf, ep.local_ip, ep.remote_ip, id, &o.header, o.payload);
            }) {
                stats.frames_out += 1;
                setup_stats.cookies_sent += 1;
            } else {
                stats.link_full += 1;
            }
        });
    }

    /// An ACK to listener `lfd` with no connection: when it completes a host-made cookie
    /// handshake, the connection is created; otherwise false (the caller answers with a RST).
    pub(super) fn cookie_ack(
        &mut self,
        lfd: Fd,
        remote_ip: [u8; 4],
        ack: &TcpRepr<'_>,
        now: u64,
    ) -> bool {
        if !self.cfg.syn_cookies {
            return false;
        }
        let Ok(s) = self.sock(lfd) else { return false };
        let even = s.opts.setup_offload;
        let ct = self.cookie_tuple(remote_ip, ack);
        let iss = ack.ack.0.wrapping_sub(1);
        let mss = match self.cookies.check(&ct, iss, ack.seq.0.wrapping_sub(1), now) {
            Ok(m) => m,
            Err(CookieError::Expired | CookieError::Rotated | CookieError::BadHash) => {
                self.setup_stats.cookies_rejected += 1;
                return false;
            }
        };
        let tcfg = &self.cfg.tcp;
        let (co, tsval) = match ack.options.timestamp {
            Some((_, ecr)) if tcfg.timestamps => match syncookie::decode_ts(ecr, mss) {
                Some(co) => (co, Some(ecr)),
                None => {
                    self.setup_stats.cookies_rejected += 1;
                    return false;
                }
            },
            // Without timestamps only the MSS survives (as with Linux's cookies).
            _ => (
                CookieOptions {
                    mss,
                    peer_wscale: None,
                    sack_permitted: false,
                },
                None,
            ),
        };
        let h = CookieHandshake {
            iss: Seq(iss),
            peer_isn: Seq(ack.seq.0.wrapping_sub(1)),
            peer_mss: co.mss,
            window_scale: co.peer_wscale.map(|p| (p, tcfg.window_scale.min(14))),
            sack_permitted: co.sack_permitted && tcfg.sack,
            syn_ack_tsval: tsval,
            even_tsvals: even,
        };
        if !self.cookie_conn(lfd, remote_ip, ack, &h, now) {
            return false;
        }
        self.setup_stats.cookies_validated += 1;
        true
    }
}

//! Frames from the NIC: demux to connections and listeners, passive opens, RSTs for
//! segments that reach nothing (RFC 9293 §3.10.7.1), and the host ↔ NIC control messages
//! (AccelTCP App. A EtherTypes 0x090A–0x090D, nicemu control 0x090E), dispatched by type.

use offload_api::msg::{self, FrameKind, Message, MsgType};

use super::{key, Context, SockState};
use crate::frame::{self, FrameError, HostLink};
use crate::tcp::segment::{self, TcpFlags, TcpRepr};
use crate::tcp::tcb::{reset_for, Endpoints, Events, Tcb};

impl<L: HostLink> Context<L> {
    /// Takes up to `rx_burst` frames from the link and processes them.
    pub(super) fn rx(&mut self, now: u64) -> usize {
        let mut n = 0;
        while n < self.cfg.rx_burst {
            let Some((_, buf)) = self.link.recv() else {
                break;
            };
            n += 1;
            self.input_frame(buf.as_ref(), now);
        }
        n
    }

    /// Processes one Ethernet frame from the NIC.
    pub fn input_frame(&mut self, f: &[u8], now: u64) {
        self.stats.frames_in += 1;
        let tf = match frame::parse_tcp(f) {
            Ok(tf) => tf,
            Err(e) => {
                self.input_not_tcp(f, e, now);
                return;
            }
        };
        if tf.dst_ip != self.cfg.ip && !self.cfg.extra_ips.contains(&tf.dst_ip) {
            self.stats.not_ours += 1;
            return;
        }
        let seg = match segment::parse(tf.tcp) {
            Ok(s) => s,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        let k = key(tf.src_ip, seg.src_port, tf.dst_ip, seg.dst_port);
        if let Some(&cid) = self.demux.get(&k) {
            if cid & super::quasi::QUASI != 0 {
                self.quasi_input(cid & !super::quasi::QUASI, &seg, now);
                return;
            }
            if !self.splice_conns.is_empty() {
                if let Some(&id) = self.splice_conns.get(&cid) {
                    self.splice_input(id, cid, f, &seg, now);
                    return;
                }
            }
            let reincarnate = seg.flags.has(TcpFlags::SYN)
                && self.listeners.contains_key(&seg.dst_port)
                && self.conns[cid as usize]
                    .as_ref()
                    .is_some_and(|c| c.tcb.time_wait_accepts_syn(&seg));
            if !reincarnate {
                self.conn_input(cid, &seg, now);
                return;
            }
            // A new connection on the 4-tuple of one in TIME_WAIT (RFC 6191): the old one
            // ends and the listener takes the SYN.
            self.stats.time_wait_reused += 1;
            self.free_conn(cid);
        }
        if self.splice_late(k, f) || self.late_for_handover(k, seg.flags, now) {
            return;
        }
        // Listeners serve the primary address only (see `HostConfig::extra_ips`).
        if let Some(&lfd) = self
            .listeners
            .get(&seg.dst_port)
            .filter(|_| tf.dst_ip == self.cfg.ip)
        {
            self.listener_input(lfd, tf.src_ip, &seg, now);
            return;
        }
        self.send_reset(tf.dst_ip, tf.src_ip, &seg);
    }

    /// Segment `seg` for connection `cid`.
    pub(super) fn conn_input(&mut self, cid: u32, seg: &TcpRepr<'_>, now: u64) {
        let c = self.conns[cid as usize]
            .as_mut()
            .expect("demux points at a live conn");
        let ev = c.tcb.input(seg, now);
        // An ACK that must go now (out-of-order data: a duplicate ACK with SACK blocks;
        // every second full segment; a window update) goes per segment, as RFC 9293
        // §3.10.7.4 and RFC 5681 §4.2 ask, not once per burst: a sender counts duplicate
        // ACKs to detect loss.
        let due_now = c.tcb.poll_at() == Some(0);
        self.after_input(cid, ev);
        if due_now {
            if self.link.tx_space() >= super::FLUSH_ROOM {
                self.transmit(cid, now);
            } else {
                // The link is full: the ACK waits its turn with the other dirty
                // connections rather than being lost (see `flush`).
                self.mark_dirty(cid);
            }
        }
    }

    /// A frame that is not an IPv4/TCP segment (`parse_tcp` said why: `e`): a host ↔ NIC
    /// control message goes to [`Self::control_input`]; anything else is counted.
    ///
    /// A control message shorter than an IPv4 header reads as `Malformed` to `parse_tcp`, so
    /// the EtherType is looked at whatever `e` is.
    fn input_not_tcp(&mut self, f: &[u8], e: FrameError, now: u64) {
        match msg::classify(f) {
            FrameKind::Control(ty) => self.control_input(ty, f, now),
            FrameKind::BadControl(_) => self.stats.malformed += 1,
            FrameKind::Ipv4 | FrameKind::Arp | FrameKind::Unknown(_) | FrameKind::Runt => match e {
                FrameError::NotIpv4 | FrameError::NotTcp => self.stats.not_tcp += 1,
                FrameError::Malformed | FrameError::Fragment => self.stats.malformed += 1,
            },
        }
    }

    /// A host ↔ NIC control message of type `ty` (its common header checked by
    /// [`msg::classify`]), dispatched by type: Tonic's delivery notifications and the install
    /// acks of its flow adds go to the Tonic code (Tonic §5); setup notifications and the
    /// acks of listen registrations (AccelTCP §4.1) to the setup code; teardown counts
    /// (AccelTCP §4.2) to the teardown code; every other type is counted in
    /// `control_unhandled`: the NIC → host messages of offloads the host does not drive yet
    /// (splice closure reports, §4.3; acks of other requests) and the host → NIC types, which
    /// a NIC never sends.
    fn control_input(&mut self, ty: MsgType, f: &[u8], now: u64) {
        match ty {
            MsgType::TonicDelivered | MsgType::InstallAck => {
                let Ok(p) = msg::parse_frame(f) else {
                    self.stats.malformed += 1;
                    return;
                };
                match p.message {
                    Message::TonicDelivered(d) => self.tonic_delivered(d),
                    Message::InstallAck(a) if a.request_type == MsgType::TonicFlowAdd => {
                        self.tonic_install_ack(a)
                    }
                    Message::InstallAck(a)
                        if matches!(a.request_type, MsgType::ListenAdd | MsgType::ListenRemove) =>
                    {
                        self.setup_install_ack(a)
                    }
                    Message::InstallAck(a) if a.request_type == MsgType::SpliceInstall => {
                        self.splice_install_ack(a)
                    }
                    _ => self.stats.control_unhandled += 1,
                }
            }
            MsgType::Setup => self.setup_input(f, now),
            MsgType::TeardownCount => match msg::parse_frame(f) {
                Ok(msg::ParsedFrame {
                    message: Message::TeardownCount(r),
                    ..
                }) => self.teardown_count(r),
                _ => self.stats.malformed += 1,
            },
            MsgType::SpliceClose => match msg::parse_frame(f) {
                Ok(msg::ParsedFrame {
                    message: Message::SpliceClose(r),
                    ..
                }) => self.splice_closed(r),
                _ => self.stats.malformed += 1,
            },
            MsgType::Teardown
            | MsgType::SpliceInstall
            | MsgType::ListenAdd
            | MsgType::ListenRemove
            | MsgType::TonicFlowAdd
            | MsgType::TonicFlowRemove
            | MsgType::TonicTail => self.stats.control_unhandled += 1,
        }
    }

    fn send_reset(&mut self, local_ip: [u8; 4], remote_ip: [u8; 4], seg: &TcpRepr<'_>) {
        let Some(h) = reset_for(seg) else {
            return;
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        frame::build_tcp(
            &mut self.scratch,
            local_ip,
            remote_ip,
            self.ip_id,
            &h,
            [&[], &[]],
        );
        if self.link.send(self.cfg.port, &self.scratch) {
            self.stats.frames_out += 1;
            self.stats.rst_sent += 1;
        } else {
            self.stats.link_full += 1;
        }
    }

    fn listener_input(&mut self, lfd: super::Fd, remote_ip: [u8; 4], seg: &TcpRepr<'_>, now: u64) {
        let f = seg.flags;
        if f.has(TcpFlags::RST) {
            // RFC 9293 §3.10.7.2: a RST to a listener is ignored; one with SYN set is
            // also a combination no stack sends.
            if f.has(TcpFlags::SYN) {
                self.stats.bad_flags += 1;
            }
            return;
        }
        if f.has(TcpFlags::ACK) || !f.has(TcpFlags::SYN) {
            if f.has(TcpFlags::ACK)
                && !f.has(TcpFlags::SYN)
                && self.cookie_ack(lfd, remote_ip, seg, now)
            {
                return;
            }
            self.stats.listener_non_syn += 1;
            if f.has(TcpFlags::ACK) {
                self.send_reset(self.cfg.ip, remote_ip, seg);
            }
            return;
        }
        if f.has(TcpFlags::FIN) {
            // SYN+FIN: dropped, as Linux's tcp_rcv_state_process drops it in LISTEN.
            self.stats.bad_flags += 1;
            return;
        }
        let (accept_full, syn_queue_full, opts, tonic, even) = {
            let Ok(s) = self.sock(lfd) else { return };
            let SockState::Listening(l) = &s.state else {
                return;
            };
            (
                l.accept_queue.len() >= l.backlog,
                l.half_open >= self.cfg.max_syn_backlog,
                self.tcp_config_for(&s.opts),
                s.opts.tonic,
                s.opts.setup_offload,
            )
        };
        if accept_full || self.at_conn_limit() {
            self.stats.syn_dropped += 1;
            return;
        }
        if syn_queue_full {
            // RFC 4987 §3.6: no state for this SYN; the cookie brings it back with the ACK.
            if self.cfg.syn_cookies {
                self.cookie_syn_ack(lfd, remote_ip, seg, now);
            } else {
                self.stats.syn_dropped += 1;
            }
            return;
        }
        let ep = Endpoints {
            local_ip: self.cfg.ip,
            local_port: seg.dst_port,
            remote_ip,
            remote_port: seg.src_port,
        };
        let iss = self
            .isn
            .isn((ep.local_ip, ep.local_port), (remote_ip, seg.src_port), now);
        let mut tcb = Tcb::accept(&opts, ep, seg, iss, now);
        if even {
            tcb.use_even_tsvals();
        }
        if tonic.is_some() {
            tcb.prepare_tonic_sender();
        }
        let cid = self.alloc_conn(tcb);
        {
            let c = self.conns[cid as usize].as_mut().expect("just allocated");
            c.listener = Some(lfd);
            c.half_open = true;
            c.owner = tonic.map_or(super::Owner::Host, super::Owner::tonic);
        }
        if let Ok(s) = self.sock_mut(lfd) {
            if let SockState::Listening(l) = &mut s.state {
                l.half_open += 1;
            }
        }
        self.demux
            .insert(key(remote_ip, seg.src_port, self.cfg.ip, seg.dst_port), cid);
        self.stats.passive_opens += 1;
        self.mark_dirty(cid);
    }

    /// Bookkeeping after a connection took a segment: accept queue, readiness events,
    /// half-open failures.
    pub(super) fn after_input(&mut self, cid: u32, ev: Events) {
        self.mark_dirty(cid);
        let (fd, listener, half_open, dead) = {
            let c = self.conns[cid as usize].as_ref().expect("live conn");
            let st = c.tcb.state();
            (
                c.fd,
                c.listener,
                c.half_open,
                st == crate::tcp::tcb::State::Closed,
            )
        };
        if let Some(lfd) = listener {
            if half_open && (ev.established || dead) {
                self.conns[cid as usize].as_mut().expect("live").half_open = false;
                let mut queued = false;
                if let Ok(s) = self.sock_mut(lfd) {
                    if let SockState::Listening(l) = &mut s.state {
                        l.half_open -= 1;
                        if ev.established && !dead {
                            l.accept_queue.push_back(cid);
                            queued = true;
                        }
                    }
                }
                if queued {
                    self.notify(lfd);
                } else {
                    // A half-open connection that failed: forget it once it is done.
                    self.conns[cid as usize].as_mut().expect("live").listener = None;
                }
            }
            return;
        }
        if let Some(fd) = fd {
            if ev.readable || ev.writable || ev.established || ev.error {
                self.notify(fd);
            }
        }
    }
}

//! The splice offload's hooks on the lcore's chain (AccelTCP §4.3): the burst fast path,
//! segments of spliced pairs from the wire and from the host, installs, and the periodic
//! closure work.

use super::*;

impl<B: PacketBuf> Offload<B> for SpliceOffload {
    fn name(&self) -> &'static str {
        "splice"
    }

    /// Active while any lcore's pair is installed, or this lcore owns pairs or has reports
    /// to send.
    #[inline]
    fn active(&self) -> bool {
        !self.table.is_empty() || self.owned > 0 || !self.pending.is_empty()
    }

    fn has_wire_burst(&self) -> bool {
        true
    }

    /// The fast path (AccelTCP §4.3): every frame of the burst that [`Self::wire_fast`]
    /// recognises as a spliced pair's segment is translated and sent on (or dropped and
    /// counted); the pairs' segment counts are then added once per burst.
    #[inline]
    fn wire_burst(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        _port: usize,
        frames: &mut [B],
        verdicts: &mut BurstVerdicts<'_>,
    ) {
        if self.table.is_empty() {
            return;
        }
        self.now = cx.now;
        self.sync_cache();
        // The key and cache slot of the previous lookup; to start, any key with its own
        // slot (a segment of that key then finds its slot without the hash).
        let none = Key::new([0; 4], 0, [0; 4], 0);
        let mut last = (none, Cache::slot(&none));
        verdicts.decide_open(frames, |_, buf| {
            self.wire_fast(cx, buf.data_mut(), &mut last)
        });
        self.flush_counts();
    }

    /// Segments of a spliced pair are translated and leave by the other side's port; a
    /// segment that does not translate is dropped and counted.
    #[inline]
    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let Some(t) = rx.tcp() else {
            return Verdict::Pass;
        };
        let Some(p) = t.seg.get(0..4) else {
            return Verdict::Pass;
        };
        let k = Key::new(
            t.src,
            u16::from_be_bytes([p[0], p[1]]),
            t.dst,
            u16::from_be_bytes([p[2], p[3]]),
        );
        let l4_off = t.l4_off;
        match self.offer(cx, k, rx.buf.data_mut(), l4_off, false, false) {
            None => Verdict::Pass,
            Some(Outcome::Out { port, .. }) => Verdict::Out(port),
            Some(Outcome::Malformed | Outcome::ArpMiss | Outcome::SynHeld) => Verdict::Consumed,
        }
    }

    /// Splice installs (0x090C), answered with an install ack tagged with the install's
    /// port (as the closure report will be). The install's optional packet goes out only
    /// when the install succeeded; otherwise the host still owns both connections.
    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        if msg != MsgType::SpliceInstall {
            return Verdict::Pass;
        }
        let parsed = offload_api::msg::parse_frame(frame);
        let (r, payload) = match parsed {
            Ok(p) => match p.message {
                Message::SpliceInstall(r) => (r, p.payload),
                _ => return Verdict::Consumed,
            },
            Err(_) => {
                self.stats.refused_invalid += 1;
                // The request id, when the header is long enough to hold one.
                if let Some(b) = frame.get(ETH_HEADER_LEN + 4..ETH_HEADER_LEN + 8) {
                    let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                    self.ack(cx, port, id, AckStatus::Invalid);
                }
                return Verdict::Consumed;
            }
        };
        let status = match self.install(cx, port, r) {
            Ok(pair) => {
                self.stats.installs += 1;
                self.owned += 1;
                let at = cx.now.saturating_add(self.table.cfg.idle_timeout_ns);
                self.arm(at, pair);
                AckStatus::Ok
            }
            Err(s) => {
                match s {
                    AckStatus::TableFull => self.stats.refused_full += 1,
                    AckStatus::Exists => self.stats.refused_exists += 1,
                    _ => self.stats.refused_invalid += 1,
                }
                s
            }
        };
        self.ack(cx, port, r.request_id, status);
        if status == AckStatus::Ok && !payload.is_empty() {
            self.install_payload(cx, &r, payload);
        }
        Verdict::Consumed
    }

    /// Segments the host kept during the handover (a pair's arriving 4-tuple) are translated
    /// and leave by the other side's port; the lcore then fills their checksums (and
    /// segments them) as for any host frame.
    fn host_tcp(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        _port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        let Some(p) = frame.get(tcp.l4_off..tcp.l4_off + 4) else {
            return Verdict::Pass;
        };
        let k = Key::new(
            tcp.src,
            u16::from_be_bytes([p[0], p[1]]),
            tcp.dst,
            u16::from_be_bytes([p[2], p[3]]),
        );
        match self.offer(cx, k, frame, tcp.l4_off, true, false) {
            None => Verdict::Pass,
            Some(Outcome::Out { port, .. }) => Verdict::Out(port),
            Some(Outcome::Malformed | Outcome::ArpMiss | Outcome::SynHeld) => Verdict::Consumed,
        }
    }

    /// Closures other lcores saw, due linger ends and idle checks, then the reports.
    fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        let linger = self.table.cfg.linger_ns;
        let idle = self.table.cfg.idle_timeout_ns;
        while let Some(p) = self.inbox.pop() {
            if p.end_now.load(Ordering::Acquire) && !p.reported.load(Ordering::Acquire) {
                // A new connection's SYN reached the pair on another lcore.
                let reason = if p.rst.load(Ordering::Acquire) != 0 {
                    CloseReason::Rst
                } else {
                    CloseReason::Fin
                };
                self.close(&p, reason);
                continue;
            }
            let at = p.closed_at.load(Ordering::Acquire);
            self.arm(at.saturating_add(linger), p);
        }
        while self.timers.peek().is_some_and(|t| t.0.at <= cx.now) {
            let Some(Reverse(t)) = self.timers.pop() else {
                break;
            };
            let p = t.pair;
            if p.reported.load(Ordering::Acquire) {
                continue;
            }
            if p.closing.load(Ordering::Acquire) {
                let due = p.closed_at.load(Ordering::Acquire).saturating_add(linger);
                if due <= cx.now {
                    let reason = if p.rst.load(Ordering::Acquire) != 0 {
                        CloseReason::Rst
                    } else {
                        CloseReason::Fin
                    };
                    self.close(&p, reason);
                } else {
                    self.arm(due, p);
                }
            } else {
                let due = p.last_activity.load(Ordering::Relaxed).saturating_add(idle);
                if due <= cx.now {
                    self.close(&p, CloseReason::Timeout);
                } else {
                    self.arm(due, p);
                }
            }
        }
        self.flush_reports(cx);
    }

    /// The table's pair count: another lcore's install makes this one translate too.
    fn shared_activity(&self) -> Option<Arc<AtomicUsize>> {
        Some(self.table.len.clone())
    }

    /// Now while closures or reports wait; else the earliest timer.
    fn next_deadline(&self) -> Option<u64> {
        if !self.inbox.is_empty() || !self.pending.is_empty() {
            return Some(0);
        }
        self.timers.peek().map(|t| t.0.at)
    }

    fn counters(&self, out: CounterSink<'_>) {
        let s = &self.stats;
        let all = [
            ("active_pairs", self.table.len() as u64),
            ("installs", s.installs),
            ("refused_full", s.refused_full),
            ("refused_exists", s.refused_exists),
            ("refused_invalid", s.refused_invalid),
            ("translated_ab", s.translated_ab),
            ("translated_ba", s.translated_ba),
            ("from_host", s.from_host),
            ("closed_fin", s.closed_fin),
            ("closed_rst", s.closed_rst),
            ("closed_idle", s.closed_idle),
            ("malformed", s.malformed),
            ("arp_miss", s.arp_miss),
            ("ts_stripped", s.ts_stripped),
            ("ts_missing", s.ts_missing),
            ("sack_stripped", s.sack_stripped),
            ("reopened", s.reopened),
            ("reopen_syn_dropped", s.reopen_syn_dropped),
            ("reports_sent", s.reports_sent),
            ("send_failed", s.send_failed),
            ("table_lookups", s.table_lookups),
        ];
        for (n, v) in all {
            out(n, v);
        }
    }
}

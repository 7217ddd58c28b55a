//! One exchange each way between nicemu and a kernel peer: the pump that drives nicemu's side, what each side reports, and the checks after it.

use super::*;

/// Both directions' progress at the nicemu end.
pub(crate) struct Progress {
    /// Bytes to send and to receive.
    pub(crate) tx_total: u64,
    pub(crate) rx_total: u64,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) eof: bool,
}

impl Progress {
    pub(crate) fn new(tx_total: u64, rx_total: u64) -> Progress {
        Progress {
            tx_total,
            rx_total,
            sent: 0,
            received: 0,
            eof: false,
        }
    }

    pub(crate) fn streams_done(&self) -> bool {
        self.sent == self.tx_total && self.received == self.rx_total
    }
}

/// Writes what fits of the `tx` stream, reads and checks what arrived of the `rx` stream.
/// Returns the bytes moved.
pub(crate) fn pump(
    ctx: &mut Context<HostEnd>,
    fd: Fd,
    tx: &Pattern,
    rx: &Pattern,
    st: &mut Progress,
    buf: &mut [u8],
) -> usize {
    let mut moved = 0;
    while st.sent < st.tx_total {
        let space = ctx.tcb(fd).map_or(0, |t| t.send_space());
        let n = ((st.tx_total - st.sent) as usize).min(buf.len()).min(space);
        if n == 0 {
            break;
        }
        tx.fill(st.sent, &mut buf[..n]);
        match ctx.write(fd, &buf[..n]) {
            Ok(k) => {
                st.sent += k as u64;
                moved += k;
                if k < n {
                    break;
                }
            }
            Err(Errno::Again) => break,
            Err(e) => panic!("write after {} bytes: {e}", st.sent),
        }
    }
    while !st.eof {
        match ctx.read(fd, buf) {
            Ok(0) => st.eof = true,
            Ok(k) => {
                assert!(
                    st.received + k as u64 <= st.rx_total,
                    "more than {} bytes arrived",
                    st.rx_total
                );
                if let Some(at) = rx.first_mismatch(st.received, &buf[..k]) {
                    panic!("received stream differs at byte {at}");
                }
                st.received += k as u64;
                moved += k;
            }
            Err(Errno::Again) => break,
            Err(e) => panic!("read after {} bytes: {e}", st.received),
        }
    }
    moved
}

/// Kernel counters reported with each exchange (deltas).
pub(crate) const KERNEL_REPORTED: [&str; 7] = [
    "Tcp.RetransSegs",
    "TcpExt.TCPTimeouts",
    "TcpExt.TCPLossProbes",
    "TcpExt.TCPSackRecovery",
    "TcpExt.TCPFastRetrans",
    "TcpExt.TCPSACKReorder",
    "TcpExt.TCPDSACKRecv",
];

pub(crate) struct Outcome {
    pub(crate) label: String,
    pub(crate) sizes: Sizes,
    /// Connection established to both ends closed.
    pub(crate) secs: f64,
    /// Connection established to the last byte of both streams received.
    pub(crate) data_secs: f64,
    /// The nicemu connection's counters when the streams were done.
    pub(crate) nicemu: TcbStats,
    /// Deltas of [`KERNEL_REPORTED`].
    pub(crate) kernel: Vec<(String, i64)>,
    pub(crate) frames: Frames,
}

impl Outcome {
    pub(crate) fn report(&self) -> String {
        let (up, down) = (self.sizes.up as f64 / 1e6, self.sizes.down as f64 / 1e6);
        let n = &self.nicemu;
        let kernel: Vec<String> = self
            .kernel
            .iter()
            .map(|(k, v)| format!("{}={v}", k.split('.').nth(1).unwrap_or(k)))
            .collect();
        let pct = |(sent, lost): (u64, u64)| {
            format!(
                "{sent} frames, {lost} dropped ({:.2}%)",
                100.0 * lost as f64 / sent.max(1) as f64
            )
        };
        format!(
            "{}:\n  {up:.1} MB up, {down:.1} MB down: data in {:.2} s ({:.1} MB/s up, {:.1} MB/s down), closed after {:.2} s\n  kernel -> nicemu {}; nicemu -> kernel {}\n  nicemu: retransmits={} fast={} sack={} rto={} dup_acks={} recoveries={} ooo_segments={}\n  kernel: {}",
            self.label,
            self.data_secs,
            up / self.data_secs,
            down / self.data_secs,
            self.secs,
            pct(self.frames.to_nicemu),
            pct(self.frames.to_kernel),
            n.retransmits,
            n.fast_retransmits,
            n.sack_retransmits,
            n.rto_expiries,
            n.dup_acks,
            n.recoveries,
            n.ooo_segments,
            kernel.join(" ")
        )
    }
}

pub(crate) fn peer_args(role: &str, port: u16, tx: (u64, u64), rx: (u64, u64)) -> Vec<String> {
    let host = if role == "client" {
        "192.0.2.1"
    } else {
        "192.0.2.2"
    };
    vec![
        "python3".into(),
        "-c".into(),
        format!("{PYTHON_TABLE}{PEER}"),
        role.into(),
        host.into(),
        port.to_string(),
        tx.0.to_string(),
        rx.0.to_string(),
        format!("{:#x}", tx.1),
        format!("{:#x}", rx.1),
    ]
}

pub(crate) fn spawn_peer(net: &Netns, args: &[String]) -> Proc {
    Proc::spawn(net, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Fails the test with the child's output when it has exited unsuccessfully.
pub(crate) fn check_peer_alive(py: &mut Proc, label: &str) {
    if let Some(s) = py.exited() {
        assert!(s.success(), "{label}: python failed: {}", py.describe());
    }
}

pub(crate) fn check_peer_done(py: &mut Proc, label: &str) {
    let st = py.exited().expect("exited");
    assert!(
        st.success() && py.has_line("done"),
        "{label}: python failed: {}",
        py.describe()
    );
}

pub(crate) fn assert_host_clean(before: &HostStats, after: &HostStats, label: &str) {
    assert_eq!(
        after.rst_sent - before.rst_sent,
        0,
        "{label}: nicemu sent RSTs: {after:?}"
    );
    assert_eq!(
        after.malformed - before.malformed,
        0,
        "{label}: malformed frames: {after:?}"
    );
    assert_eq!(
        after.listener_non_syn - before.listener_non_syn,
        0,
        "{label}: stray segments to the listener: {after:?}"
    );
}

/// What is compared before and after an exchange.
pub(crate) struct Before {
    pub(crate) label: String,
    pub(crate) sizes: Sizes,
    pub(crate) kernel: HashMap<String, i64>,
    pub(crate) host: HostStats,
    pub(crate) frames: Frames,
}

impl Before {
    pub(crate) fn take(
        node: &mut Node,
        net: &Netns,
        loss: &Loss,
        label: &str,
        sizes: Sizes,
    ) -> Before {
        Before {
            label: label.into(),
            sizes,
            kernel: kernel_counters(node, net),
            host: *node.ctx.stats(),
            frames: loss.frames(node, net),
        }
    }

    /// The kernel has no RST, abort or checksum error to show, nicemu sent no RST, and each
    /// impairment dropped frames at about its rate. Returns the outcome.
    pub(crate) fn check(
        self,
        node: &mut Node,
        net: &Netns,
        loss: &Loss,
        times: (f64, f64),
        nicemu: TcbStats,
    ) -> Outcome {
        let label = self.label.as_str();
        let kernel = kernel_counters(node, net);
        let frames = loss.frames(node, net).since(self.frames);
        assert_no_resets(&self.kernel, &kernel, label);
        assert_host_clean(&self.host, node.ctx.stats(), label);
        for (on, (sent, lost), dir) in [
            (loss.egress.is_some(), frames.to_nicemu, "kernel -> nicemu"),
            (loss.ingress, frames.to_kernel, "nicemu -> kernel"),
        ] {
            // Binomial: 5% of `sent`, within five standard deviations.
            let (mean, sd) = (0.05 * sent as f64, (0.05 * 0.95 * sent as f64).sqrt());
            let ok = if on {
                (lost as f64 - mean).abs() <= 5.0 * sd + 2.0
            } else {
                lost == 0
            };
            assert!(ok, "{label}: {dir}: {lost} of {sent} frames dropped");
        }
        Outcome {
            label: self.label.clone(),
            sizes: self.sizes,
            data_secs: times.0,
            secs: times.1,
            nicemu,
            kernel: KERNEL_REPORTED
                .iter()
                .map(|n| (n.to_string(), delta(&self.kernel, &kernel, n)))
                .collect(),
            frames,
        }
    }
}

/// A kernel client to the nicemu server listening on `listener`: `sizes.up` bytes to the
/// server, `sizes.down` back; the client closes first.
pub(crate) fn kernel_client(
    node: &mut Node,
    net: &Netns,
    listener: Fd,
    label: &str,
    loss: &Loss,
    sizes: Sizes,
) -> Outcome {
    let (up, down) = (Pattern::new(SEED_UP), Pattern::new(SEED_DOWN));
    let before = Before::take(node, net, loss, label, sizes);
    let conns_before = node.ctx.connections();
    let args = peer_args(
        "client",
        NICEMU_PORT,
        (sizes.up, SEED_UP),
        (sizes.down, SEED_DOWN),
    );
    let mut py = spawn_peer(net, &args);
    let deadline = Instant::now() + EXCHANGE_LIMIT;
    let mut conn: Option<(Fd, u16, Instant)> = None;
    let mut st = Progress::new(sizes.down, sizes.up);
    let mut data_secs = None;
    let mut nicemu = TcbStats::default();
    let mut closed = false;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        assert!(
            Instant::now() < deadline,
            "{label}: not done in {EXCHANGE_LIMIT:?}: sent {} received {} eof {} closed {closed}\n{}",
            st.sent,
            st.received,
            st.eof,
            py.describe()
        );
        check_peer_alive(&mut py, label);
        let mut work = 0;
        if conn.is_none() {
            match node.ctx.accept(listener) {
                Ok((fd, peer)) => {
                    assert_eq!(peer.ip().octets(), KERNEL_IP);
                    node.ctx.set_nonblocking(fd, true).unwrap();
                    conn = Some((fd, peer.port(), Instant::now()));
                    work += 1;
                }
                Err(Errno::Again) => {}
                Err(e) => panic!("{label}: accept: {e}"),
            }
        }
        if let (Some((fd, _, t)), false) = (conn, closed) {
            work += pump(&mut node.ctx, fd, &down, &up, &mut st, &mut buf);
            let tcb = node.ctx.tcb(fd).expect("tcb");
            if data_secs.is_none() && st.streams_done() && tcb.send_queued() == 0 {
                data_secs = Some(t.elapsed().as_secs_f64());
                nicemu = *tcb.stats();
            }
            if st.eof {
                assert_eq!(st.received, st.rx_total, "{label}: stream ended early");
            }
            if st.eof && st.sent == st.tx_total {
                // The client closed first: we are in CLOSE-WAIT without an error.
                assert_eq!(tcb.state(), State::CloseWait, "{label}");
                if data_secs.is_none() {
                    data_secs = Some(t.elapsed().as_secs_f64());
                    nicemu = *tcb.stats();
                }
                assert_eq!(
                    node.ctx.getsockopt(fd, SockOptName::Error),
                    Ok(SockOpt::Error(None)),
                    "{label}"
                );
                node.ctx.close(fd).unwrap();
                closed = true;
            }
        }
        // Done when our close has completed (LAST-ACK acknowledged, the connection freed)
        // and python has seen our FIN and exited.
        if closed && node.ctx.connections() == conns_before && py.exited().is_some() {
            break;
        }
        node.step(work);
    }
    let (_, kport, t) = conn.expect("connected");
    let secs = t.elapsed().as_secs_f64();
    check_peer_done(&mut py, label);
    settle_kernel(node, net, kport, NICEMU_PORT, true);
    let times = (data_secs.expect("data done"), secs);
    before.check(node, net, loss, times, nicemu)
}

/// A nicemu client to a kernel server: `sizes.up` bytes to the server, `sizes.down` back;
/// the nicemu client closes first.
pub(crate) fn kernel_server(
    node: &mut Node,
    net: &Netns,
    label: &str,
    loss: &Loss,
    sizes: Sizes,
) -> Outcome {
    let (up, down) = (Pattern::new(SEED_UP), Pattern::new(SEED_DOWN));
    let before = Before::take(node, net, loss, label, sizes);
    let args = peer_args(
        "server",
        KERNEL_PORT,
        (sizes.down, SEED_DOWN),
        (sizes.up, SEED_UP),
    );
    let mut py = spawn_peer(net, &args);
    let deadline = Instant::now() + EXCHANGE_LIMIT;
    // Connect only once the server listens: a SYN before would draw a RST.
    while !py.has_line("listening") {
        assert!(
            Instant::now() < deadline,
            "{label}: python server did not start: {}",
            py.describe()
        );
        assert!(
            py.exited().is_none(),
            "{label}: python server exited: {}",
            py.describe()
        );
        node.step(0);
    }
    let fd = node.ctx.socket().unwrap();
    node.ctx.set_nonblocking(fd, true).unwrap();
    assert_eq!(
        node.ctx
            .connect(fd, SocketAddrV4::new(KERNEL_IP.into(), KERNEL_PORT)),
        Err(Errno::InProgress)
    );
    let nport = node.ctx.getsockname(fd).unwrap().port();
    let mut established: Option<Instant> = None;
    let mut st = Progress::new(sizes.up, sizes.down);
    let mut data_secs = None;
    let mut nicemu = TcbStats::default();
    let mut shut = false;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let tcb = node.ctx.tcb(fd).expect("tcb");
        let state = tcb.state();
        assert!(
            Instant::now() < deadline,
            "{label}: not done in {EXCHANGE_LIMIT:?}: state {state:?} sent {} received {} eof {}\n{}",
            st.sent,
            st.received,
            st.eof,
            py.describe()
        );
        assert_eq!(tcb.error(), None, "{label}: connection failed");
        check_peer_alive(&mut py, label);
        let mut work = 0;
        if state != State::SynSent {
            let t = *established.get_or_insert_with(Instant::now);
            work += pump(&mut node.ctx, fd, &up, &down, &mut st, &mut buf);
            if st.eof {
                assert_eq!(st.received, st.rx_total, "{label}: stream ended early");
            }
            let tcb = node.ctx.tcb(fd).expect("tcb");
            if !shut && st.streams_done() && tcb.send_queued() == 0 {
                data_secs = Some(t.elapsed().as_secs_f64());
                nicemu = *tcb.stats();
                // We close first, once the server has everything (so that the time above is
                // the data's): FIN; the server answers with its own.
                node.ctx.shutdown(fd, Shutdown::Write).unwrap();
                shut = true;
            }
        }
        let state = node.ctx.tcb(fd).expect("tcb").state();
        if shut && st.eof && state == State::TimeWait && py.exited().is_some() {
            break;
        }
        node.step(work);
    }
    let secs = established.expect("established").elapsed().as_secs_f64();
    assert_eq!(
        node.ctx.getsockopt(fd, SockOptName::Error),
        Ok(SockOpt::Error(None)),
        "{label}"
    );
    // The connection stays in TIME-WAIT (as an orphan) after the descriptor goes.
    node.ctx.close(fd).unwrap();
    check_peer_done(&mut py, label);
    settle_kernel(node, net, KERNEL_PORT, nport, false);
    let times = (data_secs.expect("data done"), secs);
    before.check(node, net, loss, times, nicemu)
}

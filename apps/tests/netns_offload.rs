//! AccelTCP's connection setup and teardown offloads (§4.1 SYN cookies on the NIC, §4.2
//! teardown on the NIC) against the Linux kernel's TCP, an unmodified peer: the NIC runs on
//! DPDK's net_af_packet over a veth pair whose other end sits in a network namespace this test
//! creates; python3 clients (and hping3) run in that namespace.
//!
//! The nicemu server is an echo server: each accepted connection reads one 64-byte request,
//! writes it back and closes (the server closes first). The listener has `TCP_SETUP_OFFLOAD`
//! and `TCP_TEARDOWN_OFFLOAD` (accepted sockets inherit them) unless said otherwise.
//!
//! 1. [`kernel_clients_with_both_offloads`]: 10,000 short kernel connections (a few in
//!    parallel), one request each whose content differs per connection, every echoed byte
//!    checked by python. The nicemu host stack never handles a SYN (every connection it holds
//!    came from a 0x090A setup notification: `nic_setups == passive_opens == N`, §4.1) nor a
//!    FIN (every close went to the NIC: `teardown.offloaded == N`, §4.2), no segment reaches
//!    its listener and it sends no RST; every connection enters TIME_WAIT on the NIC and
//!    leaves it when its time (shortened to 5 s) is over or when the kernel reuses the
//!    4-tuple for a new SYN (RFC 6191), and the NIC's teardown engine holds nothing at the end. The kernel ends with no socket of the test's port in a
//!    state other than TIME-WAIT (it closes second, so its sockets simply go), and its RST,
//!    reset and abort counters do not move.
//! 2. [`kernel_clients_with_both_offloads_and_loss`]: the same with 10% random loss of what
//!    the kernel sends (a cBPF `ld rand` clsact egress filter and a mirred redirect to a
//!    dead-end veth: this kernel has no netem), 10,000 connections from 128 python threads (a
//!    lost SYN costs its thread a 1 s retransmission timeout). Lost SYNs, final ACKs, requests and
//!    FINs are all repaired by retransmission: every echo arrives, the kernel's SYN
//!    retransmissions carry timestamps (Linux always sends them, so the NIC answers them and
//!    the host still sees no SYN), no RST, nothing left on either side.
//! 3. [`syn_flood_with_the_setup_offload`]: `hping3 -S --flood --rand-source --tcp-timestamp`
//!    against the listener for a few seconds while a python client keeps connecting. The
//!    NIC answers the flood with cookie SYN-ACKs and keeps no state (AccelTCP §4.1; RFC 4987
//!    §3.6): legitimate connections complete during the flood, the host stack never sees a
//!    flood SYN (`passive_opens` equals the legitimate count, its `frames_in` grows by a few
//!    per legitimate connection, not by the flood), while the NIC's `cookies_sent` counts the
//!    flood's SYNs. (hping3 needs `--tcp-timestamp`: a SYN without the timestamp option goes
//!    to the host by design, §3, so a plain `hping3 -S` flood would reach the host stack.)
//! 4. [`syn_flood_without_the_setup_offload`]: the same flood against a listener without the
//!    setup offload, with a host SYN queue of 256 (`max_syn_backlog`) and host SYN cookies on
//!    (RFC 4987 §3.6): the legitimate clients still connect through the host's own cookies
//!    (`cookies_sent > 0`, `cookies_validated` counts them) and the host's connection count
//!    stays bounded (at most the backlog plus the legitimate connections) however many SYNs
//!    arrive: memory stays flat.
//!
//! Each test prints what it measured (`--nocapture`): connections per second, loss and
//! retransmissions, flood SYNs per second sent and received, cookies. The NIC lcore and the
//! host context run in one loop on this thread; python and hping3 run as child processes.
//! Every wait is bounded; children are killed and the namespace, the veths and DPDK's runtime
//! directory are removed also when the test fails. Needs root, iproute2 (`ip`, `tc`, `ss`),
//! ethtool, python3 and hping3 (`ci/install-deps.sh`).
#![cfg(feature = "dpdk")]

mod common;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use dataplane::netns::AfPacketNic;
use dataplane::offload::setup::{SetupOffload, SetupStats};
use dataplane::offload::teardown::{TeardownConfig, TeardownOffload};
use dataplane::offload::OffloadChain;
use dataplane::tonic::nic::TonicNic;
use hoststack::stack::SockOpt;
use hoststack::{Context, Errno, Fd, HostConfig};
use offload_api::link::HostEnd;

use common::kstats::{self, assert_no_resets, delta};
use common::netns::Netns;
use common::node::Node;
use common::proc::Proc;

const NIC_IP: [u8; 4] = [192, 0, 2, 1];
const KERNEL_IP: [u8; 4] = [192, 0, 2, 2];
/// The echo server's port.
const PORT: u16 = 5007;
/// Bytes of one request (and of its echo).
const REQUEST: usize = 64;
const MS: u64 = 1_000_000;
/// TIME_WAIT of the NIC's teardown engine in these tests (60 s by default). FIN_WAIT_2 keeps
/// its own 60 s bound (`TeardownConfig::fin_wait2_ns`, Linux's `tcp_fin_timeout`): when it
/// was tied to TIME_WAIT, a 1 s TIME_WAIT freed flows whose kernel FIN came late (under the
/// SYN flood, python, hping3 and the polling loop share 2 cores; with loss, a lost FIN comes
/// back seconds later), and that FIN reached the host's listener and drew a RST.
const TIME_WAIT_NS: u64 = 5_000 * MS;
/// TIME_WAIT with loss: a kernel whose FIN is lost several times in a row retransmits it
/// seconds later (RTO backoff from 200 ms).
const LOSSY_TIME_WAIT_NS: u64 = 10_000 * MS;
/// Longest a helper command (`ss`, `cat`, `tc`) may run.
const COMMAND_LIMIT: Duration = Duration::from_secs(10);
/// Longest the NIC's teardowns and the kernel's sockets may take to go after the clients.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);
/// Connections of test 1, and python threads making them.
const CONNS: usize = 10_000;
const PARALLEL: usize = 4;
/// Connections of test 2 (with loss), and python threads.
const LOSSY_CONNS: usize = 10_000;
const LOSSY_PARALLEL: usize = 128;
/// Longest the clients of test 1 and 2 may take.
const CLIENTS_LIMIT: Duration = Duration::from_secs(150);
/// How long hping3 floods.
const FLOOD: Duration = Duration::from_secs(6);
/// The host's SYN queue in the flood without the setup offload.
const SMALL_BACKLOG: usize = 256;

/// The kernel side: `python3 -c CLIENT host port n parallel secs`. `parallel` threads make
/// connections one after another, `n` of them in all, or (when `secs` > 0) as many as they
/// start within `secs` seconds (at most `n`). Connection `i` sends a 64-byte request derived
/// from `i` (SHA-256 of `i`, then of that), reads until the server's FIN, checks every byte
/// of the echo and closes. Prints `done OK SECS` when every connection succeeded, else the
/// first errors and exits 2.
const CLIENT: &str = r#"
import hashlib, socket, sys, threading, time
host, port, n, par, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
lock = threading.Lock()
st = {"next": 0, "ok": 0}
errors = []
t0 = time.monotonic()

def request(i):
    h = hashlib.sha256(i.to_bytes(8, "big")).digest()
    return h + hashlib.sha256(h).digest()

def take():
    with lock:
        if errors or st["next"] >= n or (secs > 0 and time.monotonic() - t0 >= secs):
            return None
        st["next"] += 1
        return st["next"] - 1

def worker():
    while True:
        i = take()
        if i is None:
            return
        r = request(i)
        try:
            s = socket.create_connection((host, port), timeout=30)
            s.sendall(r)
            got = b""
            while True:
                k = s.recv(256)
                if not k:
                    break
                got += k
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            s.close()
            if got != r:
                raise Exception("echo differs: sent %s got %s" % (r.hex(), got.hex()))
            if err:
                raise Exception("so_error %d" % err)
        except Exception as e:
            with lock:
                errors.append("connection %d: %r" % (i, e))
            return
        with lock:
            st["ok"] += 1

ts = [threading.Thread(target=worker, daemon=True) for _ in range(par)]
for t in ts:
    t.start()
for t in ts:
    t.join()
el = time.monotonic() - t0
if errors:
    print("ok", st["ok"], "errors", len(errors), flush=True)
    for e in errors[:10]:
        print("error", e, flush=True)
    sys.exit(2)
print("done", st["ok"], "%.3f" % el, flush=True)
"#;

// ---------------------------------------------------------------------------------------
// Child processes.

// ---------------------------------------------------------------------------------------
// The nicemu node (`common::node`): its offloads, helper commands while it keeps polling.

impl Node {
    /// The NIC's chain with a short TIME_WAIT: teardown, Tonic and the SYN-cookie responder
    /// (the default chain's order).
    fn install_offloads(&mut self, time_wait_ns: u64) {
        let cfg = TeardownConfig {
            time_wait_ns,
            ..TeardownConfig::default()
        };
        self.nic.set_offloads(
            OffloadChain::new()
                .with(Box::new(
                    TeardownOffload::new(cfg).expect("teardown config"),
                ))
                .with(Box::new(TonicNic::default()))
                .with(Box::new(SetupOffload::default())),
        );
    }

    fn teardown(&self) -> &TeardownOffload {
        self.nic
            .offload()
            .expect("the NIC's chain has the teardown offload")
    }

    fn setup(&self) -> SetupStats {
        *self
            .nic
            .offload::<SetupOffload>()
            .expect("the NIC's chain has the setup offload")
            .stats()
    }

    /// Runs a helper command in the namespace while the node keeps polling: its stdout.
    fn ns_command(&mut self, net: &Netns, args: &[&str]) -> String {
        let mut p = Proc::spawn(net, args);
        let end = Instant::now() + COMMAND_LIMIT;
        loop {
            if let Some(st) = p.exited() {
                assert!(st.success(), "{args:?} failed: {}", p.describe());
                return p.stdout();
            }
            assert!(
                Instant::now() < end,
                "{args:?} did not finish: {}",
                p.describe()
            );
            self.step(0);
        }
    }
}

/// TCP counters of the namespace: `Tcp` of /proc/net/snmp and `TcpExt` of /proc/net/netstat,
/// as `Tcp.OutRsts`, `TcpExt.TCPAbortOnData`, ...
fn kernel_counters(node: &mut Node, net: &Netns) -> HashMap<String, i64> {
    kstats::parse(&node.ns_command(net, &["cat", "/proc/net/snmp", "/proc/net/netstat"]))
}

/// Waits until the kernel holds no socket of the test's port in a state other than LISTEN
/// and TIME-WAIT (closed sockets are gone from `ss`); returns the TIME-WAIT count.
fn settle_kernel(node: &mut Node, net: &Netns, label: &str) -> usize {
    let end = Instant::now() + SETTLE_LIMIT;
    let port = format!(":{PORT}");
    loop {
        let text = node.ns_command(net, &["ss", "-tan"]);
        let mut problems = Vec::new();
        let mut time_wait = 0;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 5 || !(f[3].ends_with(&port) || f[4].ends_with(&port)) {
                continue;
            }
            match f[0] {
                "LISTEN" => {}
                "TIME-WAIT" => time_wait += 1,
                _ => problems.push(line.to_string()),
            }
        }
        if problems.is_empty() {
            return time_wait;
        }
        assert!(
            Instant::now() < end,
            "{label}: kernel sockets not closed after {SETTLE_LIMIT:?}: {} of them, first {:?}",
            problems.len(),
            &problems[..problems.len().min(20)]
        );
        for _ in 0..1000 {
            node.step(0);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The echo server.

/// The nicemu echo server: a listener and the connections waiting for their request.
struct Echo {
    listener: Fd,
    conns: Vec<(Fd, Vec<u8>)>,
    accepted: u64,
    echoed: u64,
    /// Most connections the host held at once (`Context::connections`).
    max_live: usize,
}

impl Echo {
    fn new(ctx: &mut Context<HostEnd>, setup: bool, teardown: bool) -> Echo {
        let l = ctx.socket().unwrap();
        ctx.set_nonblocking(l, true).unwrap();
        if setup {
            ctx.setsockopt(l, SockOpt::SetupOffload(true)).unwrap();
        }
        if teardown {
            ctx.setsockopt(l, SockOpt::TeardownOffload(true)).unwrap();
        }
        ctx.bind(l, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT))
            .unwrap();
        ctx.listen(l, 128).unwrap();
        Echo {
            listener: l,
            conns: Vec::new(),
            accepted: 0,
            echoed: 0,
            max_live: 0,
        }
    }

    /// Accepts, reads requests, echoes complete ones and closes them; the work done.
    fn serve(&mut self, ctx: &mut Context<HostEnd>) -> usize {
        let mut work = 0;
        loop {
            match ctx.accept(self.listener) {
                Ok((fd, peer)) => {
                    assert_eq!(peer.ip().octets(), KERNEL_IP, "a connection from {peer}");
                    ctx.set_nonblocking(fd, true).unwrap();
                    self.conns.push((fd, Vec::with_capacity(REQUEST)));
                    self.accepted += 1;
                    work += 1;
                }
                Err(Errno::Again) => break,
                Err(e) => panic!("accept: {e}"),
            }
        }
        let mut buf = [0u8; 256];
        let mut echoed = 0;
        self.conns.retain_mut(|(fd, got)| {
            loop {
                match ctx.read(*fd, &mut buf) {
                    Ok(0) => panic!("connection closed after {} bytes of its request", got.len()),
                    Ok(k) => got.extend_from_slice(&buf[..k]),
                    Err(Errno::Again) => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
            assert!(got.len() <= REQUEST, "request of {} bytes", got.len());
            if got.len() < REQUEST {
                return true;
            }
            assert_eq!(ctx.write(*fd, got), Ok(REQUEST), "echo");
            ctx.close(*fd).unwrap();
            echoed += 1;
            false
        });
        self.echoed += echoed;
        self.max_live = self.max_live.max(ctx.connections());
        work + echoed as usize
    }
}

fn client_args(n: usize, parallel: usize, secs: f64) -> Vec<String> {
    vec![
        "python3".into(),
        "-c".into(),
        CLIENT.into(),
        "192.0.2.1".into(),
        PORT.to_string(),
        n.to_string(),
        parallel.to_string(),
        format!("{secs}"),
    ]
}

fn spawn(net: &Netns, args: &[String]) -> Proc {
    Proc::spawn(net, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The python client's `done OK SECS` line: connections made and seconds; fails the test
/// when it failed.
fn client_result(py: &mut Proc, label: &str) -> (u64, f64) {
    let st = py.exited().expect("exited");
    let line = py
        .out
        .iter()
        .find_map(|l| l.strip_prefix("done "))
        .map(str::to_string);
    let parsed = line.as_deref().and_then(|l| {
        let mut w = l.split_whitespace();
        Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
    });
    match (st.success(), parsed) {
        (true, Some(r)) => r,
        _ => panic!("{label}: python client failed: {}", py.describe()),
    }
}

/// Serves until the client `py` has exited (at most `limit`), then until the server holds no
/// connection.
fn serve_client(node: &mut Node, echo: &mut Echo, py: &mut Proc, limit: Duration, label: &str) {
    let end = Instant::now() + limit;
    loop {
        assert!(
            Instant::now() < end,
            "{label}: clients not done in {limit:?}: accepted {} echoed {}, host {:?}\n{}",
            echo.accepted,
            echo.echoed,
            node.ctx.stats(),
            py.describe()
        );
        if py.exited().is_some() && echo.conns.is_empty() {
            return;
        }
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
}

/// Polls until the NIC's teardown engine holds no connection (TIME_WAIT over); seconds.
fn drain_teardowns(node: &mut Node, label: &str) -> f64 {
    let t = Instant::now();
    while node.teardown().engine().in_progress() > 0 {
        assert!(
            t.elapsed() < SETTLE_LIMIT,
            "{label}: NIC teardowns still in progress: {} ({:?})",
            node.teardown().engine().in_progress(),
            node.teardown().engine().stats()
        );
        node.step(0);
    }
    t.elapsed().as_secs_f64()
}

/// Runs `f` on a node of a fresh namespace `tag` (one letter) and NIC, with the chain of
/// TIME_WAIT `time_wait_ns` and host configuration `host`.
fn with_node(tag: &str, host: HostConfig, time_wait_ns: u64, f: impl FnOnce(&mut Node, &Netns)) {
    let net = Netns::new(tag);
    net.configure("192.0.2.2/24");
    let prefix = format!("nicemu-test-offload-{tag}-{}", std::process::id());
    let afp = AfPacketNic::new(net.outer(), "192.0.2.1/24", &prefix);
    afp.with_topology("netns offload test", |mut topo| {
        let mut node = Node::new(&mut topo, host, 256);
        node.install_offloads(time_wait_ns);
        f(&mut node, &net);
        let r = node.nic.finish();
        println!(
            "NIC: rx {} tx {} to host {} (dropped {}) from host {} (dropped {}), stack drops {:?}",
            r.rx_packets(),
            r.tx_packets(),
            r.to_host,
            r.to_host_dropped,
            r.from_host,
            r.from_host_dropped,
            r.stack.drops
        );
        if let Ok(s) = topo.devs[0].stats() {
            println!(
                "af_packet: ipackets {} opackets {} imissed {} ierrors {} oerrors {}",
                s.ipackets, s.opackets, s.imissed, s.ierrors, s.oerrors
            );
        }
        drop(node);
        drop(topo);
    });
}

// ---------------------------------------------------------------------------------------
// Tests 1 and 2: short connections, both offloads.

/// 10% of frames: `ld rand; jge #T, nomatch; ret #-1` with T = 10% of 2^32.
const LOSS_BPF: &str = "4,32 0 0 4294963256,53 0 1 429496730,6 0 0 0,6 0 0 4294967295";

/// 10% loss of what the kernel sends (see `netns_tcp`'s `Egress::Filter`): the clsact egress
/// filter redirects the frames it matches to the dead-end veth.
fn add_egress_loss(node: &mut Node, net: &Netns) {
    let (inner, sink) = (net.inner(), net.sink());
    node.ns_command(
        net,
        &["ip", "link", "set", "dev", inner, "gso_max_segs", "1"],
    );
    node.ns_command(
        net,
        &[
            "tc", "filter", "add", "dev", inner, "egress", "bpf", "bytecode", LOSS_BPF, "action",
            "mirred", "egress", "redirect", "dev", sink,
        ],
    );
}

/// Frames the egress drop filter has taken (its action's count).
fn filter_hits(node: &mut Node, net: &Netns) -> u64 {
    let inner = net.inner();
    let text = node.ns_command(net, &["tc", "-s", "filter", "show", "dev", inner, "egress"]);
    text.split(" bytes ")
        .nth(1)
        .and_then(|t| t.split(" pkt").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {text:?}"))
}

fn tx_packets(node: &mut Node, net: &Netns) -> u64 {
    let path = format!("/sys/class/net/{}/statistics/tx_packets", net.inner());
    let text = node.ns_command(net, &["cat", &path]);
    text.trim().parse().expect("tx_packets")
}

/// `n` kernel connections through both offloads, `parallel` at a time, with or without 10%
/// loss of the kernel's frames; checks and prints everything test 1 and 2 promise.
fn short_connections(tag: &str, n: usize, parallel: usize, lossy: bool) {
    let label = if lossy {
        format!("{n} connections, 10% loss kernel -> nicemu")
    } else {
        format!("{n} connections")
    };
    let time_wait = if lossy {
        LOSSY_TIME_WAIT_NS
    } else {
        TIME_WAIT_NS
    };
    with_node(tag, HostConfig::new(NIC_IP, 0), time_wait, |node, net| {
        let mut echo = Echo::new(&mut node.ctx, true, true);
        if lossy {
            add_egress_loss(node, net);
        }
        let kernel_before = kernel_counters(node, net);
        let (tx_before, lost_before) = (
            tx_packets(node, net),
            if lossy { filter_hits(node, net) } else { 0 },
        );
        let t = Instant::now();
        let mut py = spawn(net, &client_args(n, parallel, 0.0));
        serve_client(node, &mut echo, &mut py, CLIENTS_LIMIT, &label);
        let secs = t.elapsed().as_secs_f64();
        let (ok, py_secs) = client_result(&mut py, &label);
        let tw_secs = drain_teardowns(node, &label);
        let kernel_tw = settle_kernel(node, net, &label);
        let kernel_after = kernel_counters(node, net);
        let lost = if lossy { filter_hits(node, net) } else { 0 } - lost_before;
        let sent = tx_packets(node, net) - tx_before + lost;

        let n64 = n as u64;
        let host = *node.ctx.stats();
        let hs = *node.ctx.setup_stats();
        let setup = node.setup();
        let td = *node.teardown().engine().stats();
        println!("{label}: {ok} echoes in {py_secs:.2} s (python), {secs:.2} s served: {:.0} connections/s; NIC TIME_WAIT drained {tw_secs:.2} s after; kernel TIME-WAIT sockets {kernel_tw}", ok as f64 / py_secs);
        if lossy {
            println!(
                "  kernel -> nicemu: {sent} frames, {lost} dropped ({:.2}%)",
                100.0 * lost as f64 / sent.max(1) as f64
            );
        }
        println!(
            "  kernel: RetransSegs {} TCPSynRetrans {} TCPTimeouts {} TCPLossProbes {}",
            delta(&kernel_before, &kernel_after, "Tcp.RetransSegs"),
            delta(&kernel_before, &kernel_after, "TcpExt.TCPSynRetrans"),
            delta(&kernel_before, &kernel_after, "TcpExt.TCPTimeouts"),
            delta(&kernel_before, &kernel_after, "TcpExt.TCPLossProbes"),
        );
        println!("  NIC setup: {setup:?}");
        println!("  NIC teardown: {td:?}");
        println!("  host setup: {hs:?}");
        println!("  host: {host:?}");

        assert_eq!(ok, n64, "{label}: python's echoes");
        assert_eq!(echo.echoed, n64, "{label}: echoes served");
        // The host handled no SYN: every connection came from a NIC setup notification.
        assert_eq!(hs.nic_setups, n64, "{label}: {hs:?}");
        assert_eq!(host.passive_opens, n64, "{label}: {host:?}");
        assert_eq!(host.syn_dropped, 0, "{label}: {host:?}");
        assert_eq!(hs.cookies_sent, 0, "{label}: {hs:?}");
        assert_eq!(setup.syns_to_host, 0, "{label}: {setup:?}");
        assert!(setup.validated >= n64, "{label}: {setup:?}");
        assert_eq!(
            setup.rejected_hash + setup.rejected_expired + setup.rejected_rotated,
            0,
            "{label}: {setup:?}"
        );
        // The host handled no FIN: every close went to the NIC.
        assert_eq!(host.teardown.offloaded, n64, "{label}: {:?}", host.teardown);
        assert_eq!(host.listener_non_syn, 0, "{label}: {host:?}");
        assert_eq!(host.rst_sent, 0, "{label}: {host:?}");
        assert_eq!(host.malformed, 0, "{label}: {host:?}");
        assert_eq!(node.ctx.connections(), 0, "{label}: host connections left");
        // The NIC closed them all, without a RST either way.
        assert_eq!(node.teardown().engine().in_progress(), 0);
        // Each entered TIME_WAIT and ended there: the time ran out, or the kernel reused
        // the 4-tuple for a new SYN first (Linux picks ports freed by the close it just
        // saw; RFC 6191), ending TIME_WAIT early.
        assert_eq!(td.time_wait, n64, "{label}: {td:?}");
        assert_eq!(td.completed + td.tw_reused, n64, "{label}: {td:?}");
        assert_eq!(td.peer_rst + td.gave_up, 0, "{label}: {td:?}");
        // The kernel: no RST, reset or abort.
        assert_no_resets(&kernel_before, &kernel_after, &label);
        if lossy {
            // 10% within five standard deviations.
            let (mean, sd) = (0.1 * sent as f64, (0.1 * 0.9 * sent as f64).sqrt());
            assert!(
                (lost as f64 - mean).abs() <= 5.0 * sd + 2.0,
                "{label}: {lost} of {sent} frames dropped"
            );
        }
        node.ctx.close(echo.listener).unwrap();
    });
}

/// Test 1 (see the file's comment).
#[test]
fn kernel_clients_with_both_offloads() {
    short_connections("e", CONNS, PARALLEL, false);
}

/// Test 2 (see the file's comment): 10,000 connections with 10% loss.
#[test]
fn kernel_clients_with_both_offloads_and_loss() {
    short_connections("l", LOSSY_CONNS, LOSSY_PARALLEL, true);
}

// ---------------------------------------------------------------------------------------
// Tests 3 and 4: a SYN flood.

/// hping3 flooding the listener from random sources with the timestamp option, and a python
/// client connecting during the flood; serves both, then stops hping3. Returns (legitimate
/// connections, flood packets hping3 sent, seconds it flooded).
fn flood_with_clients(
    node: &mut Node,
    net: &Netns,
    echo: &mut Echo,
    label: &str,
) -> (u64, u64, f64) {
    let port = PORT.to_string();
    let mut hping = Proc::spawn(
        net,
        &[
            "hping3",
            "-S",
            "--flood",
            "--rand-source",
            "--tcp-timestamp",
            "-p",
            &port,
            "-I",
            net.inner(),
            "192.0.2.1",
        ],
    );
    let t = Instant::now();
    // The client starts connecting once the flood runs, and stops starting new connections
    // a second before it ends.
    let mut py: Option<Proc> = None;
    let end = t + FLOOD + CLIENTS_LIMIT;
    loop {
        assert!(
            Instant::now() < end,
            "{label}: not done: host {:?}",
            node.ctx.stats()
        );
        if let Some(st) = hping.exited() {
            panic!(
                "{label}: hping3 exited early ({st:?}): {}",
                hping.describe()
            );
        }
        if py.is_none() && t.elapsed() > Duration::from_millis(500) {
            let secs = FLOOD.as_secs_f64() - 1.5;
            py = Some(spawn(net, &client_args(1_000_000, 2, secs)));
        }
        if let Some(p) = py.as_mut() {
            if p.exited().is_some() && echo.conns.is_empty() {
                break;
            }
        }
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
    let mut py = py.expect("client started");
    let (legit, _) = client_result(&mut py, label);
    // Stop the flood (SIGINT: hping3 prints its statistics), still polling.
    let flood_secs = t.elapsed().as_secs_f64();
    hping.interrupt();
    let stop = Instant::now();
    while hping.exited().is_none() {
        if stop.elapsed() > Duration::from_secs(5) {
            let _ = hping.child.kill();
        }
        assert!(
            stop.elapsed() < Duration::from_secs(10),
            "hping3 did not stop"
        );
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
    let stderr = hping.stderr();
    let text = format!("{}\n{stderr}", hping.stdout());
    // "N packets transmitted, M packets received, ..."
    let sent = text
        .lines()
        .find_map(|l| l.split_once(" packets transmitted"))
        .and_then(|(n, _)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{label}: no hping3 statistics in {text:?}"));
    // Let what is still queued on the NIC and in the host go.
    let quiet = Instant::now();
    while quiet.elapsed() < Duration::from_millis(500) {
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
    assert!(echo.conns.is_empty());
    (legit, sent, flood_secs)
}

/// Test 3 (see the file's comment).
#[test]
fn syn_flood_with_the_setup_offload() {
    let label = "SYN flood, setup offload";
    with_node(
        "f",
        HostConfig::new(NIC_IP, 0),
        TIME_WAIT_NS,
        |node, net| {
            let mut echo = Echo::new(&mut node.ctx, true, true);
            let kernel_before = kernel_counters(node, net);
            let (host0, setup0) = (*node.ctx.stats(), node.setup());
            let (legit, sent, secs) = flood_with_clients(node, net, &mut echo, label);
            drain_teardowns(node, label);
            // The legitimate clients' sockets are gone, without a RST or abort (the flood's
            // SYN-ACKs go to random addresses, which the namespace's kernel drops as not its own).
            settle_kernel(node, net, label);
            assert_no_resets(&kernel_before, &kernel_counters(node, net), label);
            let (host, hs, setup) = (*node.ctx.stats(), *node.ctx.setup_stats(), node.setup());
            let syns = setup.syns - setup0.syns;
            let cookies = setup.cookies_sent - setup0.cookies_sent;
            let frames_in = host.frames_in - host0.frames_in;
            println!(
            "{label}: hping3 sent {sent} SYNs in {secs:.2} s ({:.0}/s); the NIC saw {syns} ({:.0}/s), sent {cookies} cookie SYN-ACKs; {legit} legitimate connections during the flood ({:.1}/s); host frames_in +{frames_in}",
            sent as f64 / secs,
            syns as f64 / secs,
            legit as f64 / secs,
        );
            println!("  NIC setup: {setup:?}");
            println!("  NIC teardown: {:?}", node.teardown().engine().stats());
            println!("  host setup: {hs:?}");
            println!("  host: {host:?}");
            assert!(
                legit >= 5,
                "{label}: only {legit} connections during the flood"
            );
            assert_eq!(echo.echoed, legit);
            // The host saw no flood SYN: only the legitimate connections, all from the NIC.
            assert_eq!(host.passive_opens - host0.passive_opens, legit, "{host:?}");
            assert_eq!(hs.nic_setups, legit, "{hs:?}");
            assert_eq!(host.syn_dropped, 0, "{host:?}");
            assert_eq!(hs.cookies_sent, 0, "{hs:?}");
            assert_eq!(setup.syns_to_host, 0, "{setup:?}");
            assert_eq!(host.listener_non_syn, 0, "{host:?}");
            assert_eq!(host.rst_sent, 0, "{host:?}");
            // A few frames per legitimate connection (setup notification, request, FIN, the
            // teardown engine's count reports), nothing per flood SYN.
            assert!(
                frames_in <= 10 * legit + 100,
                "{label}: host frames_in +{frames_in} for {legit} connections"
            );
            // The flood reached the NIC, which answered it.
            assert!(
                syns >= 10 * legit.max(100),
                "{label}: the NIC saw only {syns} SYNs"
            );
            assert!(cookies >= syns - setup.send_failed, "{setup:?}");
            assert!(setup.validated >= legit);
            assert_eq!(node.ctx.connections(), 0);
            node.ctx.close(echo.listener).unwrap();
        },
    );
}

/// Test 4 (see the file's comment).
#[test]
fn syn_flood_without_the_setup_offload() {
    let label = "SYN flood, host SYN cookies";
    let mut host_cfg = HostConfig::new(NIC_IP, 0);
    host_cfg.max_syn_backlog = SMALL_BACKLOG;
    host_cfg.syn_cookies = true;
    with_node("g", host_cfg, TIME_WAIT_NS, |node, net| {
        // Teardown offload still on: closed connections leave the host at once, so that its
        // connection count is the SYN queue plus the open connections.
        let mut echo = Echo::new(&mut node.ctx, false, true);
        let kernel_before = kernel_counters(node, net);
        let (host0, setup0) = (*node.ctx.stats(), node.setup());
        let (legit, sent, secs) = flood_with_clients(node, net, &mut echo, label);
        drain_teardowns(node, label);
        // The legitimate clients' sockets are gone, without a RST or abort (the flood's
        // SYN-ACKs go to random addresses, which the namespace's kernel drops as not its own).
        settle_kernel(node, net, label);
        assert_no_resets(&kernel_before, &kernel_counters(node, net), label);
        let (host, hs, setup) = (*node.ctx.stats(), *node.ctx.setup_stats(), node.setup());
        let frames_in = host.frames_in - host0.frames_in;
        println!(
            "{label}: hping3 sent {sent} SYNs in {secs:.2} s ({:.0}/s); the host got {frames_in} frames ({:.0}/s), made {} half-open connections and sent {} cookies, {} validated; {legit} legitimate connections during the flood ({:.1}/s); most host connections at once {} (backlog {SMALL_BACKLOG})",
            sent as f64 / secs,
            frames_in as f64 / secs,
            host.passive_opens - host0.passive_opens,
            hs.cookies_sent,
            hs.cookies_validated,
            legit as f64 / secs,
            echo.max_live,
        );
        println!("  NIC setup: {setup:?}");
        println!("  NIC teardown: {:?}", node.teardown().engine().stats());
        println!("  host setup: {hs:?}");
        println!("  host: {host:?}");
        assert!(
            legit >= 5,
            "{label}: only {legit} connections during the flood"
        );
        assert_eq!(echo.echoed, legit);
        // The flood reached the host, and its SYN queue overflowed into cookies.
        assert_eq!(setup.cookies_sent - setup0.cookies_sent, 0, "{setup:?}");
        assert!(hs.cookies_sent > 0, "{hs:?}");
        assert!(
            hs.cookies_sent > 10 * legit,
            "{label}: only {} host cookies",
            hs.cookies_sent
        );
        // The legitimate connections got through (by cookie, but for any that found a free
        // SYN-queue slot).
        assert!(
            hs.cookies_validated >= legit,
            "{label}: {legit} connections, {hs:?}"
        );
        // Memory flat: the SYN queue plus the legitimate connections.
        assert!(
            echo.max_live <= SMALL_BACKLOG + legit as usize,
            "{label}: the host held {} connections",
            echo.max_live
        );
        assert_eq!(host.rst_sent, 0, "{host:?}");
        node.ctx.close(echo.listener).unwrap();
    });
}

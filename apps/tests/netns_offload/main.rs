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

mod flood;
mod short;

#[path = "../common/mod.rs"]
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
import hashlib, socket, struct, sys, threading, time
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
        s = None
        got = b""
        try:
            s = socket.create_connection((host, port), timeout=30)
            s.sendall(r)
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
            # Where the connection stood (Linux's struct tcp_info: state, retransmits,
            # backoff, rto, unacked, last data sent/received ago, ...): says which side
            # stopped answering.
            where = ""
            try:
                if s is not None:
                    t = struct.unpack("8B24I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104))
                    where = (" local port %d: state %d retransmits %d backoff %d rto %d us "
                             "unacked %d lost %d total retrans %d last data sent %d ms "
                             "last data recv %d ms last ack recv %d ms bytes got %d"
                             % (s.getsockname()[1], t[0], t[2], t[4], t[8], t[12], t[14],
                                t[31], t[17], t[19], t[20], len(got)))
            except Exception as e2:
                where = " (no tcp_info: %r)" % e2
            with lock:
                errors.append("connection %d: %r%s" % (i, e, where))
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
/// when it failed, with the node's counters (host, host setup, every offload, NIC ports)
/// beside the client's account of each failed connection.
fn client_result(py: &mut Proc, node: &mut Node, label: &str) -> (u64, f64) {
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
        _ => {
            let report = node.nic.finish();
            panic!(
                "{label}: python client failed: {}\nhost: {:?}\nhost setup: {:?}\nNIC: {report:?}",
                py.describe(),
                node.ctx.stats(),
                node.ctx.setup_stats(),
            )
        }
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

// ---------------------------------------------------------------------------------------
// Tests 3 and 4: a SYN flood.

//! Interop with the Linux kernel's TCP, an unmodified peer: the NIC runs on DPDK's net_af_packet
//! over a veth pair whose other end sits in a network namespace this test creates, and the nicemu
//! host stack talks TCP to python3 programs in that namespace.
//!
//! 1. A kernel client sends 20 MiB to a nicemu server while the server sends 20 MiB back;
//!    both check every byte; the client closes first, then the server.
//! 2. A nicemu client does the same with a kernel server; the nicemu client closes first.
//! 3. Both again with 5% loss of what the kernel sends (`tc netem loss 5%` on the kernel's
//!    veth; on kernels without netem, an equivalent clsact filter: see [`Egress`]).
//! 4. Both again (2 MiB each way) with 5% loss also of what nicemu sends, so that nicemu's
//!    own retransmissions meet a Linux receiver's SACKs.
//!
//! After each exchange the kernel's `ss -tan` must show the connection gone (TIME-WAIT only
//! on the kernel's side and only when it closed first), the namespace's TCP counters must
//! show no RST sent or received in a connection, no abort and no checksum error, and the
//! nicemu side must end without a socket error or a RST. Each exchange prints its rates and
//! the retransmission counters of both sides (`--nocapture`).
//!
//! The NIC lcore and the host context run in one loop on this thread; python runs as child
//! processes. Every wait is bounded; children are killed and the namespace, the veth and
//! DPDK's runtime directory are removed also when the test fails. Needs root, iproute2
//! (`ip`, `tc`, `ss`), ethtool and python3.
#![cfg(feature = "dpdk")]

mod common;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use dataplane::netns::AfPacketNic;
use hoststack::stack::{HostStats, Shutdown, SockOpt, SockOptName};
use hoststack::tcp::tcb::{State, TcbStats};
use hoststack::{Context, Errno, Fd, HostConfig};
use offload_api::link::HostEnd;

use common::kstats::{self, assert_no_resets, delta};
use common::netns::Netns;
use common::node::Node;
use common::pattern::{Pattern, PYTHON_TABLE};
use common::proc::Proc;

const NIC_IP: [u8; 4] = [192, 0, 2, 1];
const KERNEL_IP: [u8; 4] = [192, 0, 2, 2];
/// The nicemu server's port.
const NICEMU_PORT: u16 = 5001;
/// The kernel server's port.
const KERNEL_PORT: u16 = 5002;
/// Bytes each way per exchange (without loss of nicemu's segments).
const TOTAL: u64 = 20 << 20;

/// Bytes client → server (`up`) and server → client (`down`) in one exchange.
#[derive(Clone, Copy)]
struct Sizes {
    up: u64,
    down: u64,
}

const BOTH_WAYS: Sizes = Sizes {
    up: TOTAL,
    down: TOTAL,
};

/// Bytes each way when nicemu's own segments are lost too. The nicemu sender repairs most
/// losses by fast retransmit, but a lost retransmission, or a loss (or lost ACK) at the end
/// of a flight, waits for the retransmission timeout (at least 200 ms; the host stack has no
/// RACK-TLP, RFC 8985): some 8 timeouts per MiB at 5%, so this exchange is kept small.
const LOSSY_BOTH_WAYS: Sizes = Sizes {
    up: 2 << 20,
    down: 2 << 20,
};
/// Longest one exchange may take, connection set-up and close included.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(120);
/// Longest the kernel may take to forget a connection after both ends closed.
const SETTLE_LIMIT: Duration = Duration::from_secs(15);
/// Longest a helper command (`ss`, `cat`, `tc`) may run.
const COMMAND_LIMIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// The byte streams: a pseudo-random table of prime length, repeated; one seed per direction.
// The python side computes the same tables (xorshift64, byte = bits 24..32).

/// Client → server.
const SEED_UP: u64 = 0x9E37_79B9_7F4A_7C15;
/// Server → client.
const SEED_DOWN: u64 = 0xD1B5_4A32_D192_ED03;

/// The kernel side: `python3 -c PYTHON_TABLE+PEER role host port total_tx total_rx seed_tx
/// seed_rx` (the tables of `common::pattern`). It sends its stream while receiving the other
/// (a sender thread), compares every byte (and prints the received stream's SHA-256), then
/// closes:
/// the client shuts its write side first and waits for the server's FIN; the server waits for
/// the client's FIN, then closes. Prints `done` last when all went well.
const PEER: &str = r#"
import hashlib, socket, sys, threading
role, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
total_tx, total_rx = int(sys.argv[4]), int(sys.argv[5])
seed_tx, seed_rx = int(sys.argv[6], 0), int(sys.argv[7], 0)

def stream(seed, n):
    return (table(seed) * (n // P + 1))[:n]

tx, want = stream(seed_tx, total_tx), stream(seed_rx, total_rx)
if role == "client":
    s = socket.create_connection((host, port), timeout=90)
else:
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(1)
    ls.settimeout(90)
    print("listening", flush=True)
    s, _ = ls.accept()
    ls.close()
    s.settimeout(90)
print("connected", s.getsockname()[1], s.getpeername()[1], flush=True)
errors = []

def send():
    try:
        s.sendall(tx)
    except Exception as e:
        errors.append("send: " + repr(e))

t = threading.Thread(target=send, daemon=True)
t.start()
got = bytearray(total_rx)
view = memoryview(got)
n = 0
while n < total_rx:
    k = s.recv_into(view[n:], min(total_rx - n, 1 << 20))
    if k == 0:
        break
    n += k
t.join(90)
if errors or t.is_alive():
    print("send failed", errors, flush=True)
    sys.exit(2)
if n != total_rx:
    print("short stream", n, flush=True)
    sys.exit(3)
if got != want:
    bad = next(i for i in range(0, total_rx, 4096) if got[i:i + 4096] != want[i:i + 4096])
    bad += next(i for i in range(4096) if got[bad + i] != want[bad + i])
    print("mismatch at", bad, flush=True)
    sys.exit(4)
print("received", n, "sha256", hashlib.sha256(got).hexdigest(), flush=True)
if role == "client":
    s.shutdown(socket.SHUT_WR)
extra = s.recv(1)
if extra:
    print("data after the stream", flush=True)
    sys.exit(5)
err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
s.close()
if err:
    print("so_error", err, flush=True)
    sys.exit(6)
print("done", flush=True)
"#;

// ---------------------------------------------------------------------------------------
// Commands, the namespace, child processes.

// ---------------------------------------------------------------------------------------
// The nicemu node (`common::node`): helper commands while it keeps polling.

impl Node {
    /// Runs a helper command in the namespace while the node keeps polling: its stdout, or
    /// a description of the failure.
    fn ns_try(&mut self, net: &Netns, args: &[&str]) -> Result<String, String> {
        let mut p = Proc::spawn(net, args);
        let end = Instant::now() + COMMAND_LIMIT;
        loop {
            if let Some(st) = p.exited() {
                return if st.success() {
                    Ok(p.stdout())
                } else {
                    Err(p.describe())
                };
            }
            assert!(
                Instant::now() < end,
                "{args:?} did not finish: {}",
                p.describe()
            );
            self.step(0);
        }
    }

    fn ns_command(&mut self, net: &Netns, args: &[&str]) -> String {
        self.ns_try(net, args)
            .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
    }

    /// A counter of a device in the namespace (`/sys/class/net/DEV/statistics/NAME`).
    fn dev_counter(&mut self, net: &Netns, dev: &str, name: &str) -> u64 {
        let path = format!("/sys/class/net/{dev}/statistics/{name}");
        let text = self.ns_command(net, &["cat", &path]);
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{path}: {text:?}: {e}"))
    }
}

/// Frame loss on the kernel's side of the veth: 5% in each direction that has it.
#[derive(Default)]
struct Loss {
    /// Kernel → nicemu (the kernel's transmit side), and how.
    egress: Option<Egress>,
    /// nicemu → kernel (the kernel's receive side): a clsact ingress filter like
    /// [`Egress::Filter`], dropping before the kernel's IP layer sees the frame.
    ingress: bool,
}

#[derive(Clone, Copy)]
enum Egress {
    /// `tc qdisc add dev INNER root netem loss 5%`.
    Netem,
    /// For kernels built without netem (`Specified qdisc kind is unknown`): a classic-BPF
    /// classifier on the veth's clsact egress matches 5% of frames at random (`ld rand`) and
    /// `mirred` redirects them to a veth pair that leads nowhere. As with netem, the kernel's
    /// TCP takes them as sent (the redirect steals the frame: NET_XMIT_SUCCESS), so they are
    /// lost on the wire, not refused locally.
    Filter,
}

/// Matches when a random u32 is below 5% of 2^32: `ld rand; jge #T, nomatch; ret #-1`.
const LOSS_BPF: &str = "4,32 0 0 4294963256,53 0 1 214748365,6 0 0 0,6 0 0 4294967295";

/// Frames (sent, of which lost) in each direction, counted on the kernel's veth.
#[derive(Clone, Copy, Default)]
struct Frames {
    to_nicemu: (u64, u64),
    to_kernel: (u64, u64),
}

impl Frames {
    fn since(self, before: Frames) -> Frames {
        let d = |a: (u64, u64), b: (u64, u64)| (a.0 - b.0, a.1 - b.1);
        Frames {
            to_nicemu: d(self.to_nicemu, before.to_nicemu),
            to_kernel: d(self.to_kernel, before.to_kernel),
        }
    }
}

impl Loss {
    fn drop_filter(node: &mut Node, net: &Netns, dir: &str) {
        let (inner, sink) = (net.inner(), net.sink());
        node.ns_command(
            net,
            &[
                "tc", "filter", "add", "dev", inner, dir, "bpf", "bytecode", LOSS_BPF, "action",
                "mirred", "egress", "redirect", "dev", sink,
            ],
        );
    }

    /// 5% loss of what the kernel sends: netem where the kernel has it, else the filter.
    fn add_egress(&mut self, node: &mut Node, net: &Netns) {
        let inner = net.inner();
        // The kernel's TCP always builds GSO packets, segmented in software (`tx off`) only
        // after the qdisc and clsact hooks, where both netem and the filter would drop whole
        // bursts of segments. One segment per packet makes them drop single frames.
        node.ns_command(
            net,
            &["ip", "link", "set", "dev", inner, "gso_max_segs", "1"],
        );
        let netem = [
            "tc", "qdisc", "add", "dev", inner, "root", "netem", "loss", "5%",
        ];
        self.egress = Some(match node.ns_try(net, &netem) {
            Ok(_) => Egress::Netem,
            Err(e) if e.contains("qdisc kind is unknown") => {
                Loss::drop_filter(node, net, "egress");
                Egress::Filter
            }
            Err(e) => panic!("{netem:?} failed: {e}"),
        });
    }

    /// 5% loss of what the kernel receives.
    fn add_ingress(&mut self, node: &mut Node, net: &Netns) {
        Loss::drop_filter(node, net, "ingress");
        self.ingress = true;
    }

    fn describe(&self) -> String {
        let egress = match self.egress {
            None => "none",
            Some(Egress::Netem) => "tc netem loss 5%",
            Some(Egress::Filter) => {
                "5% by a clsact egress filter (no netem in this kernel): cBPF `ld rand`, mirred redirect to a dead-end veth"
            }
        };
        let ingress = if self.ingress {
            "5% by the same filter on clsact ingress"
        } else {
            "none"
        };
        format!("kernel -> nicemu: {egress}; nicemu -> kernel: {ingress}")
    }

    /// Frames the kernel's veth has sent and received so far, and how many the impairments
    /// dropped.
    fn frames(&self, node: &mut Node, net: &Netns) -> Frames {
        let inner = net.inner();
        let lost_out = match self.egress {
            None => 0,
            Some(Egress::Netem) => {
                let text = node.ns_command(net, &["tc", "-s", "qdisc", "show", "dev", inner]);
                text.split("dropped ")
                    .nth(1)
                    .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("no drop count in {text:?}"))
            }
            Some(Egress::Filter) => filter_hits(node, net, "egress"),
        };
        let lost_in = if self.ingress {
            filter_hits(node, net, "ingress")
        } else {
            0
        };
        Frames {
            // Dropped frames never reach the veth's transmit counter.
            to_nicemu: (
                node.dev_counter(net, inner, "tx_packets") + lost_out,
                lost_out,
            ),
            // The receive counter counts before the ingress hook.
            to_kernel: (node.dev_counter(net, inner, "rx_packets"), lost_in),
        }
    }
}

/// Frames the drop filter on `dir` of the kernel's veth has taken (its action's count; the
/// sink veth's own counters miss frames it drops).
fn filter_hits(node: &mut Node, net: &Netns, dir: &str) -> u64 {
    let inner = net.inner();
    let text = node.ns_command(net, &["tc", "-s", "filter", "show", "dev", inner, dir]);
    text.split(" bytes ")
        .nth(1)
        .and_then(|t| t.split(" pkt").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {text:?}"))
}

/// TCP counters of the namespace: `Tcp` of /proc/net/snmp and `TcpExt` of /proc/net/netstat,
/// as `Tcp.OutRsts`, `TcpExt.TCPAbortOnData`, ...
fn kernel_counters(node: &mut Node, net: &Netns) -> HashMap<String, i64> {
    kstats::parse(&node.ns_command(net, &["cat", "/proc/net/snmp", "/proc/net/netstat"]))
}

/// Waits until the kernel has no connection on the test ports in a state other than
/// LISTEN, and TIME-WAIT only for `(kernel port, nicemu port)` when `kernel_closed_first`.
fn settle_kernel(node: &mut Node, net: &Netns, kport: u16, nport: u16, kernel_closed_first: bool) {
    let end = Instant::now() + SETTLE_LIMIT;
    let local = format!("192.0.2.2:{kport}");
    let peer = format!("192.0.2.1:{nport}");
    loop {
        let text = node.ns_command(net, &["ss", "-tan"]);
        let mut problems = Vec::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 5 {
                continue;
            }
            let ours = f[3] == local && f[4] == peer;
            let test_port = [f[3], f[4]].iter().any(|a| {
                a.ends_with(&format!(":{NICEMU_PORT}")) || a.ends_with(&format!(":{KERNEL_PORT}"))
            });
            let ok = match f[0] {
                "LISTEN" => true,
                "TIME-WAIT" if ours => kernel_closed_first,
                "TIME-WAIT" => true, // an earlier exchange's
                _ => !test_port && !ours,
            };
            if !ok {
                problems.push(line.to_string());
            }
        }
        if problems.is_empty() {
            return;
        }
        assert!(
            Instant::now() < end,
            "kernel connections did not close cleanly: {problems:?}\n{text}"
        );
        for _ in 0..1000 {
            node.step(0);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The exchanges.

/// Both directions' progress at the nicemu end.
struct Progress {
    /// Bytes to send and to receive.
    tx_total: u64,
    rx_total: u64,
    sent: u64,
    received: u64,
    eof: bool,
}

impl Progress {
    fn new(tx_total: u64, rx_total: u64) -> Progress {
        Progress {
            tx_total,
            rx_total,
            sent: 0,
            received: 0,
            eof: false,
        }
    }

    fn streams_done(&self) -> bool {
        self.sent == self.tx_total && self.received == self.rx_total
    }
}

/// Writes what fits of the `tx` stream, reads and checks what arrived of the `rx` stream.
/// Returns the bytes moved.
fn pump(
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
const KERNEL_REPORTED: [&str; 7] = [
    "Tcp.RetransSegs",
    "TcpExt.TCPTimeouts",
    "TcpExt.TCPLossProbes",
    "TcpExt.TCPSackRecovery",
    "TcpExt.TCPFastRetrans",
    "TcpExt.TCPSACKReorder",
    "TcpExt.TCPDSACKRecv",
];

struct Outcome {
    label: String,
    sizes: Sizes,
    /// Connection established to both ends closed.
    secs: f64,
    /// Connection established to the last byte of both streams received.
    data_secs: f64,
    /// The nicemu connection's counters when the streams were done.
    nicemu: TcbStats,
    /// Deltas of [`KERNEL_REPORTED`].
    kernel: Vec<(String, i64)>,
    frames: Frames,
}

impl Outcome {
    fn report(&self) -> String {
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

fn peer_args(role: &str, port: u16, tx: (u64, u64), rx: (u64, u64)) -> Vec<String> {
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

fn spawn_peer(net: &Netns, args: &[String]) -> Proc {
    Proc::spawn(net, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Fails the test with the child's output when it has exited unsuccessfully.
fn check_peer_alive(py: &mut Proc, label: &str) {
    if let Some(s) = py.exited() {
        assert!(s.success(), "{label}: python failed: {}", py.describe());
    }
}

fn check_peer_done(py: &mut Proc, label: &str) {
    let st = py.exited().expect("exited");
    assert!(
        st.success() && py.has_line("done"),
        "{label}: python failed: {}",
        py.describe()
    );
}

fn assert_host_clean(before: &HostStats, after: &HostStats, label: &str) {
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
struct Before {
    label: String,
    sizes: Sizes,
    kernel: HashMap<String, i64>,
    host: HostStats,
    frames: Frames,
}

impl Before {
    fn take(node: &mut Node, net: &Netns, loss: &Loss, label: &str, sizes: Sizes) -> Before {
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
    fn check(
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
fn kernel_client(
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
fn kernel_server(node: &mut Node, net: &Netns, label: &str, loss: &Loss, sizes: Sizes) -> Outcome {
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

#[test]
fn netns_tcp_interop_with_the_linux_kernel() {
    let net = Netns::new("t");
    net.configure("192.0.2.2/24");
    let prefix = format!("nicemu-test-tcp-{}", std::process::id());
    let afp = AfPacketNic::new(net.outer(), "192.0.2.1/24", &prefix);
    let t0 = Instant::now();
    afp.with_topology("netns tcp test", |mut topo| {
        let mut node = Node::new(&mut topo, HostConfig::new(NIC_IP, 0), 256);
        let listener = node.ctx.socket().unwrap();
        node.ctx.set_nonblocking(listener, true).unwrap();
        node.ctx
            .bind(
                listener,
                SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, NICEMU_PORT),
            )
            .unwrap();
        node.ctx.listen(listener, 8).unwrap();

        let mut loss = Loss::default();
        let mut outcomes = Vec::new();
        for phase in 0..3 {
            match phase {
                1 => loss.add_egress(&mut node, &net),
                2 => loss.add_ingress(&mut node, &net),
                _ => {}
            }
            let what = ["", ", 5% loss kernel -> nicemu", ", 5% loss both ways"][phase];
            let sizes = if phase == 2 {
                LOSSY_BOTH_WAYS
            } else {
                BOTH_WAYS
            };
            outcomes.push(kernel_client(
                &mut node,
                &net,
                listener,
                &format!("kernel client -> nicemu server{what}"),
                &loss,
                sizes,
            ));
            outcomes.push(kernel_server(
                &mut node,
                &net,
                &format!("nicemu client -> kernel server{what}"),
                &loss,
                sizes,
            ));
        }
        println!("loss: {}", loss.describe());
        node.ctx.close(listener).unwrap();
        for o in &outcomes {
            println!("{}", o.report());
        }
        let r = node.nic.finish();
        println!(
            "NIC: rx {} tx {} to host {} (dropped {}) from host {} (dropped {}), tx full drops {:?}, stack drops {:?}",
            r.rx_packets(),
            r.tx_packets(),
            r.to_host,
            r.to_host_dropped,
            r.from_host,
            r.from_host_dropped,
            r.ports.iter().map(|p| p.tx_full_drops).collect::<Vec<_>>(),
            r.stack.drops
        );
        if let Ok(s) = topo.devs[0].stats() {
            println!(
                "af_packet: ipackets {} opackets {} imissed {} ierrors {} oerrors {}",
                s.ipackets, s.opackets, s.imissed, s.ierrors, s.oerrors
            );
        }
        println!("host: {:?}", node.ctx.stats());
        drop(node);
        drop(topo);
    });
    println!("total {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn netns_tcp_cleans_up_when_the_test_fails() {
    let mut names = (String::new(), String::new());
    let mut pid = 0;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let net = Netns::new("c");
        net.configure("192.0.2.2/24");
        names = (net.ns().to_string(), net.outer().to_string());
        let mut p = Proc::spawn(&net, &["sleep", "30"]);
        pid = p.child.id();
        assert!(p.exited().is_none());
        panic!("simulated test failure");
    }));
    assert!(r.is_err());
    let (ns, outer) = names;
    assert!(
        !ns.is_empty() && !dataplane::netns::Netns::exists(&ns).unwrap(),
        "namespace {ns} left behind"
    );
    assert!(
        !std::path::Path::new("/sys/class/net").join(&outer).exists(),
        "veth {outer} left behind"
    );
    assert!(
        pid != 0 && !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "child {pid} left running"
    );
}

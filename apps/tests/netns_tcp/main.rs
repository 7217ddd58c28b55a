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

mod exchange;
mod loss;

use exchange::*;
use loss::*;

#[path = "../common/mod.rs"]
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

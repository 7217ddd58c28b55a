//! libmtcp from C, against the Linux kernel over net_af_packet. Every C program here is
//! built with AddressSanitizer and run with leak checking: a memory error or a leak (in the
//! program, libmtcp or DPDK) changes its exit status, which every test checks.
//!
//! - [`c_echo_server_echoes_kernel_clients`]: `tests/c/echo_server.c`, written against
//!   `mtcp_api.h` / `mtcp_epoll.h` only and built with `gcc -Wall -Werror -lmtcp`, serves
//!   python clients in a namespace this test creates; every connection's bytes come back
//!   exactly and the server exits 0 after the last one closed.
//! - [`c_echo_server_two_contexts_listening_inside_the_ephemeral_range`]: the same server
//!   with two contexts over net_af_packet's two queue pairs, listening on a port inside the
//!   ephemeral range: each context serves the connections the kernel's fanout gave its queue.
//! - [`c_echo_server_two_contexts`]: the same server with two threads and contexts on two
//!   `shared` lcores, against `nicemu loadgen` over net_memif's two queue pairs: each context
//!   serves its queue's 8 connections, the load generator checks every echo.
//! - [`c_splice_callback`]: `tests/c/splice.c` accepts a kernel client, connects to a kernel
//!   echo server and splices the two with `mtcp_splice`: the client's bytes come back through
//!   the NIC, and after both close the callback receives the client's address and port, the
//!   server's, and close reason 0 (both FINs).
//! - [`c_error_paths`]: `tests/c/errors.c` checks the errno of the API's error paths (EBADF,
//!   ENOTCONN, EAGAIN, EINVAL, EFAULT, EINPROGRESS, ECONNREFUSED, EISCONN, ...) and the
//!   working calls around them against a kernel echo server; its exit status is the number
//!   of failed checks.
//! - [`c_pipe_timer`]: `tests/c/pipe_timer.c` checks mtcp_pipe (bytes, EOF, EPIPE, EAGAIN,
//!   EBADF, ENOTSOCK, epoll events of both ends), mtcp_settimer (argument errors; a timer
//!   that feeds a pipe a blocking read waits on; one that re-arms itself from its callback 3
//!   times inside `mtcp_epoll_wait(-1)` with no traffic, with bounded elapsed times),
//!   mtcp_setconf's `max_concurrency` bounding descriptors (EMFILE), mtcp_init_rss's
//!   arguments, mtcp_shutdown against a kernel echo server, and EINTR from
//!   `mtcp_epoll_wait(-1)` when a helper thread raises a signal registered with
//!   mtcp_register_signal.
//! - [`c_arp_and_route_conf`]: an mTCP configuration directory with `config/arp.conf` and
//!   `config/route.conf` beside `mtcp.conf`: the program reaches a kernel address off every
//!   subnet of the port only through its static neighbour entry, and one in a prefix that
//!   route.conf puts on the port by ARP.
//!
//! Bounded: every wait has a limit, child processes are killed, and the namespace, temporary
//! files and DPDK's runtime directory are removed also when a test fails. Needs root,
//! iproute2, ethtool, python3, gcc (`ci/install-deps.sh`), two usable cores for the two-context
//! test.
#![cfg(feature = "dpdk")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    c_program, crate_dir, gcc, nicemu_bin, wait_for, Proc, RuntimeDir, TempDir, ASAN_CFLAGS,
};

use dataplane::netns::Netns;

const NIC_IP: &str = "192.0.2.1";
const PEER_IP: &str = "192.0.2.2";

/// Builds `tests/c/<name>.c` against the headers and libmtcp.so with warnings as errors,
/// under AddressSanitizer: [`c_program`] runs it with leak checking, and any error or leak
/// makes it exit with `common::ASAN_EXIT` instead of the status the test expects.
fn compile(name: &str, tmp: &TempDir) -> PathBuf {
    let exe = tmp.path(name);
    let args: Vec<String> = ["-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread"]
        .iter()
        .chain(ASAN_CFLAGS)
        .map(|s| s.to_string())
        .chain([crate_dir()
            .join(format!("tests/c/{name}.c"))
            .display()
            .to_string()])
        .collect();
    gcc(&exe, &args);
    exe
}

/// A namespace `tag` with the kernel at PEER_IP/24, and in `tmp` an mTCP configuration
/// file whose `nicemu_config` names a nicemu TOML: net_af_packet on the namespace's outer
/// veth with `contexts` queue pairs (the kernel's fanout spreads flows over them), one
/// `shared` lcore per queue on this process's cores, DPDK file prefix `prefix`. Returns the
/// namespace and the mTCP file's path.
fn topology(tag: &str, tmp: &TempDir, prefix: &str, contexts: usize) -> (Netns, PathBuf) {
    let net = Netns::for_test(tag).unwrap_or_else(|e| panic!("{e}"));
    net.configure(&format!("{PEER_IP}/24"))
        .unwrap_or_else(|e| panic!("{e}"));
    let cores = dataplane::sys::allowed_cores().unwrap();
    let used: Vec<usize> = (0..contexts).map(|k| cores[k % cores.len()]).collect();
    let mut list = used.clone();
    list.sort_unstable();
    list.dedup();
    let list: Vec<String> = list.iter().map(|c| c.to_string()).collect();
    let lcores: String = used
        .iter()
        .map(|c| format!("[[lcore]]\ncore = {c}\nrole = \"shared\"\n"))
        .collect();
    let toml = format!(
        r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "256", "-l", "{list}", "--file-prefix={prefix}",
        "--vdev=net_af_packet0,iface={iface},qpairs={contexts}"]
[runtime]
stats_interval_s = 0.0
[[port]]
name = "p0"
driver = "dpdk"
device = "net_af_packet0"
ipv4 = ["{NIC_IP}/24"]
rss = "off"
{lcores}"#,
        iface = net.outer(),
        list = list.join(",")
    );
    std::fs::write(tmp.path("nicemu.toml"), toml).unwrap();
    let conf = tmp.path("mtcp.conf");
    std::fs::write(
        &conf,
        "############ mTCP configuration (nicemu) ############\n\
         io = dpdk\n\
         num_cores = {contexts}\n\
         num_mem_ch = 4\n\
         port = dpdk0\n\
         max_concurrency = 1024\n\
         max_num_buffers = 1024\n\
         rcvbuf = 65536\n\
         sndbuf = 65536\n\
         tcp_timeout = 30\n\
         tcp_timewait = 0\n\
         stat_print = dpdk0\n\
         nicemu_config = nicemu.toml   # relative to this file\n"
            .replace("{contexts}", &contexts.to_string()),
    )
    .unwrap();
    (net, conf)
}

/// N concurrent connections, each sending its own pattern in pieces and reading it all
/// back; prints `ok N` when every byte matched.
const PY_CLIENT: &str = r#"
import socket, sys, threading
ip, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
results = [None] * n
def run(k):
    try:
        s = socket.create_connection((ip, port), timeout=10)
        data = bytes((k * 7 + i) % 251 for i in range(size))
        got = bytearray()
        for off in range(0, size, 1000):
            s.sendall(data[off:off + 1000])
        while len(got) < size:
            d = s.recv(65536)
            if not d:
                break
            got += d
        s.close()
        results[k] = "ok" if bytes(got) == data else "conn %d: %d bytes back, mismatch" % (k, len(got))
    except Exception as e:
        results[k] = "conn %d: %r" % (k, e)
ts = [threading.Thread(target=run, args=(k,)) for k in range(n)]
for t in ts: t.start()
for t in ts: t.join(20)
bad = [r for r in results if r != "ok"]
print("ok %d" % n if not bad else "\n".join(str(b) for b in bad), flush=True)
sys.exit(1 if bad else 0)
"#;

/// Runs `echo_server` with `contexts` threads (one context each, listening on `port`) and
/// the python client with `conns` connections of `size` bytes; returns the server's output
/// after checking every echo and the server's clean exit.
fn echo_run(tag: &str, contexts: usize, port: u16, conns: usize, size: usize) -> String {
    let tmp = TempDir::new(&format!("echo{contexts}"));
    let exe = compile("echo_server", &tmp);
    let prefix = format!("nicemu-test-mtcp-echo{contexts}-{}", std::process::id());
    let _dir = RuntimeDir(prefix.clone());
    let (net, conf) = topology(tag, &tmp, &prefix, contexts);
    let mut cmd = c_program(&exe);
    cmd.arg(&conf)
        .arg(port.to_string())
        .arg(conns.to_string())
        .arg("30")
        .arg(contexts.to_string());
    let mut server = Proc::spawn(cmd, tmp.path("server.out"), "echo_server");
    assert!(
        wait_for(Duration::from_secs(20), || server
            .output()
            .contains("listening")
            || server.child.try_wait().ok().flatten().is_some()),
        "{}",
        server.describe()
    );
    assert!(
        server.output().contains("listening"),
        "{}",
        server.describe()
    );
    let mut client = Proc::spawn(
        net.command(&[
            "python3",
            "-c",
            PY_CLIENT,
            NIC_IP,
            &port.to_string(),
            &conns.to_string(),
            &size.to_string(),
        ]),
        tmp.path("client.out"),
        "python client",
    );
    let rc = client.wait(Duration::from_secs(30));
    assert_eq!(rc, Some(0), "{}\n{}", client.describe(), server.describe());
    assert!(
        client.output().contains(&format!("ok {conns}")),
        "{}",
        client.describe()
    );
    // The server saw every connection end and exits on its own.
    assert_eq!(
        server.wait(Duration::from_secs(20)),
        Some(0),
        "{}",
        server.describe()
    );
    let out = server.output();
    assert!(
        out.contains(&format!(
            "served {conns} of {conns} connections ({conns} accepted), {} bytes",
            conns * size
        )),
        "{out}"
    );
    out
}

#[test]
fn c_echo_server_echoes_kernel_clients() {
    echo_run("c", 1, 8000, 8, 50_000);
}

/// Two contexts on two `shared` lcores over net_af_packet with two queue pairs, each with
/// its own listener on a port inside the contexts' ephemeral range (32768-60999) that the
/// program did not take out of it: the lcores steer frames to ephemeral ports by residue
/// (`dataplane::steer`), but a registered listening port is not steered, so each context
/// serves the connections the kernel's fanout gave its queue (32 flows over two queues:
/// both get some), and every echo comes back. (Steered by residue, 40001 would bring every
/// connection to context 1.)
#[test]
fn c_echo_server_two_contexts_listening_inside_the_ephemeral_range() {
    let cores = dataplane::sys::allowed_cores().unwrap();
    assert!(
        cores.len() >= 2,
        "this test needs two usable cores, found {cores:?}"
    );
    let out = echo_run("l", 2, 40_001, 32, 20_000);
    println!("{out}");
    for k in 0..2 {
        let served: Option<usize> = out.lines().find_map(|l| {
            l.strip_prefix(&format!("context {k}: served "))?
                .split(' ')
                .next()?
                .parse()
                .ok()
        });
        assert!(served.is_some_and(|n| n > 0), "context {k}:\n{out}");
    }
}

/// Two contexts on two `shared` lcores, one thread each with its own listener on the same
/// port (as mTCP's epserver runs one per core), served over net_memif with two queue pairs
/// by `nicemu loadgen` with two contexts of its own: memif pairs client queue i with server
/// queue i, so each server context serves the connections of one client context (8 of the
/// 16), and the load generator checks every echo.
///
/// (The same server over net_af_packet with `qpairs=2`, where the kernel's fanout and the
/// lcores' steering share the flows, is
/// [`c_echo_server_two_contexts_listening_inside_the_ephemeral_range`].)
#[test]
fn c_echo_server_two_contexts() {
    let cores = dataplane::sys::allowed_cores().unwrap();
    assert!(
        cores.len() >= 2,
        "this test needs two usable cores, found {cores:?}"
    );
    let tmp = TempDir::new("two");
    let exe = compile("echo_server", &tmp);
    let nicemu = nicemu_bin();
    let pid = std::process::id();
    let sock = tmp.path("memif.sock");
    let side = |k: usize, role: &str, name: &str| {
        let prefix = format!("nicemu-test-mtcp-{name}-{pid}");
        let toml = format!(
            r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "256", "-l", "{c0},{c1}", "--file-prefix={prefix}",
        "--vdev=net_memif0,role={role},socket={sock},socket-abstract=no,id=0,mac=02:00:00:00:00:0{m}"]
[runtime]
stats_interval_s = 0.0
[[port]]
name = "p0"
driver = "dpdk"
device = "net_memif0"
ipv4 = ["10.99.0.{m}/24"]
rss = "off"
[[lcore]]
core = {c0}
role = "shared"
[[lcore]]
core = {c1}
role = "shared"
"#,
            c0 = cores[0],
            c1 = cores[1],
            sock = sock.display(),
            m = k + 1
        );
        let path = tmp.path(&format!("{name}.toml"));
        std::fs::write(&path, toml).unwrap();
        (prefix, path)
    };
    let (server_prefix, server_toml) = side(0, "server", "s");
    let (lg_prefix, lg_toml) = side(1, "client", "l");
    let _dirs = (RuntimeDir(server_prefix), RuntimeDir(lg_prefix));
    let conf = tmp.path("mtcp.conf");
    std::fs::write(
        &conf,
        format!("num_cores = 2\nnicemu_config = {}\n", server_toml.display()),
    )
    .unwrap();
    let mut cmd = c_program(&exe);
    cmd.arg(&conf).args(["8000", "16", "60", "2"]);
    let mut server = Proc::spawn(cmd, tmp.path("server.out"), "echo_server");
    assert!(
        wait_for(Duration::from_secs(20), || server
            .output()
            .contains("listening")
            || server.child.try_wait().ok().flatten().is_some()),
        "{}",
        server.describe()
    );
    let mut cmd = Command::new(&nicemu);
    cmd.arg("loadgen")
        .arg("-c")
        .arg(&lg_toml)
        .args([
            "--server",
            "10.99.0.1:8000",
            "--size",
            "64",
            "--conns",
            "16",
        ])
        .args(["--count", "2000", "--connect-timeout-ms", "10000"]);
    let mut lg = Proc::spawn(cmd, tmp.path("loadgen.out"), "nicemu loadgen");
    assert_eq!(
        lg.wait(Duration::from_secs(90)),
        Some(0),
        "{}\n{}",
        lg.describe(),
        server.describe()
    );
    let lg_out = lg.output();
    assert!(
        lg_out
            .lines()
            .any(|l| l.starts_with("loadgen: transactions 2000")),
        "{lg_out}"
    );
    assert!(
        lg_out.lines().any(|l| l.starts_with("loadgen: errors 0")),
        "{lg_out}"
    );
    assert_eq!(
        server.wait(Duration::from_secs(20)),
        Some(0),
        "{}\n{lg_out}",
        server.describe()
    );
    let out = server.output();
    for k in 0..2 {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("context {k}: served 8 connections, "))),
            "context {k}:\n{out}\n{lg_out}"
        );
    }
    assert!(
        out.contains("served 16 of 16 connections (16 accepted)"),
        "{out}"
    );
}

/// A threaded python echo server on 0.0.0.0:7; prints `ready`.
const PY_ECHO: &str = r#"
import socket, threading
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("0.0.0.0", 7))
l.listen(16)
print("ready", flush=True)
def serve(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

#[test]
fn c_error_paths() {
    run_checks("errors", "e");
}

/// A client that sends 20,000 bytes through the splice, reads them back, prints its local
/// port, then closes its side and waits for the end of stream.
const PY_SPLICE_CLIENT: &str = r#"
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
data = bytes(i % 253 for i in range(20000))
s.sendall(data)
got = bytearray()
while len(got) < len(data):
    d = s.recv(65536)
    if not d:
        break
    got += d
print("port %d" % s.getsockname()[1], flush=True)
print("echo ok" if bytes(got) == data else "echo mismatch: %d bytes" % len(got), flush=True)
s.shutdown(socket.SHUT_WR)
while s.recv(65536):
    pass
s.close()
"#;

/// `tests/c/<name>.c` built, the one-context mTCP file of [`topology`] in namespace `tag`,
/// and a kernel echo server (PY_ECHO) there, ready.
struct EchoPeerRig {
    tmp: TempDir,
    exe: PathBuf,
    prefix: String,
    _dir: RuntimeDir,
    net: Netns,
    conf: PathBuf,
    _peer: Proc,
}

impl EchoPeerRig {
    fn new(name: &str, tag: &str) -> EchoPeerRig {
        let tmp = TempDir::new(name);
        let exe = compile(name, &tmp);
        let prefix = format!("nicemu-test-mtcp-{name}-{}", std::process::id());
        let _dir = RuntimeDir(prefix.clone());
        let (net, conf) = topology(tag, &tmp, &prefix, 1);
        let peer = Proc::spawn(
            net.command(&["python3", "-c", PY_ECHO]),
            tmp.path("echo.out"),
            "python echo",
        );
        assert!(
            wait_for(Duration::from_secs(10), || peer.output().contains("ready")),
            "{}",
            peer.describe()
        );
        EchoPeerRig {
            tmp,
            exe,
            prefix,
            _dir,
            net,
            conf,
            _peer: peer,
        }
    }
}

#[test]
fn c_splice_callback() {
    let EchoPeerRig {
        tmp,
        exe,
        _dir,
        net,
        conf,
        _peer,
        prefix: _,
    } = EchoPeerRig::new("splice", "s");
    let mut cmd = c_program(&exe);
    cmd.arg(&conf).args(["8000", PEER_IP, "7", "30"]);
    let mut proxy = Proc::spawn(cmd, tmp.path("splice.out"), "splice");
    assert!(
        wait_for(Duration::from_secs(20), || proxy
            .output()
            .contains("listening")
            || proxy.child.try_wait().ok().flatten().is_some()),
        "{}",
        proxy.describe()
    );
    let mut client = Proc::spawn(
        net.command(&["python3", "-c", PY_SPLICE_CLIENT, NIC_IP, "8000"]),
        tmp.path("client.out"),
        "python client",
    );
    assert_eq!(
        client.wait(Duration::from_secs(30)),
        Some(0),
        "{}\n{}",
        client.describe(),
        proxy.describe()
    );
    let c_out = client.output();
    assert!(c_out.contains("echo ok"), "{c_out}\n{}", proxy.describe());
    let port: u16 = c_out
        .lines()
        .find_map(|l| l.strip_prefix("port "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{c_out}"));
    assert_eq!(
        proxy.wait(Duration::from_secs(30)),
        Some(0),
        "{}",
        proxy.describe()
    );
    let out = proxy.output();
    assert!(out.contains("spliced"), "{out}");
    let want = format!(
        "closed client={PEER_IP}:{port} server={PEER_IP}:7 reason=0 calls=1 accepted_from={port}"
    );
    assert!(out.contains(&want), "want {want:?} in:\n{out}");
}

/// Runs `tests/c/<name>.c` against a kernel echo server (PY_ECHO) with the mTCP file of
/// [`topology`]; checks exit status 0 and `<name>: 0 failed checks`.
fn run_checks(name: &str, tag: &str) {
    let EchoPeerRig {
        tmp,
        exe,
        prefix,
        _dir,
        net: _net,
        conf,
        _peer,
    } = EchoPeerRig::new(name, tag);
    let mut cmd = c_program(&exe);
    cmd.arg(&conf).arg(PEER_IP);
    let mut p = Proc::spawn(cmd, tmp.path(&format!("{name}.out")), name);
    let rc = p.wait(Duration::from_secs(60));
    assert_eq!(rc, Some(0), "{}", p.describe());
    assert!(
        p.output().contains(&format!("{name}: 0 failed checks")),
        "{}",
        p.describe()
    );
    assert!(!Path::new(&format!("/var/run/dpdk/{prefix}")).exists());
}

#[test]
fn c_pipe_timer() {
    run_checks("pipe_timer", "t");
}

#[test]
fn c_arp_and_route_conf() {
    let tmp = TempDir::new("arpconf");
    let exe = compile("arp_conf", &tmp);
    let prefix = format!("nicemu-test-mtcp-arpconf-{}", std::process::id());
    let _dir = RuntimeDir(prefix.clone());
    let (net, conf) = topology("r", &tmp, &prefix, 1);
    // Two more kernel addresses: one in a prefix route.conf puts on the port's link (found
    // by ARP), one off every prefix (reachable only through arp.conf's static entry).
    const ROUTED: &str = "198.51.100.2";
    const STATIC: &str = "203.0.113.2";
    net.must(&[
        "ip",
        "addr",
        "add",
        &format!("{ROUTED}/24"),
        "dev",
        net.inner(),
    ]);
    net.must(&[
        "ip",
        "addr",
        "add",
        &format!("{STATIC}/32"),
        "dev",
        net.inner(),
    ]);
    let mac = net.must(&["cat", &format!("/sys/class/net/{}/address", net.inner())]);
    let mac = mac.trim();
    assert_eq!(mac.len(), 17, "{mac:?}");
    // mTCP's layout: <dir>/mtcp.conf and <dir>/config/{arp,route}.conf. The counts
    // disagree with the lines on purpose (a warning), and one route names no port.
    std::fs::create_dir_all(tmp.path("config")).unwrap();
    std::fs::write(
        tmp.path("config/arp.conf"),
        format!(
            "# ARP_ENTRY [# of entries]\n# [destination ip/prefix] [destination MAC]\n\
             ARP_ENTRY 2\n{STATIC}/32 {mac}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        tmp.path("config/route.conf"),
        "# ROUTES [# of entries]\nROUTES 2\n198.51.100.0/24 dpdk0\n10.9.0.0/16 dpdk7\n",
    )
    .unwrap();
    let peer = Proc::spawn(
        net.command(&["python3", "-c", PY_ECHO]),
        tmp.path("echo.out"),
        "python echo",
    );
    assert!(
        wait_for(Duration::from_secs(10), || peer.output().contains("ready")),
        "{}",
        peer.describe()
    );
    let mut cmd = c_program(&exe);
    cmd.arg(&conf).arg(STATIC).arg(ROUTED);
    let mut p = Proc::spawn(cmd, tmp.path("arp_conf.out"), "arp_conf");
    let rc = p.wait(Duration::from_secs(60));
    let out = p.output();
    assert_eq!(rc, Some(0), "{}", p.describe());
    for want in [
        format!("reached {STATIC}"),
        format!("reached {ROUTED}"),
        "arp.conf: 1 static neighbours".to_string(),
        "route.conf: 2 on-link routes".to_string(),
        "ARP_ENTRY 2, but 1 entries follow".to_string(),
        "dpdk7: no such port".to_string(),
    ] {
        assert!(out.contains(&want), "want {want:?} in:\n{out}");
    }
    // A malformed line: mtcp_init fails, naming the file, the line and the value.
    std::fs::write(
        tmp.path("config/arp.conf"),
        format!("ARP_ENTRY 1\n{STATIC}/32 zz:{mac}\n"),
    )
    .unwrap();
    let mut cmd = c_program(&exe);
    cmd.arg(&conf).arg(STATIC);
    let mut p = Proc::spawn(cmd, tmp.path("arp_conf_bad.out"), "arp_conf (bad)");
    assert_eq!(
        p.wait(Duration::from_secs(30)),
        Some(100),
        "{}",
        p.describe()
    );
    let out = p.output();
    assert!(
        out.contains("config/arp.conf: line 2") && out.contains(&format!("zz:{mac}")),
        "{out}"
    );
}

//! `nicemu echo`, `nicemu loadgen` and `nicemu kv` as real processes.
//!
//! - [`procs_memif_loadgen_echo`]: two nicemu processes joined by DPDK's net_memif (the echo
//!   process is the memif server, the load generator the client), each with a `nic` and a
//!   `host` lcore (two threads, not pinned); every echo is checked by the generator and the
//!   transaction counts of both sides agree exactly.
//! - [`procs_memif_two_queue_pairs`]: the same pair with two `shared` lcores on each side,
//!   each with its own memif queue pair and host context: every connection of both client
//!   lcores is served, and both host contexts on both sides carry load.
//! - [`procs_loadgen_kernel_peers`]: `nicemu loadgen` over net_af_packet against a python
//!   echo server and nginx in a namespace this test creates, then against an address where
//!   nobody answers and a port where nobody listens: errors, a non-zero exit, bounded time.
//! - [`procs_loadgen_client_addresses`]: with three client addresses and 100 ephemeral ports
//!   each, the generator holds 250 connections to one server port.
//! - [`procs_memif_beyond_64k`]: `nicemu loadgen` holds 70,000 concurrent connections to one
//!   port of `nicemu echo` (two client addresses, 64,512 ports each), both processes on
//!   net_memif with one `shared` lcore each; the server's progress shows all 70,000 open at
//!   once, no errors, every echo checked.
//! - [`procs_kv_redis_tools`]: `nicemu kv` against redis-benchmark (`-t
//!   ping,set,get,incr,mset -n N -c 50`, also with `-k 0` and with `-P 16`; N = 10000
//!   (`-P 16`: 100000), or `NICEMU_KV_BENCH_N`) and redis-cli (binary values through `-x`).
//!   At N = 100000, a debug build whose NIC and host threads spun took 814 s on a loaded
//!   2-core machine (the client starved); at the default N with adaptive polling it took 16 s
//!   in a full `make test` (nextest's limit for this test stays raised for slower machines).
//! - [`procs_threads_are_pinned_to_their_cores_or_free_with_no_pin`]: the loop threads of
//!   `nicemu kv` run on their configured cores, or with `--no-pin` on every core the process
//!   may use.
//!
//! Bounded: every wait has a limit; processes, namespaces, veths, temp files and DPDK's
//! runtime directories are removed also when a test fails. Needs root, iproute2, ethtool,
//! python3, nginx, redis-tools (`ci/install-deps.sh`).

#![cfg(feature = "dpdk")]

mod kernel_peers;
mod kv_cli;
mod memif;
mod placement;

#[path = "../common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::netns::Netns;
use common::proc::Proc;
use common::proxy_topo::{nginx_conf, ProxyProc as NicemuProc, TempDir};
use common::waits::{counter, wait_for};

const NIC_IP: &str = "192.0.2.1";
const PEER_IP: &str = "192.0.2.2";

/// A python echo server (selectors, non-blocking) on `0.0.0.0:PORT`; prints `ready`.
const PY_ECHO: &str = r#"
import selectors, socket, sys
sel = selectors.DefaultSelector()
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("0.0.0.0", int(sys.argv[1])))
l.listen(1024)
l.setblocking(False)
sel.register(l, selectors.EVENT_READ)
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is l:
            try:
                c, _ = l.accept()
            except OSError:
                continue
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
            continue
        try:
            d = s.recv(65536)
        except OSError:
            d = b""
        if not d:
            sel.unregister(s)
            s.close()
            continue
        try:
            s.setblocking(True)
            s.sendall(d)
            s.setblocking(False)
        except OSError:
            sel.unregister(s)
            s.close()
"#;

/// The lcores of a process: a `nic` and a `host` lcore when two cores are allowed (one
/// `shared` otherwise), and the EAL's core list.
fn lcores() -> (String, usize) {
    let cores = dataplane::sys::allowed_cores().unwrap();
    let core = cores[0];
    let text = match cores.get(1) {
        Some(host) => format!(
            "[[lcore]]\ncore = {core}\nrole = \"nic\"\n[[lcore]]\ncore = {host}\nrole = \"host\""
        ),
        None => format!("[[lcore]]\ncore = {core}\nrole = \"shared\""),
    };
    (text, core)
}

/// A configuration with one DPDK port `dev` (address `cidr`), the EAL on `vdev`.
fn config(prefix: &str, vdev: &str, dev: &str, cidr: &str) -> String {
    config_with(
        prefix,
        vdev,
        dev,
        cidr,
        lcores(),
        256,
        "stats_interval_s = 0.0",
    )
}

/// [`config`] with the lcores `(text, EAL core)`, `mem_mb` MB of EAL memory and `runtime`
/// as the `[runtime]` section's settings.
fn config_with(
    prefix: &str,
    vdev: &str,
    dev: &str,
    cidr: &str,
    (lcores, core): (String, usize),
    mem_mb: u32,
    runtime: &str,
) -> String {
    format!(
        r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "{mem_mb}", "-l", "{core}", "--file-prefix={prefix}",
        "--vdev={vdev}"]
[runtime]
{runtime}
[[port]]
name = "p0"
driver = "dpdk"
device = "{dev}"
ipv4 = ["{cidr}"]
rss = "off"
{lcores}
"#
    )
}

/// Runs `nicemu ARGS` to its exit (at most `limit`, killed after), with its output.
fn run_nicemu(args: &[&str], prefix: &str, limit: Duration) -> (Option<bool>, String) {
    let mut p = NicemuProc::spawn(args, prefix);
    let done = wait_for(limit, || p.exited().is_some());
    std::thread::sleep(Duration::from_millis(200));
    let ok = done.then(|| p.exited().is_some_and(|s| s.success()));
    (ok, p.describe())
}

/// A namespace with the kernel's end at PEER_IP/24; the other end is for net_af_packet.
fn namespace(tag: &str) -> Netns {
    let net = Netns::new(tag);
    net.configure(&format!("{PEER_IP}/24"));
    net
}

fn af_packet_config(tmp: &TempDir, net: &Netns, prefix: &str) -> String {
    let path = tmp.path("nicemu.toml");
    std::fs::write(
        &path,
        config(
            prefix,
            &format!("net_af_packet0,iface={}", net.outer()),
            "net_af_packet0",
            &format!("{NIC_IP}/24"),
        ),
    )
    .unwrap();
    path
}

/// An echo process (memif server, 10.99.0.1) and a load generator (memif client, 10.99.0.2)
/// joined by net_memif through a socket in `tmp`: their DPDK file prefixes and
/// configuration files.
struct MemifPair {
    /// Holds the socket and the configurations (removed when dropped).
    _tmp: TempDir,
    echo_prefix: String,
    lg_prefix: String,
    echo_cfg: String,
    lg_cfg: String,
}

/// A [`MemifPair`] whose file prefixes carry `tag`; `memif_args` are added to both memif
/// devices, and `config(prefix, vdev, address, side)` writes each side's configuration
/// (side 0: echo, 1: loadgen).
fn memif_pair(
    tag: &str,
    memif_args: &str,
    config: impl Fn(&str, &str, &str, usize) -> String,
) -> MemifPair {
    let tmp = TempDir::new(&format!("procs-memif-{tag}"));
    let sock = tmp.path("memif.sock");
    let pid = std::process::id();
    let side = |k: usize, role: &str, name: &str| {
        let prefix = format!("nicemu-test-{tag}{name}-{pid}");
        let vdev = format!(
            "net_memif0,role={role},socket={sock},socket-abstract=no,id=0,mac=02:00:00:00:00:0{}{memif_args}",
            k + 1
        );
        let path = tmp.path(&format!("{name}.toml"));
        let cidr = format!("10.99.0.{}", k + 1);
        std::fs::write(&path, config(&prefix, &vdev, &cidr, k)).unwrap();
        (prefix, path)
    };
    let (echo_prefix, echo_cfg) = side(0, "server", "e");
    let (lg_prefix, lg_cfg) = side(1, "client", "l");
    MemifPair {
        _tmp: tmp,
        echo_prefix,
        lg_prefix,
        echo_cfg,
        lg_cfg,
    }
}

/// Waits (at most 20 s) until `kv` answers redis-cli's PING at NIC_IP from namespace
/// `net`; fails the test if it does not, or exits first.
fn wait_for_kv(net: &Netns, kv: &mut NicemuProc) {
    assert!(
        wait_for(Duration::from_secs(20), || {
            kv.exited().is_some()
                || net
                    .run(&["timeout", "2", "redis-cli", "-h", NIC_IP, "ping"])
                    .is_ok_and(|o| o.trim() == "PONG")
        }),
        "kv did not answer: {}",
        kv.describe()
    );
    assert!(kv.exited().is_none(), "{}", kv.describe());
}

/// Starts `nicemu echo ARGS` (DPDK file prefix `prefix`) and waits until it listens.
fn start_echo(args: &[&str], prefix: &str) -> NicemuProc {
    start_server(args, prefix, "nicemu echo: listening")
}

/// Starts `nicemu ARGS` (DPDK file prefix `prefix`) and waits until its output shows
/// `ready`; fails the test if it exits first or takes more than 20 s.
fn start_server(args: &[&str], prefix: &str, ready: &str) -> NicemuProc {
    let mut p = NicemuProc::spawn(args, prefix);
    assert!(
        wait_for(Duration::from_secs(20), || p.stdout().contains(ready)
            || p.exited().is_some()),
        "{}",
        p.describe()
    );
    assert!(p.exited().is_none(), "{}", p.describe());
    p
}

/// A namespace `tag` with a python echo server on PEER_IP:7, and a nicemu configuration
/// (DPDK file prefix `nicemu-test-<id>-<pid>`) whose net_af_packet port faces it: the
/// namespace, the temporary directory, the prefix, the configuration's path, the server.
fn echo_peer(tag: &str, id: &str) -> (Netns, TempDir, String, String, Proc) {
    let net = namespace(tag);
    let tmp = TempDir::new(&format!("procs-{id}"));
    let prefix = format!("nicemu-test-{id}-{}", std::process::id());
    let cfg = af_packet_config(&tmp, &net, &prefix);
    let py = start_py_echo(&net, "7");
    (net, tmp, prefix, cfg, py)
}

/// `nicemu loadgen` with configuration `cfg` against the echo server at PEER_IP:7, with
/// `extra` arguments; runs until it ends or is interrupted.
fn spawn_echo_loadgen(cfg: &str, prefix: &str, extra: &[&str]) -> NicemuProc {
    let server = format!("{PEER_IP}:7");
    let mut args = vec!["loadgen", "-c", cfg, "--no-pin", "--server", &server];
    args.extend_from_slice(extra);
    NicemuProc::spawn(&args, prefix)
}

fn start_py_echo(net: &Netns, port: &str) -> Proc {
    let mut p = Proc::spawn(net, &["python3", "-c", PY_ECHO, port]);
    assert!(
        wait_for(Duration::from_secs(10), || p.has_line("ready")),
        "python echo server: {}",
        p.describe()
    );
    p
}

/// Runs `nicemu echo` and then `nicemu loadgen` (`--conns conns --count count`, messages of
/// `size` bytes, `extra` arguments for both) over `pair`, stops the echo server, checks that
/// both exited cleanly, and returns their outputs (loadgen, echo).
fn memif_echo_round(
    pair: &MemifPair,
    extra: &[&str],
    size: &str,
    conns: &str,
    count: u64,
) -> (String, String) {
    let (ce, cl, pl) = (&pair.echo_cfg, &pair.lg_cfg, &pair.lg_prefix);
    let mut args = vec!["echo", "-c", ce, "--size", size, "-d", "120"];
    args.extend_from_slice(extra);
    let mut echo = start_echo(&args, &pair.echo_prefix);
    let count = count.to_string();
    let mut args = vec![
        "loadgen",
        "-c",
        cl,
        "--server",
        "10.99.0.1:7",
        "--size",
        size,
        "--conns",
        conns,
        "--count",
        &count,
        "--connect-timeout-ms",
        "10000",
    ];
    args.extend_from_slice(extra);
    let (ok, lg) = run_nicemu(&args, pl, Duration::from_secs(90));
    assert_eq!(ok, Some(true), "loadgen:\n{lg}\necho:\n{}", echo.describe());
    let status = echo.interrupt_and_wait(Duration::from_secs(15));
    assert!(
        status.is_some_and(|s| s.success()),
        "echo did not stop cleanly: {}",
        echo.describe()
    );
    (lg, echo.stdout())
}

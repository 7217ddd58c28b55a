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
//!
//! Bounded: every wait has a limit; processes, namespaces, veths, temp files and DPDK's
//! runtime directories are removed also when a test fails. Needs root, iproute2, ethtool,
//! python3, nginx, redis-tools (`ci/install-deps.sh`).
#![cfg(feature = "dpdk")]

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

/// Starts `nicemu echo ARGS` (DPDK file prefix `prefix`) and waits until it listens.
fn start_echo(args: &[&str], prefix: &str) -> NicemuProc {
    let mut echo = NicemuProc::spawn(args, prefix);
    assert!(
        wait_for(Duration::from_secs(20), || echo
            .stdout()
            .contains("nicemu echo: listening")
            || echo.exited().is_some()),
        "{}",
        echo.describe()
    );
    assert!(echo.exited().is_none(), "{}", echo.describe());
    echo
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

#[test]
fn procs_memif_loadgen_echo() {
    let started = Instant::now();
    let pair = memif_pair("p", "", |prefix, vdev, ip, _| {
        config(prefix, vdev, "net_memif0", &format!("{ip}/24"))
    });
    // Four threads on (typically) two cores, unpinned: few transactions, over several
    // connections.
    let count = 400;
    let (lg, et) = memif_echo_round(&pair, &["--no-pin"], "100", "8", count);
    println!("--- loadgen:\n{lg}\n--- echo:\n{et}");
    let sent = counter(&lg, "loadgen: transactions", "transactions").unwrap();
    let echoed = counter(&et, "echo: transactions", "transactions").unwrap();
    assert_eq!(sent, count, "{lg}");
    assert_eq!(echoed, count, "{et}");
    assert_eq!(counter(&lg, "loadgen: errors", "errors"), Some(0), "{lg}");
    assert!(!et.contains("partial message"), "{et}");
    assert!(lg.contains("cpu host 0"), "{lg}");
    println!("procs_memif_loadgen_echo took {:?}", started.elapsed());
}

/// Two queue pairs on one memif port (client queue i is server queue i), two `shared` lcores
/// per process: flows stay on the core that opened them, with no RSS to steer them.
#[test]
fn procs_memif_two_queue_pairs() {
    let cores = dataplane::sys::allowed_cores().unwrap();
    assert!(
        cores.len() >= 2,
        "this test needs two usable cores, found {cores:?}"
    );
    let lcores = format!(
        "[[lcore]]\ncore = {}\nrole = \"shared\"\n[[lcore]]\ncore = {}\nrole = \"shared\"",
        cores[0], cores[1]
    );
    let pair = memif_pair("q", "", |prefix, vdev, ip, _| {
        config_with(
            prefix,
            vdev,
            "net_memif0",
            &format!("{ip}/24"),
            (lcores.clone(), cores[0]),
            256,
            "stats_interval_s = 0.0",
        )
    });
    let count = 2000;
    let (lg, et) = memif_echo_round(&pair, &[], "64", "16", count);
    println!("--- loadgen:\n{lg}\n--- echo:\n{et}");
    assert_eq!(counter(&lg, "loadgen: errors", "errors"), Some(0), "{lg}");
    assert_eq!(
        counter(&lg, "loadgen: transactions", "transactions"),
        Some(count),
        "{lg}"
    );
    assert_eq!(
        counter(&et, "echo: transactions", "transactions"),
        Some(count),
        "{et}"
    );
    // Every connection was opened by one of the client's two contexts and accepted by the
    // server's context of the same queue: eight each.
    for (out, what) in [(&lg, "active opens"), (&et, "passive opens")] {
        for k in 0..2 {
            let opens = counter(out, &format!("host {k}:"), what);
            assert_eq!(opens, Some(8), "host {k} {what}:\n{out}");
        }
    }
}

/// Kernel clients to `nicemu echo` on net_af_packet with two queue pairs and a `shared`
/// lcore on each: Linux's packet fanout hands every ARP frame to one of the two sockets, so
/// only one lcore hears the kernel's ARP; the lcores share what they learn, and every
/// connection is answered whichever lcore its flow lands on (before they shared, about half
/// timed out: the other lcore could not resolve the client).
#[test]
fn procs_af_packet_two_queue_pairs_answer_every_kernel_client() {
    let cores = dataplane::sys::allowed_cores().unwrap();
    assert!(
        cores.len() >= 2,
        "this test needs two usable cores, found {cores:?}"
    );
    let net = namespace("q2");
    let tmp = TempDir::new("procs-afq2");
    let prefix = format!("nicemu-test-afq2-{}", std::process::id());
    let lcores = format!(
        "[[lcore]]\ncore = {}\nrole = \"shared\"\n[[lcore]]\ncore = {}\nrole = \"shared\"",
        cores[0], cores[1]
    );
    let cfg = tmp.path("nicemu.toml");
    std::fs::write(
        &cfg,
        config_with(
            &prefix,
            &format!("net_af_packet0,iface={},qpairs=2", net.outer()),
            "net_af_packet0",
            &format!("{NIC_IP}/24"),
            (lcores, cores[0]),
            256,
            "stats_interval_s = 0.0",
        ),
    )
    .unwrap();
    let mut echo = start_echo(&["echo", "-c", &cfg, "--no-pin"], &prefix);
    let client = r#"
import socket, sys, concurrent.futures as cf
def one(i):
    try:
        s = socket.create_connection((sys.argv[1], 7), timeout=10)
        s.sendall(b"x" * 64); got = b""
        while len(got) < 64:
            c = s.recv(64)
            if not c: break
            got += c
        s.close(); return len(got) == 64
    except OSError: return False
with cf.ThreadPoolExecutor(40) as ex:
    r = list(ex.map(one, range(40)))
print("echoed", sum(r))
"#;
    let out = net.run(&["python3", "-c", client, NIC_IP]);
    echo.interrupt_and_wait(Duration::from_secs(20));
    let et = echo.describe();
    let out = out.unwrap_or_else(|e| panic!("client: {e}\n{et}"));
    println!("{out}\n{et}");
    assert_eq!(counter(&out, "echoed", "echoed"), Some(40), "{out}\n{et}");
    // Both lcores' hosts accepted connections (40 flows hashed over two queues).
    for k in 0..2 {
        let opens = counter(&et, &format!("host {k}:"), "passive opens").unwrap_or(0);
        assert!(opens > 0, "host {k} accepted none:\n{et}");
    }
}

#[test]
fn procs_loadgen_kernel_peers() {
    let started = Instant::now();
    let (net, tmp, prefix, cfg, _py) = echo_peer("g", "pk");
    // nginx with one 1000-byte file.
    let www = tmp.path("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(format!("{www}/f"), vec![b'x'; 1000]).unwrap();
    let conf = tmp.path("nginx.conf");
    std::fs::write(
        &conf,
        nginx_conf(&tmp.0.display().to_string(), &www, PEER_IP, 8080),
    )
    .unwrap();
    let _nginx = Proc::spawn(
        &net,
        &["nginx", "-c", &conf, "-p", &tmp.path(""), "-e", "stderr"],
    );
    assert!(
        wait_for(Duration::from_secs(10), || net
            .run(&["ss", "-Hltn", "sport = :8080"])
            .is_ok_and(|o| o.contains("8080"))),
        "nginx did not start"
    );

    // Echo against the kernel, persistent and one connection per transaction.
    for per_conn in ["0", "1"] {
        let (ok, out) = run_nicemu(
            &[
                "loadgen",
                "-c",
                &cfg,
                "--no-pin",
                "--server",
                &format!("{PEER_IP}:7"),
                "--size",
                "200",
                "--conns",
                "4",
                "--per-conn",
                per_conn,
                "--count",
                "1000",
            ],
            &prefix,
            Duration::from_secs(60),
        );
        assert_eq!(ok, Some(true), "{out}");
        assert_eq!(
            counter(&out, "loadgen: transactions", "transactions"),
            Some(1000),
            "{out}"
        );
        assert!(out.contains("loadgen: latency p50"), "{out}");
    }

    // HTTP GETs against nginx (keep-alive).
    let (ok, out) = run_nicemu(
        &[
            "loadgen",
            "-c",
            &cfg,
            "--no-pin",
            "--server",
            &format!("{PEER_IP}:8080"),
            "--proto",
            "http",
            "--path",
            "/f",
            "--conns",
            "4",
            "--count",
            "500",
        ],
        &prefix,
        Duration::from_secs(60),
    );
    assert_eq!(ok, Some(true), "{out}");
    assert_eq!(
        counter(&out, "loadgen: transactions", "transactions"),
        Some(500),
        "{out}"
    );

    // Ctrl-C in a run that would go on for hours: the partial summary, exit 0.
    let mut lg = spawn_echo_loadgen(&cfg, &prefix, &["--conns", "4", "--count", "100000000"]);
    let going = wait_for(Duration::from_secs(30), || {
        lg.stdout()
            .lines()
            .filter_map(|l| l.split_once("] loadgen: transactions "))
            .any(|(_, rest)| !rest.starts_with("0 "))
            || lg.exited().is_some()
    });
    let status = lg.interrupt_and_wait(Duration::from_secs(15));
    let out = lg.describe();
    assert!(going, "no progress line with transactions: {out}");
    assert!(status.is_some_and(|s| s.success()), "{out}");
    assert!(out.contains("nicemu: stopped by Ctrl-C after"), "{out}");
    let done = counter(&out, "loadgen: transactions", "transactions").unwrap_or(0);
    assert!(done > 0 && done < 100_000_000, "{out}");
    assert!(
        out.contains(&format!(
            "loadgen: interrupted after {done} of 100000000 transactions"
        )),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("loadgen: latency p50"))
        .unwrap_or_else(|| panic!("no latency line: {out}"));
    let p: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(p.len(), 5, "{line}");
    assert!(p[0] > 0.0 && p.windows(2).all(|w| w[0] <= w[1]), "{line}");
    // The NIC lcore outlived the host's wind-down: every connection's FIN reached the
    // kernel, none is left established there.
    let mut left = String::new();
    let closed = wait_for(Duration::from_secs(5), || {
        left = net
            .run(&["ss", "-Htn", "state", "established", "sport = :7"])
            .unwrap_or_default();
        left.trim().is_empty()
    });
    assert!(closed, "still established in the kernel:\n{left}");

    // Nobody at the address (no ARP answer): connect timeouts, a non-zero exit.
    let t = Instant::now();
    let (ok, out) = run_nicemu(
        &[
            "loadgen",
            "-c",
            &cfg,
            "--no-pin",
            "--server",
            "192.0.2.9:7",
            "--conns",
            "2",
            "--count",
            "10",
            "--connect-timeout-ms",
            "500",
        ],
        &prefix,
        Duration::from_secs(30),
    );
    assert_eq!(ok, Some(false), "{out}");
    assert!(out.contains("connect_timeout="), "{out}");
    assert!(out.contains("no transaction completed"), "{out}");
    println!("absent server: {:?}", t.elapsed());

    // Nobody listening on the port: refused, a non-zero exit.
    let (ok, out) = run_nicemu(
        &[
            "loadgen",
            "-c",
            &cfg,
            "--no-pin",
            "--server",
            &format!("{PEER_IP}:9"),
            "--conns",
            "2",
            "--count",
            "10",
        ],
        &prefix,
        Duration::from_secs(30),
    );
    assert_eq!(ok, Some(false), "{out}");
    assert!(out.contains("refused="), "{out}");
    println!("procs_loadgen_kernel_peers took {:?}", started.elapsed());
}

#[test]
fn procs_loadgen_client_addresses() {
    let started = Instant::now();
    let (net, _tmp, prefix, cfg, _py) = echo_peer("m", "pm");
    // 3 addresses (the port's and two more) x 100 ports: 250 connections need all three.
    let mut lg = spawn_echo_loadgen(
        &cfg,
        &prefix,
        &[
            "--conns",
            "250",
            "--clients",
            "192.0.2.64/31",
            "--ephemeral",
            "40000-40099",
            "-d",
            "30",
        ],
    );
    let mut peers = std::collections::HashSet::new();
    let mut most = 0;
    let held = wait_for(Duration::from_secs(25), || {
        let out = net
            .run(&["ss", "-Htn", "state", "established", "sport = :7"])
            .unwrap_or_default();
        let n = out.lines().count();
        most = most.max(n);
        for l in out.lines() {
            if let Some(peer) = l.split_whitespace().last() {
                if let Some((ip, _)) = peer.rsplit_once(':') {
                    peers.insert(ip.to_string());
                }
            }
        }
        n >= 250 || lg.exited().is_some()
    });
    let status = lg.interrupt_and_wait(Duration::from_secs(15));
    let out = lg.describe();
    println!("{out}\nclient addresses {peers:?}, most connections {most}");
    assert!(held, "at most {most} connections held: {out}");
    assert_eq!(most, 250, "{out}");
    assert_eq!(peers.len(), 3, "client addresses {peers:?}: {out}");
    assert!(status.is_some_and(|s| s.success()), "{out}");
    assert!(
        counter(&out, "loadgen: transactions", "transactions").unwrap_or(0) > 0,
        "{out}"
    );
    println!(
        "procs_loadgen_client_addresses took {:?}",
        started.elapsed()
    );
}

/// The largest `open N` of the echo server's progress lines.
fn most_open(echo_out: &str) -> u64 {
    echo_out
        .lines()
        .filter(|l| l.contains("] echo: transactions"))
        .filter_map(|l| counter(l, "[", " open "))
        .max()
        .unwrap_or(0)
}

#[test]
fn procs_memif_beyond_64k() {
    // More than 65,535 concurrent connections from one generator to one server port: two
    // client addresses (the port's and one from --clients) with 64,512 ports each.
    const CONNS: u64 = 70_000;
    let started = Instant::now();
    // One `shared` lcore each (one busy-polling thread per process), as
    // configs/many-conns-*.toml but with less EAL memory.
    let cores = dataplane::sys::allowed_cores().unwrap();
    let pair = memif_pair("k", ",rsize=14", |prefix, vdev, ip, side| {
        let core = *cores.get(side).unwrap_or(&cores[0]);
        let lcore = format!("[[lcore]]\ncore = {core}\nrole = \"shared\"");
        let runtime = "stats_interval_s = 1.0\nmbufs = 65535";
        let cidr = format!("{ip}/16");
        config_with(
            prefix,
            vdev,
            "net_memif0",
            &cidr,
            (lcore, core),
            512,
            runtime,
        )
    });
    let max = (CONNS + 100).to_string();
    let mut echo = start_echo(
        &[
            "echo",
            "-c",
            &pair.echo_cfg,
            "--no-pin",
            "--max-conns",
            &max,
            "-d",
            "150",
        ],
        &pair.echo_prefix,
    );
    // The generator runs until every connection was up for a while (or its limit); the
    // timeouts allow for a closed loop of 70,000 requests on a debug build.
    let mut lg = NicemuProc::spawn(
        &[
            "loadgen",
            "-c",
            &pair.lg_cfg,
            "--no-pin",
            "--server",
            "10.99.0.1:7",
            "--conns",
            &CONNS.to_string(),
            "--clients",
            "1",
            "--ephemeral",
            "1024-65535",
            "--connect-timeout-ms",
            "60000",
            "--response-timeout-ms",
            "60000",
            "-d",
            "100",
        ],
        &pair.lg_prefix,
    );
    // Up: the server holds every connection at once; then a few more seconds of echoes.
    let up = wait_for(Duration::from_secs(90), || {
        most_open(&echo.stdout()) >= CONNS || lg.exited().is_some() || echo.exited().is_some()
    });
    let up_after = started.elapsed();
    if up {
        std::thread::sleep(Duration::from_secs(3));
    }
    let lg_status = lg.interrupt_and_wait(Duration::from_secs(30));
    let lo = lg.describe();
    let echo_status = echo.interrupt_and_wait(Duration::from_secs(30));
    let eo = echo.describe();
    println!("--- loadgen:\n{lo}\n--- echo:\n{eo}");
    let held = most_open(&eo);
    assert!(up, "the server held at most {held} of {CONNS} connections");
    assert_eq!(held, CONNS, "{eo}");
    assert!(
        lo.contains(&format!(
            "connections open {CONNS} (handshakes completed {CONNS})"
        )),
        "{lo}"
    );
    assert!(lg_status.is_some_and(|s| s.success()), "{lo}");
    assert!(echo_status.is_some_and(|s| s.success()), "{eo}");
    assert_eq!(counter(&lo, "loadgen: errors", "errors"), Some(0), "{lo}");
    assert_eq!(
        counter(&lo, "loadgen: transactions", "established"),
        Some(CONNS),
        "{lo}"
    );
    assert_eq!(
        counter(&eo, "echo: transactions", "accepted"),
        Some(CONNS),
        "{eo}"
    );
    // Every echo the generator counted was checked; the server echoed those and at most one
    // more request per connection (in flight when the generator stopped).
    let sent = counter(&lo, "loadgen: transactions", "transactions").unwrap();
    let echoed = counter(&eo, "echo: transactions", "transactions").unwrap();
    assert!(sent > 0, "{lo}");
    assert!(
        echoed >= sent && echoed <= sent + CONNS,
        "echoed {echoed}, checked {sent}"
    );
    assert!(!eo.contains("raise --max-conns"), "{eo}");
    println!(
        "procs_memif_beyond_64k: {CONNS} connections held after {up_after:?}, took {:?}",
        started.elapsed()
    );
}

#[test]
fn procs_kv_redis_tools() {
    let started = Instant::now();
    // 100,000 requests per run, as the acceptance asks, take about 14 minutes in a debug
    // build on a 2-core machine (see above): too long for every `make test`. The default
    // runs 10,000 (and -P 16 at 100,000, 10 s); NICEMU_KV_BENCH_N=100000 runs the full
    // size.
    let n = std::env::var("NICEMU_KV_BENCH_N").unwrap_or_else(|_| "10000".into());
    let net = namespace("k");
    // redis-benchmark -k 0 opens a connection per request: let the client reuse its ports
    // in TIME_WAIT and use all of them (this namespace's settings only).
    net.must(&["sysctl", "-qw", "net.ipv4.tcp_tw_reuse=1"]);
    net.must(&["sysctl", "-qw", "net.ipv4.ip_local_port_range=1024 65535"]);
    let tmp = TempDir::new("procs-kv");
    let prefix = format!("nicemu-test-pv-{}", std::process::id());
    let cfg = af_packet_config(&tmp, &net, &prefix);
    let mut kv = NicemuProc::spawn(&["kv", "-c", &cfg, "--no-pin"], &prefix);
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

    // redis-cli: binary values through -x (stdin bytes), read back raw.
    let bin: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let f = tmp.path("bin");
    std::fs::write(&f, &bin).unwrap();
    let g = tmp.path("got");
    net.must(&[
        "sh",
        "-c",
        &format!(
            "redis-cli -h {NIC_IP} -x set bin < {f} && redis-cli -h {NIC_IP} --raw get bin > {g}"
        ),
    ]);
    let mut want = bin.clone();
    want.push(b'\n');
    assert_eq!(std::fs::read(&g).unwrap(), want, "binary value round trip");
    let r = net.must(&["redis-cli", "-h", NIC_IP, "strlen", "bin"]);
    assert_eq!(r.trim(), "3000");

    let full = "100000".to_string();
    for extra in [&[][..], &["-k", "0"][..], &["-P", "16"][..]] {
        let t = Instant::now();
        // Pipelined, the full size takes seconds.
        let n = if extra.first() == Some(&"-P") {
            &full
        } else {
            &n
        };
        let mut args = vec![
            "timeout",
            "900",
            "redis-benchmark",
            "-h",
            NIC_IP,
            "-t",
            "ping,set,get,incr,mset",
            "-n",
            n,
            "-c",
            "50",
            "-q",
        ];
        args.extend_from_slice(extra);
        let out = net
            .command(&args)
            .output()
            .unwrap_or_else(|e| panic!("redis-benchmark: {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "redis-benchmark {extra:?} -n {n}: {:?}\n{text}",
            t.elapsed()
        );
        assert!(out.status.success(), "{text}\n{}", kv.describe());
        let lower = text.to_lowercase();
        assert!(
            !lower.contains("error") && !lower.contains("err "),
            "{text}"
        );
        // One result line per test (PING_INLINE, PING_MBULK, SET, GET, INCR, MSET).
        let results = text
            .split(['\r', '\n'])
            .filter(|l| l.contains("requests per second"))
            .count();
        assert!(results >= 6, "{text}");
    }
    let status = kv.interrupt_and_wait(Duration::from_secs(15));
    let out = kv.stdout();
    assert!(status.is_some_and(|s| s.success()), "{}", kv.describe());
    println!("{out}");
    assert!(
        counter(&out, "kv: commands", "commands").unwrap_or(0) > 0,
        "{out}"
    );
    println!("procs_kv_redis_tools took {:?}", started.elapsed());
}

/// `--help` names the options; bad input ends with one error line and a failure status,
/// before any port is opened (no panic).
#[test]
fn procs_cli_help_and_bad_input() {
    let nicemu = env!("CARGO_BIN_EXE_nicemu");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(nicemu)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            o.status,
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    let (st, help) = run(&["loadgen", "--help"]);
    assert!(st.success(), "{help}");
    for opt in [
        "--server",
        "--proto",
        "--size",
        "--conns",
        "--per-conn",
        "--count",
        "--duration",
        "--clients",
        "--offload",
        "EAL",
    ] {
        assert!(help.contains(opt), "loadgen --help lacks {opt}:\n{help}");
    }
    for (sub, opts) in [
        ("echo", &["--port", "--size", "--no-offload"][..]),
        ("kv", &["--port", "--no-offload", "--maxmemory"][..]),
    ] {
        let (st, help) = run(&[sub, "--help"]);
        assert!(st.success(), "{help}");
        for opt in opts {
            assert!(help.contains(opt), "{sub} --help lacks {opt}:\n{help}");
        }
    }
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/af-packet.toml");
    for (args, want) in [
        (
            &[
                "loadgen",
                "-c",
                cfg,
                "--server",
                "192.0.2.2:7",
                "--clients",
                "10.0.0.0/30",
            ][..],
            "outside the port's subnet",
        ),
        (
            &[
                "loadgen",
                "-c",
                cfg,
                "--server",
                "192.0.2.2:7",
                "--clients",
                "x",
            ][..],
            "--clients",
        ),
        (
            &[
                "loadgen",
                "-c",
                cfg,
                "--server",
                "192.0.2.2:7",
                "--ephemeral",
                "9-5",
            ][..],
            "--ephemeral",
        ),
        (
            &[
                "loadgen",
                "-c",
                cfg,
                "--server",
                "192.0.2.2:7",
                "--proto",
                "ftp",
            ][..],
            "unknown protocol",
        ),
        (
            &[
                "loadgen",
                "-c",
                cfg,
                "--server",
                "192.0.2.2:7",
                "--conns",
                "0",
            ][..],
            "--conns",
        ),
        (&["echo", "-c", cfg, "--size", "0"][..], "--size"),
        (&["kv", "-c", "/nonexistent.toml"][..], "nonexistent"),
    ] {
        let (st, out) = run(args);
        assert!(!st.success(), "{args:?}: {out}");
        assert!(out.contains(want), "{args:?}: {out}");
        assert!(!out.contains("panicked"), "{args:?}: {out}");
    }
}

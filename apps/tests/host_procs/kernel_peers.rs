//! loadgen and echo over net_af_packet against the kernel: two queue pairs, python and nginx peers, unreachable and closed ports, several client addresses.

use super::*;

/// A namespace for the kernel peer and a nicemu configuration on its outer veth as
/// net_af_packet with two queue pairs and a `shared` lcore on each of two cores: (namespace,
/// scratch directory, DPDK file prefix, configuration path).
fn two_queue_pairs(tag: &str, id: &str) -> (Netns, TempDir, String, String) {
    let cores = dataplane::sys::allowed_cores().unwrap();
    assert!(
        cores.len() >= 2,
        "this test needs two usable cores, found {cores:?}"
    );
    let net = namespace(tag);
    let tmp = TempDir::new(&format!("procs-{id}"));
    let prefix = format!("nicemu-test-{id}-{}", std::process::id());
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
    (net, tmp, prefix, cfg)
}

/// Kernel clients to `nicemu echo` on net_af_packet with two queue pairs and a `shared`
/// lcore on each: Linux's packet fanout hands every ARP frame to one of the two sockets, so
/// only one lcore hears the kernel's ARP; the lcores share what they learn, and every
/// connection is answered whichever lcore its flow lands on (before they shared, about half
/// timed out: the other lcore could not resolve the client).
#[test]
fn procs_af_packet_two_queue_pairs_answer_every_kernel_client() {
    let (net, _tmp, prefix, cfg) = two_queue_pairs("q2", "afq2");
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

/// `nicemu loadgen` on net_af_packet with two queue pairs and a `shared` lcore on each, 400
/// short connections to a kernel echo server: the kernel's packet fanout brings each
/// connection's replies to either queue, whichever context opened it; the lcores hand them
/// to the lcore whose context did (by the residue of the local port), so every connection
/// completes and both contexts carry load. (Before, the other context answered the replies
/// of connections it never opened with a RST, and about half the connects failed.)
#[test]
fn procs_af_packet_two_queue_pairs_serve_every_outgoing_connection() {
    let (net, _tmp, prefix, cfg) = two_queue_pairs("q2c", "afq2c");
    let _py = start_py_echo(&net, "7");
    let (ok, out) = run_nicemu(
        &[
            "loadgen",
            "-c",
            &cfg,
            "--no-pin",
            "--server",
            &format!("{PEER_IP}:7"),
            "--size",
            "64",
            "--conns",
            "8",
            "--per-conn",
            "1",
            "--count",
            "400",
        ],
        &prefix,
        Duration::from_secs(90),
    );
    println!("{out}");
    assert_eq!(ok, Some(true), "{out}");
    assert_eq!(
        counter(&out, "loadgen: transactions", "transactions"),
        Some(400),
        "{out}"
    );
    assert_eq!(counter(&out, "loadgen: errors", "errors"), Some(0), "{out}");
    for k in 0..2 {
        let opens = counter(&out, &format!("host {k}:"), "active opens").unwrap_or(0);
        assert!(opens > 0, "host {k} opened none:\n{out}");
    }
    // Some replies reached the other queue and were handed over, none lost.
    let steered = counter(&out, "steering:", "steering:").unwrap_or(0);
    assert!(steered > 0, "no frame steered:\n{out}");
    assert_eq!(counter(&out, "steering:", "(dropped"), Some(0), "{out}");
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

/// `nicemu kv` on net_af_packet with two queue pairs and a `shared` lcore on each: the two
/// host contexts serve one keyspace, on port 50000, inside the default ephemeral range (the
/// contexts' range leaves it out, so its frames are not steered by the port's residue;
/// before, a third of the connections were reset). 40 kernel clients each set a key and read their
/// neighbour's (set through whichever context the neighbour's flow landed on), 20 of them
/// subscribe to a channel and each gets the message published through one connection,
/// redis-benchmark runs SET and GET with 50 connections without an error, and both contexts
/// ran commands. (Before, `nicemu kv` refused more than one NIC lcore.)
#[test]
fn procs_kv_two_queue_pairs_share_one_keyspace() {
    let (net, _tmp, prefix, cfg) = two_queue_pairs("q2k", "afq2k");
    let mut kv = start_server(
        &["kv", "-c", &cfg, "--no-pin", "--port", "50000"],
        &prefix,
        "one keyspace over 2 host contexts",
    );
    let client = r#"
import socket, sys, time
def cmd(*a):
    b = b"*%d\r\n" % len(a)
    for x in a:
        x = x.encode() if isinstance(x, str) else x
        b += b"$%d\r\n%s\r\n" % (len(x), x)
    return b
def reply(s, want):
    got = b""
    s.settimeout(10)
    while not got.endswith(want) and len(got) < 4096:
        c = s.recv(4096)
        if not c: break
        got += c
    return got
n = 40
conns = [socket.create_connection((sys.argv[1], 50000), timeout=10) for _ in range(n)]
for i, s in enumerate(conns):
    s.sendall(cmd("SET", "key%d" % i, "value%d" % i))
ok_set = sum(reply(s, b"+OK\r\n") == b"+OK\r\n" for s in conns)
ok_get = 0
for i, s in enumerate(conns):
    j = (i + 1) % n
    v = b"value%d" % j
    s.sendall(cmd("GET", "key%d" % j))
    ok_get += reply(s, v + b"\r\n") == b"$%d\r\n%s\r\n" % (len(v), v)
subs = conns[:20]
for s in subs:
    s.sendall(cmd("SUBSCRIBE", "news"))
    reply(s, b":1\r\n")
pub = conns[-1]
pub.sendall(cmd("PUBLISH", "news", "hello"))
count = reply(pub, b"\r\n")
msg = b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
ok_msg = sum(reply(s, msg) == msg for s in subs)
print("set", ok_set, "get", ok_get, "published", count.decode().strip(), "messages", ok_msg)
"#;
    let out = net.run(&["python3", "-c", client, NIC_IP]);
    let bench = net.run(&[
        "timeout",
        "120",
        "redis-benchmark",
        "-h",
        NIC_IP,
        "-p",
        "50000",
        "-t",
        "set,get",
        "-n",
        "5000",
        "-c",
        "50",
        "-q",
    ]);
    kv.interrupt_and_wait(Duration::from_secs(20));
    let kt = kv.describe();
    let out = out.unwrap_or_else(|e| panic!("client: {e}\n{kt}"));
    let bench = bench.unwrap_or_else(|e| panic!("redis-benchmark: {e}\n{kt}"));
    println!("{out}\n{bench}\n{kt}");
    assert!(kt.contains("ephemeral ports 32768-49999"), "{kt}");
    assert!(
        out.contains("set 40 get 40 published :20 messages 20"),
        "{out}\n{kt}"
    );
    let lower = bench.to_lowercase();
    assert!(!lower.contains("error"), "{bench}");
    let results = bench
        .split(['\r', '\n'])
        .filter(|l| l.contains("requests per second"))
        .count();
    assert_eq!(results, 2, "{bench}");
    // Both contexts accepted connections and ran commands.
    for k in 0..2 {
        let commands = counter(&kt, &format!("kv host {k}:"), "commands").unwrap_or(0);
        assert!(commands > 0, "host {k} ran no command:\n{kt}");
        let opens = counter(&kt, &format!("host {k}:"), "passive opens").unwrap_or(0);
        assert!(opens > 0, "host {k} accepted none:\n{kt}");
    }
}

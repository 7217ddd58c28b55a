//! AccelTCP connection splicing (§4.3) against unmodified Linux peers: `nicemu proxy` as a
//! real process on net_af_packet, curl and python clients in one namespace, nginx and
//! python servers in another, each reaching only the proxy (`common::proxy_topo`).
//!
//! - [`splice_netns_thousand_requests_under_loss`]: 1,000 requests with bodies from 0 B to
//!   10 MB, half on keep-alive connections and half one per connection, every body checked
//!   by SHA-256; SACK and timestamps on, window scales different on the two sides (the
//!   client's namespace lets its receive buffer grow to 32 MB, shift 10; the servers' to
//!   256 KB, shift 3; both checked on live connections); 5% random loss on every hop (a cBPF
//!   `ld rand` filter on the egress of each bridge port, redirecting to a dead-end veth).
//!   Afterwards the host saw no frame of a pair on the NIC (`late frames 0`) while the NIC
//!   translated the transfers.
//! - [`splice_netns_closure_reports_match_the_peers`]: the bytes of the closure reports
//!   equal what curl counted and what nginx logged, both directions.
//! - [`splice_netns_resets_reach_the_other_end`]: a RST from the server reaches the client;
//!   a RST from the client reaches the server; a backend that dies mid-transfer gives the
//!   client a reset, not a hang.
//!
//! Bounded: every wait has a limit; processes, namespaces, veths and temp files go also
//! when a test fails. Needs root, iproute2, ethtool, tc, curl, nginx, python3.
#![cfg(feature = "dpdk")]

mod common;

use std::time::{Duration, Instant};

use common::proc::Proc;
use common::proxy_topo::{port_config, ProxyProc, ProxyTopo, TempDir, PROXY_IP, SERVER_IP};
use common::waits::{counter, sha256, wait_for, write_files};

/// 5% of frames: `ld rand; jge #T, nomatch; ret #-1` with T = 5% of 2^32.
const LOSS_5: &str = "4,32 0 0 4294963256,53 0 1 214748365,6 0 0 0,6 0 0 4294967295";

/// Files served, by name and size.
const FILES: [(&str, usize); 7] = [
    ("f0", 0),
    ("f1", 1),
    ("f1k", 1_000),
    ("f10k", 10_000),
    ("f100k", 100_000),
    ("f1m", 1_000_000),
    ("f10m", 10_000_000),
];

/// nginx on `SERVER_IP:port` serving `root`, logging per request how long the request was,
/// what it sent and the request's number on its connection.
fn nginx_conf(dir: &str, root: &str, port: u16) -> String {
    format!(
        r#"daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format counts '$connection_requests $request_length $bytes_sent';
    access_log {dir}/access.log counts;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    default_type application/octet-stream;
    keepalive_requests 10000;
    server {{
        listen {SERVER_IP}:{port};
        root {root};
    }}
}}
"#
    )
}

/// A running test: the topology, its temp dir, the proxy.
struct Rig {
    topo: ProxyTopo,
    tmp: TempDir,
    www: String,
    backends: Vec<Proc>,
    proxy: Option<ProxyProc>,
    prefix: String,
}

impl Rig {
    fn new(tag: char) -> Rig {
        let topo = ProxyTopo::new(tag);
        let tmp = TempDir::new(&format!("splice-{tag}"));
        let www = tmp.path("www");
        write_files(&www, &FILES, 0x5911ce);
        Rig {
            topo,
            tmp,
            www,
            backends: Vec::new(),
            proxy: None,
            prefix: format!("nicemu-test-splice-{tag}-{}", std::process::id()),
        }
    }

    fn listening(&self, port: u16) -> bool {
        self.topo
            .server
            .run(&["ss", "-Hltn", &format!("sport = :{port}")])
            .is_ok_and(|o| o.contains(&port.to_string()))
    }

    fn start_nginx(&mut self, port: u16) {
        let conf = self.tmp.path("nginx.conf");
        std::fs::write(
            &conf,
            nginx_conf(&self.tmp.0.display().to_string(), &self.www, port),
        )
        .unwrap();
        let p = Proc::spawn(
            &self.topo.server,
            &[
                "nginx",
                "-c",
                &conf,
                "-p",
                &self.tmp.path(""),
                "-e",
                "stderr",
            ],
        );
        self.backends.push(p);
        assert!(
            wait_for(Duration::from_secs(10), || self.listening(port)),
            "nginx did not start"
        );
    }

    fn start_python_http(&mut self, port: u16) {
        let p = Proc::spawn(
            &self.topo.server,
            &[
                "python3",
                "-m",
                "http.server",
                &port.to_string(),
                "--protocol",
                "HTTP/1.1",
                "--bind",
                SERVER_IP,
                "--directory",
                &self.www,
            ],
        );
        self.backends.push(p);
        assert!(
            wait_for(Duration::from_secs(10), || self.listening(port)),
            "python http.server did not start"
        );
    }

    /// Starts `nicemu proxy` (splicing) in front of `backends` and waits until it serves
    /// `probe`.
    fn start_proxy(&mut self, backends: &[u16], probe: &str) {
        let cores = dataplane::sys::allowed_cores().unwrap();
        let core = cores[0];
        let list: Vec<String> = backends
            .iter()
            .map(|p| format!("\"{SERVER_IP}:{p}\""))
            .collect();
        let cfg = self.tmp.path("proxy.toml");
        std::fs::write(
            &cfg,
            format!(
                r#"
{ports}[[lcore]]
core = {core}
role = "shared"
[proxy]
listen = 80
backends = [{list}]
policy = "round-robin"
# AccelTCP's epproxy: splice right after the first head (the default http mode splices
# only a connection's last exchange).
mode = "tunnel"
add_header = "X-Forwarded-For"
connect_timeout_ms = 10000
# Under the loss test's 5% each way, a client whose SYN-ACK was lost once measures a 1 s
# RTT and sends its head at an RTO of about 2 s (0, 2, 6 s): the default 10 s left three
# tries, and about one such connection in 8,000 got a 408.
request_timeout_ms = 30000
max_clients = 4096
splice = true
"#,
                ports = port_config(core, &self.prefix, self.topo.proxy_iface()),
                list = list.join(", ")
            ),
        )
        .unwrap();
        let mut proxy = ProxyProc::spawn(&["proxy", "-c", &cfg], &self.prefix);
        let url = format!("http://{PROXY_IP}/{probe}");
        let up = wait_for(Duration::from_secs(20), || {
            proxy.exited().is_none()
                && self
                    .topo
                    .client
                    .run(&[
                        "curl",
                        "-s",
                        "--max-time",
                        "2",
                        "-o",
                        "/dev/null",
                        "-w",
                        "%{http_code}",
                        &url,
                    ])
                    .is_ok_and(|c| c == "200")
        });
        assert!(up, "the proxy did not serve: {}", proxy.describe());
        self.proxy = Some(proxy);
    }

    /// Ctrl-C to the proxy after `settle` (closures reported after the linger); its
    /// output.
    fn stop_proxy(&mut self, settle: Duration) -> String {
        std::thread::sleep(settle);
        let proxy = self.proxy.as_mut().expect("started");
        let status = proxy.interrupt_and_wait(Duration::from_secs(20));
        assert!(
            status.is_some_and(|s| s.success()),
            "the proxy did not stop cleanly: {}",
            proxy.describe()
        );
        proxy.stdout()
    }

    fn shas(&self) -> Vec<String> {
        FILES
            .iter()
            .map(|(n, _)| format!("{n}={}", sha256(&format!("{}/{n}", self.www))))
            .collect()
    }
}

/// 5% loss on every port of the bridge (frames towards the proxy, the client and the
/// server), redirected to a dead-end veth in the bridge's namespace; segmentation offload
/// off on the kernel's ends so that each frame is one packet.
fn add_loss(t: &ProxyTopo) {
    let b = &t.bridge;
    let sink = b.sink();
    let sink_peer = format!("{sink}p");
    b.must(&[
        "ip", "link", "add", sink, "type", "veth", "peer", "name", &sink_peer,
    ]);
    for dev in [sink, sink_peer.as_str()] {
        b.disable_ipv6(dev).unwrap_or_else(|e| panic!("{e}"));
        b.must(&["ip", "link", "set", dev, "up"]);
    }
    for n in [&t.client, &t.server] {
        n.must(&["ip", "link", "set", "dev", n.inner(), "gso_max_segs", "1"]);
    }
    for port in [b.inner(), t.client.outer(), t.server.outer()] {
        b.must(&["tc", "qdisc", "add", "dev", port, "clsact"]);
        b.must(&[
            "tc", "filter", "add", "dev", port, "egress", "bpf", "bytecode", LOSS_5, "action",
            "mirred", "egress", "redirect", "dev", sink,
        ]);
    }
}

/// Frames the loss filters took.
fn dropped(t: &ProxyTopo) -> u64 {
    let b = &t.bridge;
    [b.inner(), t.client.outer(), t.server.outer()]
        .iter()
        .map(|port| {
            let text = b.must(&["tc", "-s", "filter", "show", "dev", port, "egress"]);
            text.split("Sent ")
                .nth(1)
                .and_then(|s| s.split(" bytes ").nth(1))
                .and_then(|s| s.split(" pkt").next())
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// The python load: `argv`: proxy ip, port, then name=sha pairs. 1,000 requests over 16
/// threads: 500 on 50 keep-alive connections of 10 requests, 500 on a connection each;
/// sizes cycle through the small files with a 1 MB file every 50th and a 10 MB file every
/// 250th request. Prints the first connection's TCP_INFO options and window shifts, then
/// `ok N BYTES`, or the first failure with its connection's local port and TCP_INFO.
const PY_LOAD: &str = r#"
import sys, socket, hashlib, http.client, struct, threading
from concurrent.futures import ThreadPoolExecutor
ip, port = sys.argv[1], int(sys.argv[2])
want = dict(a.split('=') for a in sys.argv[3:])
small = ['f0', 'f1', 'f1k', 'f10k', 'f100k']
def name(i):
    if i % 250 == 249: return 'f10m'
    if i % 50 == 49: return 'f1m'
    return small[i % len(small)]
lock = threading.Lock()
info = []
total = [0]
def where(s):
    # Where the connection stood (Linux's struct tcp_info): its local port, state,
    # retransmissions, unacknowledged segments, and how long ago data last went and came.
    try:
        t = struct.unpack('8B24I', s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104))
        return (' [local port %d: state %d retransmits %d backoff %d rto %d us unacked %d '
                'lost %d total retrans %d last data sent %d ms last data recv %d ms '
                'last ack recv %d ms]' % (s.getsockname()[1], t[0], t[2], t[4], t[8], t[12],
                                          t[14], t[31], t[17], t[19], t[20]))
    except Exception as e:
        return ' (no tcp_info: %r)' % e
def check(i, r, body, s):
    n = name(i)
    if r.status != 200: raise Exception('request %d (%s): status %d%s' % (i, n, r.status, where(s)))
    if hashlib.sha256(body).hexdigest() != want[n]: raise Exception('request %d (%s): body differs (%d bytes)%s' % (i, n, len(body), where(s)))
    with lock: total[0] += len(body)
def keepalive(c):
    conn = http.client.HTTPConnection(ip, port, timeout=60)
    conn.connect()
    # A second descriptor of the socket: readable after http.client closed its own.
    s = conn.sock.dup()
    for k in range(10):
        i = c * 10 + k
        conn.request('GET', '/' + name(i))
        r = conn.getresponse(); body = r.read(); check(i, r, body, s)
        if c == 0 and k == 0:
            t = conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
            with lock: info.append((t[5], t[6] & 15, t[6] >> 4))
    conn.close(); s.close()
def single(i):
    conn = http.client.HTTPConnection(ip, port, timeout=60)
    conn.connect()
    s = conn.sock.dup()
    conn.request('GET', '/' + name(i), headers={'Connection': 'close'})
    r = conn.getresponse(); body = r.read(); check(i, r, body, s)
    conn.close(); s.close()
with ThreadPoolExecutor(16) as ex:
    futs = [ex.submit(keepalive, c) for c in range(50)] + [ex.submit(single, 500 + i) for i in range(500)]
    for f in futs: f.result()
o, snd, rcv = info[0]
print('tcpinfo options %d snd_wscale %d rcv_wscale %d' % (o, snd, rcv))
print('ok 1000 %d' % total[0])
"#;

#[test]
fn splice_netns_thousand_requests_under_loss() {
    let started = Instant::now();
    let mut rig = Rig::new('l');
    // SACK and timestamps on (the defaults, said explicitly); different window scales.
    for (n, rmem) in [
        (&rig.topo.client, "4096 131072 33554432"),
        (&rig.topo.server, "4096 65536 262144"),
    ] {
        n.must(&["sysctl", "-qw", "net.ipv4.tcp_sack=1"]);
        n.must(&["sysctl", "-qw", "net.ipv4.tcp_timestamps=1"]);
        n.must(&["sysctl", "-qw", "net.ipv4.tcp_window_scaling=1"]);
        n.must(&["sysctl", "-qw", &format!("net.ipv4.tcp_rmem={rmem}")]);
    }
    rig.start_nginx(8080);
    rig.start_python_http(8081);
    rig.start_proxy(&[8080, 8081], "f1");
    add_loss(&rig.topo);
    let shas = rig.shas();
    let mut argv = vec!["python3", "-c", PY_LOAD, PROXY_IP, "80"];
    argv.extend(shas.iter().map(String::as_str));
    let mut load = Proc::spawn(&rig.topo.client, &argv);
    // The server side's window shifts, read off a live spliced connection.
    let mut server_ss = String::new();
    let seen = wait_for(Duration::from_secs(60), || {
        if let Ok(o) =
            rig.topo
                .server
                .run(&["ss", "-tinH", "state", "established", "( sport = :8080 )"])
        {
            if o.contains("wscale:") {
                server_ss = o;
                return true;
            }
        }
        load.exited().is_some()
    });
    assert!(seen, "no established server connection seen");
    let finished = wait_for(Duration::from_secs(240), || load.exited().is_some());
    let out = load.stdout();
    if !(finished && out.contains("ok 1000")) {
        // The proxy's whole summary (its 408s told apart, the host's and the NIC's
        // counters) says where a request was lost.
        let text = rig.stop_proxy(Duration::from_secs(2));
        panic!("the load failed: {}\n{text}", load.describe());
    }
    let drops = dropped(&rig.topo);
    println!("{out}\nloss filters dropped {drops} frames\nserver side: {server_ss}");
    assert!(drops > 100, "the loss filters dropped only {drops} frames");
    // The client's connection: timestamps (1), SACK (2), window scaling (4); its own
    // receive shift 10.
    let opts = counter(&out, "tcpinfo", "options").unwrap();
    assert_eq!(opts & 7, 7, "{out}");
    assert_eq!(counter(&out, "tcpinfo", "rcv_wscale"), Some(10), "{out}");
    // The server's connections (ss: wscale:snd,rcv): a receive shift other than the
    // client's. Linux picks it from the larger of tcp_rmem's maximum and the machine-wide
    // net.core.rmem_max.
    let ws = server_ss
        .split("wscale:")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    let server_rcv: u64 = ws
        .split(',')
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(99);
    let rmem_max: u64 = dataplane::netns::must(&["sysctl", "-n", "net.core.rmem_max"])
        .trim()
        .parse()
        .unwrap();
    let want = (0..=14u64)
        .find(|&k| (rmem_max.max(262_144) >> k) <= 65_535)
        .unwrap();
    assert_eq!(server_rcv, want, "server's shifts {ws}: {server_ss}");
    assert_ne!(server_rcv, 10, "the two sides' window scales differ");
    let text = rig.stop_proxy(Duration::from_secs(2));
    println!("{text}");
    let c = |line: &str, key: &str| {
        counter(&text, line, key).unwrap_or_else(|| panic!("no `{key}` in `{line}`:\n{text}"))
    };
    let spliced = c("proxy: spliced pairs", "spliced pairs");
    assert!(spliced >= 550, "spliced {spliced}:\n{text}");
    assert_eq!(c("proxy: spliced pairs", "refused"), 0, "{text}");
    assert_eq!(c("proxy: relayed pairs", "relayed pairs"), 0, "{text}");
    // After the install no frame of a spliced pair reached the host.
    assert_eq!(c("host splice:", "late frames"), 0, "{text}");
    // Both sides had timestamps and SACK: the NIC mapped them and never stripped any (an
    // option the out side lacks becomes NOPs and is counted; a pair whose sides disagree
    // on timestamps is not spliced at all, and relayed pairs is 0 above).
    for k in ["sack_stripped", "ts_stripped", "ts_missing"] {
        assert_eq!(
            counter(&text, "offload splice:", k).unwrap_or(0),
            0,
            "{k}: {text}"
        );
    }
    assert!(
        counter(&text, "offload splice:", "translated_ba").unwrap_or(0) > 50_000,
        "{text}"
    );
    println!("splice_netns under loss took {:?}", started.elapsed());
}

/// One curl line: size_request size_header size_download num_connects http_code.
const CURL_W: &str =
    "%{size_request} %{size_header} %{size_download} %{num_connects} %{http_code}\\n";

#[test]
fn splice_netns_closure_reports_match_the_peers() {
    let mut rig = Rig::new('m');
    rig.start_nginx(8080);
    rig.start_proxy(&[8080], "f1");
    // nginx's log starts with the probe's request.
    let log = rig.tmp.path("access.log");
    let url = |n: &str| format!("http://{PROXY_IP}/{n}");
    let mut lines = String::new();
    // Keep-alive: every file in one invocation.
    let mut cmd: Vec<String> = ["curl", "-sS", "--max-time", "60", "-w", CURL_W]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (n, _) in FILES {
        cmd.extend(["-o".into(), "/dev/null".into(), url(n)]);
    }
    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    lines += &rig.topo.client.must(&argv);
    lines.push('\n');
    // One connection per request.
    for (n, _) in FILES {
        lines += &rig.topo.client.must(&[
            "curl",
            "-sS",
            "--max-time",
            "60",
            "-o",
            "/dev/null",
            "-w",
            CURL_W,
            &url(n),
        ]);
        lines.push('\n');
    }
    let text = rig.stop_proxy(Duration::from_secs(2));
    println!("{lines}\n{text}");
    // What curl counted: every response byte came through a splice; the requests after
    // the first on a connection too (the proxy forwarded the first head itself).
    let (mut s2c, mut c2s, mut n) = (0u64, 0u64, 0);
    for l in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert_eq!(v[4], 200, "{l}");
        s2c += v[1] + v[2];
        if v[3] == 0 {
            c2s += v[0];
        }
        n += 1;
    }
    assert_eq!(n, 2 * FILES.len());
    // What nginx counted (the probe first, then curl's requests).
    let (mut sent, mut sent_all, mut later_requests) = (0u64, 0u64, 0u64);
    let access = std::fs::read_to_string(&log).unwrap();
    assert_eq!(access.lines().count(), 1 + 2 * FILES.len(), "{access}");
    for (i, l) in access.lines().enumerate() {
        let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        sent_all += v[2];
        if i > 0 {
            sent += v[2];
        }
        if v[0] > 1 {
            later_requests += v[1];
        }
    }
    assert_eq!(
        sent, s2c,
        "nginx sent {sent}, curl received {s2c}\n{access}"
    );
    assert_eq!(later_requests, c2s, "nginx {access}");
    let c = |line: &str, key: &str| {
        counter(&text, line, key).unwrap_or_else(|| panic!("no `{key}` in `{line}`:\n{text}"))
    };
    let spliced = c("proxy: spliced pairs", "spliced pairs");
    let closed = c("proxy: spliced pairs", "closed");
    assert_eq!(spliced, closed, "every pair reported:\n{text}");
    let rep_c2s = c("proxy: spliced pairs", "bytes c2s");
    let rep_s2c = c("proxy: spliced pairs", "s2c");
    // The reports cover the probe's pair too (one request on its connection: no c2s).
    assert_eq!(
        rep_s2c, sent_all,
        "closure reports s2c {rep_s2c}, nginx {sent_all}:\n{text}"
    );
    assert_eq!(
        rep_c2s, c2s,
        "closure reports c2s {rep_c2s}, curl {c2s}:\n{text}"
    );
}

/// The reset backend: `GET /rst` → headers and 100 KB, then a RST (SO_LINGER 0) and no FIN
/// (the handler closes the socket itself: socketserver would shut it down for writing
/// first, a FIN, and a proxy that relays that FIN before the RST arrives rightly ends the
/// client's side with a FIN, as Linux's recv returns end of stream after a FIN); `GET
/// /stream` → a 50 MB response sent until the client goes, recording how sending ended in
/// `DIR/stream.end`; `GET /die` → headers and 100 KB, then the backend waits to be killed
/// (that socket has SO_LINGER 0: a killed process resets it); anything else → a 2-byte
/// response.
const PY_RST_SERVER: &str = r#"
import sys, socket, struct, socketserver, time
ip, port, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class H(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        buf = b''
        while b'\r\n\r\n' not in buf:
            c = s.recv(4096)
            if not c: return
            buf += c
        path = buf.split(b' ')[1]
        if path == b'/stream':
            s.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 50000000\r\n\r\n')
            try:
                for _ in range(50000000 // 10000):
                    s.sendall(b'x' * 10000)
                end = 'complete'
            except ConnectionResetError: end = 'reset'
            except BrokenPipeError: end = 'pipe'
            open(d + '/stream.end', 'w').write(end)
            return
        if path not in (b'/rst', b'/die'):
            s.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')
            return
        # A close with SO_LINGER 0 (or the death of the process) sends a RST.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        s.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n' + b'y' * 100000)
        if path == b'/die':
            open(d + '/die.ready', 'w').write('1')
            time.sleep(600)
        s.close()
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
S((ip, port), H).serve_forever()
"#;

/// A client that reuses one source port: `argv`: proxy ip, port, source port, count.
/// Each connection asks for `f1k` with `Connection: close`, so the server closes first and
/// the client, once it has the last ACK, holds nothing on the port (no TIME-WAIT): the next
/// connect may take the same 4-tuple at once. Prints `got N` per response (its length).
const PY_REUSE: &str = r#"
import socket, sys, time
ip, port, lport, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for i in range(n):
    for k in range(200):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.settimeout(10)
        try:
            s.bind(('', lport)); s.connect((ip, port)); break
        except OSError:
            s.close(); time.sleep(0.005)
    else:
        raise Exception('connection %d: the port never came free' % i)
    s.sendall(b'GET /f1k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    data = b''
    while True:
        d = s.recv(65536)
        if not d: break
        data += d
    s.close()
    print('got %d %s' % (len(data), data.split(b'\r\n')[0].decode()))
"#;

/// A client may reuse its 4-tuple as soon as its side has closed, while the NIC still
/// lets the old pair linger: the new connection must reach the proxy (and be spliced
/// itself), not be translated into the old pair behind the proxy's back (RFC 9293
/// §3.10.7.4; RFC 6191). The full suite once hit this by chance: parallel tests in other
/// namespaces advance Linux's ephemeral-port walk for the same addresses, so a client
/// there came back to a just-closed port within the linger.
#[test]
fn splice_netns_a_reused_client_port_is_a_new_connection() {
    let mut rig = Rig::new('u');
    rig.start_nginx(8080);
    rig.start_proxy(&[8080], "f1");
    let out = rig
        .topo
        .client
        .run(&["python3", "-c", PY_REUSE, PROXY_IP, "80", "41234", "3"])
        .unwrap_or_else(|e| panic!("client: {e}"));
    let got: Vec<&str> = out.lines().filter(|l| l.starts_with("got ")).collect();
    assert_eq!(got.len(), 3, "{out}");
    for l in &got {
        assert!(l.ends_with("200 OK"), "{out}");
        let n: usize = l.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(n > 1_000, "{out}");
    }
    let text = rig.stop_proxy(Duration::from_secs(2));
    println!("{out}\n{text}");
    let c = |line: &str, key: &str| {
        counter(&text, line, key).unwrap_or_else(|| panic!("no `{key}` in `{line}`:\n{text}"))
    };
    // The probe and the three connections, each accepted and spliced by the proxy.
    assert_eq!(c("proxy: spliced pairs", "spliced pairs"), 4, "{text}");
    assert_eq!(c("host:", "passive opens"), 4, "{text}");
    assert_eq!(c("proxy: spliced pairs", "closed"), 4, "{text}");
    // The reconnects came within the linger: the NIC ended the old pairs for them.
    assert_eq!(
        counter(&text, "offload splice:", "reopened").unwrap_or(0),
        2,
        "{text}"
    );
    assert_eq!(c("host splice:", "late frames"), 0, "{text}");
}

/// The client side: `argv`: proxy ip, port, case. `rst` and `die`: read until the
/// connection ends, print how (`reset`, `eof`, `timeout`); `stream`: read 1 MB, then reset
/// the connection (SO_LINGER 0).
const PY_RST_CLIENT: &str = r#"
import sys, socket, struct
ip, port, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((ip, port), timeout=20)
s.sendall(('GET /%s HTTP/1.1\r\nHost: x\r\n\r\n' % case).encode())
got = 0
head = b''
try:
    while True:
        c = s.recv(65536)
        if not c:
            print('eof', got, head[:200]); break
        if got < 200: head += c
        got += len(c)
        if case == 'stream' and got > 1000000:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            s.close(); print('sent-rst', got); break
        if case == 'die' and got > 50000:
            print('ready', got, flush=True)
except ConnectionResetError: print('reset', got)
except socket.timeout: print('timeout', got)
"#;

#[test]
fn splice_netns_resets_reach_the_other_end() {
    let mut rig = Rig::new('r');
    let dir = rig.tmp.path("");
    let server = Proc::spawn(
        &rig.topo.server,
        &["python3", "-c", PY_RST_SERVER, SERVER_IP, "8090", &dir],
    );
    rig.backends.push(server);
    assert!(
        wait_for(Duration::from_secs(10), || rig.listening(8090)),
        "the reset backend did not start"
    );
    rig.start_proxy(&[8090], "probe");
    let client = |case: &str| {
        rig.topo
            .client
            .run(&["python3", "-c", PY_RST_CLIENT, PROXY_IP, "80", case])
            .unwrap_or_else(|e| panic!("client {case}: {e}"))
    };
    // A RST from the server reaches the client.
    let r = client("rst");
    assert!(r.starts_with("reset"), "server RST: the client saw {r}");
    // A RST from the client reaches the server (its send fails with ECONNRESET or EPIPE).
    let r = client("stream");
    assert!(r.starts_with("sent-rst"), "{r}");
    let end_file = format!("{dir}/stream.end");
    assert!(
        wait_for(Duration::from_secs(10), || std::path::Path::new(&end_file)
            .exists()),
        "the server never saw the client's RST"
    );
    let end = std::fs::read_to_string(&end_file).unwrap();
    assert!(
        end == "reset" || end == "pipe",
        "the server's send ended: {end}"
    );
    // The backend dies mid-transfer: the client gets a reset, not a hang.
    let mut die = Proc::spawn(
        &rig.topo.client,
        &["python3", "-c", PY_RST_CLIENT, PROXY_IP, "80", "die"],
    );
    let ready = format!("{dir}/die.ready");
    assert!(
        wait_for(Duration::from_secs(10), || std::path::Path::new(&ready)
            .exists()),
        "the dying backend never got its request"
    );
    std::thread::sleep(Duration::from_millis(300));
    for b in rig.backends.drain(..) {
        drop(b); // killed: its sockets reset
    }
    assert!(
        wait_for(Duration::from_secs(15), || die.exited().is_some()),
        "the client hung after the backend died: {}",
        die.describe()
    );
    let out = die.stdout();
    assert!(
        out.lines().last().is_some_and(|l| l.starts_with("reset")),
        "after the backend died the client saw: {out}"
    );
    let text = rig.stop_proxy(Duration::from_secs(1));
    println!("{text}");
    let resets = counter(&text, "proxy: spliced pairs", "reset or idle").unwrap_or(0);
    assert!(resets >= 3, "closures by reset {resets}:\n{text}");
}

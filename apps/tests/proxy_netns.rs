//! `nicemu proxy` as a real process against unmodified Linux peers: the proxy runs on DPDK's
//! net_af_packet over a veth whose other end is on a bridge in a namespace this test
//! creates; a client namespace (curl, python's http.client) and a server namespace (nginx
//! on 8080, `python3 -m http.server --protocol HTTP/1.1` on 8081, nothing on 8082) hang off the same bridge and
//! reach only the proxy (`common::proxy_topo`).
//!
//! Each test: bodies of 0 B, 1 B, 100 KB, 1 MB and 10 MB through the proxy, checked by
//! SHA-256, with keep-alive (all URLs in one curl invocation: one connection, the rest
//! reuse it; one http.client connection) and without (one connection per request; curl's
//! say `Connection: close`); a
//! malformed request gets 400 and a 20 KB head 431; the backend on 8082 refuses and the
//! others take its requests; with nginx and python stopped, 502. Then Ctrl-C, and the
//! summary's counters are checked.
//!
//! [`proxy_netns_relay`] runs with `--no-splice` (the host relays), with one `shared` lcore;
//! [`proxy_netns_relay_host_lcore`] the same with a `nic` and a `host` lcore (two threads).
//! [`proxy_netns_splice`] runs with splicing ([`proxy_netns_splice_two_queues`] the same on
//! two queue pairs with a `shared` lcore each) and checks that the closing exchanges with a
//! body still to come (100 KB, 1 MB, 10 MB) were spliced (`spliced pairs N`, N >= 3); the
//! proxy is in its default `http` mode, so every request is parsed and no pair is relayed
//! as a tunnel. [`proxy_netns_silent_and_closing_backends`] puts two misbehaving python
//! backends behind the proxy: one never answers (504 after `response_timeout_ms`), one
//! closes before its response (502).
//!
//! Bounded: every wait has a limit, and processes, namespaces, veths, temp files and DPDK's
//! runtime directory are removed also when the test fails. Needs root, iproute2, ethtool,
//! curl, nginx (nginx-light), python3 (`ci/install-deps.sh`).
#![cfg(feature = "dpdk")]

mod common;

use std::time::{Duration, Instant};

use common::proc::Proc;
use common::proxy_topo::{
    nginx_conf, port_config, ProxyProc, ProxyTopo, TempDir, CLIENT_IP, PROXY_IP, SERVER_IP,
};
use common::waits::{counter, sha256, wait_for, write_files};

/// The files served, by name and size.
const FILES: [(&str, usize); 5] = [
    ("f0", 0),
    ("f1", 1),
    ("f100k", 100_000),
    ("f1m", 1_000_000),
    ("f10m", 10_000_000),
];

/// Fetches each `path=sha256` argument over one keep-alive connection (checking that
/// http.client kept its socket), then each over its own connection; prints `ok`.
const PY_CLIENT: &str = r#"
import hashlib, http.client, sys
host, port = sys.argv[1], int(sys.argv[2])
files = [a.split("=", 1) for a in sys.argv[3:]]
def get(c, path, sha):
    c.request("GET", "/" + path)
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit("%s: status %d" % (path, r.status))
    if hashlib.sha256(body).hexdigest() != sha:
        raise SystemExit("%s: SHA-256 differs (%d bytes)" % (path, len(body)))
c = http.client.HTTPConnection(host, port, timeout=30)
sock = None
for p, s in files:
    get(c, p, s)
    if sock is None:
        sock = c.sock
    elif c.sock is not sock:
        raise SystemExit("keep-alive: http.client opened a new connection for " + p)
c.close()
for p, s in files:
    c = http.client.HTTPConnection(host, port, timeout=30)
    get(c, p, s)
    c.close()
print("ok", flush=True)
"#;

/// A malformed request gets 400, a 20 KB head 431, both with `Connection: close` and the
/// connection closed after; prints `ok`.
const PY_ERRORS: &str = r#"
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
def exchange(data):
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(data)
    got = b""
    while True:
        k = s.recv(65536)
        if not k:
            break
        got += k
    s.close()
    return got
r = exchange(b"THIS IS NOT HTTP\r\n\r\n")
if not r.startswith(b"HTTP/1.1 400 ") or b"Connection: close" not in r:
    raise SystemExit("malformed request: %r" % r)
r = exchange(b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n")
if not r.startswith(b"HTTP/1.1 431 "):
    raise SystemExit("large head: %r" % r)
print("ok", flush=True)
"#;

/// A `nicemu proxy` configuration: `ports`, `lcores`, and a `[proxy]` table listening on
/// port 80 with the TOML lines `proxy`.
fn proxy_toml(ports: &str, lcores: &str, proxy: &str) -> String {
    format!("\n{ports}{lcores}\n[proxy]\nlisten = 80\n{proxy}")
}

/// How the proxy's threads are laid out.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// One `shared` lcore.
    Shared,
    /// A `nic` lcore and a `host` lcore.
    NicHost,
    /// Two `shared` lcores on two queue pairs of the port (`qpairs=2`).
    TwoQueues,
}

fn run(splice: bool, tag: char, layout: Layout) {
    let started = Instant::now();
    let topo = ProxyTopo::new(tag);
    let tmp = TempDir::new(&format!("proxy-{tag}"));
    let www = tmp.path("www");
    write_files(&www, &FILES, 0x5eed);
    let shas: Vec<(&str, String)> = FILES
        .iter()
        .map(|(n, _)| (*n, sha256(&format!("{www}/{n}"))))
        .collect();

    // The backends: nginx on 8080, python on 8081 (nothing on 8082).
    let conf = tmp.path("nginx.conf");
    std::fs::write(
        &conf,
        nginx_conf(&tmp.0.display().to_string(), &www, SERVER_IP, 8080),
    )
    .unwrap();
    let nginx = Proc::spawn(
        &topo.server,
        &["nginx", "-c", &conf, "-p", &tmp.path(""), "-e", "stderr"],
    );
    let pyserver = Proc::spawn(
        &topo.server,
        &[
            "python3",
            "-m",
            "http.server",
            "8081",
            // Keep-alive (its default, HTTP/1.0, closes after each response).
            "--protocol",
            "HTTP/1.1",
            "--bind",
            SERVER_IP,
            "--directory",
            &www,
        ],
    );
    let mut backends = Some((nginx, pyserver));
    let listening = |port: &str| {
        topo.server
            .run(&["ss", "-Hltn", &format!("sport = :{port}")])
            .is_ok_and(|o| o.contains(port))
    };
    assert!(
        wait_for(Duration::from_secs(10), || listening("8080")
            && listening("8081")),
        "the backends did not start: {}",
        backends
            .as_mut()
            .map(|(a, b)| format!("{}\n{}", a.describe(), b.describe()))
            .unwrap_or_default()
    );

    // The client reaches only the proxy.
    let direct = topo.client.run(&[
        "curl",
        "-sS",
        "--max-time",
        "3",
        "-o",
        "/dev/null",
        &format!("http://{SERVER_IP}:8080/f1"),
    ]);
    assert!(direct.is_err(), "the client reached a server directly");

    // The proxy.
    let cores = dataplane::sys::allowed_cores().unwrap();
    let core = cores[0];
    // One lcore for both sides, or the NIC on one core and the host (with the proxy) on
    // another.
    let lcores = match (cores.get(1), layout) {
        (Some(host), Layout::NicHost) => {
            format!("[[lcore]]\ncore = {core}\nrole = \"nic\"\n[[lcore]]\ncore = {host}\nrole = \"host\"")
        }
        (Some(other), Layout::TwoQueues) => {
            format!("[[lcore]]\ncore = {core}\nrole = \"shared\"\n[[lcore]]\ncore = {other}\nrole = \"shared\"")
        }
        _ => format!("[[lcore]]\ncore = {core}\nrole = \"shared\""),
    };
    let prefix = format!("nicemu-test-proxy-{tag}-{}", std::process::id());
    let cfg = tmp.path("proxy.toml");
    let table = format!(
        r#"backends = ["{SERVER_IP}:8082", "{SERVER_IP}:8080", "{SERVER_IP}:8081"]
policy = "round-robin"
add_header = "X-Forwarded-For"
connect_timeout_ms = 2000
down_ms = 300
splice = true
"#
    );
    let mut ports = port_config(core, &prefix, topo.proxy_iface());
    if layout == Layout::TwoQueues {
        let iface = format!("iface={}", topo.proxy_iface());
        ports = ports.replace(&iface, &format!("{iface},qpairs=2"));
    }
    std::fs::write(&cfg, proxy_toml(&ports, &lcores, &table)).unwrap();
    let mut args = vec!["proxy", "-c", cfg.as_str()];
    if !splice {
        args.push("--no-splice");
    }
    let mut proxy = ProxyProc::spawn(&args, &prefix);
    let url = |name: &str| format!("http://{PROXY_IP}/{name}");
    let curl_code = |name: &str| {
        topo.client
            .run(&[
                "curl",
                "-s",
                "--max-time",
                "2",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &url(name),
            ])
            .unwrap_or_default()
    };
    let up = wait_for(Duration::from_secs(15), || {
        proxy.exited().is_none() && curl_code("f1") == "200"
    });
    assert!(up, "the proxy did not serve: {}", proxy.describe());

    // curl, keep-alive: every URL in one invocation; the first transfer connects, the
    // others reuse the connection.
    let out = tmp.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut cmd: Vec<String> = ["curl", "-sS", "--max-time", "60", "-w"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    cmd.push("%{http_code} %{num_connects}\\n".into());
    for (n, _) in FILES {
        cmd.extend(["-o".to_string(), format!("{out}/ka-{n}"), url(n)]);
    }
    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let report = topo
        .client
        .run(&argv)
        .unwrap_or_else(|e| panic!("keep-alive curl: {e}\n{}", proxy.describe()));
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines.len(), FILES.len(), "{report}");
    for (i, l) in lines.iter().enumerate() {
        let want = if i == 0 { "200 1" } else { "200 0" };
        assert_eq!(*l, want, "keep-alive transfer {i}: {report}");
    }
    for (n, sha) in &shas {
        assert_eq!(&sha256(&format!("{out}/ka-{n}")), sha, "keep-alive {n}");
    }

    // curl, one connection per request, which says so (`Connection: close`: the exchange
    // the proxy splices once the response head is in).
    for (n, sha) in &shas {
        let path = format!("{out}/one-{n}");
        topo.client
            .run(&[
                "curl",
                "-sS",
                "--fail",
                "--max-time",
                "60",
                "-H",
                "Connection: close",
                "-o",
                &path,
                &url(n),
            ])
            .unwrap_or_else(|e| panic!("curl {n}: {e}\n{}", proxy.describe()));
        assert_eq!(&sha256(&path), sha, "{n}");
    }

    // python's http.client, with and without keep-alive.
    let mut py = vec![
        "python3".to_string(),
        "-c".into(),
        PY_CLIENT.into(),
        PROXY_IP.into(),
        "80".into(),
    ];
    py.extend(shas.iter().map(|(n, s)| format!("{n}={s}")));
    let argv: Vec<&str> = py.iter().map(String::as_str).collect();
    let r = topo
        .client
        .run(&argv)
        .unwrap_or_else(|e| panic!("python client: {e}\n{}", proxy.describe()));
    assert_eq!(r.trim(), "ok");

    // Malformed and oversized requests.
    let r = topo
        .client
        .run(&["python3", "-c", PY_ERRORS, PROXY_IP, "80"])
        .unwrap_or_else(|e| panic!("error requests: {e}\n{}", proxy.describe()));
    assert_eq!(r.trim(), "ok");

    // No backend up: 502.
    drop(backends.take());
    assert!(
        wait_for(Duration::from_secs(5), || !listening("8080")
            && !listening("8081")),
        "the backends did not stop"
    );
    let code = curl_code("f1");
    assert_eq!(code, "502", "{}", proxy.describe());

    // Ctrl-C: one summary.
    let status = proxy.interrupt_and_wait(Duration::from_secs(15));
    let text = proxy.stdout();
    assert!(
        status.is_some_and(|s| s.success()),
        "the proxy did not stop cleanly: {}",
        proxy.describe()
    );
    println!("{text}");
    // Summed over the host contexts' sections (one per lcore).
    let c = |line: &str, key: &str| -> u64 {
        let found: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with(line))
            .filter_map(|l| counter(l, line, key))
            .collect();
        assert!(!found.is_empty(), "no `{key}` in `{line}`:\n{text}");
        found.iter().sum()
    };
    // Heads forwarded: the probes, 1 + 5 from curl, 1 + 5 from python.
    assert!(c("proxy: accepted", "requests") >= 13, "{text}");
    assert!(c("proxy: errors", "400:") >= 1, "{text}");
    assert!(c("proxy: errors", "431:") >= 1, "{text}");
    assert!(c("proxy: errors", "502:") >= 1, "{text}");
    let refusing = format!("proxy: backend {SERVER_IP}:8082");
    assert_eq!(c(&refusing, "requests"), 0, "{text}");
    assert!(c(&refusing, "refused") >= 1, "{text}");
    for port in [8080, 8081] {
        let l = format!("proxy: backend {SERVER_IP}:{port}");
        assert!(c(&l, "requests") >= 1, "{text}");
    }
    let spliced = c("proxy: spliced pairs", "spliced pairs");
    let exchanges = c("proxy: relayed pairs", "exchanges");
    assert_eq!(
        c("proxy: relayed pairs", "relayed pairs"),
        0,
        "no tunnel in http mode"
    );
    if splice {
        // The closing curl transfers of 100 kB, 1 MB and 10 MB at least.
        assert!(spliced >= 3, "no pair was spliced:\n{text}");
    } else {
        assert_eq!(spliced, 0, "{text}");
        assert!(exchanges >= 13, "{text}");
        // Every file went back four times (curl and python, with and without keep-alive).
        assert!(c("proxy: relayed pairs", "s2c") >= 4 * 11_101_001, "{text}");
    }
    assert!(text.contains("== nicemu summary"), "{text}");
    if layout == Layout::TwoQueues {
        // The backends' replies that the kernel's fanout brought to the other lcore were
        // handed to the one that opened the connection, none dropped.
        assert_eq!(
            counter(&text, "steering:", "(dropped").unwrap_or(0),
            0,
            "{text}"
        );
    }
    println!(
        "proxy_netns ({}) took {:?}",
        if splice { "splice" } else { "relay" },
        started.elapsed()
    );
}

/// `nicemu proxy --no-splice`: the host relays every pair.
#[test]
fn proxy_netns_relay() {
    run(false, 'p', Layout::Shared);
}

/// The same with the NIC lcore and the host (stack and proxy) on two cores.
#[test]
fn proxy_netns_relay_host_lcore() {
    run(false, 'h', Layout::NicHost);
}

/// `nicemu proxy` with splicing: pairs are handed to `nsplice` and the summary counts them.
#[test]
fn proxy_netns_splice() {
    run(true, 'q', Layout::Shared);
}

/// The same with two `shared` lcores on two queue pairs: the kernel's packet fanout spreads
/// clients and backends' replies over both; the backend connections' replies are steered to
/// the lcore whose context opened them, and pairs installed by one lcore are translated by
/// either.
#[test]
fn proxy_netns_splice_two_queues() {
    run(true, 'w', Layout::TwoQueues);
}

/// Two backends that misbehave, on the server side: 8083 reads the request and never
/// answers, 8084 reads it and closes. Prints `ready` once both listen.
const PY_BAD_BACKENDS: &str = r#"
import socket, sys, threading
ip = sys.argv[1]
def serve(port, close):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((ip, port))
    l.listen(16)
    held = []
    while True:
        c, _ = l.accept()
        c.recv(65536)
        if close:
            c.close()
        else:
            held.append(c)
for p, close in ((8083, False), (8084, True)):
    threading.Thread(target=serve, args=(p, close), daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
"#;

/// After a request is forwarded: a backend that never answers gives the client a 504 once
/// `response_timeout_ms` is over, one that closes before its response head a 502 (both
/// against curl, with Linux peers); the summary counts them per backend.
#[test]
fn proxy_netns_silent_and_closing_backends() {
    let topo = ProxyTopo::new('g');
    let tmp = TempDir::new("proxy-g");
    let mut bad = Proc::spawn(&topo.server, &["python3", "-c", PY_BAD_BACKENDS, SERVER_IP]);
    assert!(
        wait_for(Duration::from_secs(10), || bad.has_line("ready")),
        "the backends did not start: {}",
        bad.describe()
    );
    let core = dataplane::sys::allowed_cores().unwrap()[0];
    let prefix = format!("nicemu-test-proxy-g-{}", std::process::id());
    let cfg = tmp.path("proxy.toml");
    let table = format!(
        r#"backends = ["{SERVER_IP}:8083", "{SERVER_IP}:8084"]
policy = "round-robin"
response_timeout_ms = 1000
down_ms = 0
"#
    );
    let ports = port_config(core, &prefix, topo.proxy_iface());
    let lcores = format!("[[lcore]]\ncore = {core}\nrole = \"shared\"");
    std::fs::write(&cfg, proxy_toml(&ports, &lcores, &table)).unwrap();
    let mut proxy = ProxyProc::spawn(&["proxy", "-c", cfg.as_str()], &prefix);
    // (status, seconds) of one curl request.
    let request = || -> (String, f64) {
        let out = topo
            .client
            .run(&[
                "curl",
                "-s",
                "--max-time",
                "5",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{time_total}",
                &format!("http://{PROXY_IP}/x"),
            ])
            .unwrap_or_default();
        let (code, t) = out.split_once(' ').unwrap_or(("000", "0"));
        (code.to_string(), t.trim().parse().unwrap_or(0.0))
    };
    let mut answers = Vec::new();
    let up = wait_for(Duration::from_secs(20), || {
        let a = request();
        let ok = a.0 != "000";
        if ok {
            answers.push(a);
        }
        proxy.exited().is_none() && ok
    });
    assert!(up, "the proxy did not answer: {}", proxy.describe());
    // Round robin: the next two requests cover both backends.
    answers.push(request());
    answers.push(request());
    for (code, secs) in &answers {
        match code.as_str() {
            "504" => assert!((1.0..3.0).contains(secs), "504 after {secs} s: {answers:?}"),
            "502" => assert!(*secs < 1.0, "502 after {secs} s: {answers:?}"),
            other => panic!("status {other}: {answers:?}\n{}", proxy.describe()),
        }
    }
    for code in ["502", "504"] {
        assert!(
            answers.iter().any(|a| a.0 == code),
            "no {code}: {answers:?}"
        );
    }
    let status = proxy.interrupt_and_wait(Duration::from_secs(15));
    let text = proxy.stdout();
    assert!(status.is_some_and(|s| s.success()), "{}", proxy.describe());
    let c = |line: &str, key: &str| {
        counter(&text, line, key).unwrap_or_else(|| panic!("no `{key}` in `{line}`:\n{text}"))
    };
    let silent = format!("proxy: backend {SERVER_IP}:8083");
    let closing = format!("proxy: backend {SERVER_IP}:8084");
    assert!(c(&silent, "response timeouts") >= 1, "{text}");
    assert_eq!(c(&silent, "closed early"), 0, "{text}");
    assert!(c(&closing, "closed early") >= 1, "{text}");
    assert_eq!(c(&closing, "response timeouts"), 0, "{text}");
    bad.interrupt();
}

/// A keep-alive backend that prints every request head it receives (one line each, `HEAD`
/// then the head with CR LF as `|`), skips Content-Length bodies, and answers `200 ok`.
const PY_RECORDING_BACKEND: &str = r#"
import socket, sys, threading
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 8085)); l.listen(16)
print("ready", flush=True)
def serve(c):
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        print("HEAD " + head.decode("latin-1").replace("\r\n", "|"), flush=True)
        n = 0
        for f in head.split(b"\r\n")[1:]:
            k, _, v = f.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(buf) < n:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        buf = buf[n:]
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// A raw-socket client: three requests written at once, the second and third with a forged
/// X-Forwarded-For, the third with Transfer-Encoding and Content-Length both (the smuggling
/// pair, RFC 9112 §6.3 (3)) and a hidden request in its body; prints the status lines it
/// gets until the proxy closes.
const PY_PIPELINE_CLIENT: &str = r#"
import re, socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=10)
s.sendall(b"GET /1 HTTP/1.1\r\nHost: t\r\n\r\n"
          b"GET /2 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n"
          b"POST /3 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 6.6.6.6\r\n"
          b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"
          b"0\r\n\r\nGET /4 HTTP/1.1\r\nHost: t\r\n\r\n")
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
for m in re.finditer(rb"HTTP/1\.1 \d{3}", got):
    print("STATUS " + m.group().decode(), flush=True)
print("EOF", flush=True)
"#;

/// Linux peers on both sides: a python client pipelines three requests through the proxy
/// (http mode, as shipped) to a python backend that records what reaches it. The first two
/// are answered; the smuggling pair is refused with 400 and the connection closed; the
/// backend sees exactly two requests, each with the proxy's X-Forwarded-For (the client's
/// address), never the forged one, and never the hidden request.
#[test]
fn proxy_netns_pipelined_requests_are_each_checked() {
    let topo = ProxyTopo::new('p');
    let tmp = TempDir::new("proxy-p");
    let mut backend = Proc::spawn(
        &topo.server,
        &["python3", "-c", PY_RECORDING_BACKEND, SERVER_IP],
    );
    assert!(
        wait_for(Duration::from_secs(10), || backend.has_line("ready")),
        "the backend did not start: {}",
        backend.describe()
    );
    let core = dataplane::sys::allowed_cores().unwrap()[0];
    let prefix = format!("nicemu-test-proxy-p-{}", std::process::id());
    let cfg = tmp.path("proxy.toml");
    let table = format!(
        "backends = [\"{SERVER_IP}:8085\"]\nadd_header = \"X-Forwarded-For\"\nmode = \"http\"\n"
    );
    let ports = port_config(core, &prefix, topo.proxy_iface());
    let lcores = format!("[[lcore]]\ncore = {core}\nrole = \"shared\"");
    std::fs::write(&cfg, proxy_toml(&ports, &lcores, &table)).unwrap();
    let mut proxy = ProxyProc::spawn(&["proxy", "-c", cfg.as_str()], &prefix);
    let mut out = String::new();
    let answered = wait_for(Duration::from_secs(30), || {
        out = topo
            .client
            .run(&["python3", "-c", PY_PIPELINE_CLIENT, PROXY_IP])
            .unwrap_or_default();
        proxy.exited().is_some() || out.contains("STATUS")
    });
    assert!(answered, "no answer: {out}\n{}", proxy.describe());
    let status = proxy.interrupt_and_wait(Duration::from_secs(15));
    let text = proxy.stdout();
    assert!(status.is_some_and(|s| s.success()), "{}", proxy.describe());
    backend.drain();
    let seen = backend.stdout();
    let statuses: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("STATUS HTTP/1.1 "))
        .map(|l| &l[..3])
        .collect();
    assert_eq!(
        statuses,
        ["200", "200", "400"],
        "client:\n{out}\nbackend:\n{seen}\nproxy:\n{text}"
    );
    assert!(out.contains("EOF"), "{out}");
    let heads: Vec<&str> = seen.lines().filter(|l| l.starts_with("HEAD ")).collect();
    assert_eq!(
        heads.len(),
        2,
        "the smuggled request reached the backend: {seen}"
    );
    let xff = format!("|X-Forwarded-For: {CLIENT_IP}");
    for h in &heads {
        assert!(h.contains(&xff), "{h}");
        assert!(
            !h.contains("6.6.6.6"),
            "a forged X-Forwarded-For went through: {h}"
        );
        assert!(!h.contains("/4 "), "the hidden request went through: {h}");
    }
    assert_eq!(counter(&text, "proxy: errors", "400:"), Some(1), "{text}");
    backend.interrupt();
}

//! The topology of the proxy's kernel-interop test (`proxy_netns`): three network namespaces
//! this test creates, and the `nicemu proxy` process.
//!
//! ```text
//!   root namespace            bridge namespace (B)           client (C) / server (S)
//!   nicemu proxy  ── veth ──  br0 ── veth ── C: 192.0.2.2/32, one route: 192.0.2.1 dev
//!   (af_packet on             │
//!    192.0.2.1/24)            └───── veth ── S: 192.0.2.3/32, one route: 192.0.2.1 dev
//! ```
//!
//! The client and the server are on one bridge and one /24 but have /32 addresses and a
//! single host route, to the proxy: each reaches only the proxy. IPv6 is off everywhere and
//! every veth end sends complete checksums (`ethtool -K DEV tx off`). Dropping a
//! [`ProxyTopo`] deletes the three namespaces and the veths, also when a test fails;
//! dropping a [`ProxyProc`] kills the proxy and removes its DPDK runtime directory.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dataplane::netns::run;

use super::netns::Netns;

/// The proxy's address (the DPDK port's).
pub const PROXY_IP: &str = "192.0.2.1";
/// The client namespace's address.
pub const CLIENT_IP: &str = "192.0.2.2";
/// The server namespace's address.
pub const SERVER_IP: &str = "192.0.2.3";

/// The three namespaces, joined by a bridge; see the module documentation.
pub struct ProxyTopo {
    /// Holds the bridge `br0`; its pair's outer end (in the root namespace) is the proxy's.
    pub bridge: Netns,
    /// The clients' namespace.
    pub client: Netns,
    /// The servers' namespace.
    pub server: Netns,
}

/// `sysctl -qw net.ipv6.conf.DEV.disable_ipv6=1` in the root namespace, where IPv6 exists.
fn ipv6_off_root(dev: &str) {
    if Path::new("/proc/sys/net/ipv6").exists() {
        run(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{dev}.disable_ipv6=1"),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

impl ProxyTopo {
    /// Creates and configures the topology; `tag` (one letter per test of a process) makes
    /// the names unique: namespaces `nmt{tag}b…`, `nmt{tag}c…`, `nmt{tag}s…`.
    pub fn new(tag: char) -> ProxyTopo {
        let t = ProxyTopo {
            bridge: Netns::new(&format!("{tag}b")),
            client: Netns::new(&format!("{tag}c")),
            server: Netns::new(&format!("{tag}s")),
        };
        for n in [&t.bridge, &t.client, &t.server] {
            for dev in ["all", "default"] {
                n.disable_ipv6(dev).unwrap_or_else(|e| panic!("{e}"));
            }
            n.must(&["ip", "link", "set", "lo", "up"]);
        }
        let b = &t.bridge;
        b.must(&["ip", "link", "add", "br0", "type", "bridge"]);
        b.must(&["ip", "link", "set", "br0", "up"]);
        // The proxy's end stays here for net_af_packet.
        let proxy_end = b.outer();
        ipv6_off_root(proxy_end);
        run(&["ethtool", "-K", proxy_end, "tx", "off"]).unwrap_or_else(|e| panic!("{e}"));
        run(&["ip", "link", "set", proxy_end, "up"]).unwrap_or_else(|e| panic!("{e}"));
        // The client's and the server's outer ends move into the bridge's namespace.
        let mut ports = vec![b.inner().to_string()];
        for n in [&t.client, &t.server] {
            run(&["ip", "link", "set", n.outer(), "netns", b.ns()])
                .unwrap_or_else(|e| panic!("{e}"));
            ports.push(n.outer().to_string());
        }
        for p in &ports {
            b.must(&["ethtool", "-K", p, "tx", "off"]);
            b.must(&["ip", "link", "set", p, "master", "br0"]);
            b.must(&["ip", "link", "set", p, "up"]);
        }
        for (n, ip) in [(&t.client, CLIENT_IP), (&t.server, SERVER_IP)] {
            let dev = n.inner();
            n.must(&["ethtool", "-K", dev, "tx", "off"]);
            n.must(&["ip", "addr", "add", &format!("{ip}/32"), "dev", dev]);
            n.must(&["ip", "link", "set", dev, "up"]);
            n.must(&["ip", "route", "add", &format!("{PROXY_IP}/32"), "dev", dev]);
        }
        t
    }

    /// The interface the proxy's net_af_packet binds (root namespace).
    pub fn proxy_iface(&self) -> &str {
        self.bridge.outer()
    }
}

/// The `[eal]`, `[runtime]` and `[[port]]` part of a proxy configuration: DPDK on `core`
/// with file prefix `prefix`, the port net_af_packet on `iface` with the proxy's address.
pub fn port_config(core: usize, prefix: &str, iface: &str) -> String {
    format!(
        r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "256", "-l", "{core}", "--file-prefix={prefix}",
        "--vdev=net_af_packet0,iface={iface}"]
[runtime]
stats_interval_s = 0.0
[[port]]
name = "p0"
driver = "dpdk"
device = "net_af_packet0"
ipv4 = ["{PROXY_IP}/24"]
rss = "off"
"#
    )
}

/// A scratch directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `/tmp/nicemu-test-NAME-PID`, empty.
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("nicemu-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    /// A path inside it, as a string.
    pub fn path(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// nginx's configuration for a server on `ip:port` serving `root`, everything else (pid,
/// error log, temp paths) under `dir`; access log off, in the foreground, one process (no
/// master: killing it leaves no worker behind).
pub fn nginx_conf(dir: &str, root: &str, ip: &str, port: u16) -> String {
    format!(
        r#"daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    default_type application/octet-stream;
    keepalive_requests 1000;
    server {{
        listen {ip}:{port};
        root {root};
    }}
}}
"#
    )
}

/// The `nicemu proxy` process: its output collected by reader threads; killed (and its DPDK
/// runtime directory removed) when dropped.
pub struct ProxyProc {
    child: Child,
    out: Arc<Mutex<Vec<String>>>,
    err: Option<JoinHandle<String>>,
    prefix: String,
    status: Option<ExitStatus>,
    /// `nicemu` and its subcommand, for messages.
    what: String,
}

impl ProxyProc {
    /// Starts `nicemu ARGS` with DPDK file prefix `prefix` (given in its configuration).
    pub fn spawn(args: &[&str], prefix: &str) -> ProxyProc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("nicemu {args:?}: {e}"));
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let out = Arc::new(Mutex::new(Vec::new()));
        let o = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                o.lock().unwrap().push(line);
            }
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        ProxyProc {
            child,
            out,
            err: Some(err),
            prefix: prefix.into(),
            status: None,
            what: format!("nicemu {}", args.first().copied().unwrap_or_default()),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its standard output so far.
    pub fn stdout(&self) -> String {
        self.out.lock().unwrap().join("\n")
    }

    /// Whether it has exited (without waiting).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().expect("try_wait");
        }
        self.status
    }

    /// Sends SIGINT (Ctrl-C) and waits up to `limit` for the exit; its status (None: still
    /// running).
    pub fn interrupt_and_wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill")
            .args(["-INT", &pid])
            .stdin(Stdio::null())
            .status();
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(s) = self.exited() {
                // Let the reader thread take the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Everything known, for failure messages.
    pub fn describe(&mut self) -> String {
        let err = if self.exited().is_some() {
            self.err
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default()
        } else {
            "(still running)".into()
        };
        format!(
            "{} exit {:?}\n--- stdout:\n{}\n--- stderr:\n{err}",
            self.what,
            self.status,
            self.stdout()
        )
    }
}

impl Drop for ProxyProc {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        dataplane::runtime_dpdk::remove_runtime_dir(&self.prefix);
    }
}

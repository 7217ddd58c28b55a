//! The topology of `bench peers` and the child processes in it.
//!
//! ```text
//!   server namespace (S)                         client namespace (C)
//!   nicemu kv|proxy|echo: net_af_packet  ─veth─  192.0.2.2, .3, .4 /24 (kernel)
//!   on the veth, 192.0.2.1 in userspace          redis-benchmark, redis-cli, wrk;
//!   or a kernel server with 192.0.2.1/24         nginx back ends on .3:8080, .4:8080;
//!   on the veth (only while it runs)             nicemu loadgen: net_af_packet, 192.0.2.10
//! ```
//!
//! Both veth ends are in namespaces this module creates (nothing in the caller's
//! namespace), with IPv6 off and transmit checksum offload off (`ethtool -K DEV tx off`: the
//! kernel sends complete checksums, which net_af_packet forwards as they are). Dropping a
//! [`Topology`] deletes both namespaces and with them the pair; dropping a [`Spawned`] kills
//! the process and removes its DPDK runtime directory.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dataplane::netns::{output, run, Netns};

/// The server's address: the shipped configurations' port address.
pub const SERVER_IP: &str = "192.0.2.1";
/// The kernel clients' address (first on the client veth, the source of their connections).
pub const CLIENT_IP: &str = "192.0.2.2";
/// The back ends of configs/proxy.toml (`192.0.2.3:8080`, `192.0.2.4:8080`).
pub const BACKEND_IPS: [&str; 2] = ["192.0.2.3", "192.0.2.4"];
/// The `nicemu loadgen` client's address (userspace; the client kernel does not own it).
pub const LOADGEN_IP: &str = "192.0.2.10";

/// The two namespaces and the veth pair between them; see the module documentation.
pub struct Topology {
    /// The client namespace with its veth end (`inner`); `outer` was moved to `server_ns`.
    client: Netns,
    server_ns: String,
    server_dev: String,
}

impl Drop for Topology {
    fn drop(&mut self) {
        let _ = output(&["ip", "netns", "del", &self.server_ns]);
        // The client's Netns drops next and deletes its namespace (and the pair).
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// `sysctl -qw` settings in namespace `ns` (`ip netns exec`).
fn sysctl_in(ns: &str, keys: &[&str]) -> Result<(), String> {
    for k in keys {
        run(&["ip", "netns", "exec", ns, "sysctl", "-qw", k]).map_err(err)?;
    }
    Ok(())
}

impl Topology {
    /// Creates and configures both namespaces (names carry `id`, e.g. the process id).
    pub fn new(id: u32) -> Result<Topology, String> {
        let (cns, sns) = (format!("nmbp{id}c"), format!("nmbp{id}s"));
        let (sdev, cdev) = (format!("nmbp{id}s"), format!("nmbp{id}c"));
        let _ = output(&["ip", "netns", "del", &sns]);
        let _ = output(&["ip", "netns", "del", &cns]);
        let _ = output(&["ip", "link", "del", &sdev]);
        let client = Netns::create(&cns, &sdev, &cdev).map_err(err)?;
        let t = Topology {
            client,
            server_ns: sns.clone(),
            server_dev: sdev.clone(),
        };
        run(&["ip", "netns", "add", &sns]).map_err(err)?;
        let v6 = Path::new("/proc/sys/net/ipv6").exists();
        for ns in [&sns, &cns] {
            if v6 {
                sysctl_in(
                    ns,
                    &[
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1",
                    ],
                )?;
            }
            run(&["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]).map_err(err)?;
        }
        if v6 {
            t.client.disable_ipv6(&cdev).map_err(err)?;
        }
        run(&["ip", "link", "set", &sdev, "netns", &sns]).map_err(err)?;
        for (ns, dev) in [(&sns, &sdev), (&cns, &cdev)] {
            let x = |args: &[&str]| {
                let mut v = vec!["ip", "netns", "exec", ns.as_str()];
                v.extend_from_slice(args);
                run(&v).map(drop).map_err(err)
            };
            x(&["ethtool", "-K", dev, "tx", "off"])?;
            x(&["ip", "link", "set", dev, "up"])?;
        }
        for ip in [CLIENT_IP, BACKEND_IPS[0], BACKEND_IPS[1]] {
            t.client
                .run(&["ip", "addr", "add", &format!("{ip}/24"), "dev", &cdev])
                .map_err(err)?;
        }
        // redis-benchmark -k 0 opens a connection per request: the clients reuse their ports
        // in TIME_WAIT and use all of them (this namespace only).
        sysctl_in(
            &cns,
            &[
                "net.ipv4.tcp_tw_reuse=1",
                "net.ipv4.ip_local_port_range=1024 65535",
            ],
        )?;
        sysctl_in(&sns, &["net.core.somaxconn=4096"])?;
        Ok(t)
    }

    /// The server-side veth end (net_af_packet's interface for the nicemu servers).
    pub fn server_dev(&self) -> &str {
        &self.server_dev
    }

    /// The client-side veth end (net_af_packet's interface for `nicemu loadgen`).
    pub fn client_dev(&self) -> &str {
        self.client.inner()
    }

    /// A command in the server namespace.
    pub fn server_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.server_ns]).args(args);
        c
    }

    /// A command in the client namespace.
    pub fn client_cmd(&self, args: &[&str]) -> Command {
        self.client.command(args)
    }

    /// Runs `args` in the client namespace: its standard output, or an error.
    pub fn client_run(&self, args: &[&str]) -> Result<String, String> {
        self.client.run(args).map_err(err)
    }

    /// Gives the kernel of the server namespace [`SERVER_IP`] on the veth (for a kernel
    /// server); the returned guard takes it away again.
    pub fn kernel_address(&self) -> Result<KernelAddress<'_>, String> {
        let cidr = format!("{SERVER_IP}/24");
        let mut v = vec!["ip", "netns", "exec", &self.server_ns];
        v.extend_from_slice(&["ip", "addr", "add", &cidr, "dev", &self.server_dev]);
        run(&v).map_err(err)?;
        // The clients' neighbour entry stays valid: the kernel and net_af_packet use the
        // veth's own MAC address.
        Ok(KernelAddress(self))
    }
}

/// The server namespace's kernel holds [`SERVER_IP`] while this lives.
pub struct KernelAddress<'a>(&'a Topology);

impl Drop for KernelAddress<'_> {
    fn drop(&mut self) {
        let t = self.0;
        let cidr = format!("{SERVER_IP}/24");
        let _ = output(&[
            "ip",
            "netns",
            "exec",
            &t.server_ns,
            "ip",
            "addr",
            "del",
            &cidr,
            "dev",
            &t.server_dev,
        ]);
    }
}

/// Fails with the package to install when `tool` is not on the PATH.
pub fn require(tool: &str, package: &str) -> Result<(), String> {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    if found {
        Ok(())
    } else {
        Err(format!(
            "{tool} not found on PATH: install the {package} package (apt-get install -y \
             {package})"
        ))
    }
}

/// CPU ticks (user + system, all threads) of process `pid` and whether it has exited (a
/// zombie still shows its final times until it is reaped).
fn ticks(pid: u32) -> Option<(u64, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((n(11)? + n(12)?, f.first() == Some(&"Z")))
}

/// A child process whose output is collected by reader threads and whose CPU time is read
/// from /proc; killed (and its DPDK runtime directory, if any, removed) when dropped.
pub struct Spawned {
    /// What it is, for reports.
    pub name: String,
    child: Child,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    dpdk_prefix: Option<String>,
    /// CPU ticks when it was last seen alive or exiting.
    last_ticks: u64,
    exited: Option<std::process::ExitStatus>,
}

fn reader(mut r: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut line = String::new();
        let mut b = BufReader::new(&mut r);
        while matches!(b.read_line(&mut line), Ok(n) if n > 0) {
            if let Ok(mut o) = into.lock() {
                o.push_str(&line);
            }
            line.clear();
        }
    })
}

impl Spawned {
    /// Starts `cmd` (standard input closed unless `keep_stdin`; output collected).
    pub fn start(
        name: &str,
        mut cmd: Command,
        keep_stdin: bool,
        dpdk_prefix: Option<String>,
    ) -> Result<Spawned, String> {
        let mut child = cmd
            .stdin(if keep_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let (out, errs) = (Arc::default(), Arc::default());
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(reader(o, Arc::clone(&out)));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(reader(e, Arc::clone(&errs)));
        }
        Ok(Spawned {
            name: name.into(),
            child,
            out,
            err: errs,
            readers,
            dpdk_prefix,
            last_ticks: 0,
            exited: None,
        })
    }

    /// Its CPU ticks so far (the last value read once it has exited).
    pub fn cpu_ticks(&mut self) -> u64 {
        if self.exited.is_none() {
            if let Some((t, _)) = ticks(self.child.id()) {
                self.last_ticks = t;
            }
        }
        self.last_ticks
    }

    /// Whether it has exited; reads its final CPU time first (while it is a zombie).
    pub fn poll_exit(&mut self) -> Option<std::process::ExitStatus> {
        if self.exited.is_none() {
            if let Some((t, zombie)) = ticks(self.child.id()) {
                self.last_ticks = t;
                if !zombie {
                    return None;
                }
            }
            self.exited = self.child.try_wait().ok().flatten();
            if self.exited.is_some() {
                for r in self.readers.drain(..) {
                    let _ = r.join();
                }
            }
        }
        self.exited
    }

    /// Waits until it exits, at most `limit` (then kills it), or until `stop` is set
    /// (Ctrl-C: then stops it): its exit status, or an error with its output.
    pub fn wait(
        &mut self,
        limit: Duration,
        stop: &AtomicBool,
    ) -> Result<std::process::ExitStatus, String> {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(s) = self.poll_exit() {
                return Ok(s);
            }
            if stop.load(Ordering::Relaxed) {
                self.stop(Duration::from_secs(2));
                return Err("interrupted".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop(Duration::ZERO);
        Err(format!(
            "{} still running after {:.0} s, killed\n{}",
            self.name,
            limit.as_secs_f64(),
            self.describe()
        ))
    }

    /// Asks it to stop (SIGINT, or closing its standard input when piped), waits up to
    /// `grace`, then kills it.
    pub fn stop(&mut self, grace: Duration) {
        if self.poll_exit().is_some() {
            return;
        }
        drop(self.child.stdin.take());
        let pid = self.child.id().to_string();
        let _ = Command::new("kill")
            .args(["-INT", &pid])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if self.poll_exit().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        self.exited = self.child.wait().ok();
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }

    /// Its standard output so far.
    pub fn stdout(&self) -> String {
        self.out.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Its standard error so far.
    pub fn stderr(&self) -> String {
        self.err.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Its status and output, for error messages (the last 2,000 bytes of each stream).
    pub fn describe(&self) -> String {
        let tail = |s: String| {
            let cut = s.len().saturating_sub(2000);
            let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
            s[cut..].to_string()
        };
        format!(
            "{} exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.name,
            self.exited,
            tail(self.stdout()),
            tail(self.stderr())
        )
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
        if let Some(p) = &self.dpdk_prefix {
            // DPDK's runtime directory of a root process (the bench runs as root).
            if !p.is_empty() && !p.contains('/') && !p.contains("..") {
                let _ = std::fs::remove_dir_all(Path::new("/var/run/dpdk").join(p));
            }
        }
    }
}

/// Nanoseconds per /proc clock tick (USER_HZ).
pub fn ns_per_tick() -> f64 {
    super::super::procstat::ns_per_tick()
}

/// Softirq ticks of all CPUs together (`/proc/stat`'s `cpu` line, the `softirq` column).
pub fn softirq_ticks_all() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    let line = text
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or("/proc/stat: no cpu line")?;
    line.split_whitespace()
        .nth(7)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "/proc/stat: bad cpu line".into())
}

/// Polls `ok` every 100 ms until it holds or `limit` passes (or `server` exits): an error
/// naming `what` otherwise.
pub fn wait_ready(
    what: &str,
    limit: Duration,
    server: &mut Spawned,
    mut ok: impl FnMut() -> bool,
) -> Result<(), String> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if server.poll_exit().is_some() {
            return Err(format!("{what} exited early\n{}", server.describe()));
        }
        if ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "{what} did not answer within {:.0} s\n{}",
        limit.as_secs_f64(),
        server.describe()
    ))
}

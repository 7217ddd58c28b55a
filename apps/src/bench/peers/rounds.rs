//! The servers and client runs of `bench peers`: starting each server in the server
//! namespace, waiting until it answers, running the clients in the client namespace and
//! recording what they report and the CPU every process used.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::parse::{self, ClientResult};
use super::topo::{
    self, require, KernelAddress, Spawned, Topology, BACKEND_IPS, LOADGEN_IP, SERVER_IP,
};
use super::{PeerRow, PeersOpts, ProcCpu, Workload};

/// The response bodies of the proxy workload: (size in bytes, label). The files are named
/// by their size (`/64`, `/65536`).
const BODIES: [(usize, &str); 2] = [(64, "64 B"), (65_536, "64 KB")];
/// The back ends' port (configs/proxy.toml).
const BACKEND_PORT: u16 = 8080;
/// The echo message size.
const ECHO_SIZE: usize = 64;
/// Longest wait for a server to answer after it started.
const READY_LIMIT: Duration = Duration::from_secs(30);

/// One server of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// `nicemu kv -c configs/af-packet.toml`.
    NicemuKv,
    /// redis-server.
    Redis,
    /// `nicemu proxy -c configs/proxy.toml` (splicing on the NIC).
    NicemuProxy,
    /// The same with `--no-splice` (relaying on the host).
    NicemuRelay,
    /// HAProxy with a generated configuration.
    Haproxy,
    /// nginx serving the bodies itself (no proxy).
    Nginx,
    /// `nicemu echo -c configs/af-packet.toml`.
    NicemuEcho,
    /// The kernel epoll echo server (`nicemu bench kernel-echo-server`).
    KernelEcho,
}

impl ServerKind {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::NicemuKv | ServerKind::NicemuProxy | ServerKind::NicemuEcho => "nicemu",
            ServerKind::NicemuRelay => "nicemu-relay",
            ServerKind::Redis => "redis-server",
            ServerKind::Haproxy => "haproxy",
            ServerKind::Nginx => "nginx",
            ServerKind::KernelEcho => "kernel-epoll",
        }
    }

    fn nicemu(self) -> bool {
        matches!(
            self,
            ServerKind::NicemuKv
                | ServerKind::NicemuProxy
                | ServerKind::NicemuRelay
                | ServerKind::NicemuEcho
        )
    }
}

/// The servers of workload `w`, in the first round's order.
pub fn servers(w: Workload) -> Vec<ServerKind> {
    match w {
        Workload::Kv => vec![ServerKind::NicemuKv, ServerKind::Redis],
        Workload::Proxy => vec![
            ServerKind::NicemuProxy,
            ServerKind::Haproxy,
            ServerKind::NicemuRelay,
            ServerKind::Nginx,
        ],
        Workload::Echo => vec![ServerKind::NicemuEcho, ServerKind::KernelEcho],
    }
}

/// Fails, naming the package, when a tool the chosen workloads need is missing.
pub fn check_tools(opts: &PeersOpts) -> Result<(), String> {
    for (tool, package) in [("ip", "iproute2"), ("ethtool", "ethtool")] {
        require(tool, package)?;
    }
    for w in &opts.only {
        let tools: &[(&str, &str)] = match w {
            Workload::Kv => &[
                ("redis-server", "redis-server"),
                ("redis-benchmark", "redis-tools"),
                ("redis-cli", "redis-tools"),
            ],
            Workload::Proxy => &[
                ("wrk", "wrk"),
                ("haproxy", "haproxy"),
                ("nginx", "nginx"),
                ("curl", "curl"),
            ],
            Workload::Echo => &[("bash", "bash")],
        };
        for (tool, package) in tools {
            require(tool, package)?;
        }
    }
    let exe = &opts.exe;
    if !exe.is_file() {
        return Err(format!(
            "the nicemu executable {} is missing",
            exe.display()
        ));
    }
    for w in &opts.only {
        let f = config_file(opts, *w);
        if !f.is_file() {
            return Err(format!(
                "{}: the shipped configuration is missing (run from the repository root, or \
                 give --config-dir)",
                f.display()
            ));
        }
    }
    Ok(())
}

/// The shipped configuration a workload's nicemu server runs.
fn config_file(opts: &PeersOpts, w: Workload) -> PathBuf {
    opts.config_dir.join(match w {
        Workload::Proxy => "proxy.toml",
        Workload::Kv | Workload::Echo => "af-packet.toml",
    })
}

/// A running server: its processes (server side) and the kernel's address while it is a
/// kernel server. Fields drop in order: the processes stop, then the address goes.
struct Running<'t> {
    procs: Vec<Spawned>,
    _addr: Option<KernelAddress<'t>>,
}

/// The bench's environment: the topology, a scratch directory with the generated files,
/// and the nginx back ends of the proxy workload (started once, on first use).
pub struct Env<'t> {
    opts: PeersOpts,
    topo: &'t Topology,
    dir: PathBuf,
    backends: Vec<Spawned>,
    spawned: u32,
}

impl Drop for Env<'_> {
    fn drop(&mut self) {
        self.backends.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// nginx's configuration for `listen` serving `root`, its own files under `dir`; one
/// process in the foreground (no master: stopping it leaves no worker behind), access log
/// off, keep-alive connections kept for the whole run.
fn nginx_conf(dir: &Path, root: &Path, listen: &str) -> String {
    let d = dir.display();
    format!(
        "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         \x20 fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         \x20 default_type application/octet-stream;\n  keepalive_requests 10000000;\n\
         \x20 keepalive_timeout 120s;\n  server {{\n    listen {listen};\n    root {};\n  }}\n}}\n",
        root.display()
    )
}

/// HAProxy's configuration: HTTP mode with keep-alive on both sides, one thread (as the
/// nicemu proxy's one lcore), the back ends of configs/proxy.toml round robin, and
/// X-Forwarded-For (as the shipped `add_header`).
fn haproxy_conf() -> String {
    let servers: String = BACKEND_IPS
        .iter()
        .enumerate()
        .map(|(i, ip)| format!("    server b{i} {ip}:{BACKEND_PORT}\n"))
        .collect();
    format!(
        "global\n    maxconn 4096\n    nbthread 1\n\ndefaults\n    mode http\n\
         \x20   option http-keep-alive\n    option forwardfor\n    timeout connect 1s\n\
         \x20   timeout client 30s\n    timeout server 30s\n    timeout http-keep-alive 30s\n\n\
         frontend fe\n    bind {SERVER_IP}:80\n    default_backend be\n\n\
         backend be\n    balance roundrobin\n{servers}"
    )
}

impl<'t> Env<'t> {
    /// The environment on `topo`, with its scratch directory.
    pub fn new(opts: &PeersOpts, topo: &'t Topology) -> Result<Env<'t>, String> {
        let dir = std::env::temp_dir().join(format!("nicemu-bench-peers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("www")).map_err(|e| format!("{}: {e}", dir.display()))?;
        let env = Env {
            opts: opts.clone(),
            topo,
            dir,
            backends: Vec::new(),
            spawned: 0,
        };
        for (size, _) in BODIES {
            let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            let p = env.dir.join("www").join(size.to_string());
            std::fs::write(&p, body).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        Ok(env)
    }

    /// A unique DPDK file prefix for the next nicemu process (`ci/cleanup.sh` knows the
    /// `nicemu-bench-` prefix).
    fn prefix(&mut self) -> String {
        self.spawned += 1;
        format!("nicemu-bench-peers-{}-{}", std::process::id(), self.spawned)
    }

    /// `nicemu ARGS -c CONFIG [EXTRA] -- --vdev=net_af_packet0,iface=DEV --file-prefix=P`
    /// in the server namespace.
    fn nicemu_server(&mut self, w: Workload, sub: &str, extra: &[&str]) -> Result<Spawned, String> {
        let prefix = self.prefix();
        let exe = self.opts.exe.display().to_string();
        let cfg = config_file(&self.opts, w).display().to_string();
        let vdev = format!("--vdev=net_af_packet0,iface={}", self.topo.server_dev());
        let fp = format!("--file-prefix={prefix}");
        let mut args = vec![exe.as_str(), sub, "-c", cfg.as_str()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", vdev.as_str(), fp.as_str()]);
        Spawned::start(
            &format!("nicemu {sub}"),
            self.topo.server_cmd(&args),
            false,
            Some(prefix),
        )
    }

    /// Starts nginx on `listen` serving the bodies, its files in the scratch directory's
    /// `sub`, in the client namespace or the server's.
    fn nginx(&self, sub: &str, listen: &str, client_side: bool) -> Result<Spawned, String> {
        let d = self.dir.join(sub);
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        let conf = d.join("nginx.conf");
        write(&conf, &nginx_conf(&d, &self.dir.join("www"), listen))?;
        let (c, p) = (conf.display().to_string(), d.display().to_string());
        let args = ["nginx", "-c", c.as_str(), "-p", p.as_str()];
        let cmd = if client_side {
            self.topo.client_cmd(&args)
        } else {
            self.topo.server_cmd(&args)
        };
        Spawned::start(&format!("nginx {listen}"), cmd, false, None)
    }

    /// Starts the nginx back ends (once), in the client namespace.
    fn start_backends(&mut self) -> Result<(), String> {
        if !self.backends.is_empty() {
            return Ok(());
        }
        for (i, ip) in BACKEND_IPS.iter().enumerate() {
            let listen = format!("{ip}:{BACKEND_PORT}");
            let mut s = self.nginx(&format!("backend{i}"), &listen, true)?;
            let url = format!("http://{ip}:{BACKEND_PORT}/64");
            let topo = self.topo;
            topo::wait_ready(&s.name.clone(), READY_LIMIT, &mut s, || http_ok(topo, &url))?;
            self.backends.push(s);
        }
        Ok(())
    }

    /// Starts server `s` and waits until it answers.
    fn start(&mut self, s: ServerKind) -> Result<Running<'t>, String> {
        let topo = self.topo;
        let addr = if s.nicemu() {
            None
        } else {
            Some(topo.kernel_address()?)
        };
        let proc = match s {
            ServerKind::NicemuKv => self.nicemu_server(Workload::Kv, "kv", &[])?,
            ServerKind::NicemuProxy => self.nicemu_server(Workload::Proxy, "proxy", &[])?,
            ServerKind::NicemuRelay => {
                self.nicemu_server(Workload::Proxy, "proxy", &["--no-splice"])?
            }
            ServerKind::NicemuEcho => {
                let size = ECHO_SIZE.to_string();
                self.nicemu_server(Workload::Echo, "echo", &["--port", "7", "--size", &size])?
            }
            ServerKind::Redis => {
                let d = self.dir.join("redis");
                std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
                let d = d.display().to_string();
                let args = [
                    "redis-server",
                    "--bind",
                    SERVER_IP,
                    "--port",
                    "6379",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--protected-mode",
                    "no",
                    "--daemonize",
                    "no",
                    "--dir",
                    &d,
                ];
                Spawned::start("redis-server", topo.server_cmd(&args), false, None)?
            }
            ServerKind::Haproxy => {
                let conf = self.dir.join("haproxy.cfg");
                write(&conf, &haproxy_conf())?;
                let c = conf.display().to_string();
                Spawned::start(
                    "haproxy",
                    topo.server_cmd(&["haproxy", "-db", "-f", &c]),
                    false,
                    None,
                )?
            }
            ServerKind::Nginx => self.nginx("nginx-direct", &format!("{SERVER_IP}:80"), false)?,
            ServerKind::KernelEcho => {
                let exe = self.opts.exe.display().to_string();
                Spawned::start(
                    "kernel echo server",
                    topo.server_cmd(&[&exe, "bench", "kernel-echo-server", "--port", "7"]),
                    true,
                    None,
                )?
            }
        };
        let mut run = Running {
            procs: vec![proc],
            _addr: addr,
        };
        let what = format!("{} ({})", s.name(), run.procs[0].name);
        let srv = &mut run.procs[0];
        match s {
            ServerKind::NicemuKv | ServerKind::Redis => {
                topo::wait_ready(&what, READY_LIMIT, srv, || {
                    topo.client_run(&["timeout", "2", "redis-cli", "-h", SERVER_IP, "ping"])
                        .is_ok_and(|o| o.trim() == "PONG")
                })?
            }
            ServerKind::NicemuEcho | ServerKind::KernelEcho => {
                let probe = format!("exec 3<>/dev/tcp/{SERVER_IP}/7");
                topo::wait_ready(&what, READY_LIMIT, srv, || {
                    topo.client_run(&["timeout", "2", "bash", "-c", &probe])
                        .is_ok()
                })?
            }
            _ => {
                let url = format!("http://{SERVER_IP}/64");
                topo::wait_ready(&what, READY_LIMIT, srv, || http_ok(topo, &url))?
            }
        }
        Ok(run)
    }

    /// Runs every client of workload `w` against server `s` (started here and stopped
    /// after): one row per client run.
    pub fn run(&mut self, w: Workload, s: ServerKind, round: u32) -> Result<Vec<PeerRow>, String> {
        if w == Workload::Proxy {
            self.start_backends()?;
        }
        let mut server = self.start(s)?;
        let mut rows = Vec::new();
        for c in self.clients(w)? {
            self.opts.check_stop()?;
            let (case, latency_only) = (c.case.clone(), c.latency_only);
            let (result, wall_s, cpu, softirq_s) = self.measure(&mut server, w, c)?;
            rows.push(PeerRow {
                workload: w,
                case,
                server: s.name().into(),
                nicemu: s.nicemu(),
                latency_only,
                round,
                result,
                wall_s,
                cpu,
                softirq_s,
                server_note: String::new(),
            });
        }
        let mut note = Vec::new();
        for p in &mut server.procs {
            p.stop(Duration::from_secs(5));
            if s.nicemu() {
                note.extend(error_lines(&p.stdout()));
            }
        }
        let note = note.join("; ");
        if !note.is_empty() {
            eprintln!("bench peers: {} {} summary: {note}", w.name(), s.name());
        }
        for r in &mut rows {
            r.server_note.clone_from(&note);
        }
        Ok(rows)
    }

    /// The client runs of workload `w`.
    fn clients(&mut self, w: Workload) -> Result<Vec<Client>, String> {
        let o = &self.opts;
        let (n, c) = (o.requests.to_string(), o.conns.to_string());
        let secs = format!("{}", o.seconds.round().max(1.0) as u64);
        let mut v = Vec::new();
        match w {
            Workload::Kv => {
                for (mode, extra) in [
                    ("", &[][..]),
                    (" -k 0", &["-k", "0"][..]),
                    (" -P 16", &["-P", "16"][..]),
                ] {
                    for t in ["set", "get"] {
                        let mut args = vec![
                            "redis-benchmark",
                            "-h",
                            SERVER_IP,
                            "-p",
                            "6379",
                            "-t",
                            t,
                            "-n",
                            &n,
                            "-c",
                            &c,
                            "--csv",
                        ];
                        args.extend_from_slice(extra);
                        let case = format!("{}{mode}", t.to_uppercase());
                        v.push(Client::new(case, self.topo.client_cmd(&args)));
                    }
                }
                let args = [
                    "redis-cli",
                    "-h",
                    SERVER_IP,
                    "--latency",
                    "-i",
                    &secs,
                    "--raw",
                ];
                v.push(Client {
                    latency_only: true,
                    ..Client::new("PING --latency".into(), self.topo.client_cmd(&args))
                });
            }
            Workload::Proxy => {
                for (size, label) in BODIES {
                    let url = format!("http://{SERVER_IP}/{size}");
                    let d = format!("{secs}s");
                    let args = ["wrk", "-c", &c, "-t", "1", "-d", &d, "--latency", &url];
                    v.push(Client::new(label.into(), self.topo.client_cmd(&args)));
                }
            }
            Workload::Echo => {
                let prefix = self.prefix();
                let cfg = self.dir.join("loadgen.toml");
                write(&cfg, &loadgen_conf())?;
                let exe = self.opts.exe.display().to_string();
                let cfg = cfg.display().to_string();
                let server = format!("{SERVER_IP}:7");
                let size = ECHO_SIZE.to_string();
                let vdev = format!("--vdev=net_af_packet0,iface={}", self.topo.client_dev());
                let fp = format!("--file-prefix={prefix}");
                let args = [
                    exe.as_str(),
                    "loadgen",
                    "-c",
                    &cfg,
                    "--server",
                    &server,
                    "--conns",
                    &c,
                    "--size",
                    &size,
                    "-d",
                    &secs,
                    "--",
                    &vdev,
                    &fp,
                ];
                v.push(Client {
                    dpdk_prefix: Some(prefix),
                    ..Client::new(format!("{ECHO_SIZE} B"), self.topo.client_cmd(&args))
                });
            }
        }
        Ok(v)
    }

    /// Runs one client to its end (bounded), with the CPU of every process and the softirq
    /// time over the run.
    fn measure(
        &mut self,
        server: &mut Running<'_>,
        w: Workload,
        client: Client,
    ) -> Result<(ClientResult, f64, Vec<ProcCpu>, f64), String> {
        let case = client.case.as_str();
        let name = client_name(w);
        let tick = topo::ns_per_tick() / 1e9;
        let s0: Vec<u64> = server.procs.iter_mut().map(Spawned::cpu_ticks).collect();
        let b0: u64 = self.backends.iter_mut().map(Spawned::cpu_ticks).sum();
        let irq0 = topo::softirq_ticks_all()?;
        let t0 = Instant::now();
        let mut c = Spawned::start(name, client.cmd, false, client.dpdk_prefix)?;
        let limit = match w {
            Workload::Kv => Duration::from_secs(600),
            _ => Duration::from_secs_f64(self.opts.seconds + 60.0),
        };
        let status = c.wait(limit, &self.opts.stop)?;
        let wall = t0.elapsed().as_secs_f64();
        let irq = (topo::softirq_ticks_all()? - irq0) as f64 * tick;
        let mut cpu = Vec::new();
        for (p, t0) in server.procs.iter_mut().zip(s0) {
            cpu.push(ProcCpu {
                name: p.name.clone(),
                server_side: true,
                seconds: (p.cpu_ticks() - t0) as f64 * tick,
            });
        }
        if !self.backends.is_empty() && w == Workload::Proxy {
            let b1: u64 = self.backends.iter_mut().map(Spawned::cpu_ticks).sum();
            cpu.push(ProcCpu {
                name: "nginx back ends".into(),
                server_side: true,
                seconds: (b1 - b0) as f64 * tick,
            });
        }
        cpu.push(ProcCpu {
            name: name.into(),
            server_side: false,
            seconds: c.cpu_ticks() as f64 * tick,
        });
        let out = c.stdout();
        let parsed = match w {
            Workload::Kv if case.starts_with("PING") => {
                parse::redis_cli_latency(&out).map(|(avg, samples)| ClientResult {
                    rps: samples as f64 / wall.max(1e-9),
                    requests: samples,
                    avg_ms: Some(avg),
                    error_text: "none".into(),
                    ..ClientResult::default()
                })
            }
            Workload::Kv => parse::redis_benchmark_csv(&out, case.split(' ').next().unwrap_or("")),
            Workload::Proxy => parse::wrk(&out),
            Workload::Echo => parse::loadgen(&out),
        };
        let mut r = parsed.map_err(|e| format!("{e}\n{}", c.describe()))?;
        // redis-benchmark and redis-cli print error replies on standard error; a client
        // that failed (loadgen exits non-zero on any error) counts as an error too.
        let err = c.stderr();
        if w == Workload::Kv {
            let bad = err
                .lines()
                .filter(|l| l.contains("ERR") || l.to_lowercase().contains("error"))
                .count() as u64;
            if bad > 0 {
                r.errors += bad;
                r.error_text = format!("{bad} error line(s) on stderr: {}", first_line(&err));
            }
        }
        if !status.success() && r.errors == 0 {
            r.errors = 1;
            r.error_text = format!("{name} exited with {status}: {}", first_line(&err));
        }
        for p in &mut server.procs {
            if p.poll_exit().is_some() {
                return Err(format!(
                    "the server exited during the run\n{}",
                    p.describe()
                ));
            }
        }
        Ok((r, wall, cpu, irq))
    }
}

/// One client run: what it measures and its command in the client namespace.
struct Client {
    case: String,
    cmd: Command,
    /// Only latency is measured (redis-cli --latency).
    latency_only: bool,
    /// Its DPDK file prefix, when it is a nicemu process.
    dpdk_prefix: Option<String>,
}

impl Client {
    fn new(case: String, cmd: Command) -> Client {
        Client {
            case,
            cmd,
            latency_only: false,
            dpdk_prefix: None,
        }
    }
}

/// The error counters of a nicemu server's final summary (printed when it stops): its
/// last three distinct lines that mention errors, leaving out the periodic statistics
/// (lines that start with `[  t s]` or are indented: they repeat the same counters).
fn error_lines(out: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for l in out.lines().rev() {
        if l.starts_with('[') || l.starts_with(' ') {
            continue;
        }
        let l = l.trim();
        if l.to_lowercase().contains("error") && !v.iter().any(|x| x == l) {
            v.push(l.to_string());
            if v.len() == 3 {
                break;
            }
        }
    }
    v.reverse();
    v
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// The client program of a workload.
fn client_name(w: Workload) -> &'static str {
    match w {
        Workload::Kv => "redis client",
        Workload::Proxy => "wrk",
        Workload::Echo => "nicemu loadgen",
    }
}

/// Whether `GET url` from the client namespace answers 200.
fn http_ok(topo: &Topology, url: &str) -> bool {
    topo.client_run(&[
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-m",
        "2",
        "-w",
        "%{http_code}",
        url,
    ])
    .is_ok_and(|o| o.trim() == "200")
}

/// The load generator's configuration: net_af_packet on the client veth (given after
/// `--`), the address [`LOADGEN_IP`] (the client kernel does not own it), one `shared`
/// lcore on the last core this process may use.
fn loadgen_conf() -> String {
    let core = dataplane::sys::allowed_cores()
        .ok()
        .and_then(|c| c.last().copied())
        .unwrap_or(0);
    format!(
        "[eal]\nargs = [\"--no-huge\", \"--no-pci\", \"-m\", \"256\", \"-l\", \"{core}\"]\n\
         [runtime]\nstats_interval_s = 0.0\n\
         [[port]]\nname = \"p0\"\ndriver = \"dpdk\"\ndevice = \"net_af_packet0\"\n\
         ipv4 = [\"{LOADGEN_IP}/24\"]\nrss = \"off\"\n\
         [[lcore]]\ncore = {core}\nrole = \"shared\"\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_configurations() {
        let h = haproxy_conf();
        assert!(h.contains("bind 192.0.2.1:80"), "{h}");
        assert!(h.contains("server b0 192.0.2.3:8080"), "{h}");
        assert!(h.contains("server b1 192.0.2.4:8080"), "{h}");
        let n = nginx_conf(Path::new("/tmp/x"), Path::new("/tmp/www"), "192.0.2.3:8080");
        assert!(
            n.contains("listen 192.0.2.3:8080;") && n.contains("root /tmp/www;"),
            "{n}"
        );
        let out = "proxy: errors none\nproxy: errors 502: 1\nx\nproxy: errors 502: 2\n\
                   [   5.0 s] kv: errors 0\n           host 0: errors 0\nkv: error replies 0\n";
        assert_eq!(
            error_lines(out),
            vec![
                "proxy: errors 502: 1",
                "proxy: errors 502: 2",
                "kv: error replies 0"
            ]
        );
        let l = loadgen_conf();
        assert!(
            l.contains("192.0.2.10/24") && l.contains("role = \"shared\""),
            "{l}"
        );
        assert_eq!(
            servers(Workload::Kv),
            vec![ServerKind::NicemuKv, ServerKind::Redis]
        );
    }
}

//! The Linux kernel server (feature `dpdk`): the epoll echo server of [`super::kernel_server`] runs
//! in a network namespace this module creates, behind a veth pair; the client is the same nicemu
//! node as in the other rounds (host stack + echo load generator + NIC lcore), its NIC on DPDK's
//! net_af_packet over the veth end outside the namespace.
//!
//! Host cost of the kernel server = the server process's time on CPU (its
//! `/proc/<pid>/schedstat`) + the softirq time of the client's core (`/proc/stat`) over the
//! measured window. Why the second term: a frame the client sends through af_packet enters
//! the kernel-side veth and is processed by the kernel's TCP/IP receive path in softirq
//! context on the *sending* CPU, i.e. in the client's core (the kernel has no IRQ time
//! accounting here, so `/proc/stat` samples it by tick). The server's own sends, and the
//! softirq work that hands its replies to af_packet, run in the server process's context on
//! its core and are in the first term. Both terms and their limits are printed with the
//! results.

use std::io::{BufRead, BufReader};
use std::net::SocketAddrV4;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dataplane::lcore::NicLcore;
use dataplane::netns::{AfPacketNic, Netns, NetnsError};
use dataplane::port::dpdk::DpdkQueue;
use dataplane::runtime_dpdk::{remove_runtime_dir, DpdkTopology};
use hoststack::{Context, HostConfig};
use offload_api::link::HostEnd;

use super::procstat::{ns_per_tick, process_cpu_ns, process_ticks, softirq_ticks};
use super::{Deadline, EchoBenchOpts, Measurement, Server, CLIENT_IP, PORT, SERVER_IP};
use crate::echo::EchoClient;

fn ip4(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// The server's namespace and veth pair ([`Netns`]), configured: IPv4 only, no transmit
/// checksum offload on the veths, the server's address inside the namespace (none outside),
/// a listen backlog large enough for every connection.
fn namespace(server_ip: [u8; 4]) -> Result<Netns, NetnsError> {
    let id = std::process::id() % 100_000;
    let net = Netns::create(
        &format!("nmbench{id}"),
        &format!("nmb{id}o"),
        &format!("nmb{id}i"),
    )?;
    net.configure(&format!("{}/24", ip4(server_ip)))?;
    // The client opens up to 64,000 connections in one burst: with 4,096 the accept queue
    // overflowed (TcpExtListenOverflows 180,776 at 50,000 connections), SYNs met a full
    // queue and 16 connections still had none answered after 30 s.
    net.run(&["sysctl", "-qw", "net.core.somaxconn=65535"])?;
    net.run(&["sysctl", "-qw", "net.ipv4.tcp_max_syn_backlog=65535"])?;
    Ok(net)
}

/// The nicemu client on DPDK: its NIC lcore, host context, and the DPDK topology (devices
/// and EAL) they live on. Fields drop in order: lcore, context, then devices and EAL.
struct DpdkClient {
    nic: NicLcore<DpdkQueue>,
    ctx: Context<HostEnd>,
    _topo: DpdkTopology,
}

/// The kernel server's environment, kept for all rounds (DPDK's EAL starts once per
/// process). Dropping it stops the server, shuts DPDK down, removes DPDK's runtime
/// directory, and deletes the namespace and the veth pair.
pub(super) struct KernelBench {
    client: Option<DpdkClient>,
    server: Option<Child>,
    server_pid: u32,
    client_core: usize,
    prefix: String,
    net: Option<Netns>,
}

impl Drop for KernelBench {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            // Closing its standard input asks it to exit; make sure it does.
            drop(s.stdin.take());
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(1) {
                if let Ok(Some(_)) = s.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = s.kill();
            let _ = s.wait();
        }
        drop(self.client.take());
        remove_runtime_dir(&self.prefix);
        drop(self.net.take());
    }
}

impl KernelBench {
    /// Creates the namespace and veth, starts the server pinned to `server_core` and the
    /// DPDK client, sized for `conns` connections, on `client_core`.
    pub(super) fn start(
        client_core: usize,
        server_core: usize,
        conns: usize,
    ) -> Result<KernelBench, String> {
        let mut kb = KernelBench {
            client: None,
            server: None,
            server_pid: 0,
            client_core,
            prefix: format!("nicemu-bench-{}", std::process::id()),
            net: None,
        };
        let net = kb
            .net
            .insert(namespace(SERVER_IP).map_err(|e| e.to_string())?);
        let outer = net.outer().to_string();
        let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
        let exe = exe.to_string_lossy().into_owned();
        let (port, core) = (PORT.to_string(), server_core.to_string());
        let mut child = net
            .command(&[&exe, "bench", "kernel-echo-server", "--port", &port])
            .args(["--core", &core])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the kernel echo server: {e}"))?;
        kb.server_pid = child.id();
        let stdout = child.stdout.take();
        kb.server = Some(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            if let Some(o) = stdout {
                let _ = BufReader::new(o).read_line(&mut line);
            }
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) if l.trim() == "ready" => {}
            Ok(l) => return Err(format!("kernel echo server did not start: {l:?}")),
            Err(_) => return Err("kernel echo server did not start within 10 s".into()),
        }
        kb.client = Some(dpdk_client(&outer, &kb.prefix, client_core, conns)?);
        Ok(kb)
    }

    /// One round: connect, warm up, measure, close.
    pub(super) fn round(
        &mut self,
        opts: &EchoBenchOpts,
        round: u32,
    ) -> Result<Measurement, String> {
        let c = self.client.as_mut().ok_or("no DPDK client")?;
        let mut app = EchoClient::with_per_conn(
            &mut c.ctx,
            SocketAddrV4::new(SERVER_IP.into(), PORT),
            opts.conns,
            opts.size,
            opts.per_conn,
        )
        .map_err(|e| format!("echo client: {e:?}"))?;
        let step = |app: &mut EchoClient, c: &mut DpdkClient| {
            app.step(&mut c.ctx);
            c.nic.poll_once();
        };
        let warm = Deadline::after(opts.warmup_seconds);
        let limit = Deadline::after(opts.warmup_seconds + 30.0);
        let mut i = 0u64;
        loop {
            step(&mut app, c);
            i += 1;
            if i.is_multiple_of(256) {
                opts.check_stop()?;
                if super::warmed(&app, opts.conns, opts.per_conn) && warm.passed() {
                    break;
                }
                if limit.passed() {
                    return Err(format!(
                        "kernel: only {} of {} connections established\nclient host: {:?}",
                        app.connected(),
                        opts.conns,
                        c.ctx.stats()
                    ));
                }
            }
        }
        let pid = self.server_pid;
        let (p0, k0, s0) = (
            process_cpu_ns(pid)?,
            process_ticks(pid)?,
            softirq_ticks(self.client_core)?,
        );
        let tx0 = app.transactions;
        let t0 = Instant::now();
        let end = Deadline::after(opts.seconds);
        loop {
            step(&mut app, c);
            i += 1;
            if i.is_multiple_of(64) && end.passed() {
                break;
            }
            if i.is_multiple_of(65_536) {
                opts.check_stop()?;
            }
        }
        let wall = t0.elapsed().as_secs_f64();
        let (p1, k1, s1) = (
            process_cpu_ns(pid)?,
            process_ticks(pid)?,
            softirq_ticks(self.client_core)?,
        );
        let transactions = app.transactions - tx0;
        let (failed, corrupt) = (app.failed, app.corrupt);
        // Close every connection and let the FINs cross before the next round.
        app.close(&mut c.ctx);
        let done = Deadline::after(0.3);
        while !done.passed() {
            step(&mut app, c);
        }
        if failed + corrupt > 0 {
            return Err(format!(
                "kernel: client saw {failed} failed connections and {corrupt} corrupted echoes"
            ));
        }
        let process_ns = (p1 - p0) as f64;
        let softirq_ns = (s1 - s0) as f64 * ns_per_tick();
        let stat_ns = ((k1.0 + k1.1) - (k0.0 + k0.1)) as f64 * ns_per_tick();
        let t = transactions.max(1) as f64;
        Ok(Measurement {
            server: Server::Kernel,
            round,
            transactions,
            wall_s: wall,
            host_ns: process_ns + softirq_ns,
            host_idle_ns: None,
            host_ns_process: Some(process_ns),
            nic_ns: None,
            link: None,
            note: Some(format!(
                "process {:.0} + client-core softirq {:.0} ns/txn (utime+stime {:.0})",
                process_ns / t,
                softirq_ns / t,
                stat_ns / t
            )),
        })
    }
}

/// The client's NIC on net_af_packet over `iface`, with its host context.
fn dpdk_client(iface: &str, prefix: &str, core: usize, conns: usize) -> Result<DpdkClient, String> {
    let afp = AfPacketNic {
        core,
        mem_mb: 512,
        framecnt: Some(4096),
        mbufs: Some(16383),
        ..AfPacketNic::new(iface, &format!("{}/24", ip4(CLIENT_IP)), prefix)
    };
    let link = offload_api::link::LinkConfig {
        depth: super::inmem::ring_frames(conns),
        ..Default::default()
    };
    let mut topo = afp
        .build("nicemu bench echo (kernel round)", link)
        .map_err(|e| e.to_string())?;
    let nic = topo.lcores.pop().ok_or("no NIC lcore")?;
    let host = topo.host.pop().ok_or("no host link")?;
    let mut hc = HostConfig::new(CLIENT_IP, 0);
    hc.tcp.nodelay = true;
    // The load generator closes first and reuses its ports soon (as Linux's tcp_tw_reuse
    // lets a client), over every port but the well-known ones: with short-lived connections
    // a 60 s TIME_WAIT would hold all of them within a second (100 ms: as the in-memory
    // rounds' client).
    hc.tcp.time_wait_ns = 100_000_000;
    hc.ephemeral = (1024, 65535);
    let clock = nic.clock().clone();
    let ctx = Context::new(hc, host, std::sync::Arc::new(move || clock.now_ns()));
    Ok(DpdkClient {
        nic,
        ctx,
        _topo: topo,
    })
}

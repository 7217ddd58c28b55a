//! The process-wide part of the library: mTCP's settings (`struct mtcp_conf`) and, with
//! the `dpdk` feature, the DPDK topology that `mtcp_init` builds once and that
//! `mtcp_create_context` hands out one host end at a time.
//!
//! The topology is the one `nicemu`'s applications run on (`apps/src/procs.rs`): the
//! nicemu TOML's ports and NIC lcores in NIC mode with a host channel (the emulated PCIe
//! link) per NIC lcore. Context k gets NIC lcore k's channel. A `shared` lcore's NIC
//! iteration runs in the context's own thread (inside its blocking calls and
//! `mtcp_epoll_wait`); `nic` lcores run on threads of their own, started by `mtcp_init`.

use std::sync::Mutex;

use crate::conf::MtcpConfFile;

/// `struct mtcp_conf` of `mtcp_api.h` (mTCP's layout: seven `int`s).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MtcpConf {
    /// Contexts the application will create.
    pub num_cores: libc::c_int,
    /// Most connections per context.
    pub max_concurrency: libc::c_int,
    /// Most buffers per context (informative).
    pub max_num_buffers: libc::c_int,
    /// Receive buffer per connection, bytes.
    pub rcvbuf_size: libc::c_int,
    /// Send buffer per connection, bytes.
    pub sndbuf_size: libc::c_int,
    /// TIME_WAIT, seconds (0: the stack's default).
    pub tcp_timewait: libc::c_int,
    /// Idle timeout, seconds (informative).
    pub tcp_timeout: libc::c_int,
}

impl From<&MtcpConfFile> for MtcpConf {
    fn from(c: &MtcpConfFile) -> Self {
        let int = |v: usize| libc::c_int::try_from(v).unwrap_or(libc::c_int::MAX);
        MtcpConf {
            num_cores: int(c.num_cores),
            max_concurrency: int(c.max_concurrency),
            max_num_buffers: int(c.max_num_buffers),
            rcvbuf_size: int(c.rcvbuf),
            sndbuf_size: int(c.sndbuf),
            tcp_timewait: c.tcp_timewait,
            tcp_timeout: c.tcp_timeout,
        }
    }
}

/// The settings contexts are created with (mtcp_init sets them from the file, mtcp_setconf
/// changes them).
pub static CONF: Mutex<Option<MtcpConf>> = Mutex::new(None);

/// The current settings (mTCP's defaults before mtcp_init).
pub fn conf() -> MtcpConf {
    CONF.lock()
        .ok()
        .and_then(|c| *c)
        .unwrap_or_else(|| MtcpConf::from(&MtcpConfFile::default()))
}

/// Applies `c` to a context's host configuration: buffers, connection and descriptor
/// bounds, TIME_WAIT, and mTCP's order of descriptor numbers.
pub fn apply(c: &MtcpConf, hc: &mut hoststack::HostConfig) {
    // mTCP's socket table holds `max_concurrency` sockets, epolls included, and hands them
    // out from a free queue: numbers stay below `max_concurrency` and one just closed is not
    // reused at once (programs size per-descriptor arrays by it, as epwget does).
    hc.fd_reuse = hoststack::stack::FdReuse::Cycle;
    if let Ok(n) = usize::try_from(c.rcvbuf_size) {
        if n > 0 {
            hc.tcp.recv_buffer = n;
        }
    }
    if let Ok(n) = usize::try_from(c.sndbuf_size) {
        if n > 0 {
            hc.tcp.send_buffer = n;
        }
    }
    if let Ok(n) = usize::try_from(c.max_concurrency) {
        if n > 0 {
            hc.max_conns = n;
            hc.max_fds = n;
        }
    }
    // As in mTCP, 0 (its default) frees a connection as soon as it enters TIME_WAIT.
    if let Ok(s) = u64::try_from(c.tcp_timewait) {
        hc.tcp.time_wait_ns = s * 1_000_000_000;
    }
}

#[cfg(feature = "dpdk")]
pub use dpdk::{create_context, destroy, init};

#[cfg(not(feature = "dpdk"))]
pub use nodpdk::{create_context, destroy, init};

#[cfg(not(feature = "dpdk"))]
mod nodpdk {
    use crate::err::{E, R};
    use crate::Handle;

    /// Without DPDK there is no NIC to run on.
    pub fn init(_path: &str) -> Result<(), String> {
        Err("libmtcp was built without the `dpdk` feature: no NIC to run on".into())
    }

    /// Fails: see [`init`].
    pub fn create_context(_cpu: i32) -> R<&'static Handle> {
        Err(E::NOTINIT)
    }

    /// Nothing to stop.
    pub fn destroy() {}
}

#[cfg(feature = "dpdk")]
mod dpdk {
    use std::collections::VecDeque;
    use std::path::Path;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};

    use dataplane::config::{Config, Role};
    use dataplane::idle::{Backoff, IdlePolicy, PollMode};
    use dataplane::lcore::{Mode, NicLcore};
    use dataplane::port::dpdk::DpdkQueue;
    use dataplane::runtime::{run_lcores, RunOptions};
    use dataplane::runtime_dpdk::{
        build_dpdk, eal_args, file_prefix, remove_runtime_dir, DpdkTopology,
    };
    use hoststack::stack::{FlowCore, ListenHook};
    use hoststack::{Context, HostConfig};
    use offload_api::link::HostEnd;

    use super::{apply, conf, MtcpConf, CONF};
    use crate::conf::ENV_CONFIG;
    use crate::conf::{apply_tables, find_table, nicemu_path, parse, parse_arp, parse_routes};
    use crate::ctx::{Ctx, NicSide};
    use crate::err::{E, R};
    use crate::Handle;

    /// A `shared` lcore: its NIC iteration runs in the context's thread.
    struct SharedNic(Box<NicLcore<DpdkQueue>>);

    impl NicSide for SharedNic {
        fn poll(&mut self) -> bool {
            self.0.poll_once();
            // What follows is the host's work, not the NIC's (apps/src/procs.rs).
            self.0.end_iteration();
            self.0.was_busy()
        }
        fn idle(&mut self, busy: bool) {
            self.0.backoff_mut().after(busy);
        }
    }

    /// A context whose NIC lcore has its own thread: only the idle policy, woken by the
    /// link's doorbell when the NIC hands a frame over.
    struct HostOnly(Backoff);

    impl NicSide for HostOnly {
        fn poll(&mut self) -> bool {
            false
        }
        fn idle(&mut self, busy: bool) {
            self.0.after(busy);
        }
    }

    /// What a context takes: its NIC lcore when shared, and its end of the link.
    enum Slot {
        Shared(Box<NicLcore<DpdkQueue>>, HostEnd),
        Host(HostEnd, dataplane::clock::Clock),
    }

    struct Runtime {
        slots: VecDeque<(usize, Slot)>,
        ip: [u8; 4],
        flow_core: Option<FlowCore>,
        /// Registers a context's listening ports with the lcores' steering, if they steer.
        on_listen: Option<ListenHook>,
        poll: PollMode,
        idle: IdlePolicy,
        nic_stop: Arc<AtomicBool>,
        nic_thread: Option<std::thread::JoinHandle<()>>,
        contexts: Vec<&'static Handle>,
        topo: Option<DpdkTopology>,
        prefix: String,
    }

    /// The runtime between mtcp_init and mtcp_destroy.
    static RT: Mutex<Option<Runtime>> = Mutex::new(None);

    /// Which core a connection's replies reach, where the port hashes (a physical NIC with
    /// RSS): the Toeplitz queue of the reversed tuple, as `apps::node::rss_flow_core`.
    fn flow_core(mode: dataplane::rss::RssMode, queues: u16) -> FlowCore {
        let reta = dataplane::rss::Reta::new(queues);
        Arc::new(move |ep: &hoststack::tcp::tcb::Endpoints| {
            let Some(key) = mode.key() else { return 0 };
            let mut input = [0u8; 12];
            let n = dataplane::rss::ipv4_input(
                ep.remote_ip,
                ep.local_ip,
                Some((ep.remote_port, ep.local_port)),
                &mut input,
            );
            reta.queue(dataplane::rss::toeplitz(key, &input[..n])) as usize
        })
    }

    /// mtcp_init: reads the mTCP file at `path`, loads the nicemu TOML, builds the
    /// topology and starts the `nic` lcores' threads.
    pub fn init(path: &str) -> Result<(), String> {
        let mut rt = RT
            .lock()
            .map_err(|_| "libmtcp: state poisoned".to_string())?;
        if rt.is_some() {
            return Err("mtcp_init: already initialised (call mtcp_destroy first)".into());
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
        let dir = Path::new(path).parent().unwrap_or(Path::new("."));
        let (file, warnings) = parse(&text, dir).map_err(|e| format!("{path}: {e}"))?;
        for w in warnings {
            eprintln!("libmtcp: warning: {path}: {w}");
        }
        let env = std::env::var(ENV_CONFIG).ok();
        let toml = nicemu_path(&file, env.as_deref(), path)?;
        let mut cfg = Config::load(&toml).map_err(|e| e.to_string())?;
        check(&cfg)?;
        tables(Path::new(path), &mut cfg)?;
        let nic = cfg.nic_lcores();
        if file.num_cores > nic.len() {
            eprintln!(
                "libmtcp: warning: {path}: num_cores = {} but {} has {} NIC lcores: at most {} contexts",
                file.num_cores,
                cfg.source,
                nic.len(),
                nic.len()
            );
        }
        let threads = nic
            .iter()
            .map(|l| if l.role == Role::Shared { 1 } else { 2 })
            .sum();
        let (poll, ws) = dataplane::runtime::polling(&cfg, threads, false);
        for w in ws {
            eprintln!("libmtcp: warning: {w}");
        }
        let opts = RunOptions {
            mode: Mode::Nic,
            pin: false,
            host_channels: true,
            poll,
            ..RunOptions::default()
        };
        let prefix = file_prefix(&eal_args(&cfg, &[]));
        let mut topo = build_dpdk(&cfg, &opts, &[], None).map_err(|e| {
            remove_runtime_dir(&prefix);
            e.to_string()
        })?;
        let roles: Vec<Role> = nic.iter().map(|l| l.role).collect();
        let queues = roles.len();
        let hashes = cfg.ports[0].rss.key().is_some() && cfg.ports[0].is_physical();
        // net_af_packet with several queue pairs: the lcores steer each other's outgoing
        // connections by the residue of the local port (`dataplane::steer`), and each
        // context picks ports of its own residue.
        let steer = (!hashes)
            .then(|| {
                let eph = HostConfig::new(cfg.ports[0].ipv4[0].0, 0).ephemeral;
                dataplane::steer::for_config(&cfg, &mut topo.lcores, eph)
            })
            .flatten();
        let flow = if queues > 1 && hashes {
            Some(flow_core(cfg.ports[0].rss, queues as u16))
        } else {
            steer.clone().map(|st| -> FlowCore {
                Arc::new(move |ep: &hoststack::tcp::tcb::Endpoints| st.connect_owner(ep.local_port))
            })
        };
        // Steered: every context registers the ports it listens on (a C program may listen
        // inside the ephemeral range), so that their connections stay where they arrive.
        let on_listen =
            steer.map(|st| -> ListenHook { Arc::new(move |port: u16| st.listen(port)) });
        let mut slots = VecDeque::new();
        let mut nic_only = Vec::new();
        let lcores = std::mem::take(&mut topo.lcores);
        let ends = std::mem::take(&mut topo.host);
        for (k, ((lcore, end), role)) in lcores.into_iter().zip(ends).zip(roles).enumerate() {
            if role == Role::Shared {
                slots.push_back((k, Slot::Shared(Box::new(lcore), end)));
            } else {
                slots.push_back((k, Slot::Host(end, lcore.clock().clone())));
                nic_only.push(lcore);
            }
        }
        let nic_stop = Arc::new(AtomicBool::new(false));
        let nic_thread = if nic_only.is_empty() {
            None
        } else {
            let stop = nic_stop.clone();
            let opts = RunOptions {
                duration: None,
                stats_interval: None,
                ..opts
            };
            Some(
                std::thread::Builder::new()
                    .name("mtcp-nic".into())
                    .spawn(move || {
                        let init = dataplane::runtime_dpdk::thread_init();
                        if let Err(e) = run_lcores(nic_only, &opts, stop, init, |_, _| {}) {
                            eprintln!("libmtcp: NIC lcores stopped: {e}");
                        }
                    })
                    .map_err(|e| format!("cannot start the NIC lcores' thread: {e}"))?,
            )
        };
        if let Ok(mut c) = CONF.lock() {
            *c = Some(MtcpConf::from(&file));
        }
        *rt = Some(Runtime {
            slots,
            ip: cfg.ports[0].ipv4[0].0,
            flow_core: flow,
            on_listen,
            poll,
            idle: cfg.runtime.idle_policy(),
            nic_stop,
            nic_thread,
            contexts: Vec::new(),
            topo: Some(topo),
            prefix,
        });
        Ok(())
    }

    /// mTCP's `arp.conf` and `route.conf` for the configuration file `conf` (see
    /// [`find_table`]): static neighbours on every port, routes' prefixes on-link on their
    /// ports. Absent files are fine; a malformed one is an error.
    fn tables(conf: &Path, cfg: &mut Config) -> Result<(), String> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
        let read = |name: &str| -> Result<Option<(String, String)>, String> {
            let Some(p) = find_table(conf, name, &cwd) else {
                return Ok(None);
            };
            let file = p.display().to_string();
            let text =
                std::fs::read_to_string(&p).map_err(|e| format!("{file}: cannot read: {e}"))?;
            Ok(Some((file, text)))
        };
        let mut arp = Vec::new();
        let mut routes = Vec::new();
        if let Some((file, text)) = read("arp.conf")? {
            let (a, ws) = parse_arp(&text, &file)?;
            for w in ws {
                eprintln!("libmtcp: warning: {w}");
            }
            eprintln!("libmtcp: {file}: {} static neighbours", a.len());
            arp = a;
        }
        if let Some((file, text)) = read("route.conf")? {
            let (r, ws) = parse_routes(&text, &file)?;
            for w in ws {
                eprintln!("libmtcp: warning: {w}");
            }
            eprintln!("libmtcp: {file}: {} on-link routes", r.len());
            routes = r;
        }
        for w in apply_tables(&mut cfg.ports, &arp, &routes) {
            eprintln!("libmtcp: warning: route.conf: {w}");
        }
        Ok(())
    }

    /// What the library needs of a nicemu configuration: DPDK ports, an address on port 0.
    fn check(cfg: &Config) -> Result<(), String> {
        if cfg.ports.is_empty()
            || cfg
                .ports
                .iter()
                .any(|p| p.driver != dataplane::config::Driver::Dpdk)
        {
            return Err(format!(
                "{}: port: libmtcp runs on DPDK ports (driver \"dpdk\")",
                cfg.source
            ));
        }
        if cfg.ports[0].ipv4.is_empty() {
            return Err(format!(
                "{}: port[0].ipv4: libmtcp needs an address",
                cfg.source
            ));
        }
        if cfg.nic_lcores().is_empty() {
            return Err(format!(
                "{}: lcore: no NIC lcore (role \"nic\" or \"shared\")",
                cfg.source
            ));
        }
        Ok(())
    }

    /// mtcp_create_context: the next NIC lcore's host end, run by the calling thread.
    /// `cpu` is informative (mtcp_core_affinitize pins).
    pub fn create_context(_cpu: i32) -> R<&'static Handle> {
        let mut g = RT.lock().map_err(|_| E::NOTINIT)?;
        let rt = g.as_mut().ok_or(E::NOTINIT)?;
        let Some((k, slot)) = rt.slots.pop_front() else {
            eprintln!(
                "libmtcp: mtcp_create_context: every NIC lcore of the configuration has a context"
            );
            return Err(E(libc::ENOSPC));
        };
        let c: MtcpConf = conf();
        let mut hc = HostConfig::new(rt.ip, 0);
        hc.core = k;
        hc.flow_core = rt.flow_core.clone();
        hc.on_listen = rt.on_listen.clone();
        apply(&c, &mut hc);
        let (end, clock, nic): (HostEnd, _, Box<dyn NicSide>) = match slot {
            Slot::Shared(lcore, end) => {
                // This thread runs the lcore: register it with DPDK (mempool caches).
                if let Err(e) = dataplane::runtime_dpdk::thread_init()() {
                    eprintln!("libmtcp: mtcp_create_context: {e}");
                    rt.slots.push_front((k, Slot::Shared(lcore, end)));
                    return Err(E(libc::EIO));
                }
                let clock = lcore.clock().clone();
                (end, clock, Box::new(SharedNic(lcore)))
            }
            Slot::Host(end, clock) => {
                let b = Backoff::new(rt.poll, rt.idle).with_doorbell(end.rx_doorbell());
                (end, clock, Box::new(HostOnly(b)))
            }
        };
        let stack = Context::new(hc, end, Arc::new(move || clock.now_ns()));
        let h: &'static Handle = Box::leak(Box::new(Handle::new(Ctx::new(stack, nic))));
        rt.contexts.push(h);
        crate::register_handle(h);
        Ok(h)
    }

    /// mtcp_destroy: ends every context's waits, drops the contexts (their lcores), stops
    /// the NIC threads, releases DPDK and removes its runtime directory.
    pub fn destroy() {
        crate::signal::interrupt_all();
        let Some(mut rt) = RT.lock().ok().and_then(|mut g| g.take()) else {
            return;
        };
        for h in rt.contexts.drain(..) {
            h.close();
        }
        rt.slots.clear();
        rt.nic_stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = rt.nic_thread.take() {
            let _ = t.join();
        }
        drop(rt.topo.take());
        remove_runtime_dir(&rt.prefix);
    }
}

#[cfg(test)]
mod tests {
    use super::{apply, MtcpConf};
    use crate::conf::MtcpConfFile;

    #[test]
    fn mtcp_settings_map_onto_the_host_config() {
        let mut c = MtcpConf::from(&MtcpConfFile::default());
        c.max_concurrency = 300;
        c.rcvbuf_size = 4096;
        let mut hc = hoststack::HostConfig::new([10, 0, 0, 1], 0);
        apply(&c, &mut hc);
        assert_eq!((hc.max_conns, hc.max_fds), (300, 300));
        assert_eq!(hc.fd_reuse, hoststack::stack::FdReuse::Cycle);
        assert_eq!(hc.tcp.recv_buffer, 4096);
        // mTCP's default tcp_timewait 0: no TIME_WAIT; a value in seconds otherwise.
        assert_eq!(hc.tcp.time_wait_ns, 0);
        c.tcp_timewait = 3;
        apply(&c, &mut hc);
        assert_eq!(hc.tcp.time_wait_ns, 3_000_000_000);
    }
}

//! Network namespaces for talking to the Linux kernel's own stack (real, unmodified peers): a
//! namespace holding one end of a veth pair, the kernel's, while the other end stays in the
//! caller's namespace for a NIC on DPDK's net_af_packet; the commands that set them up; and
//! that NIC's configuration. Used by the kernel-interop tests and the echo benchmark's kernel
//! round.
//!
//! A [`Netns`] deletes the namespace and the pair when dropped, also on failure or panic.
//! Traffic stays inside the pair. Needs root, iproute2 and ethtool.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::config::{Config, ConfigError};

/// Why a namespace command or set-up step failed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// The command could not be started (not installed, no permission).
    #[error("{cmd}: could not start: {source}")]
    Spawn {
        /// The command line.
        cmd: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The command ran and exited with failure.
    #[error("{cmd} failed: {stderr}")]
    Failed {
        /// The command line.
        cmd: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// The NIC's generated configuration was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The DPDK topology could not be built.
    #[cfg(feature = "dpdk")]
    #[error("DPDK topology: {0}")]
    Topology(#[from] crate::runtime::RunError),
}

fn cmd_line(args: &[&str]) -> String {
    args.join(" ")
}

/// Runs `args[0]` with the other arguments and standard input closed; its output, or an
/// error naming the command when it could not be started.
pub fn output(args: &[&str]) -> Result<Output, NetnsError> {
    Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|source| NetnsError::Spawn {
            cmd: cmd_line(args),
            source,
        })
}

/// Runs a command that must succeed: its standard output, or an error naming the command,
/// with its standard error.
pub fn run(args: &[&str]) -> Result<String, NetnsError> {
    let out = output(args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(NetnsError::Failed {
            cmd: cmd_line(args),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// [`run`] for tests and set-up that cannot go on without the command: panics with its
/// error.
pub fn must(args: &[&str]) -> String {
    run(args).unwrap_or_else(|e| panic!("{e}"))
}

/// The `net.ipv6.conf.DEV.disable_ipv6=1` setting, or None on a kernel without IPv6 (where
/// the key does not exist and there is nothing to turn off).
fn ipv6_off(dev: &str) -> Option<String> {
    Path::new("/proc/sys/net/ipv6")
        .exists()
        .then(|| format!("net.ipv6.conf.{dev}.disable_ipv6=1"))
}

/// The name of a test's namespace or link: `nmt`, the test's `tag`, the `kind` of the thing
/// (`""` for the namespace, `"o"` and `"i"` for the veth ends, or the caller's own letters),
/// then the process id modulo 100,000. Unique per test (one tag per test of a process) and
/// process; at most 15 bytes (an interface name's limit) while tag and kind take at most 7
/// together; and matched by `ci/cleanup.sh` (prefix `nmt`).
pub fn test_name(tag: &str, kind: &str) -> String {
    format!("nmt{tag}{kind}{}", std::process::id() % 100_000)
}

/// A network namespace holding one end of a veth pair (`inner`, the kernel's); the other
/// end (`outer`) stays in the caller's namespace, for net_af_packet.
///
/// Invariant: dropping it deletes the namespace and the `outer` link (deleting the namespace
/// deletes `inner`, and with it the pair and any other link created inside; `outer` is
/// deleted as well in case the namespace never got `inner`), whether it was set up
/// completely or not, also when a panic drops it.
#[derive(Debug)]
pub struct Netns {
    ns: String,
    outer: String,
    inner: String,
}

impl Netns {
    /// Creates namespace `ns` and the veth pair `outer`–`inner`, and moves `inner` into the
    /// namespace. Names are meant to be the caller's alone: when a step fails, both names
    /// are deleted again.
    pub fn create(ns: &str, outer: &str, inner: &str) -> Result<Netns, NetnsError> {
        let n = Netns {
            ns: ns.into(),
            outer: outer.into(),
            inner: inner.into(),
        };
        // From here on `n` is dropped, and everything removed, on any error.
        run(&["ip", "netns", "add", ns])?;
        run(&[
            "ip", "link", "add", outer, "type", "veth", "peer", "name", inner,
        ])?;
        run(&["ip", "link", "set", inner, "netns", ns])?;
        Ok(n)
    }

    /// A test's namespace, named by [`test_name`] with `tag`: after deleting what an earlier
    /// run of the same process id may have left with these names, [`Netns::create`].
    pub fn for_test(tag: &str) -> Result<Netns, NetnsError> {
        let (ns, outer) = (test_name(tag, ""), test_name(tag, "o"));
        delete(&ns, &outer);
        Netns::create(&ns, &outer, &test_name(tag, "i"))
    }

    /// The namespace's name.
    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// The veth end in the caller's namespace (the one net_af_packet binds).
    pub fn outer(&self) -> &str {
        &self.outer
    }

    /// The veth end inside the namespace (the kernel's).
    pub fn inner(&self) -> &str {
        &self.inner
    }

    /// A command that runs `args` inside the namespace (`ip netns exec NS ...`), for the
    /// caller to set up its standard streams and spawn.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).args(args);
        c
    }

    /// [`run`] inside the namespace.
    pub fn run(&self, args: &[&str]) -> Result<String, NetnsError> {
        let mut v = vec!["ip", "netns", "exec", &self.ns];
        v.extend_from_slice(args);
        run(&v)
    }

    /// [`must`] inside the namespace.
    pub fn must(&self, args: &[&str]) -> String {
        self.run(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Turns IPv6 off on `dev` inside the namespace (no stray traffic), before it goes up.
    pub fn disable_ipv6(&self, dev: &str) -> Result<(), NetnsError> {
        match ipv6_off(dev) {
            Some(key) => self.run(&["sysctl", "-qw", &key]).map(drop),
            None => Ok(()),
        }
    }

    /// Configures both veth ends: IPv6 off, no transmit offloads (`ethtool -K DEV tx off`:
    /// the kernel sends complete checksums and segments of at most one MTU), the kernel's
    /// address `kernel_cidr` (`a.b.c.d/len`) on `inner` and none outside, loopback and both
    /// ends up.
    pub fn configure(&self, kernel_cidr: &str) -> Result<(), NetnsError> {
        let (outer, inner) = (self.outer.as_str(), self.inner.as_str());
        if let Some(key) = ipv6_off(outer) {
            run(&["sysctl", "-qw", &key])?;
        }
        self.disable_ipv6(inner)?;
        run(&["ethtool", "-K", outer, "tx", "off"])?;
        self.run(&["ethtool", "-K", inner, "tx", "off"])?;
        self.run(&["ip", "link", "set", "lo", "up"])?;
        self.run(&["ip", "addr", "add", kernel_cidr, "dev", inner])?;
        self.run(&["ip", "link", "set", inner, "up"])?;
        run(&["ip", "link", "set", outer, "up"]).map(drop)
    }

    /// Whether a namespace named `name` exists (`ip netns list`).
    pub fn exists(name: &str) -> Result<bool, NetnsError> {
        Ok(run(&["ip", "netns", "list"])?
            .split_whitespace()
            .any(|w| w == name))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        delete(&self.ns, &self.outer);
    }
}

/// Deletes namespace `ns` and link `outer`, where they exist.
fn delete(ns: &str, outer: &str) {
    let _ = output(&["ip", "netns", "del", ns]);
    let _ = output(&["ip", "link", "del", outer]);
}

/// A NIC on DPDK's net_af_packet over a veth end: the configuration of one port `p0` (RSS
/// off) and one NIC lcore, with the EAL on neither hugepages nor PCI.
#[derive(Clone, Debug)]
pub struct AfPacketNic {
    /// The interface net_af_packet binds (a [`Netns::outer`]).
    pub iface: String,
    /// The port's address, `a.b.c.d/len`.
    pub cidr: String,
    /// DPDK's file prefix: unique per process; its runtime directory is removed after
    /// (`runtime_dpdk::remove_runtime_dir`).
    pub prefix: String,
    /// The NIC lcore's core, the EAL's only one (`-l`).
    pub core: usize,
    /// EAL memory in MB (`-m`).
    pub mem_mb: u32,
    /// Frames in af_packet's rings (`framecnt`); None: the driver's default.
    pub framecnt: Option<u32>,
    /// Mbufs in the port's pool; None: the configuration's default.
    pub mbufs: Option<u32>,
}

impl AfPacketNic {
    /// The NIC on `iface` with address `cidr` and DPDK file prefix `prefix`: core 0,
    /// 256 MB, the defaults for the rest.
    pub fn new(iface: &str, cidr: &str, prefix: &str) -> AfPacketNic {
        AfPacketNic {
            iface: iface.into(),
            cidr: cidr.into(),
            prefix: prefix.into(),
            core: 0,
            mem_mb: 256,
            framecnt: None,
            mbufs: None,
        }
    }

    /// Its configuration; `source` names it in error messages.
    pub fn config(&self, source: &str) -> Result<Config, ConfigError> {
        let AfPacketNic {
            iface,
            cidr,
            prefix,
            core,
            mem_mb,
            ..
        } = self;
        let framecnt = self
            .framecnt
            .map(|n| format!(",framecnt={n}"))
            .unwrap_or_default();
        let runtime = self
            .mbufs
            .map(|n| format!("[runtime]\nmbufs = {n}\n"))
            .unwrap_or_default();
        let text = format!(
            r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "{mem_mb}", "-l", "{core}", "--file-prefix={prefix}",
        "--vdev=net_af_packet0,iface={iface}{framecnt}"]
{runtime}[[port]]
name = "p0"
driver = "dpdk"
device = "net_af_packet0"
ipv4 = ["{cidr}"]
rss = "off"
[[lcore]]
core = {core}
role = "nic"
"#
        );
        Config::parse(&text, source)
    }

    /// Builds its DPDK topology (EAL, port, NIC lcore) in NIC mode, lcores not pinned, with
    /// a host channel of `link` to the lcore.
    #[cfg(feature = "dpdk")]
    pub fn build(
        &self,
        source: &str,
        link: offload_api::link::LinkConfig,
    ) -> Result<crate::runtime_dpdk::DpdkTopology, NetnsError> {
        let cfg = self.config(source)?;
        let opts = crate::runtime::RunOptions {
            mode: crate::lcore::Mode::Nic,
            host_channels: true,
            pin: false,
            link,
            ..Default::default()
        };
        Ok(crate::runtime_dpdk::build_dpdk(&cfg, &opts, &[], None)?)
    }

    /// For tests: runs `f` on [`AfPacketNic::build`]'s topology (default host channel), then
    /// removes DPDK's runtime directory, also when building or `f` panics (the panic then
    /// carries on).
    #[cfg(feature = "dpdk")]
    pub fn with_topology<R>(
        &self,
        source: &str,
        f: impl FnOnce(crate::runtime_dpdk::DpdkTopology) -> R,
    ) -> R {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let topo = self
                .build(source, Default::default())
                .unwrap_or_else(|e| panic!("DPDK topology: {e}"));
            f(topo)
        }));
        crate::runtime_dpdk::remove_runtime_dir(&self.prefix);
        result.unwrap_or_else(|e| std::panic::resume_unwind(e))
    }
}

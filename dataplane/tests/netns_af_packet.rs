//! The NIC on DPDK's net_af_packet over a veth pair whose other end sits in a network
//! namespace this test creates: the Linux kernel pings the NIC and resolves its address by
//! ARP, and the NIC resolves the kernel's address by ARP to deliver a host frame.
//!
//! Traffic stays inside the pair; the namespace and the veth are removed at the end, also when
//! the test fails (a guard's Drop). Needs root, iproute2, ethtool, ping and python3.
#![cfg(feature = "dpdk")]

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dataplane::config::Config;
use dataplane::lcore::{Mode, NicLcore};
use dataplane::port::dpdk::DpdkQueue;
use dataplane::runtime::RunOptions;
use dataplane::runtime_dpdk::{build_dpdk, remove_runtime_dir};

const NIC_IP: [u8; 4] = [192, 0, 2, 1];
const KERNEL_IP: [u8; 4] = [192, 0, 2, 2];

fn sh(args: &[&str]) -> Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn must(args: &[&str]) -> String {
    let out = sh(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A namespace with one end of a veth pair; the other end stays in ours for af_packet.
/// Dropping it deletes both (deleting the namespace deletes its veth end and so the pair).
struct Netns {
    ns: String,
    outer: String,
    inner: String,
}

impl Netns {
    fn new(tag: &str) -> Netns {
        let id = std::process::id() % 100_000;
        let n = Netns {
            ns: format!("nmt{tag}{id}"),
            outer: format!("nmt{tag}o{id}"),
            inner: format!("nmt{tag}i{id}"),
        };
        must(&["ip", "netns", "add", &n.ns]);
        must(&[
            "ip", "link", "add", &n.outer, "type", "veth", "peer", "name", &n.inner,
        ]);
        must(&["ip", "link", "set", &n.inner, "netns", &n.ns]);
        n
    }

    fn exec(&self, args: &[&str]) -> Vec<String> {
        ["ip", "netns", "exec", &self.ns]
            .iter()
            .map(|s| s.to_string())
            .chain(args.iter().map(|s| s.to_string()))
            .collect()
    }

    fn run(&self, args: &[&str]) -> String {
        let v = self.exec(args);
        must(&v.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn spawn(&self, args: &[&str]) -> Child {
        let v = self.exec(args);
        Command::new(&v[0])
            .args(&v[1..])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// IPv4 only, no offloads on the kernel side (DESIGN.md principle 5), addresses up.
    fn configure(&self) {
        for (inside, dev) in [(false, &self.outer), (true, &self.inner)] {
            let key = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            let cmds: Vec<Vec<&str>> = vec![
                vec!["sysctl", "-qw", &key],
                vec!["ethtool", "-K", dev, "tx", "off"],
            ];
            for c in cmds {
                if inside {
                    self.run(&c);
                } else {
                    must(&c);
                }
            }
        }
        must(&["ip", "link", "set", &self.outer, "up"]);
        self.run(&["ip", "link", "set", "lo", "up"]);
        self.run(&["ip", "addr", "add", "192.0.2.2/24", "dev", &self.inner]);
        self.run(&["ip", "link", "set", &self.inner, "up"]);
    }

    fn exists(name: &str) -> bool {
        String::from_utf8_lossy(&sh(&["ip", "netns", "list"]).stdout)
            .split_whitespace()
            .any(|w| w == name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = sh(&["ip", "netns", "del", &self.ns]);
        let _ = sh(&["ip", "link", "del", &self.outer]);
    }
}

/// Polls the lcore until `child` exits or `limit` passes; returns the child's output.
fn poll_until_exit(nic: &mut NicLcore<DpdkQueue>, mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if nic.poll_once() == 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "child did not finish in {limit:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn netns_kernel_pings_the_nic_and_arp_works_both_ways() {
    let net = Netns::new("a");
    net.configure();
    let prefix = format!("nicemu-test-afp-{}", std::process::id());
    let text = format!(
        r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "256", "-l", "0", "--file-prefix={prefix}",
        "--vdev=net_af_packet0,iface={iface}"]
[[port]]
name = "p0"
driver = "dpdk"
device = "net_af_packet0"
ipv4 = ["192.0.2.1/24"]
rss = "off"
[[lcore]]
core = 0
role = "nic"
"#,
        iface = net.outer
    );
    let cfg = Config::parse(&text, "netns test").unwrap();
    let opts = RunOptions {
        mode: Mode::Nic,
        host_channels: true,
        pin: false,
        ..RunOptions::default()
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut topo = build_dpdk(&cfg, &opts, &[], None).expect("DPDK topology");
        let nic_mac = topo.devs[0].mac();
        let mut host = topo.host.remove(0);
        let mut nic = topo.lcores.remove(0);

        // 1. NIC -> kernel: a host frame with no destination MAC makes the NIC ask by ARP.
        let rx = net.spawn(&[
            "python3",
            "-c",
            "import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);\
             s.bind(('192.0.2.2',6000));s.settimeout(10);print('ready',flush=True);\
             d,a=s.recvfrom(100);print(d.decode(),a[0],a[1])",
        ]);
        std::thread::sleep(Duration::from_millis(300)); // let the receiver bind
        let frame = dataplane::gen::udp(
            nic_mac,
            [0; 6],
            NIC_IP,
            KERNEL_IP,
            5000,
            6000,
            b"hello kernel",
        );
        host.send(0, &frame).unwrap();
        let out = poll_until_exit(&mut nic, rx, Duration::from_secs(15));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("hello kernel 192.0.2.1 5000"),
            "kernel did not get the datagram:\n{text}"
        );
        let kernel_mac = net.run(&["cat", &format!("/sys/class/net/{}/address", net.inner)]);
        let learnt = nic
            .stack()
            .arp_lookup(0, KERNEL_IP, nic.clock().now_ns())
            .map(|m| dataplane::config::fmt_mac(&m));
        assert_eq!(
            learnt.as_deref(),
            Some(kernel_mac.trim()),
            "NIC's ARP table"
        );
        let c = *nic.stack().counters();
        assert!(c.arp_requests_out >= 1 && c.arp_replies_in >= 1, "{c:?}");
        // 2. Kernel -> NIC: ping. The kernel forgets what it learnt from the NIC's request, so
        // it has to resolve the NIC's address by ARP itself.
        net.run(&["ip", "neigh", "flush", "dev", &net.inner]);
        let ping = net.spawn(&["ping", "-c", "3", "-i", "0.2", "-W", "2", "192.0.2.1"]);
        let out = poll_until_exit(&mut nic, ping, Duration::from_secs(15));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("3 received"),
            "ping failed:\n{text}"
        );
        let c = *nic.stack().counters();
        assert!(c.icmp_echo_replies >= 3 && c.arp_replies_out >= 1, "{c:?}");
        let neigh = net.run(&["ip", "neigh", "show", "192.0.2.1"]);
        let mac = dataplane::config::fmt_mac(&nic_mac);
        assert!(
            neigh.contains(&mac),
            "kernel's neighbour entry {neigh:?} lacks {mac}"
        );

        let report = nic.finish();
        assert_eq!(report.from_host, 1);
        drop(nic);
        drop(topo);
    }));
    remove_runtime_dir(&prefix);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn netns_is_removed_even_when_the_test_fails() {
    let mut name = String::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let net = Netns::new("f");
        name = net.ns.clone();
        assert!(Netns::exists(&net.ns));
        panic!("simulated test failure");
    }));
    assert!(r.is_err());
    assert!(
        !name.is_empty() && !Netns::exists(&name),
        "namespace {name} left behind"
    );
}

//! The NIC on DPDK's net_af_packet over a veth pair whose other end sits in a network
//! namespace this test creates: the Linux kernel pings the NIC and resolves its address by
//! ARP, and the NIC resolves the kernel's address by ARP to deliver a host frame.
//!
//! Traffic stays inside the pair; the namespace and the veth are removed at the end, also when
//! the test fails (a guard's Drop). Needs root, iproute2, ethtool, ping and python3.

use dataplane::netns::Netns;

#[cfg(feature = "dpdk")]
mod af_packet {
    use std::process::{Child, Output, Stdio};
    use std::time::{Duration, Instant};

    use dataplane::lcore::NicLcore;
    use dataplane::netns::{AfPacketNic, Netns};
    use dataplane::port::dpdk::DpdkQueue;

    const NIC_IP: [u8; 4] = [192, 0, 2, 1];
    const KERNEL_IP: [u8; 4] = [192, 0, 2, 2];

    /// The namespace of test `tag`, configured with the kernel's address.
    fn namespace(tag: &str) -> Netns {
        let net = Netns::for_test(tag).unwrap_or_else(|e| panic!("{e}"));
        net.configure("192.0.2.2/24")
            .unwrap_or_else(|e| panic!("{e}"));
        net
    }

    /// Starts `args` in the namespace, its output piped.
    fn spawn(net: &Netns, args: &[&str]) -> Child {
        net.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Polls (every 10 ms, for at most `limit`) until a UDP socket is bound to `port` in the
    /// namespace, as `ss` lists it; whether one was.
    fn udp_bound(net: &Netns, port: u16, limit: Duration) -> bool {
        let filter = format!("sport = :{port}");
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if net
                .run(&["ss", "-Huan", &filter])
                .is_ok_and(|out| !out.trim().is_empty())
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
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
        let net = namespace("a");
        let prefix = format!("nicemu-test-afp-{}", std::process::id());
        let afp = AfPacketNic::new(net.outer(), "192.0.2.1/24", &prefix);
        afp.with_topology("netns test", |mut topo| {
            let nic_mac = topo.devs[0].mac();
            let mut host = topo.host.remove(0);
            let mut nic = topo.lcores.remove(0);

            // 1. NIC -> kernel: a host frame with no destination MAC makes the NIC ask by ARP.
            let rx = spawn(
                &net,
                &[
                    "python3",
                    "-c",
                    "import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);\
                 s.bind(('192.0.2.2',6000));s.settimeout(10);print('ready',flush=True);\
                 d,a=s.recvfrom(100);print(d.decode(),a[0],a[1])",
                ],
            );
            // The datagram goes out only once the receiver's socket is bound (else the kernel
            // answers port unreachable and the receiver waits for nothing).
            assert!(
                udp_bound(&net, 6000, Duration::from_secs(10)),
                "receiver never bound 192.0.2.2:6000"
            );
            let frame = dataplane::frames::udp(
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
            let kernel_mac = net.must(&["cat", &format!("/sys/class/net/{}/address", net.inner())]);
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
            net.must(&["ip", "neigh", "flush", "dev", net.inner()]);
            let ping = spawn(
                &net,
                &["ping", "-c", "3", "-i", "0.2", "-W", "2", "192.0.2.1"],
            );
            let out = poll_until_exit(&mut nic, ping, Duration::from_secs(15));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("3 received"),
                "ping failed:\n{text}"
            );
            let c = *nic.stack().counters();
            assert!(c.icmp_echo_replies >= 3 && c.arp_replies_out >= 1, "{c:?}");
            let neigh = net.must(&["ip", "neigh", "show", "192.0.2.1"]);
            let mac = dataplane::config::fmt_mac(&nic_mac);
            assert!(
                neigh.contains(&mac),
                "kernel's neighbour entry {neigh:?} lacks {mac}"
            );

            let report = nic.finish();
            assert_eq!(report.from_host, 1);
            drop(nic);
            drop(topo);
        });
    }
}

#[test]
fn netns_is_removed_even_when_the_test_fails() {
    let mut name = String::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let net = Netns::for_test("f").unwrap_or_else(|e| panic!("{e}"));
        name = net.ns().to_string();
        assert!(Netns::exists(&name).unwrap());
        panic!("simulated test failure");
    }));
    assert!(r.is_err());
    assert!(
        !name.is_empty() && !Netns::exists(&name).unwrap(),
        "namespace {name} left behind"
    );
}

/// This binary's af_packet test needs the `dpdk` feature; built without it where libdpdk is
/// installed, the run would leave that test out without a word, so it fails instead.
#[test]
fn dpdk_feature_is_on_where_libdpdk_is_installed() {
    assert!(
        cfg!(feature = "dpdk") || !dataplane::sys::libdpdk_installed(),
        "libdpdk is installed but dataplane's tests were built without `--features dpdk`: \
         the DPDK port tests (net_ring, net_af_packet against the kernel) are missing"
    );
}

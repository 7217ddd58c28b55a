//! The wake-up of a sleeping NIC lcore on a `net_af_packet` port's interface
//! (`dataplane::wake::PacketWake`), against a veth pair whose other end sits in a network
//! namespace this test creates: a frame the kernel sends from the namespace ends a sleep at
//! once; a quiet interface lets the sleep run to its timeout; a frame sent out of the
//! interface (as the port's own transmissions are) does not wake it.
//!
//! Traffic stays inside the pair; the namespace is removed at the end, also on failure.
//! Needs root (CAP_NET_RAW, network namespaces), iproute2, ethtool, ping and python3.

use std::time::{Duration, Instant};

use dataplane::idle::WakeSource;
use dataplane::netns::Netns;
use dataplane::wake::PacketWake;

fn ifindex(dev: &str) -> u32 {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/ifindex"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn an_incoming_frame_ends_a_sleep_but_an_outgoing_one_or_a_vanished_interface_does_not() {
    let net = Netns::for_test("wk").unwrap_or_else(|e| panic!("{e}"));
    net.configure("192.0.2.2/24")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut w = PacketWake::new(&[ifindex(net.outer())], None).unwrap();

    // Whatever the links' start sent (none expected: IPv6 is off) is drained first.
    let _ = w.wait(Duration::from_millis(50), None);

    // A quiet interface: the sleep runs to its timeout.
    let t0 = Instant::now();
    assert!(
        !w.wait(Duration::from_millis(300), None),
        "woken on a quiet link"
    );
    assert!(t0.elapsed() >= Duration::from_millis(290));

    // A frame sent out of the interface from this side (a broadcast ARP request, as the
    // port's transmissions leave) does not wake it.
    let outer = net.outer().to_string();
    let sent = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys\n\
             s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n\
             s.bind((sys.argv[1],0))\n\
             s.send(b'\\xff'*6+b'\\x02\\x00\\x00\\x00\\x00\\x09'+b'\\x08\\x06'+bytes(46))\n",
            &outer,
        ])
        .status()
        .unwrap();
    assert!(sent.success());
    let t0 = Instant::now();
    assert!(
        !w.wait(Duration::from_millis(300), None),
        "woken by a frame this side sent"
    );
    assert!(t0.elapsed() >= Duration::from_millis(290));

    // The kernel in the namespace pings an address on the link: its ARP request arrives
    // and ends a 5 s sleep at once.
    let mut ping = net
        .command(&["ping", "-c", "3", "-i", "0.2", "-W", "1", "192.0.2.1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let woken = w.wait(Duration::from_secs(5), None);
    let took = t0.elapsed();
    let _ = ping.kill();
    let _ = ping.wait();
    assert!(woken, "an arriving frame did not end the sleep");
    assert!(took < Duration::from_secs(2), "woken after {took:?}");
    // What woke it is read at the start of the next wait.
    let _ = w.wait(Duration::from_millis(1), None);
    assert!(w.drained >= 1);

    // The interface goes away (as when a veth is deleted under a running server): its
    // socket is given up and the waits keep their length instead of returning at once.
    let outer = net.outer().to_string();
    dataplane::netns::must(&["ip", "link", "del", &outer]);
    let _ = w.wait(Duration::from_millis(20), None);
    let t0 = Instant::now();
    for _ in 0..5 {
        assert!(!w.wait(Duration::from_millis(20), None));
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(95),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(w.dropped, 1);
}

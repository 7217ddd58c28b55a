//! Static neighbours and on-link prefixes of a port (mTCP's `arp.conf` and `route.conf`):
//! a host frame to a static neighbour goes out at once with its MAC and no ARP request,
//! whatever its subnet; one to an address in an on-link prefix is resolved with ARP like an
//! address of the port's subnets instead of being dropped as unresolved. The TOML keys
//! default to nothing, so configurations without them are unchanged.

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::config::Config;
use dataplane::frames;
use dataplane::net::parse::DropReason;
use dataplane::net::stack::{IfaceConfig, NicStack, StackConfig};
use dataplane::net::Verdict;

const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];
const OUR_IP: [u8; 4] = [192, 0, 2, 1];
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x42];
/// On the port's subnet.
const PEER_IP: [u8; 4] = [192, 0, 2, 7];
/// Off the port's subnet.
const FAR_IP: [u8; 4] = [203, 0, 113, 9];
/// In the on-link prefix 198.51.100.0/24.
const LINK_IP: [u8; 4] = [198, 51, 100, 5];

fn alloc() -> Option<HeapBuf> {
    Some(HeapBuf::new())
}

fn to(dst: [u8; 4]) -> Vec<u8> {
    let mut f = frames::tcp(OUR_MAC, [0; 6], OUR_IP, dst, 5000, 80, 1, 1, 0x18, b"hello");
    f[24..26].fill(0);
    f[50..52].fill(0);
    f
}

fn stack(iface: IfaceConfig) -> NicStack<HeapBuf> {
    NicStack::new(vec![iface], StackConfig::default())
}

fn plain() -> IfaceConfig {
    IfaceConfig::new(OUR_MAC, vec![(OUR_IP, 24)])
}

#[test]
fn a_frame_to_a_static_neighbour_goes_out_without_arp() {
    let mut iface = plain();
    iface.neighbours.push((PEER_IP, 32, PEER_MAC));
    iface.neighbours.push((FAR_IP, 32, PEER_MAC));
    let mut s = stack(iface);
    let mut out = Vec::new();
    for (k, ip) in [PEER_IP, FAR_IP].into_iter().enumerate() {
        assert_eq!(
            s.host_tx_frame(0, &to(ip), 0, &mut alloc, &mut out),
            Ok(1),
            "sent at once"
        );
        assert_eq!(&out[k].data()[0..6], &PEER_MAC);
        assert_eq!(&out[k].data()[30..34], &ip);
    }
    // Much later (static entries never expire) and after polling: still no ARP request.
    let later = 3_600_000_000_000;
    assert_eq!(
        s.host_tx_frame(0, &to(PEER_IP), later, &mut alloc, &mut out),
        Ok(1)
    );
    s.poll_tx(0, later, &mut alloc, &mut out);
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|b| b.data()[12..14] == [0x08, 0x00]));
    assert_eq!(s.counters().arp_requests_out, 0);
    assert_eq!(s.pending_frames(0), 0);

    // Without the entries: the subnet's address is held for ARP, the other one dropped.
    let mut s = stack(plain());
    out.clear();
    assert_eq!(
        s.host_tx_frame(0, &to(PEER_IP), 0, &mut alloc, &mut out),
        Ok(0)
    );
    s.poll_tx(0, 0, &mut alloc, &mut out);
    assert_eq!(s.counters().arp_requests_out, 1);
    assert_eq!(
        s.host_tx_frame(0, &to(FAR_IP), 0, &mut alloc, &mut out),
        Err(DropReason::ArpUnresolved)
    );
}

/// A static neighbour with a shorter prefix (an mTCP `arp.conf` line such as
/// `203.0.113.0/24 <gateway MAC>`) sends every address of the prefix to its MAC; a longer
/// matching prefix wins over it.
#[test]
fn a_prefix_neighbour_covers_its_range_and_the_longest_prefix_wins() {
    const GW_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];
    let mut iface = plain();
    // Longest prefix first, as the runtime orders them.
    iface.neighbours.push((FAR_IP, 32, PEER_MAC));
    iface.neighbours.push(([203, 0, 113, 0], 24, GW_MAC));
    let mut s = stack(iface);
    let mut out = Vec::new();
    for (ip, mac) in [
        ([203, 0, 113, 200], GW_MAC),
        ([203, 0, 113, 1], GW_MAC),
        (FAR_IP, PEER_MAC),
    ] {
        assert_eq!(
            s.host_tx_frame(0, &to(ip), 0, &mut alloc, &mut out),
            Ok(1),
            "{ip:?} sent at once"
        );
        let f = out.last().unwrap().data();
        assert_eq!((&f[0..6], &f[30..34]), (&mac[..], &ip[..]));
    }
    // Outside the prefix and off the subnet: unresolved, as without the entries.
    assert_eq!(
        s.host_tx_frame(0, &to([203, 0, 114, 1]), 0, &mut alloc, &mut out),
        Err(DropReason::ArpUnresolved)
    );
    assert_eq!(s.counters().arp_requests_out, 0);
}

#[test]
fn a_frame_to_an_on_link_prefix_is_resolved_with_arp() {
    // Without the prefix: off the port's subnet, dropped as unresolved.
    let mut s = stack(plain());
    let mut out = Vec::new();
    assert_eq!(
        s.host_tx_frame(0, &to(LINK_IP), 0, &mut alloc, &mut out),
        Err(DropReason::ArpUnresolved)
    );
    let mut iface = plain();
    iface.on_link.push(([198, 51, 100, 0], 24));
    let mut s = stack(iface);
    assert_eq!(
        s.host_tx_frame(0, &to(LINK_IP), 0, &mut alloc, &mut out),
        Ok(0),
        "held for ARP"
    );
    s.poll_tx(0, 0, &mut alloc, &mut out);
    assert_eq!(out.len(), 1, "one ARP request");
    let req = out[0].data();
    assert_eq!(&req[12..14], &[0x08, 0x06]);
    assert_eq!(&req[38..42], &LINK_IP, "asks for the address");
    assert_eq!(&req[28..32], &OUR_IP, "from the port's address");
    out.clear();
    let reply = frames::arp(2, PEER_MAC, LINK_IP, OUR_MAC, OUR_MAC, OUR_IP);
    assert_eq!(
        s.rx(0, &mut HeapBuf::from_frame(&reply), 1),
        Verdict::Consumed
    );
    s.poll_tx(0, 2, &mut alloc, &mut out);
    assert_eq!(out.len(), 1, "the held frame");
    assert_eq!(&out[0].data()[0..6], &PEER_MAC);
    assert_eq!(&out[0].data()[30..34], &LINK_IP);
    // Outside the prefix: still unreachable.
    assert_eq!(
        s.host_tx_frame(0, &to([198, 51, 101, 5]), 3, &mut alloc, &mut out),
        Err(DropReason::ArpUnresolved)
    );
}

fn toml(extra: &str) -> String {
    format!(
        r#"
[eal]
args = ["--no-huge"]
[[port]]
name = "p0"
driver = "dpdk"
device = "net_null0"
ipv4 = ["192.0.2.1/24"]
{extra}
[[lcore]]
core = 0
role = "shared"
"#
    )
}

fn load(text: &str) -> Result<Config, String> {
    let dir = std::env::temp_dir().join(format!("nicemu-neigh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!(
        "{:x}.toml",
        text.len() * 7919 + text.bytes().map(usize::from).sum::<usize>()
    ));
    std::fs::write(&p, text).unwrap();
    let r = Config::load(&p).map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&p);
    r
}

#[test]
fn toml_keys_default_to_nothing_and_parse() {
    let c = load(&toml("")).unwrap();
    assert!(c.ports[0].on_link.is_empty() && c.ports[0].neighbours.is_empty());
    let c = load(&toml(
        r#"on_link = ["198.51.100.0/24", "203.0.113.0/28"]
neighbours = [{ ip = "10.1.0.0", prefix_len = 16, mac = "02:00:00:00:00:03" },
              { ip = "192.0.2.2", mac = "02:00:00:00:00:02" }]"#,
    ))
    .unwrap();
    assert_eq!(
        c.ports[0].on_link,
        [([198, 51, 100, 0], 24), ([203, 0, 113, 0], 28)]
    );
    assert_eq!(c.ports[0].neighbours[1].ip, [192, 0, 2, 2]);
    assert_eq!(c.ports[0].neighbours[1].prefix_len, 32);
    assert_eq!(c.ports[0].neighbours[1].mac, [2, 0, 0, 0, 0, 2]);
    let ifaces = dataplane::runtime::ifaces(&c, &[OUR_MAC]);
    // Longest prefix first.
    assert_eq!(
        ifaces[0].neighbours,
        [
            ([192, 0, 2, 2], 32, [2, 0, 0, 0, 0, 2]),
            ([10, 1, 0, 0], 16, [2, 0, 0, 0, 0, 3])
        ]
    );
    assert_eq!(ifaces[0].on_link, c.ports[0].on_link);
    let e = load(&toml(
        r#"neighbours = [{ ip = "192.0.2.2", mac = "02:00" }]"#,
    ))
    .unwrap_err();
    assert!(e.contains("MAC"), "{e}");
    let e = load(&toml(
        r#"neighbours = [{ ip = "10.0.0.0", prefix_len = 33, mac = "02:00:00:00:00:02" }]"#,
    ))
    .unwrap_err();
    assert!(e.contains("neighbours[0].prefix_len"), "{e}");
    let e = load(&toml(r#"on_link = ["198.51.100.0/33"]"#)).unwrap_err();
    assert!(e.contains("198.51.100.0/33"), "{e}");
}

//! A context with several local addresses (`HostConfig::extra_ips`, a load generator's
//! client range): `connect` rotates over them, each with the whole ephemeral range, so one
//! context holds more connections to one server port than one address has ports.

mod common;

use std::collections::HashSet;

use common::{addr, cfg, listener, Net, A, B};
use hoststack::stack::EPOLLOUT;
use hoststack::Errno;

#[test]
fn connections_spread_over_the_extra_addresses() {
    let extra = [[10, 0, 0, 3], [10, 0, 0, 4], [10, 0, 0, 5]];
    let mut cb = cfg(B);
    cb.ephemeral = (2000, 2049); // 50 ports per address
    cb.extra_ips = extra.to_vec();
    let mut net = Net::with(cfg(A), cb);
    let l = listener(&mut net.a, 80);
    let mut clients = Vec::new();
    for _ in 0..200 {
        let c = net.b.socket().unwrap();
        net.b.set_nonblocking(c, true).unwrap();
        assert_eq!(net.b.connect(c, addr(A, 80)), Err(Errno::InProgress));
        clients.push(c);
    }
    // Every address's ports are taken: the next connect has no (address, port) left.
    let c = net.b.socket().unwrap();
    assert_eq!(net.b.connect(c, addr(A, 80)), Err(Errno::AddrNotAvail));
    let mut peers = HashSet::new();
    assert!(net.run_until(100_000, |n| {
        while let Ok((_, p)) = n.a.accept(l) {
            peers.insert(p);
        }
        peers.len() == 200 && clients.iter().all(|&c| n.b.readiness(c) & EPOLLOUT != 0)
    }));
    let ips: HashSet<_> = peers.iter().map(|p| p.ip().octets()).collect();
    assert_eq!(ips.len(), 4, "primary and three extra addresses: {ips:?}");
    for ip in extra {
        assert_eq!(peers.iter().filter(|p| p.ip().octets() == ip).count(), 50);
    }
    // The connections work: bytes both ways on one that uses an extra address.
    let c = clients[1];
    assert_ne!(net.b.getsockname(c).unwrap().ip().octets(), B);
    assert_eq!(net.b.write(c, b"hello"), Ok(5));
    // Closing frees the address's port for the next connect.
    net.b.close(clients[0]).unwrap();
    net.b.close(clients[1]).unwrap();
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    assert!(net.run_until(1_000_000, |n| n.b.connect(c, addr(A, 80))
        == Err(Errno::InProgress)));
}

#[test]
fn listeners_answer_only_the_primary_address() {
    let mut cb = cfg(B);
    cb.extra_ips = vec![[10, 0, 0, 3]];
    let mut net = Net::with(cfg(A), cb);
    // A connects to B's extra address, where B listens on the port: refused (RST).
    let _l = listener(&mut net.b, 80);
    let c = net.a.socket().unwrap();
    net.a.set_nonblocking(c, true).unwrap();
    let _ = net.a.connect(c, addr([10, 0, 0, 3], 80));
    let mut res = Ok(0);
    assert!(net.run_until(100_000, |n| {
        res = n.a.read(c, &mut [0u8; 4]);
        res != Err(Errno::Again) && res != Err(Errno::NotConn)
    }));
    assert_eq!(res, Err(Errno::ConnRefused));
}

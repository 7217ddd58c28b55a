//! The load generator against nicemu's echo server on the in-memory wire, in virtual time:
//! every echo is checked and the counts on both sides agree exactly; short connections and
//! persistent ones; against a port nobody listens on it counts refusals and stops when its
//! budget is spent instead of hanging; latency percentiles are monotonic.

use std::net::SocketAddrV4;

use apps::echo::EchoServer;
use apps::loadgen::{LoadGen, LoadGenConfig};
use apps::node::{pair_specs, wire_pair, A_IP};
use dataplane::port::wire::Impairments;

const PORT: u16 = 7;

fn run(conns: usize, per_conn: u64, total: u64, size: usize, loss: f64) {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 100_000_000;
    }
    let imp = Impairments {
        loss,
        seed: 5,
        ..Impairments::default()
    };
    let mut p = wire_pair(a, b, imp.clone(), imp);
    let mut server = EchoServer::new(&mut p.a.host, PORT).unwrap();
    let mut cfg = LoadGenConfig::new(SocketAddrV4::new(A_IP.into(), PORT));
    cfg.conns = conns;
    cfg.per_conn = per_conn;
    cfg.size = size;
    cfg.max_transactions = Some(total);
    let mut lg = LoadGen::new(&mut p.b.host, cfg).unwrap();
    let ok = p.run_until(20_000_000, 10_000, |p| {
        server.step(&mut p.a.host);
        lg.step(&mut p.b.host);
        lg.finished()
    });
    assert!(ok, "{:?}", lg.stats());
    let st = *lg.stats();
    assert_eq!(st.transactions, total, "{st:?}");
    assert_eq!(st.errors.total(), 0, "{st:?}");
    // The server echoed exactly what the generator counted.
    assert!(p.run_until(1_000_000, 10_000, |p| {
        server.step(&mut p.a.host);
        server.bytes == total * size as u64
    }));
    assert_eq!(server.bytes, st.bytes_in);
    if per_conn == 1 {
        assert_eq!(st.connects, total);
    }
    let pc = lg.percentiles();
    assert!(pc.windows(2).all(|w| w[0] <= w[1]), "{pc:?}");
    assert!(pc[0] > 0);
}

#[test]
fn persistent_connections_count_exactly() {
    run(16, 0, 2_000, 64, 0.0);
}

#[test]
fn short_connections_count_exactly() {
    run(8, 1, 300, 128, 0.0);
}

#[test]
fn several_per_connection_with_loss() {
    run(8, 8, 800, 1500, 0.02);
}

#[test]
fn absent_server_counts_refusals_and_finishes() {
    let (a, b) = pair_specs();
    let mut p = wire_pair(a, b, Impairments::default(), Impairments::default());
    let mut cfg = LoadGenConfig::new(SocketAddrV4::new(A_IP.into(), 9));
    cfg.conns = 4;
    cfg.retry_ns = 1_000_000;
    let mut lg = LoadGen::new(&mut p.b.host, cfg).unwrap();
    assert!(p.run_until(200_000, 10_000, |p| {
        lg.step(&mut p.b.host);
        lg.stats().errors.refused >= 20
    }));
    assert_eq!(lg.stats().transactions, 0);
    assert_eq!(lg.stats().established, 0);
    assert!(lg.summary(1.0).contains("refused="));
}

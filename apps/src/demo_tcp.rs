//! The host-stack part of `nicemu demo`: two nicemu nodes (NIC lcore + host stack each) on
//! the in-memory wire with 1% loss each way, in virtual time. A 10 MB transfer each way with
//! every byte checked, then a 64-byte echo over 256 persistent connections; prints what
//! crossed the wire and the PCIe links, and the TCP counters.

use std::net::SocketAddrV4;

use apps::echo::{EchoClient, EchoServer, ServerOffloads};
use apps::node::{pair_specs, wire_pair, A_IP};
use dataplane::port::wire::Impairments;
use hoststack::Errno;

use crate::demo::check;

const PORT: u16 = 5001;
const ECHO_PORT: u16 = 7;
const TOTAL: usize = 10_000_000;

fn byte(dir: u8, i: usize) -> u8 {
    (i as u8)
        .wrapping_mul(31)
        .wrapping_add(dir ^ (i >> 11) as u8)
}

/// Runs the host-stack demo.
pub fn run() -> Result<(), String> {
    println!();
    println!("Host stack: two nodes on the in-memory wire (1% loss each way, 100 us one-way delay), virtual time");
    let lossy = |seed| Impairments {
        loss: 0.01,
        delay_ns: 100_000,
        seed,
        ..Impairments::default()
    };
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 1_000_000_000;
    }
    let mut p = wire_pair(a, b, lossy(21), lossy(22));
    let l = p.a.host.socket().map_err(|e| e.to_string())?;
    p.a.host
        .set_nonblocking(l, true)
        .map_err(|e| e.to_string())?;
    p.a.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .map_err(|e| e.to_string())?;
    p.a.host.listen(l, 8).map_err(|e| e.to_string())?;
    let c = p.b.host.socket().map_err(|e| e.to_string())?;
    p.b.host
        .set_nonblocking(c, true)
        .map_err(|e| e.to_string())?;
    let _ = p.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT));
    let t0 = p.clock.now_ns();
    let mut s = None;
    let (mut sent, mut got) = ([0usize; 2], [0usize; 2]);
    let mut bad = 0u64;
    let mut buf = vec![0u8; 65536];
    let done = p.run_until(50_000_000, 5_000, |p| {
        if s.is_none() {
            if let Ok((fd, _)) = p.a.host.accept(l) {
                let _ = p.a.host.set_nonblocking(fd, true);
                s = Some(fd);
            }
        }
        let Some(sfd) = s else { return false };
        for (k, (ctx, fd)) in [(&mut p.b.host, c), (&mut p.a.host, sfd)]
            .into_iter()
            .enumerate()
        {
            let room = ctx.tcb(fd).map_or(0, |t| t.send_space());
            let n = (TOTAL - sent[k]).min(room).min(buf.len());
            if n > 0 {
                for (j, v) in buf[..n].iter_mut().enumerate() {
                    *v = byte(k as u8, sent[k] + j);
                }
                if let Ok(w) = ctx.write(fd, &buf[..n]) {
                    sent[k] += w;
                }
            }
            loop {
                match ctx.read(fd, &mut buf) {
                    Ok(r) if r > 0 => {
                        for (j, v) in buf[..r].iter().enumerate() {
                            if *v != byte(1 - k as u8, got[k] + j) {
                                bad += 1;
                            }
                        }
                        got[k] += r;
                    }
                    Ok(_) | Err(Errno::Again) => break,
                    Err(_) => break,
                }
            }
        }
        got[0] == TOTAL && got[1] == TOTAL
    });
    let secs = (p.clock.now_ns() - t0) as f64 / 1e9;
    let sfd = s.ok_or("the server never accepted the connection")?;
    let (ta, tb) = (
        *p.a.host.tcb(sfd).ok_or("no server connection")?.stats(),
        *p.b.host.tcb(c).ok_or("no client connection")?.stats(),
    );
    check(
        done && bad == 0,
        format!(
            "10 MB each way arrived intact over the lossy wire ({:.2} s of virtual time, {} retransmissions, {} fast retransmits, {} RTOs)",
            secs,
            ta.retransmits + tb.retransmits,
            ta.fast_retransmits + tb.fast_retransmits,
            ta.rto_expiries + tb.rto_expiries
        ),
    )?;
    let _ = p.b.host.close(c);
    let _ = p.a.host.close(sfd);
    let _ = p.a.host.close(l);
    let closed = p.run_until(5_000_000, 5_000, |p| {
        p.a.host.connections() == 0 && p.b.host.connections() == 0
    });
    check(
        closed,
        "both ends closed cleanly and freed the connection (TIME_WAIT included)".into(),
    )?;

    // Echo: 256 persistent connections, 64-byte requests.
    let mut server = EchoServer::new(&mut p.a.host, ECHO_PORT).map_err(|e| e.to_string())?;
    let mut client = EchoClient::new(
        &mut p.b.host,
        SocketAddrV4::new(A_IP.into(), ECHO_PORT),
        256,
        64,
    )
    .map_err(|e| e.to_string())?;
    let link0 = p.a.host.link().tx_counters();
    let echoed = p.run_until(20_000_000, 5_000, |p| {
        server.step(&mut p.a.host);
        client.step(&mut p.b.host);
        client.transactions >= 20_000 && server.accepted == 256
    });
    let link = p.a.host.link().tx_counters().delta(&link0);
    check(
        echoed && client.corrupt == 0 && client.failed == 0,
        format!(
            "64-byte echo over {} persistent connections: {} transactions, every echo intact ({:.2} server->NIC frames per transaction over the PCIe link)",
            server.accepted,
            client.transactions,
            link.packets as f64 / client.transactions.max(1) as f64
        ),
    )?;

    // Short connections with AccelTCP's setup and teardown offloads (§4.1, §4.2): one
    // transaction per connection, the NIC answers every SYN with a cookie and takes every close.
    let opens0 = p.a.host.stats().passive_opens;
    let mut server = EchoServer::with_offloads(
        &mut p.a.host,
        ECHO_PORT + 1,
        ServerOffloads {
            setup: true,
            teardown: true,
        },
    )
    .map_err(|e| e.to_string())?;
    let mut client = EchoClient::with_per_conn(
        &mut p.b.host,
        SocketAddrV4::new(A_IP.into(), ECHO_PORT + 1),
        64,
        64,
        1,
    )
    .map_err(|e| e.to_string())?;
    let short = p.run_until(20_000_000, 5_000, |p| {
        server.step(&mut p.a.host);
        client.step(&mut p.b.host);
        client.transactions >= 2_000
    });
    let opens = p.a.host.stats().passive_opens - opens0;
    let hs = *p.a.host.setup_stats();
    let offloaded = p.a.host.stats().teardown.offloaded;
    check(
        short
            && client.corrupt == 0
            && client.failed == 0
            && hs.nic_setups == opens
            && offloaded + 64 >= server.closed,
        format!(
            "{} short connections with the setup and teardown offloads: every SYN answered by the NIC with a SYN cookie ({} setup notifications, no SYN reached the host), {} closes handed to the NIC",
            client.transactions, hs.nic_setups, offloaded
        ),
    )?;
    Ok(())
}

//! A SYN flood while kernel clients connect, with and without the setup offload.

use super::*;

/// hping3 flooding the listener from random sources with the timestamp option, and a python
/// client connecting during the flood; serves both, then stops hping3. Returns (legitimate
/// connections, flood packets hping3 sent, seconds it flooded).
fn flood_with_clients(
    node: &mut Node,
    net: &Netns,
    echo: &mut Echo,
    label: &str,
) -> (u64, u64, f64) {
    let port = PORT.to_string();
    let mut hping = Proc::spawn(
        net,
        &[
            "hping3",
            "-S",
            "--flood",
            "--rand-source",
            "--tcp-timestamp",
            "-p",
            &port,
            "-I",
            net.inner(),
            "192.0.2.1",
        ],
    );
    let t = Instant::now();
    // The client starts connecting once the flood runs, and stops starting new connections
    // a second before it ends.
    let mut py: Option<Proc> = None;
    let end = t + FLOOD + CLIENTS_LIMIT;
    loop {
        assert!(
            Instant::now() < end,
            "{label}: not done: host {:?}",
            node.ctx.stats()
        );
        if let Some(st) = hping.exited() {
            panic!(
                "{label}: hping3 exited early ({st:?}): {}",
                hping.describe()
            );
        }
        if py.is_none() && t.elapsed() > Duration::from_millis(500) {
            let secs = FLOOD.as_secs_f64() - 1.5;
            py = Some(spawn(net, &client_args(1_000_000, 2, secs)));
        }
        if let Some(p) = py.as_mut() {
            if p.exited().is_some() && echo.conns.is_empty() {
                break;
            }
        }
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
    let mut py = py.expect("client started");
    let (legit, _) = client_result(&mut py, node, label);
    // Stop the flood (SIGINT: hping3 prints its statistics), still polling.
    let flood_secs = t.elapsed().as_secs_f64();
    hping.interrupt();
    let stop = Instant::now();
    while hping.exited().is_none() {
        if stop.elapsed() > Duration::from_secs(5) {
            let _ = hping.child.kill();
        }
        assert!(
            stop.elapsed() < Duration::from_secs(10),
            "hping3 did not stop"
        );
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
    let stderr = hping.stderr();
    let text = format!("{}\n{stderr}", hping.stdout());
    // "N packets transmitted, M packets received, ..."
    let sent = text
        .lines()
        .find_map(|l| l.split_once(" packets transmitted"))
        .and_then(|(n, _)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{label}: no hping3 statistics in {text:?}"));
    // Let what is still queued on the NIC and in the host go.
    let quiet = Instant::now();
    while quiet.elapsed() < Duration::from_millis(500) {
        let work = echo.serve(&mut node.ctx);
        node.step(work);
    }
    assert!(echo.conns.is_empty());
    (legit, sent, flood_secs)
}

/// What one flood run left: the client's and hping3's figures, and the host's, the host
/// setup's and the NIC setup offload's counters before and after.
struct FloodRun {
    legit: u64,
    sent: u64,
    secs: f64,
    host0: hoststack::stack::HostStats,
    setup0: SetupStats,
    host: hoststack::stack::HostStats,
    hs: hoststack::stack::SetupHostStats,
    setup: SetupStats,
}

/// [`flood_with_clients`], then the closes drained and the kernel settled, with no RST or
/// abort on the clients' side (the flood's SYN-ACKs go to random addresses, which the
/// namespace's kernel drops as not its own).
fn flood_run(node: &mut Node, net: &Netns, echo: &mut Echo, label: &str) -> FloodRun {
    let kernel_before = kernel_counters(node, net);
    let (host0, setup0) = (*node.ctx.stats(), node.setup());
    let (legit, sent, secs) = flood_with_clients(node, net, echo, label);
    drain_teardowns(node, label);
    settle_kernel(node, net, label);
    assert_no_resets(&kernel_before, &kernel_counters(node, net), label);
    FloodRun {
        legit,
        sent,
        secs,
        host0,
        setup0,
        host: *node.ctx.stats(),
        hs: *node.ctx.setup_stats(),
        setup: node.setup(),
    }
}

/// Test 3 (see the file's comment).
#[test]
fn syn_flood_with_the_setup_offload() {
    let label = "SYN flood, setup offload";
    with_node(
        "f",
        HostConfig::new(NIC_IP, 0),
        TIME_WAIT_NS,
        |node, net| {
            let mut echo = Echo::new(&mut node.ctx, true, true);
            let FloodRun {
                legit,
                sent,
                secs,
                host0,
                setup0,
                host,
                hs,
                setup,
            } = flood_run(node, net, &mut echo, label);
            let syns = setup.syns - setup0.syns;
            let cookies = setup.cookies_sent - setup0.cookies_sent;
            let frames_in = host.frames_in - host0.frames_in;
            println!(
            "{label}: hping3 sent {sent} SYNs in {secs:.2} s ({:.0}/s); the NIC saw {syns} ({:.0}/s), sent {cookies} cookie SYN-ACKs; {legit} legitimate connections during the flood ({:.1}/s); host frames_in +{frames_in}",
            sent as f64 / secs,
            syns as f64 / secs,
            legit as f64 / secs,
        );
            println!("  NIC setup: {setup:?}");
            println!("  NIC teardown: {:?}", node.teardown().engine().stats());
            println!("  host setup: {hs:?}");
            println!("  host: {host:?}");
            assert!(
                legit >= 5,
                "{label}: only {legit} connections during the flood"
            );
            assert_eq!(echo.echoed, legit);
            // The host saw no flood SYN: only the legitimate connections, all from the NIC.
            assert_eq!(host.passive_opens - host0.passive_opens, legit, "{host:?}");
            assert_eq!(hs.nic_setups, legit, "{hs:?}");
            assert_eq!(host.syn_dropped, 0, "{host:?}");
            assert_eq!(hs.cookies_sent, 0, "{hs:?}");
            assert_eq!(setup.syns_to_host, 0, "{setup:?}");
            assert_eq!(host.listener_non_syn, 0, "{host:?}");
            assert_eq!(host.rst_sent, 0, "{host:?}");
            // A few frames per legitimate connection (setup notification, request, FIN, the
            // teardown engine's count reports), nothing per flood SYN.
            assert!(
                frames_in <= 10 * legit + 100,
                "{label}: host frames_in +{frames_in} for {legit} connections"
            );
            // The flood reached the NIC, which answered it.
            assert!(
                syns >= 10 * legit.max(100),
                "{label}: the NIC saw only {syns} SYNs"
            );
            assert!(cookies >= syns - setup.send_failed, "{setup:?}");
            assert!(setup.validated >= legit);
            assert_eq!(node.ctx.connections(), 0);
            node.ctx.close(echo.listener).unwrap();
        },
    );
}

/// Test 4 (see the file's comment).
#[test]
fn syn_flood_without_the_setup_offload() {
    let label = "SYN flood, host SYN cookies";
    let mut host_cfg = HostConfig::new(NIC_IP, 0);
    host_cfg.max_syn_backlog = SMALL_BACKLOG;
    host_cfg.syn_cookies = true;
    with_node("g", host_cfg, TIME_WAIT_NS, |node, net| {
        // Teardown offload still on: closed connections leave the host at once, so that its
        // connection count is the SYN queue plus the open connections.
        let mut echo = Echo::new(&mut node.ctx, false, true);
        let FloodRun {
            legit,
            sent,
            secs,
            host0,
            setup0,
            host,
            hs,
            setup,
        } = flood_run(node, net, &mut echo, label);
        let frames_in = host.frames_in - host0.frames_in;
        println!(
            "{label}: hping3 sent {sent} SYNs in {secs:.2} s ({:.0}/s); the host got {frames_in} frames ({:.0}/s), made {} half-open connections and sent {} cookies, {} validated; {legit} legitimate connections during the flood ({:.1}/s); most host connections at once {} (backlog {SMALL_BACKLOG})",
            sent as f64 / secs,
            frames_in as f64 / secs,
            host.passive_opens - host0.passive_opens,
            hs.cookies_sent,
            hs.cookies_validated,
            legit as f64 / secs,
            echo.max_live,
        );
        println!("  NIC setup: {setup:?}");
        println!("  NIC teardown: {:?}", node.teardown().engine().stats());
        println!("  host setup: {hs:?}");
        println!("  host: {host:?}");
        assert!(
            legit >= 5,
            "{label}: only {legit} connections during the flood"
        );
        assert_eq!(echo.echoed, legit);
        // The flood reached the host, and its SYN queue overflowed into cookies.
        assert_eq!(setup.cookies_sent - setup0.cookies_sent, 0, "{setup:?}");
        assert!(hs.cookies_sent > 0, "{hs:?}");
        assert!(
            hs.cookies_sent > 10 * legit,
            "{label}: only {} host cookies",
            hs.cookies_sent
        );
        // The legitimate connections got through (by cookie, but for any that found a free
        // SYN-queue slot).
        assert!(
            hs.cookies_validated >= legit,
            "{label}: {legit} connections, {hs:?}"
        );
        // Memory flat: the SYN queue plus the legitimate connections.
        assert!(
            echo.max_live <= SMALL_BACKLOG + legit as usize,
            "{label}: the host held {} connections",
            echo.max_live
        );
        assert_eq!(host.rst_sent, 0, "{host:?}");
        node.ctx.close(echo.listener).unwrap();
    });
}

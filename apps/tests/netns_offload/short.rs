//! Short kernel connections through both offloads (SYN cookies and teardown), clean and through random loss.

use super::*;

/// 10% of frames: `ld rand; jge #T, nomatch; ret #-1` with T = 10% of 2^32.
const LOSS_BPF: &str = "4,32 0 0 4294963256,53 0 1 429496730,6 0 0 0,6 0 0 4294967295";

/// 10% loss of what the kernel sends (see `netns_tcp`'s `Egress::Filter`): the clsact egress
/// filter redirects the frames it matches to the dead-end veth.
fn add_egress_loss(node: &mut Node, net: &Netns) {
    let (inner, sink) = (net.inner(), net.sink());
    node.ns_command(
        net,
        &["ip", "link", "set", "dev", inner, "gso_max_segs", "1"],
    );
    node.ns_command(
        net,
        &[
            "tc", "filter", "add", "dev", inner, "egress", "bpf", "bytecode", LOSS_BPF, "action",
            "mirred", "egress", "redirect", "dev", sink,
        ],
    );
}

/// Frames the egress drop filter has taken (its action's count).
fn filter_hits(node: &mut Node, net: &Netns) -> u64 {
    let inner = net.inner();
    let text = node.ns_command(net, &["tc", "-s", "filter", "show", "dev", inner, "egress"]);
    text.split(" bytes ")
        .nth(1)
        .and_then(|t| t.split(" pkt").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {text:?}"))
}

fn tx_packets(node: &mut Node, net: &Netns) -> u64 {
    let path = format!("/sys/class/net/{}/statistics/tx_packets", net.inner());
    let text = node.ns_command(net, &["cat", &path]);
    text.trim().parse().expect("tx_packets")
}

/// `n` kernel connections through both offloads, `parallel` at a time, with or without 10%
/// loss of the kernel's frames; checks and prints everything test 1 and 2 promise.
fn short_connections(tag: &str, n: usize, parallel: usize, lossy: bool) {
    let label = if lossy {
        format!("{n} connections, 10% loss kernel -> nicemu")
    } else {
        format!("{n} connections")
    };
    let time_wait = if lossy {
        LOSSY_TIME_WAIT_NS
    } else {
        TIME_WAIT_NS
    };
    with_node(tag, HostConfig::new(NIC_IP, 0), time_wait, |node, net| {
        let mut echo = Echo::new(&mut node.ctx, true, true);
        if lossy {
            add_egress_loss(node, net);
        }
        let kernel_before = kernel_counters(node, net);
        let (tx_before, lost_before) = (
            tx_packets(node, net),
            if lossy { filter_hits(node, net) } else { 0 },
        );
        let t = Instant::now();
        let mut py = spawn(net, &client_args(n, parallel, 0.0));
        serve_client(node, &mut echo, &mut py, CLIENTS_LIMIT, &label);
        let secs = t.elapsed().as_secs_f64();
        let (ok, py_secs) = client_result(&mut py, node, &label);
        let tw_secs = drain_teardowns(node, &label);
        let kernel_tw = settle_kernel(node, net, &label);
        let kernel_after = kernel_counters(node, net);
        let lost = if lossy { filter_hits(node, net) } else { 0 } - lost_before;
        let sent = tx_packets(node, net) - tx_before + lost;

        let n64 = n as u64;
        let host = *node.ctx.stats();
        let hs = *node.ctx.setup_stats();
        let setup = node.setup();
        let td = *node.teardown().engine().stats();
        println!("{label}: {ok} echoes in {py_secs:.2} s (python), {secs:.2} s served: {:.0} connections/s; NIC TIME_WAIT drained {tw_secs:.2} s after; kernel TIME-WAIT sockets {kernel_tw}", ok as f64 / py_secs);
        if lossy {
            println!(
                "  kernel -> nicemu: {sent} frames, {lost} dropped ({:.2}%)",
                100.0 * lost as f64 / sent.max(1) as f64
            );
        }
        println!(
            "  kernel: RetransSegs {} TCPSynRetrans {} TCPTimeouts {} TCPLossProbes {}",
            delta(&kernel_before, &kernel_after, "Tcp.RetransSegs"),
            delta(&kernel_before, &kernel_after, "TcpExt.TCPSynRetrans"),
            delta(&kernel_before, &kernel_after, "TcpExt.TCPTimeouts"),
            delta(&kernel_before, &kernel_after, "TcpExt.TCPLossProbes"),
        );
        println!("  NIC setup: {setup:?}");
        println!("  NIC teardown: {td:?}");
        println!("  host setup: {hs:?}");
        println!("  host: {host:?}");

        assert_eq!(ok, n64, "{label}: python's echoes");
        assert_eq!(echo.echoed, n64, "{label}: echoes served");
        // The host handled no SYN: every connection came from a NIC setup notification.
        assert_eq!(hs.nic_setups, n64, "{label}: {hs:?}");
        assert_eq!(host.passive_opens, n64, "{label}: {host:?}");
        assert_eq!(host.syn_dropped, 0, "{label}: {host:?}");
        assert_eq!(hs.cookies_sent, 0, "{label}: {hs:?}");
        assert_eq!(setup.syns_to_host, 0, "{label}: {setup:?}");
        assert!(setup.validated >= n64, "{label}: {setup:?}");
        assert_eq!(
            setup.rejected_hash + setup.rejected_expired + setup.rejected_rotated,
            0,
            "{label}: {setup:?}"
        );
        // The host handled no FIN: every close went to the NIC.
        assert_eq!(host.teardown.offloaded, n64, "{label}: {:?}", host.teardown);
        assert_eq!(host.listener_non_syn, 0, "{label}: {host:?}");
        assert_eq!(host.rst_sent, 0, "{label}: {host:?}");
        assert_eq!(host.malformed, 0, "{label}: {host:?}");
        assert_eq!(node.ctx.connections(), 0, "{label}: host connections left");
        // The NIC closed them all, without a RST either way.
        assert_eq!(node.teardown().engine().in_progress(), 0);
        // Each entered TIME_WAIT and ended there: the time ran out, or the kernel reused
        // the 4-tuple for a new SYN first (Linux picks ports freed by the close it just
        // saw; RFC 6191), ending TIME_WAIT early.
        assert_eq!(td.time_wait, n64, "{label}: {td:?}");
        assert_eq!(td.completed + td.tw_reused, n64, "{label}: {td:?}");
        assert_eq!(td.peer_rst + td.gave_up, 0, "{label}: {td:?}");
        // The kernel: no RST, reset or abort.
        assert_no_resets(&kernel_before, &kernel_after, &label);
        if lossy {
            // 10% within five standard deviations.
            let (mean, sd) = (0.1 * sent as f64, (0.1 * 0.9 * sent as f64).sqrt());
            assert!(
                (lost as f64 - mean).abs() <= 5.0 * sd + 2.0,
                "{label}: {lost} of {sent} frames dropped"
            );
        }
        node.ctx.close(echo.listener).unwrap();
    });
}

/// Test 1 (see the file's comment).
#[test]
fn kernel_clients_with_both_offloads() {
    short_connections("e", CONNS, PARALLEL, false);
}

/// Test 2 (see the file's comment): 10,000 connections with 10% loss.
#[test]
fn kernel_clients_with_both_offloads_and_loss() {
    short_connections("l", LOSSY_CONNS, LOSSY_PARALLEL, true);
}

//! echo and loadgen joined by net_memif: one and two queue pairs, and 70,000 connections to one port.

use super::*;

#[test]
fn procs_memif_loadgen_echo() {
    let started = Instant::now();
    let pair = memif_pair("p", "", |prefix, vdev, ip, _| {
        config(prefix, vdev, "net_memif0", &format!("{ip}/24"))
    });
    // Four threads on (typically) two cores, unpinned: few transactions, over several
    // connections.
    let count = 400;
    let (lg, et) = memif_echo_round(&pair, &["--no-pin"], "100", "8", count);
    println!("--- loadgen:\n{lg}\n--- echo:\n{et}");
    let sent = counter(&lg, "loadgen: transactions", "transactions").unwrap();
    let echoed = counter(&et, "echo: transactions", "transactions").unwrap();
    assert_eq!(sent, count, "{lg}");
    assert_eq!(echoed, count, "{et}");
    assert_eq!(counter(&lg, "loadgen: errors", "errors"), Some(0), "{lg}");
    assert!(!et.contains("partial message"), "{et}");
    assert!(lg.contains("cpu host 0"), "{lg}");
    println!("procs_memif_loadgen_echo took {:?}", started.elapsed());
}

/// A [`MemifPair`] (file prefixes with `tag`) with two `shared` lcores on each side, on the
/// first two usable cores, each with its own queue pair of the one memif port.
fn two_queue_pairs(tag: &str) -> MemifPair {
    let cores = dataplane::sys::allowed_cores().unwrap();
    assert!(
        cores.len() >= 2,
        "this test needs two usable cores, found {cores:?}"
    );
    let lcores = format!(
        "[[lcore]]\ncore = {}\nrole = \"shared\"\n[[lcore]]\ncore = {}\nrole = \"shared\"",
        cores[0], cores[1]
    );
    memif_pair(tag, "", |prefix, vdev, ip, _| {
        config_with(
            prefix,
            vdev,
            "net_memif0",
            &format!("{ip}/24"),
            (lcores.clone(), cores[0]),
            256,
            "stats_interval_s = 0.0",
        )
    })
}

/// Two queue pairs on one memif port (client queue i is server queue i), two `shared` lcores
/// per process: flows stay on the core that opened them, with no RSS to steer them.
#[test]
fn procs_memif_two_queue_pairs() {
    let pair = two_queue_pairs("q");
    let count = 2000;
    let (lg, et) = memif_echo_round(&pair, &[], "64", "16", count);
    println!("--- loadgen:\n{lg}\n--- echo:\n{et}");
    assert_eq!(counter(&lg, "loadgen: errors", "errors"), Some(0), "{lg}");
    assert_eq!(
        counter(&lg, "loadgen: transactions", "transactions"),
        Some(count),
        "{lg}"
    );
    assert_eq!(
        counter(&et, "echo: transactions", "transactions"),
        Some(count),
        "{et}"
    );
    // Every connection was opened by one of the client's two contexts and accepted by the
    // server's context of the same queue: eight each.
    for (out, what) in [(&lg, "active opens"), (&et, "passive opens")] {
        for k in 0..2 {
            let opens = counter(out, &format!("host {k}:"), what);
            assert_eq!(opens, Some(8), "host {k} {what}:\n{out}");
        }
    }
}

/// `nicemu kv` and `nicemu loadgen --proto redis` over one memif port with two queue pairs
/// and two `shared` lcores on each side: the server's two host contexts serve one keyspace,
/// every transaction (SETs, each checked by the GET after it) succeeds, and both server contexts
/// carry load. (Before, `nicemu kv` refused more than one NIC lcore.)
#[test]
fn procs_memif_two_queue_pairs_kv() {
    let pair = two_queue_pairs("qk");
    let mut kv = start_server(
        &["kv", "-c", &pair.echo_cfg, "--port", "6379", "-d", "120"],
        &pair.echo_prefix,
        "one keyspace over 2 host contexts",
    );
    let count = "2000";
    let (ok, lg) = run_nicemu(
        &[
            "loadgen",
            "-c",
            &pair.lg_cfg,
            "--server",
            "10.99.0.1:6379",
            "--proto",
            "redis",
            "--size",
            "32",
            "--conns",
            "16",
            "--count",
            count,
            "--connect-timeout-ms",
            "10000",
        ],
        &pair.lg_prefix,
        Duration::from_secs(90),
    );
    let status = kv.interrupt_and_wait(Duration::from_secs(15));
    let kt = kv.describe();
    println!("--- loadgen:\n{lg}\n--- kv:\n{kt}");
    assert_eq!(ok, Some(true), "loadgen:\n{lg}\nkv:\n{kt}");
    assert!(status.is_some_and(|s| s.success()), "{kt}");
    assert_eq!(counter(&lg, "loadgen: errors", "errors"), Some(0), "{lg}");
    assert_eq!(
        counter(&lg, "loadgen: transactions", "transactions"),
        Some(2000),
        "{lg}"
    );
    // A transaction is one command (SET, then the GET that checks it, in turn).
    assert_eq!(counter(&kt, "kv: commands", "commands"), Some(2000), "{kt}");
    // Client queue i is server queue i: eight connections, and commands, on each context.
    for k in 0..2 {
        assert_eq!(
            counter(&kt, &format!("host {k}:"), "passive opens"),
            Some(8),
            "{kt}"
        );
        let c = counter(&kt, &format!("kv host {k}:"), "commands").unwrap_or(0);
        assert!(c > 0, "kv host {k} ran no command:\n{kt}");
    }
}

/// The largest `open N` of the echo server's progress lines.
fn most_open(echo_out: &str) -> u64 {
    echo_out
        .lines()
        .filter(|l| l.contains("] echo: transactions"))
        .filter_map(|l| counter(l, "[", " open "))
        .max()
        .unwrap_or(0)
}

#[test]
fn procs_memif_beyond_64k() {
    // More than 65,535 concurrent connections from one generator to one server port: two
    // client addresses (the port's and one from --clients) with 64,512 ports each.
    const CONNS: u64 = 70_000;
    let started = Instant::now();
    // One `shared` lcore each (one busy-polling thread per process), as
    // configs/many-conns-*.toml but with less EAL memory.
    let cores = dataplane::sys::allowed_cores().unwrap();
    let pair = memif_pair("k", ",rsize=14", |prefix, vdev, ip, side| {
        let core = *cores.get(side).unwrap_or(&cores[0]);
        let lcore = format!("[[lcore]]\ncore = {core}\nrole = \"shared\"");
        let runtime = "stats_interval_s = 1.0\nmbufs = 65535";
        let cidr = format!("{ip}/16");
        config_with(
            prefix,
            vdev,
            "net_memif0",
            &cidr,
            (lcore, core),
            512,
            runtime,
        )
    });
    let max = (CONNS + 100).to_string();
    let mut echo = start_echo(
        &[
            "echo",
            "-c",
            &pair.echo_cfg,
            "--no-pin",
            "--max-conns",
            &max,
            "-d",
            "150",
        ],
        &pair.echo_prefix,
    );
    // The generator runs until every connection was up for a while (or its limit); the
    // timeouts allow for a closed loop of 70,000 requests on a debug build.
    let mut lg = NicemuProc::spawn(
        &[
            "loadgen",
            "-c",
            &pair.lg_cfg,
            "--no-pin",
            "--server",
            "10.99.0.1:7",
            "--conns",
            &CONNS.to_string(),
            "--clients",
            "1",
            "--ephemeral",
            "1024-65535",
            "--connect-timeout-ms",
            "60000",
            "--response-timeout-ms",
            "60000",
            "-d",
            "100",
        ],
        &pair.lg_prefix,
    );
    // Up: the server holds every connection at once; then a few more seconds of echoes.
    let up = wait_for(Duration::from_secs(90), || {
        most_open(&echo.stdout()) >= CONNS || lg.exited().is_some() || echo.exited().is_some()
    });
    let up_after = started.elapsed();
    if up {
        std::thread::sleep(Duration::from_secs(3));
    }
    let lg_status = lg.interrupt_and_wait(Duration::from_secs(30));
    let lo = lg.describe();
    let echo_status = echo.interrupt_and_wait(Duration::from_secs(30));
    let eo = echo.describe();
    println!("--- loadgen:\n{lo}\n--- echo:\n{eo}");
    let held = most_open(&eo);
    assert!(up, "the server held at most {held} of {CONNS} connections");
    assert_eq!(held, CONNS, "{eo}");
    assert!(
        lo.contains(&format!(
            "connections open {CONNS} (handshakes completed {CONNS})"
        )),
        "{lo}"
    );
    assert!(lg_status.is_some_and(|s| s.success()), "{lo}");
    assert!(echo_status.is_some_and(|s| s.success()), "{eo}");
    assert_eq!(counter(&lo, "loadgen: errors", "errors"), Some(0), "{lo}");
    assert_eq!(
        counter(&lo, "loadgen: transactions", "established"),
        Some(CONNS),
        "{lo}"
    );
    assert_eq!(
        counter(&eo, "echo: transactions", "accepted"),
        Some(CONNS),
        "{eo}"
    );
    // Every echo the generator counted was checked; the server echoed those and at most one
    // more request per connection (in flight when the generator stopped).
    let sent = counter(&lo, "loadgen: transactions", "transactions").unwrap();
    let echoed = counter(&eo, "echo: transactions", "transactions").unwrap();
    assert!(sent > 0, "{lo}");
    assert!(
        echoed >= sent && echoed <= sent + CONNS,
        "echoed {echoed}, checked {sent}"
    );
    assert!(!eo.contains("raise --max-conns"), "{eo}");
    println!(
        "procs_memif_beyond_64k: {CONNS} connections held after {up_after:?}, took {:?}",
        started.elapsed()
    );
}

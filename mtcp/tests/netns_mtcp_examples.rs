//! mTCP's own example programs, `epserver` and `epwget` (mtcp-stack/mtcp, `apps/example/`,
//! vendored unmodified under `tests/mtcp-examples/` with mTCP's licence), compiled against
//! libmtcp's headers and linked with `-lmtcp` the way mTCP's Makefile builds them (with mTCP's
//! `util/` objects), then run against real peers:
//!
//! - [`epserver_serves_curl_and_wget`]: epserver on net_af_packet serves a directory to curl
//!   and wget in a namespace; every file arrives byte for byte, a missing one is a 404, and
//!   epserver stops cleanly on SIGINT (its handler registered with `mtcp_register_signal`).
//! - [`epwget_fetches_from_nginx`]: epwget on net_af_packet downloads from nginx in the
//!   namespace; every flow completes, the sizes epwget counted equal what nginx logged having
//!   sent, and the bodies epwget saved (`-o`) equal the file.
//! - [`epwget_fetches_from_epserver`]: both programs, each its own libmtcp process, joined by
//!   net_memif; every flow completes with the right size and content.
//! - [`epwget_and_epserver_under_asan`]: the same, both built with AddressSanitizer: no memory
//!   error, and LeakSanitizer finds no leak that libmtcp (or DPDK under it) allocated. The
//!   programs' own unfreed buffers (epwget's event array, epserver's per-thread state, which
//!   they never free before exiting) are listed and allowed.
//!
//! epwget's `-o` output is compared only for a body that fits its first read's header buffer
//! (1,024 bytes): for larger ones epwget itself writes the wrong bytes (`HandleReadEvent`
//! skips the body bytes of the first read past that buffer), whatever the stack; its byte
//! counts are right for every size and are what the large transfers are checked with.
//!
//! Bounded: every wait has a limit, child processes are killed, and the namespace, temporary
//! files and DPDK's runtime directories are removed also when a test fails. Needs root,
//! iproute2, ethtool, gcc, curl, wget and nginx (`ci/install-deps.sh`).
#![cfg(feature = "dpdk")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    c_program, check_asan, crate_dir, gcc, lib_dir, memif_toml, one_lcore_toml, wait_for, Proc,
    RuntimeDir, TempDir, ASAN_CFLAGS, ASAN_EXIT, ASAN_OPTIONS,
};
use dataplane::netns::Netns;

const NIC_IP: &str = "192.0.2.1";
const PEER_IP: &str = "192.0.2.2";
const BIG: usize = 1_000_000;
const SMALL: usize = 500;

/// Builds mTCP's example `name` (epserver or epwget) as mTCP's `apps/example/Makefile` does:
/// the program with `util/`'s http_parsing, tdate_parse and netlib, `-Wall -Werror
/// -fgnu89-inline`, plus `-fcommon` (GCC 10 made `-fno-common` the default, and mTCP's
/// `netlib.h` defines a variable in a header); with `asan`, AddressSanitizer's flags too.
fn build_example(name: &str, tmp: &TempDir, asan: bool) -> PathBuf {
    let ex = crate_dir().join("tests/mtcp-examples");
    let exe = tmp.path(name);
    let mut args: Vec<String> = [
        "-g",
        "-O2",
        "-Wall",
        "-Werror",
        "-fgnu89-inline",
        "-fcommon",
        "-pthread",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("-I{}", ex.display()));
    if asan {
        args.extend(ASAN_CFLAGS.iter().map(|s| s.to_string()));
    }
    for f in [name, "http_parsing", "tdate_parse", "netlib"] {
        args.push(ex.join(format!("{f}.c")).display().to_string());
    }
    gcc(&exe, &args);
    exe
}

/// A file's bytes: a pattern that differs per file and per position.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32 * 7) as u8 ^ (i >> 8) as u8)
        .collect()
}

/// The directory epserver serves: `small.bin`, `big.bin`, `index.html`.
fn www(tmp: &TempDir) -> PathBuf {
    let dir = tmp.path("www");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("small.bin"), pattern(SMALL, 1)).unwrap();
    std::fs::write(dir.join("big.bin"), pattern(BIG, 2)).unwrap();
    std::fs::write(dir.join("index.html"), b"<html>nicemu</html>\n").unwrap();
    dir
}

/// An mTCP configuration file like mTCP's `epserver.conf`, whose `nicemu_config` names
/// `toml` (written next to it).
fn mtcp_conf(tmp: &TempDir, name: &str, toml: &str) -> PathBuf {
    std::fs::write(tmp.path(&format!("{name}.toml")), toml).unwrap();
    let conf = tmp.path(&format!("{name}.conf"));
    std::fs::write(
        &conf,
        format!(
            "############### mtcp configuration file ###############\n\
             io = dpdk\n\
             num_mem_ch = 4\n\
             port = dpdk0\n\
             rcvbuf = 8192\n\
             sndbuf = 8192\n\
             tcp_timeout = 30\n\
             tcp_timewait = 0\n\
             stat_print = dpdk0\n\
             nicemu_config = {name}.toml\n"
        ),
    )
    .unwrap();
    conf
}

/// A nicemu TOML: one `shared` lcore on this process's first core, net_af_packet on `iface`.
fn af_packet_toml(iface: &str, prefix: &str) -> String {
    let core = dataplane::sys::allowed_cores().unwrap()[0];
    let vdev = format!("net_af_packet0,iface={iface}");
    one_lcore_toml(core, prefix, &vdev, &format!("{NIC_IP}/24"))
}

/// `curl` in the namespace: the HTTP status, the body saved in `out`.
fn curl(net: &Netns, url: &str, out: &Path) -> String {
    let o = net
        .command(&["curl", "-s", "-m", "10", "-o"])
        .arg(out)
        .args(["-w", "%{http_code}", url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Starts epserver on `conf` serving `www`, and waits until it answers `net`'s curl.
fn start_epserver(exe: &Path, conf: &Path, www: &Path, tmp: &TempDir, net: &Netns) -> Proc {
    let mut cmd = c_program(exe);
    cmd.arg("-p").arg(www).arg("-f").arg(conf).args(["-N", "1"]);
    let mut server = Proc::spawn(cmd, tmp.path("epserver.out"), "epserver");
    let probe = tmp.path("probe");
    let url = format!("http://{NIC_IP}/index.html");
    let up = wait_for(Duration::from_secs(20), || {
        server.exited() || curl(net, &url, &probe) == "200"
    });
    assert!(up && !server.exited(), "{}", server.describe());
    server
}

/// Stops epserver with SIGINT (mTCP's way) and checks it exits 0 after serving `min`
/// connections or more, with its DPDK runtime directory removed.
fn stop_epserver(mut server: Proc, prefix: &str, min: u64) {
    server.signal(libc::SIGINT);
    let rc = server.wait(Duration::from_secs(15));
    assert!(
        rc == Some(0) || rc == Some(ASAN_EXIT),
        "{rc:?}\n{}",
        server.describe()
    );
    let out = server.output();
    check_asan(&out);
    let passive: u64 = out
        .lines()
        .find_map(|l| {
            l.strip_prefix("libmtcp: context 0: connections 0 active + ")
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    assert!(passive >= min, "{passive} < {min}:\n{out}");
    assert!(!Path::new(&format!("/var/run/dpdk/{prefix}")).exists());
}

/// What the af_packet tests share: `program` built, the served directory, a namespace
/// `tag` with the kernel at PEER_IP, and an mTCP configuration on its veth.
struct Rig {
    tmp: TempDir,
    exe: PathBuf,
    www: PathBuf,
    prefix: String,
    _dir: RuntimeDir,
    net: Netns,
    conf: PathBuf,
}

impl Rig {
    fn new(program: &str, tag: &str) -> Rig {
        let tmp = TempDir::new(program);
        let exe = build_example(program, &tmp, false);
        let www = www(&tmp);
        let prefix = format!("nicemu-test-mtcp-{program}-{}", std::process::id());
        let _dir = RuntimeDir(prefix.clone());
        let net = Netns::for_test(tag).unwrap_or_else(|e| panic!("{e}"));
        net.configure(&format!("{PEER_IP}/24"))
            .unwrap_or_else(|e| panic!("{e}"));
        let conf = mtcp_conf(&tmp, program, &af_packet_toml(net.outer(), &prefix));
        Rig {
            tmp,
            exe,
            www,
            prefix,
            _dir,
            net,
            conf,
        }
    }
}

#[test]
fn epserver_serves_curl_and_wget() {
    let Rig {
        tmp,
        exe,
        www,
        prefix,
        _dir,
        net,
        conf,
    } = Rig::new("epserver", "eps");
    let server = start_epserver(&exe, &conf, &www, &tmp, &net);
    let describe = || server.describe();

    for name in ["big.bin", "small.bin", "big.bin"] {
        let got = tmp.path("got");
        let _ = std::fs::remove_file(&got);
        let code = curl(&net, &format!("http://{NIC_IP}/{name}"), &got);
        assert_eq!(code, "200", "curl {name}\n{}", describe());
        assert!(
            std::fs::read(&got).unwrap() == std::fs::read(www.join(name)).unwrap(),
            "curl {name}: the body differs\n{}",
            describe()
        );
    }
    assert_eq!(
        curl(&net, &format!("http://{NIC_IP}/missing"), &tmp.path("got")),
        "404"
    );
    for name in ["big.bin", "small.bin"] {
        let got = tmp.path("wget");
        let _ = std::fs::remove_file(&got);
        let o = net
            .command(&["wget", "-q", "-T", "10", "-t", "1", "-O"])
            .arg(&got)
            .arg(format!("http://{NIC_IP}/{name}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "wget {name}: {o:?}\n{}", describe());
        assert!(
            std::fs::read(&got).unwrap() == std::fs::read(www.join(name)).unwrap(),
            "wget {name}: the body differs\n{}",
            describe()
        );
    }
    // Six fetches and at least the first readiness probe.
    stop_epserver(server, &prefix, 7);
}

/// The `Response size set to N` sizes epwget printed (header and body of the first
/// response), after checking it completed `flows` connections without errors or size
/// mismatches.
fn check_epwget(w: &Proc, flows: usize) -> u64 {
    let out = w.output();
    assert!(
        out.contains(&format!(
            "[CPU 0] Completed {flows} connections, errors: 0 incompletes: 0"
        )),
        "{}",
        w.describe()
    );
    assert!(!out.contains("mismatch"), "{}", w.describe());
    assert!(!out.contains("mtcp_connect"), "{}", w.describe());
    let sizes: Vec<u64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("Response size set to "))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert_eq!(sizes.len(), 1, "{}", w.describe());
    sizes[0]
}

/// Runs epwget for `url` with `flows` flows, 8 at a time, saving bodies under `save`.
fn epwget(
    exe: &Path,
    conf: &Path,
    url: &str,
    flows: usize,
    save: Option<&Path>,
    tmp: &TempDir,
) -> Proc {
    // Line-buffered stdout: epwget prints its result with stdio, and a program that
    // LeakSanitizer ends after its report exits without flushing stdio's buffers. The
    // library path as `c_program` sets it.
    let mut cmd = Command::new("stdbuf");
    cmd.env("LD_LIBRARY_PATH", lib_dir())
        .arg("-oL")
        .arg(exe)
        .arg(url)
        .arg(flows.to_string())
        .args(["-N", "1", "-c", "8", "-f"])
        .arg(conf);
    if let Some(s) = save {
        cmd.arg("-o").arg(s);
    }
    cmd.env("ASAN_OPTIONS", ASAN_OPTIONS);
    let mut w = Proc::spawn(cmd, tmp.path("epwget.out"), "epwget");
    let rc = w.wait(Duration::from_secs(120));
    assert!(
        rc == Some(0) || rc == Some(ASAN_EXIT),
        "{rc:?}\n{}",
        w.describe()
    );
    check_asan(&w.output());
    w
}

/// Checks that `dir` holds `flows` files `f.0`..`f.<flows-1>` each equal to `want`.
fn check_saved(dir: &Path, flows: usize, want: &[u8]) {
    for k in 0..flows {
        let f = dir.join(format!("f.{k}"));
        let got = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(got == want, "{}: {} bytes, differs", f.display(), got.len());
    }
}

#[test]
fn epwget_fetches_from_nginx() {
    let Rig {
        tmp,
        exe,
        www,
        prefix,
        _dir,
        net,
        conf,
    } = Rig::new("epwget", "epw");
    let d = tmp.0.display().to_string();
    let nginx_conf = tmp.path("nginx.conf");
    std::fs::write(
        &nginx_conf,
        format!(
            r#"daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format sizes '$status $bytes_sent $body_bytes_sent';
    access_log {d}/access.log sizes;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen {PEER_IP}:80;
        root {www};
    }}
}}
"#,
            www = www.display()
        ),
    )
    .unwrap();
    let mut nginx = Proc::spawn(
        net.command(&["nginx", "-c", &nginx_conf.display().to_string()]),
        tmp.path("nginx.out"),
        "nginx",
    );
    let probe = tmp.path("probe");
    assert!(
        wait_for(Duration::from_secs(10), || nginx.exited()
            || curl(&net, &format!("http://{PEER_IP}/index.html"), &probe)
                == "200"),
        "{}",
        nginx.describe()
    );
    assert!(!nginx.exited(), "{}", nginx.describe());
    let log = tmp.path("access.log");
    let lines_before = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();

    let flows = 40;
    let w = epwget(
        &exe,
        &conf,
        &format!("{PEER_IP}/big.bin"),
        flows,
        None,
        &tmp,
    );
    let size = check_epwget(&w, flows);
    // What nginx logged having sent: `flows` full responses of that size.
    let logged = std::fs::read_to_string(&log).unwrap();
    let sent: Vec<&str> = logged.lines().skip(lines_before).collect();
    assert_eq!(sent.len(), flows, "{logged}");
    for l in &sent {
        assert_eq!(
            *l,
            format!("200 {size} {BIG}"),
            "{logged}\n{}",
            w.describe()
        );
    }
    assert!(!Path::new(&format!("/var/run/dpdk/{prefix}")).exists());

    // Bodies saved by epwget, compared byte for byte.
    let saved = tmp.path("saved");
    std::fs::create_dir_all(&saved).unwrap();
    let w = epwget(
        &exe,
        &conf,
        &format!("{PEER_IP}/small.bin"),
        flows,
        Some(&saved.join("f")),
        &tmp,
    );
    check_epwget(&w, flows);
    check_saved(
        &saved,
        flows,
        &std::fs::read(www.join("small.bin")).unwrap(),
    );
}

#[test]
fn epwget_fetches_from_epserver() {
    epwget_from_epserver(false);
}

#[test]
fn epwget_and_epserver_under_asan() {
    epwget_from_epserver(true);
}

fn epwget_from_epserver(asan: bool) {
    let tmp = TempDir::new(if asan { "epasan" } else { "epboth" });
    let server_exe = build_example("epserver", &tmp, asan);
    let wget_exe = build_example("epwget", &tmp, asan);
    let www = www(&tmp);
    let pid = std::process::id();
    let (sp, cp) = (
        format!("nicemu-test-mtcp-eps-{pid}"),
        format!("nicemu-test-mtcp-epw-{pid}"),
    );
    let _dirs = (RuntimeDir(sp.clone()), RuntimeDir(cp.clone()));
    let sconf = mtcp_conf(
        &tmp,
        "server",
        &memif_toml(&tmp.path("memif.sock"), "server", "10.99.0", 1, &sp),
    );
    let cconf = mtcp_conf(
        &tmp,
        "client",
        &memif_toml(&tmp.path("memif.sock"), "client", "10.99.0", 2, &cp),
    );
    let mut cmd = c_program(&server_exe);
    cmd.arg("-p")
        .arg(&www)
        .arg("-f")
        .arg(&sconf)
        .args(["-N", "1"])
        .env("ASAN_OPTIONS", ASAN_OPTIONS);
    let server = Proc::spawn(cmd, tmp.path("epserver.out"), "epserver");
    // epserver prints nothing when it is up: its memif socket file appears once DPDK runs.
    assert!(
        wait_for(Duration::from_secs(20), || tmp.path("memif.sock").exists()),
        "{}",
        server.describe()
    );
    let flows = 30;
    let w = epwget(&wget_exe, &cconf, "10.99.0.1/big.bin", flows, None, &tmp);
    let size = check_epwget(&w, flows);
    // epserver's header (status line, Date, Server, Content-Length, Connection) and the body.
    assert!(
        size > BIG as u64 && size < BIG as u64 + 300,
        "{size}\n{}\n{}",
        w.describe(),
        server.describe()
    );
    let saved = tmp.path("saved");
    std::fs::create_dir_all(&saved).unwrap();
    let w = epwget(
        &wget_exe,
        &cconf,
        "10.99.0.1/small.bin",
        flows,
        Some(&saved.join("f")),
        &tmp,
    );
    check_epwget(&w, flows);
    check_saved(
        &saved,
        flows,
        &std::fs::read(www.join("small.bin")).unwrap(),
    );
    if asan {
        // Proof that the sanitizer ran: it reports epwget's own unfreed buffers.
        assert!(
            w.output().contains("ERROR: LeakSanitizer"),
            "{}",
            w.describe()
        );
    }
    stop_epserver(server, &sp, 2 * flows as u64);
}

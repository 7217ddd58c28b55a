//! `tests/c/soak.c` (connect, send 1..64 KB, check the echo, close; every 16th connection
//! aborted, every 7th closed half read), built with AddressSanitizer, against `nicemu echo`
//! over net_memif for a few seconds: thousands of connections, no error, and no memory error
//! or leak inside libmtcp. The same program runs for an hour in `ci/mtcp-soak.sh`, which
//! records that memory stays flat.
//!
//! soak.c frees everything it allocates, so any leak LeakSanitizer reports is libmtcp's.
//! Bounded: the soak stops itself, processes are killed on drop, runtime directories and
//! temporary files removed. Needs gcc and root.
#![cfg(feature = "dpdk")]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{
    c_program, check_asan, crate_dir, gcc, memif_toml, nicemu_bin, wait_for, Proc, RuntimeDir,
    TempDir, ASAN_CFLAGS, ASAN_OPTIONS,
};

#[test]
fn c_soak_under_asan_against_nicemu_echo() {
    let tmp = TempDir::new("soak");
    let exe = tmp.path("soak");
    let mut args: Vec<String> = ["-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread"]
        .iter()
        .chain(ASAN_CFLAGS)
        .map(|s| s.to_string())
        .collect();
    args.push(crate_dir().join("tests/c/soak.c").display().to_string());
    gcc(&exe, &args);
    let pid = std::process::id();
    let (sp, cp) = (
        format!("nicemu-test-mtcp-soak-s-{pid}"),
        format!("nicemu-test-mtcp-soak-c-{pid}"),
    );
    let _dirs = (RuntimeDir(sp.clone()), RuntimeDir(cp.clone()));
    std::fs::write(
        tmp.path("server.toml"),
        memif_toml(&tmp.path("memif.sock"), "server", "10.96.0", 1, &sp),
    )
    .unwrap();
    std::fs::write(
        tmp.path("client.toml"),
        memif_toml(&tmp.path("memif.sock"), "client", "10.96.0", 2, &cp),
    )
    .unwrap();
    let conf = tmp.path("client.conf");
    std::fs::write(
        &conf,
        "num_cores = 1\nmax_concurrency = 1024\nrcvbuf = 65536\nsndbuf = 65536\n\
         nicemu_config = client.toml\n",
    )
    .unwrap();
    let mut cmd = Command::new(nicemu_bin());
    cmd.arg("echo")
        .arg("-c")
        .arg(tmp.path("server.toml"))
        .args(["--port", "7"]);
    let mut echo = Proc::spawn(cmd, tmp.path("echo.out"), "nicemu echo");
    assert!(
        wait_for(Duration::from_secs(20), || tmp.path("memif.sock").exists()),
        "{}",
        echo.describe()
    );
    let mut cmd = c_program(&exe);
    cmd.arg(&conf)
        .args(["10.96.0.1", "7", "1", "4", "1", "8"])
        .env("ASAN_OPTIONS", ASAN_OPTIONS);
    let mut soak = Proc::spawn(cmd, tmp.path("soak.out"), "soak");
    let rc = soak.wait(Duration::from_secs(60));
    let out = soak.output();
    check_asan(&out);
    assert_eq!(rc, Some(0), "{}\n{}", soak.describe(), echo.describe());
    let done: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("soak: done "))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(done >= 200, "only {done} connections in 4 s:\n{out}");
    assert!(out.contains(" 0 errors, 0 threads idle"), "{out}");
    // The echo server saw every connection end.
    echo.signal(libc::SIGINT);
    assert_eq!(
        echo.wait(Duration::from_secs(20)),
        Some(0),
        "{}",
        echo.describe()
    );
    let eout = echo.output();
    let line = eout
        .lines()
        .find(|l| l.starts_with("echo: transactions"))
        .unwrap_or_else(|| panic!("{eout}"));
    let accepted = line
        .split("accepted ")
        .nth(1)
        .and_then(|r| r.split(',').next());
    let closed = line.split("closed ").nth(1).map(str::trim);
    assert_eq!(accepted, closed, "{line}");
}

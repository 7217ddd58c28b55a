//! Bad configurations: a one-line error naming file, key and problem, and a non-zero exit.

use std::path::PathBuf;
use std::process::{Command, Output};

fn nicemu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nicemu"))
        .args(args)
        .output()
        .expect("run nicemu")
}

fn write_cfg(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nicemu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const WIRE: &str = r#"
[[port]]
name = "p0"
driver = "wire"
wire = "w0"

[[lcore]]
core = 0
role = "nic"
"#;

/// Runs `nicemu check` and `nicemu run` on `text`; both must fail with exactly one stderr
/// line that contains every piece of `expect`.
fn assert_one_line_error(name: &str, text: &str, expect: &[&str]) {
    let p = write_cfg(name, text);
    let path = p.to_str().unwrap();
    for args in [
        vec!["check", "-c", path],
        vec!["run", "-c", path, "-d", "0.1"],
    ] {
        let out = nicemu(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded on {name}");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: expected one line, got:\n{err}");
        assert!(lines[0].starts_with("nicemu: "), "{err}");
        assert!(lines[0].contains(path), "names the file: {err}");
        for e in expect {
            assert!(lines[0].contains(e), "{args:?}: {err:?} lacks {e:?}");
        }
    }
}

#[test]
fn good_wire_config_checks_ok() {
    let p = write_cfg("good.toml", WIRE);
    let out = nicemu(&["check", "-c", p.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(": ok"));
}

#[test]
fn unknown_key() {
    assert_one_line_error(
        "unknown.toml",
        &WIRE.replace("role = \"nic\"", "role = \"nic\"\ncpu = 3"),
        &[
            "lcore[0].cpu",
            "unknown field `cpu`",
            "expected `core` or `role`",
        ],
    );
}

#[test]
fn wrong_type() {
    assert_one_line_error(
        "type.toml",
        &WIRE.replace("core = 0", "core = \"zero\""),
        &["lcore[0].core", "invalid type", "expected usize"],
    );
    assert_one_line_error(
        "mtu.toml",
        &WIRE.replace("wire = \"w0\"", "wire = \"w0\"\nmtu = 70000"),
        &["port[0].mtu"],
    );
}

#[test]
fn lcore_beyond_the_machine() {
    assert_one_line_error(
        "core.toml",
        &WIRE.replace("core = 0", "core = 4000"),
        &["lcore[0].core", "core 4000 is not available"],
    );
    let cores = std::thread::available_parallelism().unwrap().get();
    let mut many = WIRE.to_string();
    for c in 1..=cores {
        many += &format!("\n[[lcore]]\ncore = {c}\nrole = \"host\"\n");
    }
    assert_one_line_error(
        "many.toml",
        &many,
        &["lcore", "lcores configured but this machine has only"],
    );
}

#[test]
fn pcap_of_a_port_that_does_not_exist() {
    let p = write_cfg("pcap.toml", WIRE);
    let out = nicemu(&[
        "run",
        "-c",
        p.to_str().unwrap(),
        "-d",
        "0.1",
        "--pcap",
        "p9=/tmp/x.pcap",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("p9") && err.contains("no such port") && err.contains("p0"),
        "{err}"
    );
}

#[test]
fn missing_file_and_syntax_error() {
    let out = nicemu(&["check", "-c", "/nonexistent/nicemu.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("/nonexistent/nicemu.toml") && err.contains("cannot read"),
        "{err}"
    );
    assert_one_line_error(
        "syntax.toml",
        "[[port]\nname = 1\n",
        &["line 1", "TOML syntax error"],
    );
}

/// A DPDK port whose device does not exist: one line naming the key and the ports that do
/// exist, exit 1, no DPDK panic dump, and the EAL's runtime directory removed.
#[cfg(feature = "dpdk")]
#[test]
fn dpdk_port_that_does_not_exist() {
    let prefix = format!("nicemu-test-cli-{}", std::process::id());
    let text = format!(
        r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "128", "--file-prefix={prefix}", "--vdev=net_null0"]

[[port]]
name = "p0"
driver = "dpdk"
device = "net_null9"

[[lcore]]
core = 0
role = "nic"
"#
    );
    let p = write_cfg("noport.toml", &text);
    let out = nicemu(&["run", "-c", p.to_str().unwrap(), "-d", "0.1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "expected one line, got:\n{err}");
    for want in [
        "port[0].device",
        "\"net_null9\"",
        "available ports: [net_null0]",
    ] {
        assert!(err.contains(want), "{err:?} lacks {want:?}");
    }
    assert!(
        !err.contains("PANIC") && !err.contains("Backtrace"),
        "{err}"
    );
    let dir = std::path::Path::new("/var/run/dpdk").join(&prefix);
    assert!(!dir.exists(), "{} left behind", dir.display());
}

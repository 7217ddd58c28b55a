//! Where nicemu's threads run: pinned to their configured cores by default, and with
//! `--no-pin` free to run on every core the process may use, although DPDK's EAL pins the
//! thread that starts it (and so everything it spawns) to the main lcore's core.

use super::*;

/// The core list (`Cpus_allowed_list`) of each thread of process `pid` named as nicemu's
/// loops are (`nic0`, `host0`, `shared0`, ...).
fn loop_threads(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in dir.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let comm = comm.trim().to_string();
        let base = comm.trim_end_matches(|c: char| c.is_ascii_digit());
        if base == comm || !["nic", "host", "shared"].contains(&base) {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("?")
            .trim()
            .to_string();
        out.push((comm, list));
    }
    out.sort();
    out
}

/// `nicemu kv` with a `nic` and a `host` lcore (two cores; one `shared` lcore on one): pinned,
/// each loop thread runs on its configured core; with `--no-pin`, every loop thread may run
/// on all of this process's cores (it used to inherit the EAL's pin to the first core).
#[test]
fn procs_threads_are_pinned_to_their_cores_or_free_with_no_pin() {
    let net = namespace("t");
    let tmp = TempDir::new("procs-place");
    let allowed = dataplane::sys::allowed_cores().unwrap();
    let all = dataplane::sys::format_core_list(&allowed);
    let (_, nic_core) = lcores();
    for (tag, extra) in [("p", None), ("u", Some("--no-pin"))] {
        let prefix = format!("nicemu-test-place{tag}-{}", std::process::id());
        let cfg = af_packet_config(&tmp, &net, &prefix);
        let mut args = vec!["kv", "-c", &cfg];
        args.extend(extra);
        let mut kv = NicemuProc::spawn(&args, &prefix);
        wait_for_kv(&net, &mut kv);
        let threads = loop_threads(kv.pid());
        kv.interrupt_and_wait(Duration::from_secs(10));
        assert!(!threads.is_empty(), "no loop threads: {}", kv.describe());
        for (name, list) in &threads {
            let want = match (extra, allowed.get(1)) {
                (Some(_), _) => all.clone(),
                (None, Some(host)) if name.starts_with("host") => host.to_string(),
                (None, _) => nic_core.to_string(),
            };
            assert_eq!(list, &want, "{tag}: thread {name} ({threads:?})");
        }
    }
}

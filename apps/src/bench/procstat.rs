//! CPU time from /proc: a process's time on CPU, and per-CPU softirq time.
// Only the kernel round (feature `dpdk`) reads other processes' times.
#![cfg_attr(not(feature = "dpdk"), allow(dead_code))]

/// Nanoseconds the main thread of process `pid` has run on a CPU (its `sum_exec_runtime`,
/// the first field of `/proc/<pid>/schedstat`; precise, unlike the tick counts of
/// `/proc/<pid>/stat`). The benchmark's servers are single-threaded.
pub(super) fn process_cpu_ns(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/schedstat");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    text.split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| format!("{path}: unexpected contents {text:?}"))
}

/// User and system time of process `pid` in clock ticks (`/proc/<pid>/stat` fields 14, 15).
pub(super) fn process_ticks(pid: u32) -> Result<(u64, u64), String> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| format!("{path}: no ')'"))?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| -> Result<u64, String> {
        f.get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{path}: field {} missing", i + 3))
    };
    Ok((num(11)?, num(12)?))
}

/// Softirq time of CPU `core` in clock ticks (`/proc/stat`, the `softirq` column).
pub(super) fn softirq_ticks(core: usize) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    let name = format!("cpu{core}");
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if f.next() == Some(name.as_str()) {
            // user nice system idle iowait irq softirq
            return f
                .nth(6)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("/proc/stat: bad {name} line"));
        }
    }
    Err(format!("/proc/stat: no {name} line"))
}

/// CPU time the calling thread has used, nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub(super) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes into.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds per clock tick of /proc (USER_HZ).
pub(super) fn ns_per_tick() -> f64 {
    // SAFETY: sysconf takes an integer and returns one.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1e9 / if hz > 0 { hz as f64 } else { 100.0 }
}

/// This process's resident set size in bytes (`/proc/self/statm`, second field, in pages).
pub(super) fn self_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    // 4 KiB pages: Linux's base page on x86_64, the machines this bench targets.
    Some(pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_our_own_process_and_cpu0() {
        let pid = std::process::id();
        // Spin until this thread has run 10 ms on a CPU (bounded: a loaded machine may
        // give it less than the wall time).
        let t = std::time::Instant::now();
        while thread_cpu_ns() < 10_000_000 && t.elapsed().as_secs() < 10 {
            std::hint::spin_loop();
        }
        // (The main thread's time: this test runs on another thread.)
        assert!(process_cpu_ns(pid).unwrap() > 0);
        process_ticks(pid).unwrap();
        softirq_ticks(0).unwrap();
        assert!(ns_per_tick() > 0.0);
        assert!(thread_cpu_ns() >= 10_000_000);
    }
}

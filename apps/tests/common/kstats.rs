//! The kernel's TCP counters in a test's network namespace (`Tcp` of /proc/net/snmp, `TcpExt`
//! of /proc/net/netstat), for the kernel-interop tests' checks that no connection was reset
//! or aborted.

use std::collections::HashMap;

/// Parses `cat /proc/net/snmp /proc/net/netstat` into `Tcp.OutRsts`, `TcpExt.TCPAbortOnData`,
/// ... (panics on text without those two, which every Linux has).
pub fn parse(text: &str) -> HashMap<String, i64> {
    let mut m = HashMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.windows(2) {
        let (Some((p1, names)), Some((p2, values))) =
            (pair[0].split_once(':'), pair[1].split_once(':'))
        else {
            continue;
        };
        if p1 != p2 || !matches!(p1, "Tcp" | "TcpExt") || names.trim().starts_with(char::is_numeric)
        {
            continue;
        }
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(v) = v.parse::<i64>() {
                m.insert(format!("{p1}.{n}"), v);
            }
        }
    }
    assert!(
        m.contains_key("Tcp.OutRsts") && m.contains_key("TcpExt.TCPAbortOnData"),
        "unexpected counter files:\n{text}"
    );
    m
}

/// The counters that must not move during a clean exchange: RSTs sent, resets of
/// connections (received RSTs), failed attempts, checksum errors, aborts.
pub fn must_stay_zero(name: &str) -> bool {
    matches!(
        name,
        "Tcp.OutRsts" | "Tcp.EstabResets" | "Tcp.AttemptFails" | "Tcp.InCsumErrors"
    ) || name.starts_with("TcpExt.TCPAbortOn")
        || name == "TcpExt.TCPAbortFailed"
}

/// How much counter `name` moved from `before` to `after`.
pub fn delta(before: &HashMap<String, i64>, after: &HashMap<String, i64>, name: &str) -> i64 {
    after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0)
}

/// Fails the test when a counter of [`must_stay_zero`] moved from `before` to `after`, naming
/// those and every other counter that moved.
pub fn assert_no_resets(before: &HashMap<String, i64>, after: &HashMap<String, i64>, label: &str) {
    let moved = |only_bad: bool| -> Vec<String> {
        after
            .keys()
            .filter(|k| !only_bad || must_stay_zero(k))
            .filter(|k| delta(before, after, k) != 0)
            .map(|k| format!("{k} +{}", delta(before, after, k)))
            .collect()
    };
    let bad = moved(true);
    assert!(
        bad.is_empty(),
        "{label}: kernel counted resets/aborts/errors: {bad:?}; all counters that moved: {:?}",
        moved(false)
    );
}

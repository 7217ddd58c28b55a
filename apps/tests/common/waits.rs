//! Small helpers of the process tests: bounded waits, counters read off a run summary,
//! file digests.

use std::time::{Duration, Instant};

/// Polls `ok` every 50 ms until it holds or `limit` passes; whether it held.
pub fn wait_for(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The number after `key` in the first line of `text` that starts with `line_start`.
pub fn counter(text: &str, line_start: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(line_start))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())?
        .parse()
        .ok()
}

/// The SHA-256 of the file at `path` (sha256sum), as hex.
pub fn sha256(path: &str) -> String {
    let out = dataplane::netns::must(&["sha256sum", path]);
    out.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Writes `files` (name, size) into `dir`: deterministic pseudo-random bytes from `seed`.
pub fn write_files(dir: &str, files: &[(&str, usize)], seed: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut rng = dataplane::clock::SplitMix64::new(seed);
    for &(name, size) in files {
        let data: Vec<u8> = (0..size).map(|_| rng.next_u64() as u8).collect();
        std::fs::write(format!("{dir}/{name}"), data).unwrap();
    }
}

//! mTCP's configuration file (`mtcp.conf`): `key = value` lines, `#` comments, as mTCP's
//! `LoadConfiguration` reads them. nicemu takes the keys that map onto its runtime, warns
//! about the others, and finds what mTCP's file cannot say (EAL arguments, which DPDK
//! device, addresses, lcores, offloads) in a nicemu TOML named by `nicemu_config` or by the
//! `NICEMU_CONFIG` environment variable.

use std::path::{Path, PathBuf};

/// The environment variable that names the nicemu TOML (it overrides `nicemu_config`).
pub const ENV_CONFIG: &str = "NICEMU_CONFIG";

/// What an mTCP configuration file says, with mTCP's defaults for what it does not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtcpConfFile {
    /// `io`: the packet I/O module (mTCP: `psio`, `dpdk`, `netmap`, `onvm`); nicemu always
    /// runs on DPDK and only warns about another value.
    pub io: Option<String>,
    /// `num_cores`: contexts the application will create (0: not given).
    pub num_cores: usize,
    /// `num_mem_ch`: memory channels (an EAL argument in mTCP; taken from the TOML here).
    pub num_mem_ch: Option<u32>,
    /// `port`: the interfaces mTCP would use (informative: the TOML's ports are used).
    pub ports: Vec<String>,
    /// `max_concurrency`: most connections per context.
    pub max_concurrency: usize,
    /// `max_num_buffers`: most send/receive buffers per context (mTCP's buffer pools;
    /// nicemu allocates per connection and bounds connections instead).
    pub max_num_buffers: usize,
    /// `rcvbuf`: receive buffer per connection, bytes.
    pub rcvbuf: usize,
    /// `sndbuf`: send buffer per connection, bytes.
    pub sndbuf: usize,
    /// `tcp_timeout`: idle connection timeout in seconds (-1: none). Kept for
    /// `mtcp_getconf`; nicemu's stack closes idle connections only through its own
    /// retransmission limits.
    pub tcp_timeout: i32,
    /// `tcp_timewait`: TIME_WAIT in seconds.
    pub tcp_timewait: i32,
    /// `stat_print`: interfaces whose statistics mTCP prints each second.
    pub stat_print: Vec<String>,
    /// `nicemu_config`: the nicemu TOML, relative to the mTCP file's directory.
    pub nicemu_config: Option<PathBuf>,
}

impl Default for MtcpConfFile {
    /// mTCP's defaults (`config.c`: 10,000 concurrent connections and buffers, 8 KB
    /// buffers, TIME_WAIT 0 and timeout 30 s unless set).
    fn default() -> Self {
        MtcpConfFile {
            io: None,
            num_cores: 0,
            num_mem_ch: None,
            ports: Vec::new(),
            max_concurrency: 10_000,
            max_num_buffers: 10_000,
            rcvbuf: 8192,
            sndbuf: 8192,
            tcp_timeout: 30,
            tcp_timewait: 0,
            stat_print: Vec::new(),
            nicemu_config: None,
        }
    }
}

/// Keys of mTCP's file that nicemu reads but has no use for (no warning).
const IGNORED: &[&str] = &[
    "multiprocess",
    "num_queues",
    "onvm_inst",
    "onvm_serv",
    "onvm_dest",
];

fn number<T: std::str::FromStr>(key: &str, value: &str, line: usize) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("line {line}: {key}: expected a number, got \"{value}\""))
}

/// Parses the text of an mTCP configuration file. Returns the settings and the warnings
/// (unknown keys, an `io` other than dpdk); a malformed line or a non-numeric value of a
/// numeric key is an error. Values are relative to `dir` where they are paths.
pub fn parse(text: &str, dir: &Path) -> Result<(MtcpConfFile, Vec<String>), String> {
    let mut c = MtcpConfFile::default();
    let mut warnings = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let Some((key, value)) = l.split_once('=') else {
            return Err(format!("line {line}: expected `key = value`, got \"{l}\""));
        };
        let (key, value) = (key.trim(), value.trim());
        let words = || {
            value
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        match key {
            "io" => {
                if value != "dpdk" {
                    warnings.push(format!(
                        "line {line}: io = {value}: nicemu runs on DPDK; ignored"
                    ));
                }
                c.io = Some(value.to_string());
            }
            "num_cores" => c.num_cores = number(key, value, line)?,
            "num_mem_ch" => c.num_mem_ch = Some(number(key, value, line)?),
            "port" => c.ports = words(),
            "max_concurrency" => c.max_concurrency = number(key, value, line)?,
            "max_num_buffers" => c.max_num_buffers = number(key, value, line)?,
            "rcvbuf" => c.rcvbuf = number(key, value, line)?,
            "sndbuf" => c.sndbuf = number(key, value, line)?,
            "tcp_timeout" => c.tcp_timeout = number(key, value, line)?,
            "tcp_timewait" => c.tcp_timewait = number(key, value, line)?,
            "stat_print" => c.stat_print = words(),
            "nicemu_config" => {
                if value.is_empty() {
                    return Err(format!("line {line}: nicemu_config: empty path"));
                }
                c.nicemu_config = Some(dir.join(value));
            }
            k if IGNORED.contains(&k) => {}
            _ => warnings.push(format!("line {line}: unknown key \"{key}\"; ignored")),
        }
    }
    Ok((c, warnings))
}

/// The nicemu TOML to load: `env` (the value of [`ENV_CONFIG`]) when set and not empty,
/// else the file's `nicemu_config`; an error that names both when neither is there.
pub fn nicemu_path(conf: &MtcpConfFile, env: Option<&str>, file: &str) -> Result<PathBuf, String> {
    match (env.filter(|e| !e.is_empty()), &conf.nicemu_config) {
        (Some(e), _) => Ok(PathBuf::from(e)),
        (None, Some(p)) => Ok(p.clone()),
        (None, None) => Err(format!(
            "{file}: no nicemu configuration: add `nicemu_config = <path to a nicemu TOML>` to \
             this file or set {ENV_CONFIG}; it names the EAL arguments, the DPDK port, its \
             address and the lcores"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mtcp_keys_comments_and_relative_nicemu_path() {
        let text = "############### mtcp configuration file ###############\n\
                    io = dpdk\n\
                    num_cores = 2   # two contexts\n\
                    num_mem_ch = 4\n\
                    port = dpdk0 dpdk1\n\
                    max_concurrency = 500\n\
                    max_num_buffers = 600\n\
                    rcvbuf = 16384\n\
                    sndbuf = 32768\n\
                    tcp_timeout = -1\n\
                    tcp_timewait = 2\n\
                    stat_print = dpdk0\n\
                    \n\
                    nicemu_config = nicemu.toml\n";
        let (c, w) = parse(text, Path::new("/etc/app")).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.io.as_deref(), Some("dpdk"));
        assert_eq!(c.num_cores, 2);
        assert_eq!(c.num_mem_ch, Some(4));
        assert_eq!(c.ports, ["dpdk0", "dpdk1"]);
        assert_eq!((c.max_concurrency, c.max_num_buffers), (500, 600));
        assert_eq!((c.rcvbuf, c.sndbuf), (16384, 32768));
        assert_eq!((c.tcp_timeout, c.tcp_timewait), (-1, 2));
        assert_eq!(c.stat_print, ["dpdk0"]);
        assert_eq!(c.nicemu_config, Some(PathBuf::from("/etc/app/nicemu.toml")));
    }

    #[test]
    fn defaults_are_mtcps() {
        let (c, w) = parse("# nothing\n\n", Path::new(".")).unwrap();
        assert!(w.is_empty());
        assert_eq!(c, MtcpConfFile::default());
        assert_eq!(
            (c.rcvbuf, c.sndbuf, c.max_concurrency),
            (8192, 8192, 10_000)
        );
    }

    #[test]
    fn unknown_keys_and_other_io_warn() {
        let (c, w) = parse(
            "io = netmap\nfoo = 1\nmultiprocess = 0 master\nnum_cores=3",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(c.num_cores, 3);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("line 1") && w[0].contains("netmap"), "{w:?}");
        assert!(w[1].contains("line 2") && w[1].contains("\"foo\""), "{w:?}");
    }

    #[test]
    fn malformed_lines_and_values_are_errors_with_line_numbers() {
        let e = parse("num_cores = 1\nrcvbuf 8192\n", Path::new(".")).unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = parse("sndbuf = big", Path::new(".")).unwrap_err();
        assert!(e.contains("sndbuf") && e.contains("\"big\""), "{e}");
        let e = parse("num_cores = -1", Path::new(".")).unwrap_err();
        assert!(e.contains("num_cores"), "{e}");
        assert!(parse("nicemu_config =", Path::new(".")).is_err());
    }

    #[test]
    fn environment_overrides_file_and_missing_both_says_which() {
        let (c, _) = parse("nicemu_config = a.toml", Path::new("/d")).unwrap();
        assert_eq!(
            nicemu_path(&c, None, "m.conf").unwrap(),
            PathBuf::from("/d/a.toml")
        );
        assert_eq!(
            nicemu_path(&c, Some("/x.toml"), "m.conf").unwrap(),
            PathBuf::from("/x.toml")
        );
        assert_eq!(
            nicemu_path(&c, Some(""), "m.conf").unwrap(),
            PathBuf::from("/d/a.toml")
        );
        let e = nicemu_path(&MtcpConfFile::default(), None, "m.conf").unwrap_err();
        assert!(
            e.contains("m.conf") && e.contains("nicemu_config") && e.contains(ENV_CONFIG),
            "{e}"
        );
    }
}

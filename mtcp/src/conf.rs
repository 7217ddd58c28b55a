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

/// A line of mTCP's `arp.conf`: `<ip>/<prefix> <mac>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpEntry {
    /// The neighbour's address.
    pub ip: [u8; 4],
    /// The prefix length given (nicemu takes /32 entries: one address each).
    pub prefix: u8,
    /// Its MAC address.
    pub mac: [u8; 6],
}

/// A line of mTCP's `route.conf`: `<ip>/<prefix> <interface>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The prefix's address.
    pub ip: [u8; 4],
    /// Its length.
    pub prefix: u8,
    /// The interface: `dpdkN` (the Nth port of the nicemu TOML) or a port's `name`.
    pub iface: String,
}

/// A table file's entry lines, each with its line number and its words.
type TableLines<'a> = Vec<(usize, Vec<&'a str>)>;

/// The lines of one of mTCP's table files (`arp.conf`, `route.conf`): a header
/// `<keyword> <count>` then one entry per line, `#` comments. Each entry comes with its
/// line number; a count that disagrees with the entries is a warning.
fn table_lines<'a>(
    text: &'a str,
    file: &str,
    keyword: &str,
) -> Result<(TableLines<'a>, Vec<String>), String> {
    let mut count = None;
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let words: Vec<&str> = raw
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if words.is_empty() {
            continue;
        }
        if count.is_none() {
            if words.len() != 2 || words[0] != keyword {
                return Err(format!(
                    "{file}: line {line}: expected `{keyword} <number of entries>`, got \"{}\"",
                    raw.trim()
                ));
            }
            let n: usize = words[1].parse().map_err(|_| {
                format!(
                    "{file}: line {line}: {keyword}: expected a number, got \"{}\"",
                    words[1]
                )
            })?;
            count = Some(n);
            continue;
        }
        lines.push((line, words));
    }
    let mut warnings = Vec::new();
    if let Some(n) = count {
        if n != lines.len() {
            warnings.push(format!(
                "{file}: {keyword} {n}, but {} entries follow; all of them are used",
                lines.len()
            ));
        }
    }
    Ok((lines, warnings))
}

fn cidr(file: &str, line: usize, v: &str) -> Result<([u8; 4], u8), String> {
    dataplane::config::parse_cidr(v).ok_or_else(|| {
        format!("{file}: line {line}: expected an address/prefix like 10.0.0.1/32, got \"{v}\"")
    })
}

/// Parses mTCP's `arp.conf` (`ARP_ENTRY <n>`, then `<ip>/<prefix> <mac>` lines) read from
/// `file`: the entries and the warnings. An entry with a prefix shorter than /32 sends every
/// address of the prefix to its MAC (a gateway's, typically), as in mTCP.
pub fn parse_arp(text: &str, file: &str) -> Result<(Vec<ArpEntry>, Vec<String>), String> {
    let (lines, warnings) = table_lines(text, file, "ARP_ENTRY")?;
    let mut out = Vec::new();
    for (line, w) in lines {
        if w.len() != 2 {
            return Err(format!(
                "{file}: line {line}: expected `<ip>/<prefix> <mac>`, got \"{}\"",
                w.join(" ")
            ));
        }
        let (ip, prefix) = cidr(file, line, w[0])?;
        let mac = dataplane::config::parse_mac(w[1]).ok_or_else(|| {
            format!(
                "{file}: line {line}: expected a MAC address like 00:11:22:33:44:55, got \"{}\"",
                w[1]
            )
        })?;
        out.push(ArpEntry { ip, prefix, mac });
    }
    Ok((out, warnings))
}

/// Parses mTCP's `route.conf` (`ROUTES <n>`, then `<ip>/<prefix> <interface>` lines) read
/// from `file`: the routes and the warnings.
pub fn parse_routes(text: &str, file: &str) -> Result<(Vec<Route>, Vec<String>), String> {
    let (lines, warnings) = table_lines(text, file, "ROUTES")?;
    let mut out = Vec::new();
    for (line, w) in lines {
        if w.len() != 2 {
            return Err(format!(
                "{file}: line {line}: expected `<ip>/<prefix> <interface>`, got \"{}\"",
                w.join(" ")
            ));
        }
        let (ip, prefix) = cidr(file, line, w[0])?;
        out.push(Route {
            ip,
            prefix,
            iface: w[1].to_string(),
        });
    }
    Ok((out, warnings))
}

/// Where mTCP's table file `name` (`arp.conf`, `route.conf`) is for the configuration
/// file `conf`: beside it, in its `config/` directory, or in `config/` of the working
/// directory `cwd` (where mTCP looks), the first that exists.
pub fn find_table(conf: &Path, name: &str, cwd: &Path) -> Option<PathBuf> {
    let dir = conf.parent().unwrap_or(Path::new("."));
    [
        dir.join(name),
        dir.join("config").join(name),
        cwd.join("config").join(name),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Puts `arp` and `routes` into the nicemu ports: every static neighbour on every port
/// (mTCP's ARP table is global), each route's prefix on its interface's port as on-link.
/// Returns warnings (unknown interfaces: route ignored).
pub fn apply_tables(
    ports: &mut [dataplane::config::PortConfig],
    arp: &[ArpEntry],
    routes: &[Route],
) -> Vec<String> {
    for p in ports.iter_mut() {
        for e in arp {
            p.neighbours
                .retain(|n| (n.ip, n.prefix_len) != (e.ip, e.prefix));
            p.neighbours.push(dataplane::config::Neighbour {
                ip: e.ip,
                prefix_len: e.prefix,
                mac: e.mac,
            });
        }
    }
    let mut warnings = Vec::new();
    for r in routes {
        let by_index = r
            .iface
            .strip_prefix("dpdk")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < ports.len());
        let port = by_index.or_else(|| ports.iter().position(|p| p.name == r.iface));
        match port {
            Some(k) => ports[k].on_link.push((r.ip, r.prefix)),
            None => warnings.push(format!(
                "route {}/{} to {}: no such port (dpdk0..dpdk{} or a port's name); ignored",
                std::net::Ipv4Addr::from(r.ip),
                r.prefix,
                r.iface,
                ports.len().saturating_sub(1)
            )),
        }
    }
    warnings
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

    #[test]
    fn arp_conf_entries_counts_and_errors_with_line_numbers() {
        let text = "# ARP_ENTRY [# of entries]\n\
                    ARP_ENTRY 2\n\
                    10.0.0.1/32 00:00:00:00:00:01   # first\n\
                    \n\
                    10.0.0.2/32 0a:0b:0c:0d:0e:0f\n";
        let (e, w) = parse_arp(text, "arp.conf").unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            e,
            [
                ArpEntry {
                    ip: [10, 0, 0, 1],
                    prefix: 32,
                    mac: [0, 0, 0, 0, 0, 1]
                },
                ArpEntry {
                    ip: [10, 0, 0, 2],
                    prefix: 32,
                    mac: [10, 11, 12, 13, 14, 15]
                }
            ]
        );
        // A count that disagrees is a warning; the entries are used.
        let (e, w) = parse_arp("ARP_ENTRY 3\n10.0.0.1/32 00:00:00:00:00:01\n", "a").unwrap();
        assert_eq!(e.len(), 1);
        assert!(
            w[0].contains("ARP_ENTRY 3") && w[0].contains("1 entries"),
            "{w:?}"
        );
        // A prefix entry covers its range (mTCP's gateway entries).
        let (e, w) = parse_arp("ARP_ENTRY 1\n10.0.0.0/24 00:00:00:00:00:01\n", "a").unwrap();
        assert_eq!((e[0].ip, e[0].prefix), ([10, 0, 0, 0], 24));
        assert!(w.is_empty(), "{w:?}");
        // Errors name the file, the line and the value.
        let bad = [
            (
                "ARP_ENTRY 1\n10.0.0.1/32 00:00:00:00:01\n",
                "line 2",
                "00:00:00:00:01",
            ),
            (
                "ARP_ENTRY 1\n10.0.0.300/32 00:00:00:00:00:01\n",
                "line 2",
                "10.0.0.300/32",
            ),
            (
                "ARP_ENTRY 1\n10.0.0.1 00:00:00:00:00:01\n",
                "line 2",
                "10.0.0.1",
            ),
            ("# c\nARP_ENTRY 1\n\n10.0.0.1/32\n", "line 4", "10.0.0.1/32"),
            ("ARP_ENTRY two\n", "line 1", "two"),
            ("10.0.0.1/32 00:00:00:00:00:01\n", "line 1", "ARP_ENTRY"),
        ];
        for (text, line, value) in bad {
            let e = parse_arp(text, "/x/config/arp.conf").unwrap_err();
            assert!(
                e.starts_with("/x/config/arp.conf: ") && e.contains(line) && e.contains(value),
                "{e}"
            );
        }
        assert_eq!(parse_arp("# nothing\n", "a").unwrap(), (vec![], vec![]));
    }

    #[test]
    fn route_conf_entries_and_errors() {
        let (r, w) = parse_routes(
            "ROUTES 2\n10.0.0.0/24 dpdk0\n198.51.100.0/24 p1 # by name\n",
            "route.conf",
        )
        .unwrap();
        assert!(w.is_empty());
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1],
            Route {
                ip: [198, 51, 100, 0],
                prefix: 24,
                iface: "p1".into()
            }
        );
        let (_, w) = parse_routes("ROUTES 0\n10.0.0.0/8 dpdk0\n", "r").unwrap();
        assert_eq!(w.len(), 1);
        let e = parse_routes("ROUTES 1\n10.0.0.0/40 dpdk0\n", "route.conf").unwrap_err();
        assert!(
            e.contains("route.conf: line 2") && e.contains("10.0.0.0/40"),
            "{e}"
        );
        let e = parse_routes("ROUTES 1\n10.0.0.0/8\n", "route.conf").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }

    fn port(name: &str) -> dataplane::config::PortConfig {
        let toml = format!(
            "[eal]\nargs = []\n[[port]]\nname = \"{name}\"\ndriver = \"dpdk\"\n\
             device = \"net_null0\"\nipv4 = [\"192.0.2.1/24\"]\n[[lcore]]\ncore = 0\nrole = \"shared\"\n"
        );
        let dir = std::env::temp_dir().join(format!("nicemu-mtcp-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{name}.toml"));
        std::fs::write(&p, toml).unwrap();
        let c = dataplane::config::Config::load(&p).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        c.ports[0].clone()
    }

    #[test]
    fn tables_map_onto_ports_by_dpdk_index_or_name() {
        let mut ports = vec![port("wan"), port("lan")];
        let arp = [ArpEntry {
            ip: [192, 0, 2, 9],
            prefix: 32,
            mac: [2, 0, 0, 0, 0, 9],
        }];
        let routes = [
            Route {
                ip: [198, 51, 100, 0],
                prefix: 24,
                iface: "dpdk1".into(),
            },
            Route {
                ip: [203, 0, 113, 0],
                prefix: 24,
                iface: "wan".into(),
            },
            Route {
                ip: [10, 0, 0, 0],
                prefix: 8,
                iface: "dpdk2".into(),
            },
        ];
        let w = apply_tables(&mut ports, &arp, &routes);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("dpdk2") && w[0].contains("10.0.0.0/8"),
            "{w:?}"
        );
        for p in &ports {
            assert_eq!(p.neighbours.len(), 1);
            assert_eq!(p.neighbours[0].mac, [2, 0, 0, 0, 0, 9]);
        }
        assert_eq!(ports[0].on_link, [([203, 0, 113, 0], 24)]);
        assert_eq!(ports[1].on_link, [([198, 51, 100, 0], 24)]);
    }

    #[test]
    fn tables_are_found_beside_the_conf_then_in_its_config_dir_then_in_cwd() {
        let root = std::env::temp_dir().join(format!("nicemu-mtcp-find-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let app = root.join("app");
        let cwd = root.join("cwd");
        std::fs::create_dir_all(app.join("config")).unwrap();
        std::fs::create_dir_all(cwd.join("config")).unwrap();
        let conf = app.join("mtcp.conf");
        assert_eq!(find_table(&conf, "arp.conf", &cwd), None);
        std::fs::write(cwd.join("config/arp.conf"), "").unwrap();
        assert_eq!(
            find_table(&conf, "arp.conf", &cwd),
            Some(cwd.join("config/arp.conf"))
        );
        std::fs::write(app.join("config/arp.conf"), "").unwrap();
        assert_eq!(
            find_table(&conf, "arp.conf", &cwd),
            Some(app.join("config/arp.conf"))
        );
        std::fs::write(app.join("arp.conf"), "").unwrap();
        assert_eq!(
            find_table(&conf, "arp.conf", &cwd),
            Some(app.join("arp.conf"))
        );
        assert_eq!(find_table(&conf, "route.conf", &cwd), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}

//! Server commands: TIME, INFO, COMMAND (Redis 7.0 `server.c`, `config.c`).

use super::*;

pub(super) fn time(
    _: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::array_len(out, 2);
    resp::bulk(out, (now / 1000).to_string().as_bytes());
    resp::bulk(out, ((now % 1000) * 1000).to_string().as_bytes());
    Flow::Continue
}

pub(super) fn info(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    // Redis 7.0's sections in its order; "default" leaves out commandstats.
    let all = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "commandstats",
        "errorstats",
        "keyspace",
    ];
    let wanted: Vec<String> = if a.len() == 1 {
        vec!["default".into()]
    } else {
        a[1..]
            .iter()
            .map(|s| String::from_utf8_lossy(cstr(s)).to_ascii_lowercase())
            .collect()
    };
    let everything = wanted.iter().any(|w| w == "all" || w == "everything");
    let default = everything || wanted.iter().any(|w| w == "default");
    let mut s = String::new();
    let uptime = (now - e.start_ms).max(0) / 1000;
    for sec in all {
        let named = wanted.iter().any(|w| w == sec);
        let shown = named || everything || (default && sec != "commandstats");
        if !shown {
            continue;
        }
        if !s.is_empty() {
            s.push_str("\r\n");
        }
        match sec {
            "server" => {
                s.push_str("# Server\r\n");
                s.push_str(&format!("redis_version:{REDIS_VERSION}\r\n"));
                s.push_str("redis_mode:standalone\r\nos:nicemu kv\r\narch_bits:64\r\n");
                s.push_str("multiplexing_api:epoll\r\n");
                s.push_str(&format!("tcp_port:{}\r\n", e.cfg.port));
                s.push_str(&format!("uptime_in_seconds:{uptime}\r\n"));
                s.push_str(&format!("uptime_in_days:{}\r\n", uptime / 86400));
            }
            "clients" => {
                s.push_str("# Clients\r\n");
                s.push_str(&format!("connected_clients:{}\r\n", e.stats.connected));
                s.push_str(&format!("maxclients:{}\r\n", e.cfg.maxclients));
                s.push_str(&format!("blocked_clients:{}\r\n", e.blocked_count()));
            }
            "memory" => {
                s.push_str("# Memory\r\n");
                s.push_str(&format!("used_memory:{}\r\n", e.used_memory()));
                s.push_str(&format!("maxmemory:{}\r\n", e.cfg.maxmemory));
                s.push_str("maxmemory_policy:noeviction\r\n");
            }
            "stats" => {
                s.push_str("# Stats\r\n");
                s.push_str(&format!(
                    "total_connections_received:{}\r\n",
                    e.stats.connections
                ));
                s.push_str(&format!(
                    "total_commands_processed:{}\r\n",
                    e.stats.commands
                ));
                let expired: u64 = (0..e.dbs.len()).map(|i| e.store_at(i).expired_keys).sum();
                s.push_str(&format!("expired_keys:{expired}\r\n"));
                s.push_str(&format!("total_error_replies:{}\r\n", e.stats.errors));
            }
            "persistence" => {
                s.push_str("# Persistence\r\nloading:0\r\nasync_loading:0\r\n");
                s.push_str("rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n");
                s.push_str("aof_enabled:0\r\naof_rewrite_in_progress:0\r\n");
                s.push_str("aof_rewrite_scheduled:0\r\n");
            }
            "replication" => {
                s.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n");
                s.push_str("master_repl_offset:0\r\n");
            }
            "cpu" => {
                let (user, sys) = cpu_times();
                s.push_str(&format!(
                    "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\n\
                     used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
                ));
            }
            "commandstats" => {
                s.push_str("# Commandstats\r\n");
                let mut v: Vec<&(String, CmdStat)> = e.cmdstats.values().collect();
                v.sort_by(|x, y| x.0.cmp(&y.0));
                for (name, c) in v {
                    s.push_str(&format!(
                        "cmdstat_{name}:calls={},usec=0,usec_per_call=0.00,rejected_calls={},\
                         failed_calls={}\r\n",
                        c.calls, c.rejected, c.failed
                    ));
                }
            }
            "errorstats" => {
                s.push_str("# Errorstats\r\n");
                for (k, n) in &e.stats.errors_by_kind {
                    s.push_str(&format!("errorstat_{k}:count={n}\r\n"));
                }
            }
            _ => {
                s.push_str("# Keyspace\r\n");
                for i in 0..e.dbs.len() {
                    let d = e.store_at(i);
                    if !d.is_empty() {
                        s.push_str(&format!(
                            "db{i}:keys={},expires={},avg_ttl=0\r\n",
                            d.len(),
                            d.expires()
                        ));
                    }
                }
            }
        }
    }
    resp::bulk(out, s.as_bytes());
    Flow::Continue
}

/// Seconds of CPU time the process used in user and system mode (INFO cpu), from
/// /proc/self/stat (clock ticks of 1/100 s).
fn cpu_times() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name's closing parenthesis; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}

/// Redis's `stringmatch`, case-insensitive (as CONFIG GET uses it).
pub(super) fn glob(p: &[u8], s: &[u8]) -> bool {
    glob_match(p, s, true)
}

/// Redis's `stringmatchlen`: glob-style `*`, `?`, `[...]` (with `^` and ranges) and `\`
/// escapes; case-insensitive when `nocase` (KEYS and SCAN MATCH are case-sensitive).
pub(super) fn glob_match(p: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let low = |a: u8| if nocase { a.to_ascii_lowercase() } else { a };
    // `skip`: Redis's skipLongerMatches: once a `*` tried every rest of the string without
    // a match, longer tries at outer `*`s cannot match either (keeps `a*a*a*...b` linear).
    fn m(
        p: &[u8],
        s: &[u8],
        depth: u32,
        eq: &dyn Fn(u8, u8) -> bool,
        low: &dyn Fn(u8) -> u8,
        skip: &mut bool,
    ) -> bool {
        if depth > 100 {
            return false;
        }
        let (mut p, mut s) = (p, s);
        while let Some(&c) = p.first() {
            match c {
                b'*' => {
                    while p.first() == Some(&b'*') {
                        p = &p[1..];
                    }
                    if p.is_empty() {
                        return true;
                    }
                    for i in 0..=s.len() {
                        if m(p, &s[i..], depth + 1, eq, low, skip) {
                            return true;
                        }
                        if *skip {
                            return false;
                        }
                    }
                    *skip = true;
                    return false;
                }
                b'?' => {
                    if s.is_empty() {
                        return false;
                    }
                    s = &s[1..];
                    p = &p[1..];
                }
                b'[' => {
                    let Some(&sc) = s.first() else { return false };
                    let mut q = &p[1..];
                    let not = q.first() == Some(&b'^');
                    if not {
                        q = &q[1..];
                    }
                    let mut hit = false;
                    while let Some(&x) = q.first() {
                        if x == b']' {
                            break;
                        }
                        if x == b'\\' && q.len() >= 2 {
                            hit |= eq(q[1], sc);
                            q = &q[2..];
                        } else if q.len() >= 3 && q[1] == b'-' {
                            let (lo, hi) = (q[0].min(q[2]), q[0].max(q[2]));
                            hit |= (low(lo)..=low(hi)).contains(&low(sc));
                            q = &q[3..];
                        } else {
                            hit |= eq(x, sc);
                            q = &q[1..];
                        }
                    }
                    if hit == not {
                        return false;
                    }
                    p = if q.is_empty() { q } else { &q[1..] };
                    s = &s[1..];
                }
                b'\\' if p.len() >= 2 => {
                    if s.first().is_none_or(|&x| !eq(x, p[1])) {
                        return false;
                    }
                    p = &p[2..];
                    s = &s[1..];
                }
                _ => {
                    if s.first().is_none_or(|&x| !eq(x, c)) {
                        return false;
                    }
                    p = &p[1..];
                    s = &s[1..];
                }
            }
        }
        s.is_empty()
    }
    m(p, s, 0, &eq, &low, &mut false)
}

pub(super) fn command_info_entry(c: &Cmd, full: &str, out: &mut Vec<u8>) {
    resp::array_len(out, 10);
    resp::bulk(out, full.as_bytes());
    resp::int(out, c.arity as i64);
    let flags: Vec<&str> = [
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (FAST, "fast"),
    ]
    .iter()
    .filter(|(f, _)| c.flags & f != 0)
    .map(|(_, n)| *n)
    .collect();
    resp::array_len(out, flags.len());
    for f in flags {
        resp::simple(out, f.as_bytes());
    }
    resp::int(out, c.keys.0 as i64);
    resp::int(out, c.keys.1 as i64);
    resp::int(out, c.keys.2 as i64);
    for _ in 0..3 {
        resp::array_len(out, 0); // ACL categories, tips, key specs
    }
    resp::array_len(out, c.subs.len());
    for s in c.subs {
        command_info_entry(s, &format!("{full}|{}", s.name), out);
    }
}

pub(super) fn command_all(
    _: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::array_len(out, COMMANDS.len());
    for c in COMMANDS {
        command_info_entry(c, c.name, out);
    }
    Flow::Continue
}

pub(super) fn command_count(
    _: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::int(out, COMMANDS.len() as i64);
    Flow::Continue
}

pub(super) fn lookup_full(name: &[u8]) -> Option<(&'static Cmd, String)> {
    let mut parts = name.splitn(2, |&b| b == b'|');
    let base = find(COMMANDS, parts.next()?)?;
    match parts.next() {
        None => Some((base, base.name.to_string())),
        Some(sub) => {
            let s = find(base.subs, sub)?;
            Some((s, format!("{}|{}", base.name, s.name)))
        }
    }
}

pub(super) fn command_info(
    _: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() == 2 {
        return command_all(
            &mut Engine::new(EngineConfig::default()),
            &mut dummy_session(),
            a,
            0,
            out,
        );
    }
    resp::array_len(out, a.len() - 2);
    for n in &a[2..] {
        match lookup_full(n) {
            Some((c, full)) => command_info_entry(c, &full, out),
            None => resp::null_array(out),
        }
    }
    Flow::Continue
}

pub(super) fn dummy_session() -> Session {
    Session::new(0)
}

pub(super) fn command_docs(
    _: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let docs = |c: &Cmd, full: &str, out: &mut Vec<u8>| {
        resp::bulk(out, full.as_bytes());
        resp::array_len(out, 6);
        resp::bulk(out, b"summary");
        resp::bulk(
            out,
            format!("nicemu kv: {}", full.to_ascii_uppercase()).as_bytes(),
        );
        resp::bulk(out, b"since");
        resp::bulk(out, b"1.0.0");
        resp::bulk(out, b"group");
        resp::bulk(
            out,
            if c.flags & (WRITE | READONLY) != 0 {
                b"string" as &[u8]
            } else {
                b"server"
            },
        );
    };
    let mut found = Vec::new();
    if a.len() == 2 {
        for c in COMMANDS {
            found.push((c, c.name.to_string()));
        }
    } else {
        for n in &a[2..] {
            if let Some(x) = lookup_full(n) {
                found.push(x);
            }
        }
    }
    resp::array_len(out, found.len() * 2);
    for (c, full) in found {
        docs(c, &full, out);
    }
    Flow::Continue
}

pub(super) fn command_list(
    _: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::array_len(out, COMMANDS.len());
    for c in COMMANDS {
        resp::bulk(out, c.name.as_bytes());
    }
    Flow::Continue
}

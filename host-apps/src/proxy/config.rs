//! The `[proxy]` table of a nicemu configuration: what `nicemu proxy` listens on, its
//! backends and policy, and its limits. It lives in the same TOML file as the DPDK
//! configuration (the dataplane's `Config` keeps it as raw TOML); this module checks it
//! with the same strictness and the same errors: file, key, what was expected.

use std::net::SocketAddrV4;

use offload_api::config_error::ConfigError;

use super::balance::Policy;
use super::http::DEFAULT_MAX_HEAD;

/// The proxy's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyConfig {
    /// TCP port the proxy listens on (on the host's address).
    pub listen: u16,
    /// The backends, `a.b.c.d:port` (at most [`MAX_BACKENDS`]).
    pub backends: Vec<SocketAddrV4>,
    /// How a backend is chosen.
    pub policy: Policy,
    /// How requests are forwarded: every request parsed (`http`), or the first only
    /// (`tunnel`, AccelTCP's epproxy).
    pub mode: ProxyMode,
    /// A header field added to each forwarded request head, its value the client's IP
    /// address (`X-Forwarded-For`); none: the head goes as it came.
    pub add_header: Option<String>,
    /// What happens to fields of that name the client sent: replaced (the default: a
    /// client cannot forge its address) or appended to (only behind a trusted proxy).
    pub add_header_rule: HeaderRule,
    /// One backend connect attempt that has not completed after this long has failed
    /// (then retried, or answered with 504). Above the 1 s of a first SYN retransmission
    /// (RFC 6298 §2.1), so one lost SYN does not fail a connect.
    pub connect_timeout_ms: u64,
    /// Connect attempts after a failed one (refused or timed out), as HAProxy's `retries`.
    pub retries: u32,
    /// The last retry goes to another backend (HAProxy's `option redispatch`).
    pub redispatch: bool,
    /// A forwarded request without a complete response head after this long is answered
    /// with 504 (`http` mode).
    pub response_timeout_ms: u64,
    /// The longest request head accepted (431 beyond).
    pub max_header_bytes: usize,
    /// Splice the two connections after the head (AccelTCP §4.3 `nsplice`); false: relay
    /// every byte on the host.
    pub splice: bool,
    /// A backend that refused a connection is skipped for this long.
    pub down_ms: u64,
    /// A client that has not sent a complete head after this long is answered with 408.
    pub request_timeout_ms: u64,
    /// Bytes buffered per direction of a connection the host relays (a tunnel, or the
    /// exchanges of `http` mode).
    pub relay_buffer: usize,
    /// Client connections open at once; more wait in the listen backlog.
    pub max_clients: usize,
}

/// How the proxy forwards a client connection's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyMode {
    /// Every request head is parsed, checked and rewritten before it reaches a backend;
    /// the pair is spliced only for its last exchange, after the response head.
    Http,
    /// Only the first request head is parsed; then the pair is spliced or relayed as an
    /// opaque tunnel (AccelTCP's epproxy, HAProxy's tunnel mode).
    Tunnel,
}

impl ProxyMode {
    /// The mode named `s` (`http`, `tunnel`).
    pub fn parse(s: &str) -> Option<ProxyMode> {
        match s {
            "http" => Some(ProxyMode::Http),
            "tunnel" => Some(ProxyMode::Tunnel),
            _ => None,
        }
    }
}

/// What the proxy does with a client's own field named like the one it adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderRule {
    /// Drop the client's fields of that name, add the proxy's.
    Replace,
    /// Append the client's address to the client's value (RFC 7239 §4 style chain).
    Append,
}

/// The most backends a proxy takes (a 64-bit mask tracks those tried per request).
pub const MAX_BACKENDS: usize = 64;

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            listen: 80,
            backends: Vec::new(),
            policy: Policy::RoundRobin,
            mode: ProxyMode::Http,
            add_header: None,
            add_header_rule: HeaderRule::Replace,
            connect_timeout_ms: 3000,
            retries: 3,
            redispatch: true,
            response_timeout_ms: 30_000,
            max_header_bytes: DEFAULT_MAX_HEAD,
            splice: true,
            down_ms: 5000,
            request_timeout_ms: 10_000,
            relay_buffer: 64 * 1024,
            max_clients: 10_000,
        }
    }
}

const KEYS: [&str; 16] = [
    "listen",
    "backends",
    "policy",
    "mode",
    "add_header",
    "add_header_rule",
    "connect_timeout_ms",
    "retries",
    "redispatch",
    "response_timeout_ms",
    "max_header_bytes",
    "splice",
    "down_ms",
    "request_timeout_ms",
    "relay_buffer",
    "max_clients",
];

impl ProxyConfig {
    /// The `[proxy]` table of the configuration file `source` (the dataplane's
    /// `Config::proxy`), checked: its absence, an unknown key, a wrong type or a value out of
    /// range is an error naming the file and `proxy.KEY`.
    pub fn from_section(
        proxy: Option<&toml::Table>,
        source: &str,
    ) -> Result<ProxyConfig, ConfigError> {
        match proxy {
            Some(t) => Self::from_table(t, source),
            None => Err(ConfigError::new(
                source,
                "proxy",
                "missing: `nicemu proxy` needs a [proxy] table with at least `listen` and `backends`",
            )),
        }
    }

    /// The settings of a `[proxy]` table; `file` names it in errors.
    pub fn from_table(t: &toml::Table, file: &str) -> Result<ProxyConfig, ConfigError> {
        let err = |key: &str, msg: String| ConfigError::new(file, format!("proxy.{key}"), msg);
        for k in t.keys() {
            if !KEYS.contains(&k.as_str()) {
                return Err(err(
                    k,
                    format!("unknown key, expected one of {}", KEYS.join(", ")),
                ));
            }
        }
        let mut c = ProxyConfig::default();
        let int = |key: &str, lo: i64, hi: i64| -> Result<Option<i64>, ConfigError> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::Integer(v)) if (lo..=hi).contains(v) => Ok(Some(*v)),
                Some(toml::Value::Integer(v)) => Err(err(
                    key,
                    format!("{v} is out of range, expected {lo}..={hi}"),
                )),
                Some(v) => Err(err(
                    key,
                    format!("expected an integer, got {}", v.type_str()),
                )),
            }
        };
        match int("listen", 1, 65535)? {
            Some(v) => c.listen = v as u16,
            None => return Err(err("listen", "missing: the TCP port to listen on".into())),
        }
        match t.get("backends") {
            Some(toml::Value::Array(a)) => {
                if a.is_empty() || a.len() > MAX_BACKENDS {
                    return Err(err(
                        "backends",
                        format!("expected 1 to {MAX_BACKENDS} backends, got {}", a.len()),
                    ));
                }
                for (i, v) in a.iter().enumerate() {
                    let addr = v
                        .as_str()
                        .and_then(|s| s.parse::<SocketAddrV4>().ok())
                        .filter(|a| a.port() != 0 && !a.ip().is_unspecified());
                    match addr {
                        Some(a) => c.backends.push(a),
                        None => {
                            return Err(err(
                                &format!("backends[{i}]"),
                                format!("invalid backend {v}, expected \"a.b.c.d:port\""),
                            ))
                        }
                    }
                }
            }
            Some(v) => {
                return Err(err(
                    "backends",
                    format!(
                        "expected an array of \"a.b.c.d:port\" strings, got {}",
                        v.type_str()
                    ),
                ))
            }
            None => {
                return Err(err(
                    "backends",
                    "missing: the backends, like [\"10.0.0.3:8080\"]".into(),
                ))
            }
        }
        match t.get("policy") {
            None => {}
            Some(toml::Value::String(s)) => {
                c.policy = Policy::parse(s).ok_or_else(|| {
                    err(
                        "policy",
                        format!(
                            "unknown policy {s:?}, expected round-robin, least-conn or uri-hash"
                        ),
                    )
                })?
            }
            Some(v) => {
                return Err(err(
                    "policy",
                    format!("expected a string, got {}", v.type_str()),
                ))
            }
        }
        let string = |key: &str| -> Result<Option<&str>, ConfigError> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
                Some(v) => Err(err(key, format!("expected a string, got {}", v.type_str()))),
            }
        };
        if let Some(s) = string("mode")? {
            c.mode = ProxyMode::parse(s).ok_or_else(|| {
                err(
                    "mode",
                    format!("unknown mode {s:?}, expected http or tunnel"),
                )
            })?;
        }
        if let Some(s) = string("add_header_rule")? {
            c.add_header_rule = match s {
                "replace" => HeaderRule::Replace,
                "append" => HeaderRule::Append,
                _ => {
                    return Err(err(
                        "add_header_rule",
                        format!("unknown rule {s:?}, expected replace or append"),
                    ))
                }
            };
        }
        match t.get("add_header") {
            None => {}
            Some(toml::Value::String(s)) => {
                let token = !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if !token {
                    return Err(err(
                        "add_header",
                        format!("{s:?} is not a header field name (RFC 9110 §5.1 token)"),
                    ));
                }
                c.add_header = Some(s.clone());
            }
            Some(v) => {
                return Err(err(
                    "add_header",
                    format!("expected a header name string, got {}", v.type_str()),
                ))
            }
        }
        if let Some(v) = int("connect_timeout_ms", 1, 600_000)? {
            c.connect_timeout_ms = v as u64;
        }
        if let Some(v) = int("retries", 0, 16)? {
            c.retries = v as u32;
        }
        if let Some(v) = int("response_timeout_ms", 1, 3_600_000)? {
            c.response_timeout_ms = v as u64;
        }
        if let Some(v) = int("max_header_bytes", 256, 1 << 20)? {
            c.max_header_bytes = v as usize;
        }
        let boolean = |key: &str| -> Result<Option<bool>, ConfigError> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
                Some(v) => Err(err(
                    key,
                    format!("expected true or false, got {}", v.type_str()),
                )),
            }
        };
        if let Some(b) = boolean("splice")? {
            c.splice = b;
        }
        if let Some(b) = boolean("redispatch")? {
            c.redispatch = b;
        }
        if let Some(v) = int("down_ms", 0, 3_600_000)? {
            c.down_ms = v as u64;
        }
        if let Some(v) = int("request_timeout_ms", 1, 3_600_000)? {
            c.request_timeout_ms = v as u64;
        }
        if let Some(v) = int("relay_buffer", 1024, 64 << 20)? {
            c.relay_buffer = v as usize;
        }
        if let Some(v) = int("max_clients", 1, 1 << 20)? {
            c.max_clients = v as usize;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::config::Config;

    const BASE: &str = r#"
[[port]]
name = "p0"
driver = "wire"
wire = "w"
ipv4 = ["10.0.0.1/24"]
[[lcore]]
core = 0
role = "shared"
"#;

    fn load(proxy: &str) -> Result<ProxyConfig, ConfigError> {
        let text = format!("{BASE}\n[proxy]\n{proxy}");
        let cfg = Config::parse(&text, "test.toml").expect("base config");
        ProxyConfig::from_section(cfg.proxy.as_ref(), &cfg.source)
    }

    #[test]
    fn full_table() {
        let c = load(
            r#"listen = 8000
backends = ["10.0.0.3:8080", "10.0.0.4:8081"]
policy = "uri-hash"
add_header = "X-Forwarded-For"
connect_timeout_ms = 250
max_header_bytes = 8192
splice = false
down_ms = 100
"#,
        )
        .unwrap();
        assert_eq!(c.listen, 8000);
        assert_eq!(c.backends.len(), 2);
        assert_eq!(c.backends[1].port(), 8081);
        assert_eq!(c.policy, Policy::UriHash);
        assert_eq!(c.add_header.as_deref(), Some("X-Forwarded-For"));
        assert_eq!(c.connect_timeout_ms, 250);
        assert_eq!(c.max_header_bytes, 8192);
        assert!(!c.splice);
        assert_eq!(c.down_ms, 100);
    }

    #[test]
    fn defaults() {
        let c = load("listen = 80\nbackends = [\"10.0.0.3:8080\"]\n").unwrap();
        assert_eq!(c.policy, Policy::RoundRobin);
        assert!(c.splice);
        assert_eq!(c.max_header_bytes, 16384);
        assert_eq!(c.add_header, None);
        assert_eq!(c.mode, ProxyMode::Http);
        assert_eq!(c.add_header_rule, HeaderRule::Replace);
        assert_eq!(
            (c.connect_timeout_ms, c.retries, c.redispatch),
            (3000, 3, true)
        );
        assert_eq!(c.response_timeout_ms, 30_000);
    }

    #[test]
    fn modes_rules_and_retries() {
        let c = load(
            "listen = 80\nbackends = [\"10.0.0.3:8080\"]\nmode = \"tunnel\"\nadd_header_rule = \"append\"\nretries = 0\nredispatch = false\nresponse_timeout_ms = 500\n",
        )
        .unwrap();
        assert_eq!(c.mode, ProxyMode::Tunnel);
        assert_eq!(c.add_header_rule, HeaderRule::Append);
        assert_eq!(
            (c.retries, c.redispatch, c.response_timeout_ms),
            (0, false, 500)
        );
        for (text, key) in [
            ("mode = \"fast\"", "proxy.mode"),
            ("add_header_rule = \"trust\"", "proxy.add_header_rule"),
            ("retries = 17", "proxy.retries"),
            ("redispatch = 1", "proxy.redispatch"),
            ("response_timeout_ms = 0", "proxy.response_timeout_ms"),
        ] {
            let e = load(&format!(
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\n{text}"
            ))
            .unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }

    #[test]
    fn bad_values_name_file_and_key() {
        let cases = [
            (
                "listen = 0\nbackends = [\"10.0.0.3:80\"]",
                "proxy.listen",
                "out of range",
            ),
            (
                "listen = \"80\"\nbackends = [\"10.0.0.3:80\"]",
                "proxy.listen",
                "integer",
            ),
            ("backends = [\"10.0.0.3:80\"]", "proxy.listen", "missing"),
            ("listen = 80", "proxy.backends", "missing"),
            ("listen = 80\nbackends = []", "proxy.backends", "1 to 64"),
            (
                "listen = 80\nbackends = [\"10.0.0.3\"]",
                "proxy.backends[0]",
                "a.b.c.d:port",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\", 5]",
                "proxy.backends[1]",
                "a.b.c.d:port",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\npolicy = \"random\"",
                "proxy.policy",
                "round-robin",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\nadd_header = \"X Y\"",
                "proxy.add_header",
                "token",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\nmax_header_bytes = 10",
                "proxy.max_header_bytes",
                "out of range",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\nsplice = 1",
                "proxy.splice",
                "true or false",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\nconnect_timeout_ms = -5",
                "proxy.connect_timeout_ms",
                "out of range",
            ),
            (
                "listen = 80\nbackends = [\"10.0.0.3:80\"]\nlisten_port = 5",
                "proxy.listen_port",
                "unknown key",
            ),
        ];
        for (text, key, msg) in cases {
            let e = load(text).unwrap_err();
            assert_eq!(e.file, "test.toml", "{text}");
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
    }

    #[test]
    fn missing_table() {
        let cfg = Config::parse(BASE, "base.toml").unwrap();
        let e = ProxyConfig::from_section(cfg.proxy.as_ref(), &cfg.source).unwrap_err();
        assert_eq!(e.key, "proxy");
        // The proxy table must be a table.
        let e = Config::parse(&format!("proxy = 5\n{BASE}"), "x.toml").unwrap_err();
        assert_eq!(e.key, "proxy", "{e}");
    }
}

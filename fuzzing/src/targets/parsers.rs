//! The stateless targets: wire formats, messages, RESP and the kv commands, HTTP, the
//! configuration.

use super::*;
/// The TCP view and options codec, with the emitter as the reference.
pub fn tcp_wire(data: &[u8]) {
    let _ = tcp::parse_options(data);
    let Ok(r) = tcp::parse(data) else { return };
    assert!(r.payload.len() <= data.len());
    let h = TcpHeader {
        src_port: r.src_port,
        dst_port: r.dst_port,
        seq: r.seq,
        ack: r.ack,
        flags: r.flags,
        window: r.window,
        options: r.options,
    };
    let mut out = [0u8; tcp::MAX_HEADER_LEN];
    let n = tcp::emit(&h, &mut out);
    assert_eq!(n, tcp::header_len(&h));
    let back = tcp::parse(&out[..n]).expect("an emitted header parses");
    assert_eq!(
        (
            back.src_port,
            back.dst_port,
            back.seq,
            back.ack,
            back.flags.0,
            back.window
        ),
        (r.src_port, r.dst_port, r.seq, r.ack, r.flags.0, r.window)
    );
    assert!(back.payload.is_empty());
    let (a, b) = (&r.options, &back.options);
    assert_eq!(a.timestamp, b.timestamp, "timestamps survive emit/parse");
    if r.flags.has(TcpFlags::SYN) {
        assert_eq!((a.mss, a.window_scale), (b.mss, b.window_scale));
    } else {
        // RFC 9293 §3.7.1, RFC 7323 §2.2, RFC 2018 §2: SYN-only options are left out.
        assert_eq!(
            (b.mss, b.window_scale, b.sack_permitted),
            (None, None, false)
        );
    }
    // SACK blocks that fit are kept, in order, from the front.
    let kept = b.sack_blocks();
    assert!(kept.len() <= a.sack_blocks().len());
    assert_eq!(kept, &a.sack_blocks()[..kept.len()]);
}

/// RFC 1624's incremental update against a full recomputation: a header-like buffer whose
/// first word is the checksum has one 16-bit or 32-bit field changed.
pub fn checksum(data: &[u8]) {
    let mut b = Bytes(data);
    let (Some(sel), Some(new)) = (b.u8(), b.u32()) else {
        return;
    };
    let mut buf = b.take(1500).to_vec();
    if buf.len() % 2 == 1 {
        buf.push(0);
    }
    if buf.len() < 8 {
        return;
    }
    // Word 1 is never changed and never zero, as in every header this is used on (IPv4's
    // version, the TCP pseudo-header's protocol): RFC 1624 §3's equation then never yields
    // the one wrong representation of zero.
    buf[0..2].fill(0);
    buf[2] |= 0x45;
    let c = checksum::checksum(&buf);
    buf[0..2].copy_from_slice(&c.to_be_bytes());
    assert!(checksum::verify(&buf), "a computed checksum verifies");
    // A field at an even offset after word 1.
    let words = (buf.len() - 4) / 2;
    let old_csum = u16::from_be_bytes([buf[0], buf[1]]);
    if sel & 1 == 0 {
        let at = 4 + 2 * (usize::from(sel >> 1) % words);
        let old = u16::from_be_bytes([buf[at], buf[at + 1]]);
        let new = new as u16;
        buf[at..at + 2].copy_from_slice(&new.to_be_bytes());
        let c = checksum::update16(old_csum, old, new);
        buf[0..2].copy_from_slice(&c.to_be_bytes());
    } else {
        if words < 2 {
            return;
        }
        let at = 4 + 2 * (usize::from(sel >> 1) % (words - 1));
        let old = u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        buf[at..at + 4].copy_from_slice(&new.to_be_bytes());
        let c = checksum::update32(old_csum, old, new);
        buf[0..2].copy_from_slice(&c.to_be_bytes());
    }
    assert!(
        checksum::verify(&buf),
        "the incrementally updated checksum verifies like a recomputed one"
    );
}

/// The RoCEv2 (with its ICRC), Homa and NDP parsers.
pub fn transport_headers(data: &[u8]) {
    let _ = roce::Bth::parse(data);
    let _ = roce::Aeth::parse(data);
    let _ = roce::icrc_ipv4(data);
    if let Ok(p) = roce::parse_ipv4(data) {
        let _ = format!("{p:?}");
    }
    let _ = homa::HomaRepr::parse(data);
    if let Ok((_, rest)) = ndp::NdpRepr::parse(data) {
        assert!(rest.len() <= data.len());
    }
}

/// The host <-> NIC messages: parse, and a parsed message emits to one that parses equal.
pub fn control_msg(data: &[u8]) {
    let _ = msg::classify(data);
    let Ok(p) = msg::parse_frame(data) else {
        return;
    };
    assert!(matches!(msg::classify(data), msg::FrameKind::Control(_)));
    let m = p.message;
    let mut out = vec![0u8; m.frame_len(p.payload.len())];
    if m.emit_frame(p.dst, p.src, p.payload, &mut out).is_err() {
        // The payload rule is the parser's too: a parsed frame's payload passes it.
        assert!(m.check_payload(p.payload).is_err());
        return;
    }
    let back = msg::parse_frame(&out).expect("an emitted message parses");
    assert_eq!(back.message, m);
    assert_eq!(back.payload, p.payload);
}

/// The RESP parser and the command table: the input is fed in chunks (each chunk's length
/// from one byte), and every reply must be well-formed RESP.
pub fn kv(data: &[u8]) {
    let data = &data[..data.len().min(MAX_INPUT)];
    let cfg = EngineConfig {
        maxmemory: 8 << 20,
        ..EngineConfig::default()
    };
    let limits = ProtoLimits {
        max_bulk_len: 1 << 20,
        ..ProtoLimits::default()
    };
    let mut engine = Engine::new(cfg);
    let mut conn = apps::kv::Connection::new(&mut engine, limits);
    let mut b = Bytes(data);
    let mut now_ms = 1_700_000_000_000i64;
    let mut out = Vec::new();
    while let Some(n) = b.u8() {
        let chunk = b.take(usize::from(n) + 1);
        now_ms += i64::from(n & 0x0f) * 100;
        let st = conn.feed(&mut engine, chunk);
        if st == apps::kv::RunState::Close {
            break;
        }
        loop {
            let st = conn.run(&mut engine, now_ms, &mut out, 1 << 20);
            check_resp(&out);
            out.clear();
            match st {
                apps::kv::RunState::OutputFull => continue,
                _ => break,
            }
        }
        if conn.closing() {
            break;
        }
        engine.active_expire(now_ms);
    }
}

/// `out` is a whole number of RESP2/RESP3 replies.
pub(super) fn check_resp(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        match resp_len(&out[at..], 0) {
            Some(n) => at += n,
            None => panic!(
                "malformed RESP reply at byte {at}: {:?}",
                String::from_utf8_lossy(&out[at..out.len().min(at + 200)])
            ),
        }
    }
}

/// Length of the RESP2 or RESP3 value at the start of `b` (the RESP3 specification's
/// types), or `None` when it is malformed or incomplete.
pub(super) fn resp_len(b: &[u8], depth: usize) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    let line_end = b.windows(2).position(|w| w == b"\r\n")?;
    let head = line_end + 2;
    let t = *b.first()?;
    if matches!(t, b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(') {
        // Simple strings and errors may hold any byte but CR and LF (Redis puts the bytes
        // of an unknown command's name into its error as they came).
        return Some(head);
    }
    let line = std::str::from_utf8(&b[1..line_end]).ok()?;
    match t {
        b'$' | b'=' | b'!' => {
            if line == "-1" {
                return Some(head);
            }
            let n: usize = line.parse().ok()?;
            (b.get(head + n..head + n + 2)? == b"\r\n").then_some(head + n + 2)
        }
        t @ (b'*' | b'%' | b'~' | b'>' | b'|') => {
            if line == "-1" {
                return Some(head);
            }
            let n: usize = line.parse().ok()?;
            let items = if t == b'%' || t == b'|' { 2 * n } else { n };
            let mut at = head;
            for _ in 0..items {
                at += resp_len(b.get(at..)?, depth + 1)?;
            }
            Some(at)
        }
        _ => None,
    }
}

/// The proxy's head parsers and chunked framing.
pub fn http(data: &[u8]) {
    const MAX_HEAD: usize = 8192;
    if let Parse::Complete(h) = http::parse_head(data, MAX_HEAD) {
        assert!(h.head_len <= data.len());
        let bytes = h.to_bytes();
        match http::parse_head(&bytes, MAX_HEAD.max(bytes.len())) {
            Parse::Complete(again) => {
                assert_eq!(
                    (&again.method, &again.target, &again.headers),
                    (&h.method, &h.target, &h.headers),
                    "a request head survives serialisation"
                );
                assert_eq!(again.to_bytes(), bytes);
            }
            other => panic!("the serialised head does not parse: {other:?}"),
        }
    }
    let _ = framing::parse_response_head(data, false, MAX_HEAD);
    let _ = framing::parse_response_head(data, true, MAX_HEAD);
    let mut body = Body::chunked();
    let mut rest = data;
    while !rest.is_empty() && !body.done() {
        match body.feed(rest) {
            Ok(0) => break,
            Ok(n) => {
                assert!(n <= rest.len(), "the framing consumed more than it was fed");
                rest = &rest[n..];
            }
            Err(_) => break,
        }
    }
}

/// The configuration file and the proxy's section.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = dataplane::config::Config::parse(text, "fuzz.toml") {
        let _ = cfg.runtime.idle_policy();
        let _ = apps::proxy::ProxyConfig::from_section(cfg.proxy.as_ref(), &cfg.source);
    }
    if let Ok(t) = text.parse::<toml::Table>() {
        let _ = apps::proxy::ProxyConfig::from_table(&t, "fuzz.toml");
    }
}

/// libmtcp's readers of mTCP's own files: the configuration (`mtcp.conf`), `arp.conf` and
/// `route.conf`, on the same text. Tables that parse are written out again and must parse to
/// the same entries; put into a configuration's ports, every neighbour is there once and
/// every route lands on a port or is named in a warning.
pub fn mtcp_conf(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = std::path::Path::new("/fuzz");
    if let Ok((c, _)) = mtcp::conf::parse(text, dir) {
        let _ = mtcp::conf::nicemu_path(&c, None, "fuzz.conf");
    }
    let arp = mtcp::conf::parse_arp(text, "arp.conf").map(|(a, _)| a);
    let routes = mtcp::conf::parse_routes(text, "route.conf").map(|(r, _)| r);
    if let Ok(a) = &arp {
        let mut out = format!("ARP_ENTRY {}\n", a.len());
        for e in a {
            let m = e.mac;
            out += &format!(
                "{}/{} {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}\n",
                std::net::Ipv4Addr::from(e.ip),
                e.prefix,
                m[0],
                m[1],
                m[2],
                m[3],
                m[4],
                m[5]
            );
        }
        let (again, warnings) = mtcp::conf::parse_arp(&out, "arp.conf").expect("written back");
        assert_eq!(&again, a, "arp.conf entries survive writing out");
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    if let Ok(r) = &routes {
        let mut out = format!("ROUTES {}\n", r.len());
        for e in r {
            out += &format!(
                "{}/{} {}\n",
                std::net::Ipv4Addr::from(e.ip),
                e.prefix,
                e.iface
            );
        }
        let (again, _) = mtcp::conf::parse_routes(&out, "route.conf").expect("written back");
        assert_eq!(&again, r, "route.conf entries survive writing out");
    }
    let (arp, routes) = (arp.unwrap_or_default(), routes.unwrap_or_default());
    if arp.is_empty() && routes.is_empty() {
        return;
    }
    let mut cfg = dataplane::config::Config::parse(MTCP_PORTS, "ports.toml").expect("ports");
    let before: Vec<usize> = cfg.ports.iter().map(|p| p.on_link.len()).collect();
    let warnings = mtcp::conf::apply_tables(&mut cfg.ports, &arp, &routes);
    for p in &cfg.ports {
        let mut keys: Vec<_> = p.neighbours.iter().map(|n| (n.ip, n.prefix_len)).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "a neighbour twice on port {}", p.name);
        for e in &arp {
            assert!(keys.contains(&(e.ip, e.prefix)));
        }
    }
    let added: usize = cfg
        .ports
        .iter()
        .zip(&before)
        .map(|(p, b)| p.on_link.len() - b)
        .sum();
    assert_eq!(added + warnings.len(), routes.len(), "{warnings:?}");
}

/// Two ports for [`mtcp_conf`]'s tables.
const MTCP_PORTS: &str = r#"
[[port]]
name = "p0"
driver = "wire"
ipv4 = ["10.0.0.1/24"]
wire = "w0"
[[port]]
name = "p1"
driver = "wire"
ipv4 = ["10.0.1.1/24"]
wire = "w1"
[[lcore]]
core = 0
role = "shared"
"#;

//! Connection commands: PING, ECHO, QUIT, HELLO, SELECT, CLIENT (Redis 7.0 `networking.c`,
//! `server.c`).

use super::*;

// Connection commands.

pub(super) fn ping(
    _: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() > 2 {
        arity_error(out, "ping");
    } else if a.len() == 1 {
        out.extend_from_slice(b"+PONG\r\n");
    } else {
        resp::bulk(out, &a[1]);
    }
    Flow::Continue
}

pub(super) fn echo(
    _: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::bulk(out, &a[1]);
    Flow::Continue
}

pub(super) fn quit(
    _: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    out.extend_from_slice(b"+OK\r\n");
    Flow::Close
}

pub(super) fn valid_name(n: &[u8]) -> bool {
    n.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

pub(super) fn hello(
    _: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let mut j = 1;
    let mut proto = None;
    if a.len() >= 2 {
        let Some(ver) = string2ll(&a[1]) else {
            resp::error(out, b"Protocol version is not an integer or out of range");
            return Flow::Continue;
        };
        if ver != 2 && ver != 3 {
            resp::error(out, b"-NOPROTO unsupported protocol version");
            return Flow::Continue;
        }
        proto = Some(ver as u8);
        j = 2;
    }
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(&a[j], "AUTH") && more >= 2 {
            if !is(&a[j + 1], "default") {
                resp::error(
                    out,
                    b"-WRONGPASS invalid username-password pair or user is disabled.",
                );
                return Flow::Continue;
            }
            j += 3;
        } else if is(&a[j], "SETNAME") && more >= 1 {
            if !set_name(s, &a[j + 1], out) {
                return Flow::Continue;
            }
            j += 2;
        } else {
            let mut m = b"Syntax error in HELLO option '".to_vec();
            m.extend_from_slice(cstr(&a[j]));
            m.push(b'\'');
            resp::error_fmt(out, &m);
            return Flow::Continue;
        }
    }
    // The protocol changes once the options are accepted; the reply is in the new one.
    s.proto = proto.unwrap_or(s.proto);
    resp::array_len(out, 14);
    for (k, v) in [("server", "redis"), ("version", REDIS_VERSION)] {
        resp::bulk(out, k.as_bytes());
        resp::bulk(out, v.as_bytes());
    }
    resp::bulk(out, b"proto");
    resp::int(out, s.proto as i64);
    resp::bulk(out, b"id");
    resp::int(out, s.id as i64);
    for (k, v) in [("mode", "standalone"), ("role", "master")] {
        resp::bulk(out, k.as_bytes());
        resp::bulk(out, v.as_bytes());
    }
    resp::bulk(out, b"modules");
    resp::array_len(out, 0);
    Flow::Continue
}

pub(super) fn set_name(s: &mut Session, n: &[u8], out: &mut Vec<u8>) -> bool {
    if n.is_empty() {
        s.name = None;
        return true;
    }
    if !valid_name(n) {
        resp::error(
            out,
            b"Client names cannot contain spaces, newlines or special characters.",
        );
        return false;
    }
    s.name = Some(n.to_vec());
    true
}

pub(super) fn select(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let Ok(id) = parse_i64(&a[1], out) else {
        return Flow::Continue;
    };
    if id < i32::MIN as i64 || id > i32::MAX as i64 {
        resp::error_fmt(
            out,
            format!(
                "value is out of range, value must between {} and {}",
                i32::MIN,
                i32::MAX
            )
            .as_bytes(),
        );
    } else if id < 0 || id as usize >= e.cfg.databases {
        resp::error(out, b"DB index is out of range");
    } else {
        s.db = id as usize;
        ok(out);
    }
    Flow::Continue
}

pub(super) fn client_id(
    _: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::int(out, s.id as i64);
    Flow::Continue
}

pub(super) fn client_getname(
    _: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    match &s.name {
        Some(n) => resp::bulk(out, n),
        None => resp::null(out),
    }
    Flow::Continue
}

pub(super) fn client_setname(
    _: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if set_name(s, &a[2], out) {
        out.extend_from_slice(b"+OK\r\n");
    }
    Flow::Continue
}

/// CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2; clients send it on connect).
pub(super) fn client_setinfo(
    _: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let slot = if is(&a[2], "lib-name") {
        &mut s.lib.0
    } else if is(&a[2], "lib-ver") {
        &mut s.lib.1
    } else {
        let mut m = b"Unrecognized option '".to_vec();
        m.extend_from_slice(cstr(&a[2]));
        m.push(b'\'');
        resp::error_fmt(out, &m);
        return Flow::Continue;
    };
    if !valid_name(&a[3]) {
        let mut m = cstr(&a[2]).to_vec();
        m.extend_from_slice(b" cannot contain spaces, newlines or special characters.");
        resp::error_fmt(out, &m);
        return Flow::Continue;
    }
    *slot = (!a[3].is_empty()).then(|| a[3].clone());
    out.extend_from_slice(b"+OK\r\n");
    Flow::Continue
}

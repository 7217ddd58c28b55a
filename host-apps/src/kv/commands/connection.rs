//! Connection commands: PING, ECHO, QUIT, HELLO, SELECT, CLIENT (Redis 7.0 `networking.c`,
//! `server.c`).

use super::*;

// Connection commands.

pub(super) fn ping(
    _: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() > 2 {
        arity_error(out, "ping");
    } else if s.proto == 2 && s.subscriptions() > 0 {
        // Redis 7.0's pingCommand for a RESP2 subscriber: `*2 pong <arg or "">`.
        resp::array_len(out, 2);
        resp::bulk(out, b"pong");
        resp::bulk(out, a.get(1).map(|x| &x[..]).unwrap_or(b""));
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
    e: &mut Engine,
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
    let mut auth = None;
    let mut name = None;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(&a[j], "AUTH") && more >= 2 {
            auth = Some((&a[j + 1], &a[j + 2]));
            j += 3;
        } else if is(&a[j], "SETNAME") && more >= 1 {
            name = Some(&a[j + 1]);
            j += 2;
        } else {
            let mut m = b"Syntax error in HELLO option '".to_vec();
            m.extend_from_slice(cstr(&a[j]));
            m.push(b'\'');
            resp::error_fmt(out, &m);
            return Flow::Continue;
        }
    }
    // Redis 7.0's helloCommand: authenticate, then require authentication, then the name.
    if let Some((user, pass)) = auth {
        if !e.check_password(user, pass) {
            resp::error(out, WRONGPASS);
            return Flow::Continue;
        }
        s.authenticated = true;
    }
    if !s.authenticated {
        resp::error(
            out,
            b"-NOAUTH HELLO must be called with the client already authenticated, otherwise \
              the HELLO AUTH <user> <pass> option can be used to authenticate the client and \
              select the RESP protocol version at the same time",
        );
        return Flow::Continue;
    }
    if let Some(n) = name {
        if !set_name(s, n, out) {
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

const WRONGPASS: &[u8] = b"-WRONGPASS invalid username-password pair or user is disabled.";

impl Engine {
    /// Whether `user` / `pass` is the default user's (Redis 7.0 without ACL files: the only
    /// user is `default`, and without `requirepass` it takes any password).
    fn check_password(&self, user: &[u8], pass: &[u8]) -> bool {
        user == b"default" && self.cfg.requirepass.as_deref().is_none_or(|p| p == pass)
    }
}

/// AUTH [username] password (Redis 7.0 `authCommand`).
pub(super) fn auth(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() > 3 {
        resp::error(out, SYNTAX);
        return Flow::Continue;
    }
    if a.len() == 2 && e.cfg.requirepass.is_none() {
        resp::error(
            out,
            b"AUTH <password> called without any password configured for the default user. \
              Are you sure your configuration is correct?",
        );
        return Flow::Continue;
    }
    let (user, pass) = if a.len() == 3 {
        (&a[1][..], &a[2][..])
    } else {
        (&b"default"[..], &a[1][..])
    };
    if e.check_password(user, pass) {
        s.authenticated = true;
        ok(out);
    } else {
        resp::error(out, WRONGPASS);
    }
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

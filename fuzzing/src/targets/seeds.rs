//! The targets' seeds.

use super::*;
/// The seeds of a target (see [`crate::seeds`]).
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "tcp_wire" => tcp_seeds(),
        "checksum" => vec![
            [
                &[0u8, 0, 0, 0x12, 0x34][..],
                &[0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6],
            ]
            .concat(),
            [&[3u8, 0xde, 0xad, 0xbe, 0xef][..], &[0xff; 20]].concat(),
            vec![0; 64],
        ],
        "transport_headers" => vec![vec![0; 12], vec![0xff; 64], vec![0x64; 40]],
        "control_msg" => control_seeds(),
        "kv" => kv_seeds(),
        "http" => http_seeds(),
        "config" => config_seeds(),
        "nic" => nic_seeds(),
        "host_link" => host_seeds(),
        "ip_wire" => ip_seeds(),
        "splice" => splice_seeds(),
        "mtcp_conf" => mtcp_conf_seeds(),
        _ => Vec::new(),
    }
}

pub(super) fn tcp_seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (flags, opts) in [
        (
            TcpFlags::SYN,
            TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamp: Some((1, 0)),
                ..TcpOptions::default()
            },
        ),
        (
            TcpFlags(TcpFlags::ACK.0 | TcpFlags::PSH.0),
            TcpOptions {
                timestamp: Some((5, 9)),
                ..TcpOptions::default()
            },
        ),
        (
            TcpFlags(TcpFlags::ACK.0 | TcpFlags::FIN.0),
            TcpOptions::default(),
        ),
    ] {
        let h = TcpHeader {
            src_port: 40_000,
            dst_port: 80,
            seq: Seq(1000),
            ack: Seq(2000),
            flags,
            window: 512,
            options: opts,
        };
        v.push(tcp_bytes(&h, b"payload"));
    }
    let mut sack = TcpOptions {
        sack_len: 3,
        ..TcpOptions::default()
    };
    for (k, blk) in sack.sack.iter_mut().enumerate().take(3) {
        blk.left = Seq(100 * k as u32);
        blk.right = Seq(100 * k as u32 + 50);
    }
    let h = TcpHeader {
        src_port: 1,
        dst_port: 2,
        seq: Seq(3),
        ack: Seq(4),
        flags: TcpFlags::ACK,
        window: 5,
        options: sack,
    };
    v.push(tcp_bytes(&h, &[]));
    v
}

/// Messages the host really sends (recorded from a host context's link), plus an empty body
/// of every message EtherType.
pub(super) fn control_seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        offload_api::ETHERTYPE_SETUP,
        offload_api::ETHERTYPE_TEARDOWN,
        offload_api::ETHERTYPE_SPLICE,
        offload_api::ETHERTYPE_SPLICE_CLOSE,
        offload_api::ETHERTYPE_CONTROL,
    ]
    .iter()
    .map(|t| {
        let mut f = vec![0u8; 14 + 48];
        f[12..14].copy_from_slice(&t.to_be_bytes());
        f
    })
    .collect();
    v.extend(recorded_messages());
    v
}

/// The frames a host context with an echo server (setup and teardown offloads on) sends its
/// NIC when it starts: the listener's registration (0x090E listen-add).
pub(super) fn recorded_messages() -> Vec<Vec<u8>> {
    let super::host::HostRig {
        mut ctx,
        mut nic_end,
        mut echo,
        ..
    } = super::host::HostRig::new();
    let mut out = Vec::new();
    for _ in 0..8 {
        ctx.poll();
        echo.step(&mut ctx);
        while let Some((_, buf)) = nic_end.recv() {
            out.push(buf.to_vec());
            nic_end.recycle(buf);
        }
    }
    out
}

pub(super) fn kv_seeds() -> Vec<Vec<u8>> {
    let reqs: &[&[&str]] = &[
        &["PING"],
        &["SET", "k", "v"],
        &["GET", "k"],
        &["SET", "k", "v", "EX", "10"],
        &["INCRBY", "n", "5"],
        &["HSET", "h", "f", "v", "g", "w"],
        &["HGETALL", "h"],
        &["LPUSH", "l", "a", "b", "c"],
        &["LRANGE", "l", "0", "-1"],
        &["SADD", "s", "x", "y"],
        &["ZADD", "z", "1", "a", "2.5", "b"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["MULTI"],
        &["EXEC"],
        &["WATCH", "k"],
        &["SELECT", "3"],
        &["EXPIRE", "k", "1"],
        &["TTL", "k"],
        &["DEL", "k", "h", "l"],
        &["SETRANGE", "r", "10", "abc"],
        &["GETRANGE", "r", "0", "-1"],
        &["HELLO", "3"],
        &["CLIENT", "SETNAME", "x"],
        &["CONFIG", "GET", "maxmemory"],
        &["SCAN", "0", "MATCH", "*", "COUNT", "10"],
        &["FLUSHALL"],
    ];
    let all: Vec<u8> = reqs.iter().flat_map(|r| resp::encode_request(r)).collect();
    // One chunk-length byte before every 32 bytes (see `kv`).
    let chunked = |b: &[u8]| -> Vec<u8> {
        b.chunks(32)
            .flat_map(|c| std::iter::once((c.len() - 1) as u8).chain(c.iter().copied()))
            .collect()
    };
    vec![
        chunked(&all),
        chunked(b"PING\r\nSET a b\r\nGET a\r\n"),
        chunked(b"*2\r\n$3\r\nGET\r\n$-1\r\n"),
        chunked(b"*1\r\n$4\r\nPI"),
    ]
}

pub(super) fn http_seeds() -> Vec<Vec<u8>> {
    vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nX-Forwarded-For: 1.2.3.4\r\n\r\nabc".to_vec(),
        b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
        b"4;ext=1\r\nwiki\r\n0\r\nTrailer: x\r\n\r\n".to_vec(),
    ]
}

pub(super) fn config_seeds() -> Vec<Vec<u8>> {
    // The shipped configurations, as the tests read them.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .map(|d| {
            let mut paths: Vec<_> = d.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            paths
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .filter_map(|p| std::fs::read(p).ok())
                .collect()
        })
        .unwrap_or_default();
    v.push(b"[runtime]\npoll = \"adaptive\"\nidle_sleep_max_us = 200\n".to_vec());
    v
}

/// A client that connects (SYN, ACK), sends data, closes, and another that resets.
pub(super) fn nic_seeds() -> Vec<Vec<u8>> {
    let mut s = Vec::new();
    // SYN from a new port with every option; the handshake's ACK; data; FIN.
    s.extend_from_slice(&[2, 0x80, 0, 0, 0x10, 0]);
    s.extend_from_slice(&[3, 0, 6, b'h', b'e', b'l', b'l', b'o', b'!']);
    s.extend_from_slice(&[4, 0, 0x08, 4, b'a', b'b', b'c', b'd']);
    s.extend_from_slice(&[6, 10]);
    s.extend_from_slice(&[4, 0, 0x01, 0]);
    s.extend_from_slice(&[6, 255]);
    let mut r = Vec::new();
    r.extend_from_slice(&[2, 0x81, 0, 0, 0x20, 0]);
    r.extend_from_slice(&[3, 0, 0]);
    r.extend_from_slice(&[5, 0, 0x14, 0, 0, 0]);
    let mut raw = vec![1u8, 20];
    raw.extend_from_slice(&[
        0x9c, 0x40, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff,
    ]);
    raw.extend_from_slice(&[0, 0, 0, 0]);
    vec![s, r, raw, vec![7, 1, 0, 0]]
}

pub(super) fn host_seeds() -> Vec<Vec<u8>> {
    let syn = TcpHeader {
        src_port: 40_000,
        dst_port: ECHO_PORT,
        seq: Seq(1),
        ack: Seq(0),
        flags: TcpFlags::SYN,
        window: 65_535,
        options: TcpOptions {
            mss: Some(1460),
            ..TcpOptions::default()
        },
    };
    let seg = tcp_bytes(&syn, &[]);
    let mut s = vec![1u8, seg.len() as u8];
    s.extend_from_slice(&seg);
    s.extend_from_slice(&[3, 5]);
    let mut m = vec![2u8, 0, 40];
    m.extend_from_slice(&[0u8; 40]);
    vec![s, m]
}

/// Ethernet + IPv4 frames around the TCP seeds, one with an IPv4 option and one fragment.
pub(super) fn ip_seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = tcp_seeds()
        .iter()
        .map(|t| ip_tcp_frame((CLIENT_MAC, CLIENT_IP), (SERVER_MAC, SERVER_IP), t))
        .collect();
    let mut opt = v[0].clone();
    // IHL 6: a four-byte option (NOP NOP NOP EOL) before the TCP header.
    opt.splice(34..34, [1u8, 1, 1, 0]);
    opt[14] = 0x46;
    let total = (opt.len() - 14) as u16;
    opt[16..18].copy_from_slice(&total.to_be_bytes());
    v.push(opt);
    let mut frag = v[1].clone();
    frag[20] = 0x20; // MF
    v.push(frag);
    v
}

/// A splice pair (both sides with SACK and timestamps, different window scales) and frames
/// of the TCP seeds, for each direction, with checksums valid and not, and one with an
/// explicit TCP offset.
pub(super) fn splice_seeds() -> Vec<Vec<u8>> {
    let side = |flags: u8, k: u8| -> Vec<u8> {
        let mut s = vec![flags];
        s.extend_from_slice(&[10, 0, k, 2]); // local ip
        s.extend_from_slice(&(80u16 + u16::from(k)).to_be_bytes());
        s.extend_from_slice(&[10, 0, k, 1]); // remote ip
        s.extend_from_slice(&(40_000u16 + u16::from(k)).to_be_bytes());
        s.extend_from_slice(&[0, 0, k, 0x0b]); // mac
        s.extend_from_slice(&[7, 9 - k]); // peer, local wscale
        s
    };
    let mut install = [side(3, 0), side(0x83, 1)].concat();
    for x in [1000u32, 0xffff_ff00, 77, 0x8000_0000, 500, 0xffff_fff0] {
        install.extend_from_slice(&x.to_be_bytes());
    }
    let mut v = Vec::new();
    for (k, t) in tcp_seeds().iter().enumerate() {
        let frame = ip_tcp_frame((CLIENT_MAC, CLIENT_IP), (SERVER_MAC, SERVER_IP), t);
        for sel in [0u8, 1, 4, 0x58 | (k as u8 & 1)] {
            v.push([&[sel][..], &install, &frame].concat());
        }
    }
    v
}

/// mTCP's own files, as its example applications ship them, and nicemu's additions.
pub(super) fn mtcp_conf_seeds() -> Vec<Vec<u8>> {
    [
        "############### mtcp configuration file ###############\n\
         io = dpdk\nnum_cores = 2\nnum_mem_ch = 4\nport = dpdk0 dpdk1\n\
         max_concurrency = 10000\nmax_num_buffers = 10000\nrcvbuf = 8192\nsndbuf = 8192\n\
         tcp_timeout = 30\ntcp_timewait = 0\nstat_print = dpdk0\n\
         nicemu_config = nicemu.toml # the nicemu ports\nmultiprocess = 0 master\n",
        "io = netmap\nnum_cores = x\n",
        "# arp.conf\nARP_ENTRY 2\n10.0.0.2/32 02:00:00:00:00:0b\n10.0.1.0/24 02:00:00:00:01:01\n",
        "ROUTES 2\n10.0.0.0/24 dpdk0\n10.0.1.0/24 p1 # by name\n192.168.0.0/16 dpdk9\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

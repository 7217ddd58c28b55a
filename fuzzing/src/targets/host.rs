//! The `host_link` target: the host stack from the NIC's end of the link.

use super::*;
/// Checks a frame the host sent towards the NIC: a message that parses, or IPv4 whose
/// lengths hold and whose TCP parses.
pub(super) fn check_host_frame(f: &[u8]) {
    assert!(f.len() >= 14, "runt frame from the host");
    let ethertype = u16::from_be_bytes([f[12], f[13]]);
    if offload_api::is_control_ethertype(ethertype) {
        assert!(
            msg::parse_frame(f).is_ok(),
            "the host sent a malformed message: {:?}",
            msg::parse_frame(f)
        );
        return;
    }
    assert_eq!(
        ethertype, 0x0800,
        "the host sent EtherType {ethertype:#06x}"
    );
    let ip = &f[14..];
    assert!(ip.len() >= 20);
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    assert!(
        ihl >= 20 && total >= ihl && total <= ip.len(),
        "IPv4 lengths from the host"
    );
    if ip[9] == 6 {
        assert!(tcp::parse(&ip[ihl..total]).is_ok(), "the host's TCP parses");
    }
}

/// A host context on a virtual clock with an echo server (setup and teardown offloads on),
/// and the NIC's end of its link.
pub(super) struct HostRig {
    pub clock: Clock,
    pub ctx: Context<offload_api::link::HostEnd>,
    pub nic_end: NicEnd,
    pub echo: EchoServer,
}

impl HostRig {
    pub fn new() -> HostRig {
        let clock = Clock::virtual_clock();
        clock.advance(1_000_000_000);
        let (host_end, nic_end): (_, NicEnd) = link(&LinkConfig::default());
        let c = clock.clone();
        let mut ctx = Context::new(
            HostConfig::new(SERVER_IP, 0),
            host_end,
            std::sync::Arc::new(move || c.now_ns()),
        );
        let off = ServerOffloads {
            setup: true,
            teardown: true,
        };
        let echo = EchoServer::with_offloads(&mut ctx, ECHO_PORT, off).expect("listen");
        HostRig {
            clock,
            ctx,
            nic_end,
            echo,
        }
    }
}

/// The host stack with an echo server (setup and teardown offloads on) fed frames from the
/// NIC's end of the link: raw bytes, IPv4 + TCP with valid checksums, and host <-> NIC
/// messages with fuzzed bodies.
pub fn host_link(data: &[u8]) {
    let data = &data[..data.len().min(MAX_INPUT)];
    let HostRig {
        clock,
        mut ctx,
        mut nic_end,
        mut echo,
    } = HostRig::new();
    let mut b = Bytes(data);
    let drain = |ctx: &mut Context<_>, echo: &mut EchoServer, nic_end: &mut NicEnd| {
        for _ in 0..32 {
            let w = ctx.poll() + echo.step(ctx);
            let mut got = 0;
            while let Some((_, buf)) = nic_end.recv() {
                check_host_frame(&buf);
                nic_end.recycle(buf);
                got += 1;
            }
            if w == 0 && got == 0 {
                break;
            }
        }
    };
    drain(&mut ctx, &mut echo, &mut nic_end);
    for _ in 0..4096 {
        let Some(op) = b.u8() else { break };
        let frame = match op % 4 {
            0 => {
                let n = usize::from(b.u8().unwrap_or(0)) * 6;
                b.take(n).to_vec()
            }
            1 => {
                let n = usize::from(b.u8().unwrap_or(0));
                let seg = b.take(n).to_vec();
                ip_tcp_frame((CLIENT_MAC, CLIENT_IP), (SERVER_MAC, SERVER_IP), &seg)
            }
            2 => {
                const TYPES: [u16; 5] = [
                    offload_api::ETHERTYPE_SETUP,
                    offload_api::ETHERTYPE_TEARDOWN,
                    offload_api::ETHERTYPE_SPLICE,
                    offload_api::ETHERTYPE_SPLICE_CLOSE,
                    offload_api::ETHERTYPE_CONTROL,
                ];
                let t = TYPES[usize::from(b.u8().unwrap_or(0)) % TYPES.len()];
                let n = usize::from(b.u8().unwrap_or(0));
                let mut f = vec![0u8; 14];
                f[0..6].copy_from_slice(&SERVER_MAC);
                f[6..12].copy_from_slice(&SERVER_MAC);
                f[12..14].copy_from_slice(&t.to_be_bytes());
                f.extend_from_slice(b.take(n));
                f
            }
            _ => {
                clock.advance(u64::from(b.u8().unwrap_or(0)) * 20_000_000);
                Vec::new()
            }
        };
        if !frame.is_empty() {
            let _ = nic_end.send(0, &frame);
        }
        drain(&mut ctx, &mut echo, &mut nic_end);
    }
    for _ in 0..8 {
        clock.advance(30_000_000_000);
        drain(&mut ctx, &mut echo, &mut nic_end);
    }
}
